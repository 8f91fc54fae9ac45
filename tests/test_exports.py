"""Every export of a comparison applies one escaping rule (campaigns.escaping) to names taken from rows:
a target, product, scenario or spec named like a spreadsheet formula or an HTML script stays text in the
API's CSV, the comparison page's CSV, its Markdown and its print-ready report."""
from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest

from campaigns import roles
from campaigns.escaping import FORMULA_START, markdown_cell, markdown_code_block, markdown_text
from campaigns.models import Campaign, Job, JobClient, Run
from tests.factories import (
    DatasetFactory,
    InstanceSpecFactory,
    JobFactory,
    JobResultFactory,
    ProductFactory,
    ScenarioFactory,
    TargetFactory,
)
from tests.helpers.users import body_text, client_for, make_user

pytestmark = pytest.mark.django_db

FORMULA = "=cmd|' /C calc'!A0"
SCRIPT = "<script>alert(1)</script>"
SUM = "@SUM(1+1)*cmd|' /C calc'!A0"


@pytest.fixture
def hostile_campaign() -> Campaign:
    """Two products, measured on one spec with one scenario, every name hostile; its report sections too."""
    spec = InstanceSpecFactory(label=f"+{SCRIPT}")
    scenario = ScenarioFactory(name=f"\t{SCRIPT}|scenario\nsecond line", dataset=DatasetFactory(name=f"-{FORMULA}"))
    campaign = Campaign.objects.create(name=f"{FORMULA} {SCRIPT}", threads=[4])
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED)
    for product_name, target_name, qps in ((FORMULA, SUM, 1000.0), (SCRIPT, f"\r{FORMULA}", 1200.0)):
        target = TargetFactory(name=target_name, product=ProductFactory(name=product_name), spec=spec)
        job = JobFactory(run=run, target=target, scenario=scenario, threads=4,
                         command_line=f"sysbench oltp_point_select --threads=4 ``` {SCRIPT} run",
                         server_snapshot={"before": {"version": SCRIPT, "settings": {SCRIPT: FORMULA}}})
        JobResultFactory(job=job, qps=qps)
        JobClient.objects.create(job=job, index=0, host_name=f"host{SCRIPT}", threads=4)
    return campaign


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _assert_no_formula(cells: list[str]) -> None:
    formulas = [c for c in cells if c.startswith(FORMULA_START) and not re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", c)]
    assert not formulas
    assert "'" + FORMULA in cells  # the product's name, kept whole behind the quote


def test_the_api_csv_exports_neutralise_formulas(hostile_campaign):
    viewer = client_for(make_user(roles.VIEWER))
    results = viewer.get("/api/v1/results/?format=csv")
    assert results.status_code == 200
    cells = _cells(body_text(results))
    _assert_no_formula(cells)
    assert "'" + SUM in cells and "'\r" + FORMULA in cells  # target names
    comparison = viewer.get(f"/api/v1/comparisons/?campaign={hostile_campaign.pk}&format=csv")
    assert comparison.status_code == 200
    _assert_no_formula(_cells(body_text(comparison)))


def test_the_comparison_page_csv_neutralises_formulas_as_the_api_does(hostile_campaign, role_client):
    response = role_client("viewer").get(f"/compare/comparison.csv?campaign={hostile_campaign.pk}")
    assert response.status_code == 200
    cells = _cells(response.content.decode())
    _assert_no_formula(cells)
    assert "'\t" + SCRIPT + "|scenario\nsecond line" in cells  # a tab-leading name, kept whole
    assert "'+" + SCRIPT in cells and "'-" + FORMULA in cells  # spec and dataset


def _table_rows(markdown: str) -> list[list[str]]:
    """The cells of each table line, split on the pipes that are not escaped."""
    return [re.split(r"(?<!\\)\|", line)[1:-1] for line in markdown.splitlines() if line.startswith("|")]


def test_the_markdown_export_carries_no_html_and_keeps_every_cell_in_its_column(hostile_campaign, role_client):
    markdown = role_client("viewer").get(f"/compare/comparison.md?campaign={hostile_campaign.pk}").content.decode()
    # The command stays verbatim, as code (shown, never run), inside a fence longer than the backticks it holds.
    command = "\n".join(markdown_code_block(f"sysbench oltp_point_select --threads=4 ``` {SCRIPT} run"))
    assert command.startswith("````\n") and command in markdown
    outside_code = markdown.replace(command, "")
    assert not re.search(r"<[A-Za-z/!?]", outside_code)  # no tag, comment or declaration anywhere else
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outside_code
    assert "\nsecond line" not in markdown  # a line break in a name does not start a line of its own
    rows = _table_rows(markdown)
    assert rows and len({len(cells) for cells in rows}) == 1  # a pipe in a name does not make a column
    job = Job.objects.filter(run__campaign=hostile_campaign).first()
    title = f"\t{SCRIPT}|scenario\nsecond line · {job.tables:,} × {job.table_size:,}"  # scenario · shape measured
    assert f"\n### {markdown_text(title)}\n" in markdown
    assert f"| QPS {markdown_cell(FORMULA)} |" in markdown  # a product's column, its pipe escaped


def test_the_report_and_the_page_show_the_names_as_text(hostile_campaign, role_client):
    client = role_client("viewer")
    for url in (f"/compare/report/?campaign={hostile_campaign.pk}", f"/compare/?campaign={hostile_campaign.pk}"):
        html = client.get(url).content.decode()
        assert SCRIPT not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


@pytest.mark.parametrize("value, cell", [
    (FORMULA, "'" + FORMULA), ("+1", "'+1"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"),
    ("\rx", "'\rx"), ("plain", "plain"), (-3.5, -3.5), (None, None), ("", ""),
])
def test_one_rule_for_csv_cells(value: Any, cell: Any):
    from campaigns.escaping import csv_cell

    assert csv_cell(value) == cell
