"""The CLI's verdict from a run's cells: what it exits with and what its summary says, without a server."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli" / "src"))
from benchapp_cli import report  # noqa: E402


def test_no_regression_is_said_only_of_the_trusted_cells():
    def cell(threads: int, verdict: str) -> report.Cell:
        return report.Cell(run=1, dataset="d", scenario="s", scenario_id=1, test="oltp_read_only", spec="x",
                           spec_id=1, threads=threads, tables=1, table_size=10, product="p", product_id=1, n=1,
                           qps=1.0, qps_cv_pct=None, tps=1.0, latency_avg_ms=1.0, latency_pct=95.0,
                           latency_pct_ms=1.0, verdict=verdict)

    cells = [cell(1, "valid"), cell(2, "invalid")]
    runs = [{"id": 1, "status": "succeeded"}]
    assert report.exit_code(runs, cells, allow_untrusted=False) == report.EXIT_UNTRUSTED
    assert report.exit_code(runs, cells, allow_untrusted=True) == report.EXIT_OK
    text = report.summary_markdown(runs, cells, url="http://x", code=report.EXIT_OK)
    assert text.startswith("### benchapp: ⚠️ no regression among the trusted cells; 1 of 2 cells untrusted (1 invalid)")


def test_an_alarm_its_second_measurement_did_not_uphold_fails_nothing_and_a_confirmed_one_says_so():
    def cell(threads: int) -> report.Cell:
        return report.Cell(run=1, dataset="d", scenario="s", scenario_id=1, test="oltp_read_only", spec="x",
                           spec_id=1, threads=threads, tables=1, table_size=10, product="p", product_id=1, n=3,
                           qps=1.0, qps_cv_pct=None, tps=1.0, latency_avg_ms=1.0, latency_pct=95.0,
                           latency_pct_ms=1.0, verdict="valid")

    def regression(threads: int, confirmation: str, **fields) -> dict:
        return {"run": 1, "target": 7, "scenario": 1, "threads": threads, "metric": "qps", "change_pct": -30.0,
                "baseline_value": 100.0, "current_value": 70.0, "method": "m", "confirmation": confirmation,
                "confirm_run": 2, **fields}

    cells = [cell(1), cell(2), cell(4)]
    report.regressions_attach(cells, [regression(1, "not_confirmed"), regression(2, "confirmed",
                                                                                 confirm_change_pct=-29.5),
                                      regression(4, "pending")], {7: {"product": 1, "spec": 1}})
    assert cells[0].regressions == []
    assert cells[1].regressions[0].endswith("m; confirmed by run #2: -29.5%)")
    assert "still being measured again by run #2" in cells[2].regressions[0]
    runs = [{"id": 1, "status": "succeeded"}]
    assert report.exit_code(runs, cells[:1], allow_untrusted=False) == report.EXIT_OK
    assert report.exit_code(runs, cells, allow_untrusted=False) != report.EXIT_OK
