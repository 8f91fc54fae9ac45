"""The CLI's CSV neutralises formula cells and its Markdown (`--format markdown`, `--summary`) escapes HTML,
links and images, as the server's exports do; the CLI's copy of the rules (benchapp_cli/escaping.py, a separate
package) gives the same answers as campaigns/escaping.py. The CLI's modules are pure: loaded from its sources."""
from __future__ import annotations

import csv
import io
import re
import sys
from pathlib import Path

import pytest

from campaigns import escaping

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli" / "src"))
from benchapp_cli import escaping as cli_escaping  # noqa: E402
from benchapp_cli import report  # noqa: E402

NASTY = ["=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "+1", "-2+3", "\tTAB", "\rCR", "plain", "-3.5",
         "<img src=x onerror=alert(1)>", "[click](http://evil.example/)", "![pixel](http://evil.example/p.png)",
         "a | b", "line\nbreak", "back\\slash", "&amp; <b>", 7, -3.5, None]


@pytest.mark.parametrize("value", NASTY)
def test_the_clients_rules_are_the_servers(value):
    assert cli_escaping.csv_cell(value) == escaping.csv_cell(value)
    assert cli_escaping.markdown_text(value) == escaping.markdown_text(value)
    assert cli_escaping.markdown_cell(value) == escaping.markdown_cell(value)


def _cell(**changes) -> report.Cell:
    values = {"run": 7, "dataset": "ds", "scenario": "point select", "scenario_id": 1, "test": "oltp_point_select",
              "spec": "4-core", "spec_id": 1, "threads": 8, "tables": 4, "table_size": 1000, "product": "MariaDB",
              "product_id": 1, "n": 1, "qps": 1000.0, "qps_cv_pct": None, "tps": 50.0, "latency_avg_ms": 1.0,
              "latency_pct": 95.0, "latency_pct_ms": 2.0, "verdict": "valid"}
    return report.Cell(**{**values, **changes})


def test_the_csv_never_starts_a_text_cell_with_a_formula():
    cells = [_cell(product="=cmd|' /C calc'!A0", scenario="@SUM(A1:A9)", spec="+1", dataset="-1+1",
                   regressions=["=HYPERLINK(\"http://evil\")"])]
    rows = list(csv.reader(io.StringIO(report.render_csv(cells))))
    data = dict(zip(rows[0], rows[1], strict=True))
    assert data["product"] == "'=cmd|' /C calc'!A0" and data["scenario"] == "'@SUM(A1:A9)"
    assert data["spec"] == "'+1" and data["dataset"] == "'-1+1" and data["regression"].startswith("'=")
    assert data["qps"] == "1000.0" and data["threads"] == "8"  # numbers stay numbers


def test_the_summary_and_markdown_show_html_and_links_as_text():
    evil = "<img src=x onerror=alert(1)>[click](http://evil.example/)"
    cells = [_cell(product=evil, scenario="![p](http://evil.example/p.png)", regressions=[f"{evil} dropped"])]
    runs = [{"id": 7, "campaign_name": evil, "status": "succeeded", "label": "<script>x</script>"}]
    for text in (report.summary_markdown(runs, cells, url="http://bench.example", code=report.EXIT_REGRESSION),
                 report.render_markdown(cells)):
        assert "<img" not in text and "<script" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
        assert not re.search(r"(?<!\\)\]\(http://evil", text)  # no bracket left unescaped before a URL: no link
        assert "\\[click\\](http://evil.example/)" in text
    summary = report.summary_markdown(runs, cells, url="http://bench.example", code=report.EXIT_REGRESSION)
    assert "[run 7](http://bench.example/runs/7/)" in summary  # the client's own link stays a link
