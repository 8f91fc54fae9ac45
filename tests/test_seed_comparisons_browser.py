"""Seed comparisons in the paper's own shape, in a real browser: from /seeds/, a campaign made
from the seed 004 template opens beside the document's products in one table and one chart per document table;
the chart places the published 1,000-thread point at 1,000 on a log axis, draws error bars only on the measured
lines with repetitions and says which line is which; the print-ready report keeps the one-table shape on A4; a phone
shows the table as cards. The table fits the page at 1280 and 1440 px without scrolling sideways. Screenshots at 1440×900, 1280×800, A4 print (PDF and print media) and 390×844."""
from __future__ import annotations

import math

import pytest

from campaigns.models import Campaign
from campaigns.seeds.published import load_published
from campaigns.seeds.services import template_load_all
from tests.helpers.browser import SHOTS, log_in, open_page, wait_js
from tests.helpers.seeds import local_target, measured_instance
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS_DRAWN = ("document.querySelectorAll('.charts canvas').length > 0 && "
                "[...document.querySelectorAll('.charts canvas')].every(c => Chart.getChart(c))")
CHART = "Chart.getChart(document.querySelector('canvas[data-chart=qps_lines]'))"


# Loading the six templates and the published figures, then four page sizes and a PDF: more than the default 300 s
# on a machine whose two cores other test runs share.
@pytest.mark.timeout(900)
def test_a_seed_campaign_beside_its_document_reads_like_the_paper(browser_page, live_server):
    browser, page, problems = browser_page
    template_load_all()
    load_published()
    template = Campaign.objects.get(is_template=True, template_key="seed-004")
    campaign, _run = measured_instance(template, local_target(), repetitions=3)
    make_user("seeds-viewer", "viewer")
    log_in(page, "seeds-viewer", PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})
    # A comparison's first load (not cached yet) on a machine shared with other test runs can take seconds.
    page.set_default_navigation_timeout(90_000)

    # From /seeds/: the campaign's "the document's own tables" link.
    page.goto("/seeds/")
    row = page.locator("#instances-h + .table-scroll tr", has_text=campaign.name)
    row.get_by_role("link", name="the document's own tables").click(timeout=90_000)
    page.wait_for_url(f"**/compare/?campaign={campaign.pk}&published=004", timeout=90_000)
    wait_js(page, CHARTS_DRAWN, timeout_ms=120_000)
    assert page.locator("table.comparison").count() == 3
    table = page.locator("table.comparison").first
    assert table.locator("thead th.group.published").count() == 2
    assert table.locator("td.published-figure").count() == 10 and table.locator("td.ratio").count() == 10
    first_ratio = table.locator("td.ratio").first.inner_text().split("\n")
    assert first_ratio[0].endswith("×") and first_ratio[1] in ("per core · n = 3", "raw · n = 3"), first_ratio
    assert " … " in first_ratio[2], first_ratio  # the ratio's 95% interval
    page.screenshot(path=str(SHOTS / "28-seeds-compare-1440.png"), full_page=False)

    # The chart: published points at their own thread counts on a log axis (1,000 at 1,000, not the slot after 512).
    datasets = page.evaluate(f"{CHART}.data.datasets.map(d => [d.label, d.published, d.data.map(p => p.x)])")
    published = [d for d in datasets if d[1]]
    assert len(published) == 2 and all(d[2] == [50, 100, 200, 500, 1000] for d in published)
    assert page.evaluate(f"{CHART}.scales.x.type") == "logarithmic"
    index = datasets.index(published[0])
    xs = page.evaluate(f"{CHART}.getDatasetMeta({index}).data.map(e => e.x)")
    # On a log axis a doubling is the same distance wherever it is: 50→100 as 500→1000.
    assert math.isclose(xs[1] - xs[0], xs[4] - xs[3], abs_tol=1.5), xs
    at_1000 = page.evaluate(f"{CHART}.scales.x.getPixelForValue(1000)")
    assert math.isclose(xs[4], at_1000, abs_tol=0.5)
    # Error bars on the measured line (3 repetitions), none on the published ones.
    assert page.evaluate(f"{CHART}.data.datasets[0].data.every(p => p.yMin !== null && p.yMax !== null)")
    assert page.evaluate(f"{CHART}.data.datasets.filter(d => d.published)"
                         ".every(d => d.data.every(p => p.yMin === null && p.yMax === null))")
    assert page.evaluate(f"{CHART}.data.datasets.filter(d => d.published).every(d => d.borderDash.length === 2)")
    note = page.get_by_test_id("chart-note").first.inner_text()
    assert "Solid lines: measured" in note and "error bars: min–max of the repetitions" in note
    assert "Dashed lines, triangles: published (" in note and "TDSQL for MySQL" in note and "semi-sync" in note
    # Hovering a published point says it is the document's printed figure.
    canvas = page.locator("canvas[data-chart=qps_lines]").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    x, y = page.evaluate(f"[{CHART}.getDatasetMeta({index}).data[4].x, {CHART}.getDatasetMeta({index}).data[4].y]")
    page.mouse.move(box["x"] + x, box["y"] + y)
    wait_js(page, f"{CHART}.tooltip.opacity > 0 && {CHART}.tooltip.body && {CHART}.tooltip.body.length > 0")
    lines = page.evaluate(f"{CHART}.tooltip.body.flatMap(b => b.lines)")
    assert any("at 1,000 threads" in line for line in lines), lines
    assert any("one printed figure" in line for line in lines), lines
    page.screenshot(path=str(SHOTS / "28-seeds-chart-1440.png"), full_page=False)

    # 1280×800 (and 1440): every table fits its box, no column cut or scrolled to (the table size and tables columns,
    # the same in every row, are in the heading); their headers break between words only.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.locator("table.comparison").first.scroll_into_view_if_needed()
    for width in (1440, 1280):
        page.set_viewport_size({"width": width, "height": 800 if width == 1280 else 900})
        fits = page.evaluate("[...document.querySelectorAll('table.comparison')].map(t => "
                             "[t.scrollWidth, t.closest('.table-scroll').clientWidth])")
        assert all(table_w <= box_w for table_w, box_w in fits), (width, fits)
    assert page.locator("h2", has_text="1 × 10,000").count() >= 1
    assert not table.locator("thead th[data-metric=table_size]").is_visible()
    heads = page.evaluate("[...document.querySelector('table.comparison').querySelectorAll('thead th')].map(th => "
                          "[th.innerText, th.scrollWidth <= th.clientWidth])")
    assert all(fits for _, fits in heads), heads
    words = {word for text, _ in heads for word in text.split()}
    assert "Concurrency" in words and "Specification" in words  # whole: not "Specifica" "tion"
    page.screenshot(path=str(SHOTS / "28-seeds-compare-1280.png"), full_page=False)

    # The print-ready report: the same one-table shape on A4, as PDF and as print media.
    page.goto(f"/compare/report/?campaign={campaign.pk}&published=004")
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
    wait_js(page, CHARTS_DRAWN, timeout_ms=120_000)  # nine charts, one block per idle moment on a busy machine
    qps = page.locator("table.comparison").first
    assert qps.locator("td.published-figure").count() == 10
    widths = page.evaluate("[...document.querySelectorAll('table.comparison')].map(t => "
                           "[t.getBoundingClientRect().width, t.parentElement.getBoundingClientRect().width])")
    assert all(table_w <= box_w + 1 for table_w, box_w in widths), widths
    # Every chart's y-axis title is whole: no longer than its axis (Chart.js cuts it to the axis' length).
    titles = page.evaluate(
        "[...document.querySelectorAll('canvas')].map(c => Chart.getChart(c)).filter(ch => ch && ch.scales.y)"
        ".map(ch => { const t = ch.scales.y.options.title; if (!t.display) return null; ch.ctx.save();"
        " ch.ctx.font = Chart.helpers.toFont(t.font).string; const w = ch.ctx.measureText(t.text).width;"
        " ch.ctx.restore(); return [t.text, w, ch.scales.y.height]; }).filter(Boolean)")
    assert titles and all(width <= height for _, width, height in titles), titles
    page.screenshot(path=str(SHOTS / "28-seeds-report-a4-print.png"), full_page=True)
    block = page.locator(".result-block").first
    block.scroll_into_view_if_needed()
    block.screenshot(path=str(SHOTS / "28-seeds-report-a4-print-table.png"))
    page.pdf(path=str(SHOTS / "28-seeds-report-a4.pdf"), format="A4", print_background=True)
    page.emulate_media(media="screen")

    # A phone: the table as cards, nothing wider than the screen.
    context, phone = open_page(browser, live_server.url, problems, viewport={"width": 390, "height": 844},
                               is_mobile=True, has_touch=True)
    phone.set_default_navigation_timeout(90_000)
    log_in(phone, "seeds-viewer", PASSWORD)
    phone.goto(f"/compare/?campaign={campaign.pk}&published=004")
    wait_js(phone, CHARTS_DRAWN, timeout_ms=120_000)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    card = phone.locator("table.comparison").first.locator("tbody tr").first
    card.scroll_into_view_if_needed()
    assert card.locator("td.published-figure").first.get_attribute("data-label").endswith("(published) QPS")
    phone.screenshot(path=str(SHOTS / "28-seeds-compare-390.png"), full_page=False)
    context.close()
    assert problems.items == []
