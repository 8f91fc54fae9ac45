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
