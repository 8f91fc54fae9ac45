"""The comparison page in a real browser: error bars (min–max of the repetitions) on the QPS and latency
charts, n and Δ% in their tooltips' data, and a cell's latency histogram opened by a click, fetched from the API —
or the note saying the scenario ran with --percentile=0."""
from __future__ import annotations

import re

import pytest

from campaigns.models import Product
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.browser import SHOTS, log_in, wait_js
from tests.helpers.measured import measure
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _data() -> tuple[Product, Product]:
    alpha, beta = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    spec = InstanceSpecFactory(label="2-core 4 GB (local)", cpu_cores=2, memory_gb=4)
    scenario = ScenarioFactory(name="read only", dataset=DatasetFactory(name="browser ds", tables=2, table_size=1000))
    no_percentile = ScenarioFactory(name="point select, percentile 0", percentile=0.0,
                                    dataset=DatasetFactory(name="browser p0 ds", tables=2, table_size=1000))
    logs = ["mysql_oltp_read_only_histogram", "pgsql_oltp_read_only_histogram"]
    measure(product=alpha, spec=spec, scenario=scenario, histograms=logs,
             figures={1: [900.0, 1000.0, 1100.0], 2: [1700.0, 1800.0, 2000.0], 4: [2500.0, 2600.0, 2400.0]})
    measure(product=beta, spec=spec, scenario=scenario, histograms=logs,
             figures={1: [1200.0, 1250.0, 1300.0], 2: [2100.0, 2300.0, 2200.0], 4: [2500.0, 2700.0, 2600.0]})
    measure(product=alpha, spec=spec, scenario=no_percentile, figures={4: [17000.0]},
             histograms=["mysql_oltp_point_select_percentile_0"])
    return alpha, beta


def test_a_viewer_sees_error_bars_and_opens_a_cells_latency_histogram(browser_page):
    _, page, problems = browser_page
    alpha, beta = _data()
    make_user("compare-viewer", "viewer")
    log_in(page, "compare-viewer", PASSWORD)
    page.goto(f"/compare/?products={alpha.pk}&products={beta.pk}")
    wait_js(page, "document.querySelectorAll('.charts canvas').length > 0 && "
                  "[...document.querySelectorAll('.charts canvas')].every(c => Chart.getChart(c))")
    qps = "Chart.getChart(document.querySelector('canvas[data-chart=qps_lines]'))"
    assert page.evaluate(f"{qps}.config.type") == "lineWithErrorBars"
    # Alpha's points at 1, 2, 4 threads: the geometric mean with the min–max as the bar, and n.
    points = page.evaluate(f"{qps}.data.datasets[0].data.map(p => [p.yMin, p.yMax, p.n])")
    assert points == [[900.0, 1100.0, 3], [1700.0, 2000.0, 3], [2400.0, 2600.0, 3]]
    assert "error bars: min–max of the repetitions" in page.evaluate(f"{qps}.options.plugins.legend.title.text")
    beta_delta = page.evaluate(f"{qps}.data.datasets[1].data.map(p => p.delta)")
    table = page.locator("table.comparison").first
    assert beta_delta[0] == pytest.approx(float(table.locator("tr[data-threads='1'] td[data-metric=delta]")
                                                .inner_text().split("%")[0]), abs=0.05)
    cell = table.locator(f"tr[data-threads='2'] td[data-metric=qps][data-product='{beta.pk}']")
    assert "n=3" in cell.inner_text() and "2,100–2,300 · sd 100" in cell.inner_text()
    # Hovering Beta's point at 2 threads: the tooltip gives the value, n, the bar's min–max, sd and the mark's Δ%.
    canvas = page.locator("canvas[data-chart=qps_lines]").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    x, y = page.evaluate(f"[{qps}.getDatasetMeta(1).data[1].x, {qps}.getDatasetMeta(1).data[1].y]")
    page.mouse.move(box["x"] + x, box["y"] + y)
    wait_js(page, f"{qps}.tooltip.opacity > 0 && {qps}.tooltip.body && {qps}.tooltip.body.length > 0")
    lines = page.evaluate(f"{qps}.tooltip.body.flatMap(b => b.lines)")
    delta = table.locator("tr[data-threads='2'] td[data-metric=delta]").inner_text().split("\n")
    # The Δ% cell reads Δ%, its 95% interval, then the verdict; the tooltip says the same.
    assert lines == ["Beta DB: 2,198 QPS (n = 3)", "min–max 2,100–2,300, sd 100",
                     f"{delta[0]} ({delta[1]}) vs Alpha DB, {delta[2]}"], lines
    page.screenshot(path=str(SHOTS / "16-compare-error-bars.png"), full_page=True)

    cell.click()
    dialog = page.locator("#cell-histogram")
    dialog.wait_for(state="visible")
    wait_js(page, "Chart.getChart(document.querySelector('#cell-histogram canvas[data-chart=histogram]'))")
    percentiles = dialog.locator("[data-testid=histogram-percentiles]").inner_text()
    assert re.search(r"p50 \d+\.\d\d ms · p90 .* · p99\.9 \d+\.\d\d ms — [\d,]+ events from 3 of 3 jobs", percentiles)
    assert "Beta DB · read only · 2-core 4 GB (local) · 2 threads" in dialog.inner_text()
    assert page.evaluate("Chart.getChart(document.querySelector('#cell-histogram canvas[data-chart=histogram]')).data.labels.length") > 10
    dialog.screenshot(path=str(SHOTS / "17-compare-cell-histogram.png"))
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="hidden")

    # The --percentile=0 scenario's cell: no histogram, and the dialog says why instead of drawing zeros.
    page.locator("table.comparison").nth(1).locator(f"td[data-metric=qps][data-product='{alpha.pk}']").click()
    dialog.wait_for(state="visible")
    note = dialog.locator("[data-testid=histogram-note]")
    note.wait_for(state="visible")
    assert "--percentile=0" in note.inner_text()
    assert not page.evaluate("Chart.getChart(document.querySelector('#cell-histogram canvas[data-chart=histogram]'))")
    assert not problems.items, "\n".join(problems.items)
