"""The print-ready report's charts on A4: printed from a 1440 or 1280 px window, its two charts
sit side by side within the page, neither over the other nor cut at the page's edge.

A browser prints by laying the page out again at the paper's width, without waiting for Chart.js's ResizeObserver:
each canvas keeps the size it had in the window. The test does the same in one step (print media, then the page at
A4's printable width, measured before any observer runs), then lets the charts settle for the screenshots and the
PDF."""
from __future__ import annotations

import pytest

from tests.helpers.browser import A4_PRINTABLE_PX, SHOTS, log_in, wait_js
from tests.helpers.measured import mariadb_and_postgresql
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS_DRAWN = ("document.querySelectorAll('.charts canvas').length > 1 && "
                "[...document.querySelectorAll('.charts canvas')].every(c => Chart.getChart(c))")
# The page laid out at the paper's width, and each chart's canvas and box measured, in one synchronous step.
PRINT_LAYOUT = """(width) => {
  document.documentElement.style.width = width + 'px';
  const page = document.querySelector('.whitepaper').getBoundingClientRect();
  return [...document.querySelectorAll('.charts')].map(charts => [...charts.querySelectorAll('canvas')].map(c => {
    const r = c.getBoundingClientRect(), box = c.closest('.chart-box').getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, boxLeft: box.left, boxRight: box.right,
            boxBottom: box.bottom, pageLeft: page.left, pageRight: page.right};
  }));
}"""


@pytest.mark.parametrize("window", [1440, 1280])
def test_the_reports_charts_fit_a4_side_by_side_from_a_wide_window(browser_page, window):
    browser, page, problems = browser_page
    mariadb, postgresql = mariadb_and_postgresql()
    make_user("print-viewer", "viewer")
    log_in(page, "print-viewer", PASSWORD)
    page.set_viewport_size({"width": window, "height": 900})
    page.goto(f"/compare/report/?products={mariadb.pk}&products={postgresql.pk}")
    wait_js(page, CHARTS_DRAWN)
    page.emulate_media(media="print")
    blocks = page.evaluate(PRINT_LAYOUT, A4_PRINTABLE_PX)
    assert blocks and all(len(charts) >= 2 for charts in blocks), blocks
    for charts in blocks:
        for chart in charts:  # within its own box and within the page
            assert chart["boxLeft"] - 0.5 <= chart["left"] and chart["right"] <= chart["boxRight"] + 0.5, chart
            assert chart["pageLeft"] - 0.5 <= chart["left"] and chart["right"] <= chart["pageRight"] + 0.5, chart
            assert chart["bottom"] <= chart["boxBottom"] + 0.5, chart
        for left, right in zip(charts, charts[1:], strict=False):  # side by side, apart
            if abs(left["top"] - right["top"]) < 1:
                assert left["right"] <= right["left"], (left, right)
    # Settled (the observers have run): each chart draws at its printed size, not stretched from the window's.
    page.set_viewport_size({"width": A4_PRINTABLE_PX, "height": 1123})
    wait_js(page, "[...document.querySelectorAll('.charts canvas')].every(c => { const ch = Chart.getChart(c);"
                  " return ch && Math.abs(ch.width - c.closest('.chart-box').clientWidth) <= 1; })")
    page.locator(".charts").first.screenshot(path=str(SHOTS / f"43-report-charts-a4-from-{window}.png"))
    page.set_viewport_size({"width": window, "height": 900})
    page.emulate_media(media="screen")
    page.pdf(path=str(SHOTS / f"43-report-a4-from-{window}.pdf"), format="A4", print_background=True)
    assert not problems.items, "\n".join(problems.items)
