"""Untrusted cells in a real browser: a comparison whose PostgreSQL jobs were all client-bound says so in a
banner above it (with a link to why), marks those cells in the table and the charts, concludes from the trusted
cells and says what it left out; the "Include untrusted cells" switch keeps the comparison whole and states every
Δ% with its 95% interval and n; at 1280 px the two products' table fits without scrolling sideways."""
from __future__ import annotations

import re

import pytest

from tests.helpers.browser import SHOTS, log_in, open_page, wait_js
from tests.helpers.measured import mariadb_and_postgresql
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS_DRAWN = ("document.querySelectorAll('.charts canvas').length > 0 && "
                "[...document.querySelectorAll('.charts canvas')].every(c => Chart.getChart(c))")


def test_a_comparison_with_invalid_jobs_says_so_marks_them_and_concludes_from_the_trusted_ones(browser_page):
    browser, page, problems = browser_page
    mariadb, postgresql = mariadb_and_postgresql(invalid_postgresql=True)
    make_user("trust-viewer", "viewer")
    log_in(page, "trust-viewer", PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})
    url = f"/compare/?products={mariadb.pk}&products={postgresql.pk}"
    page.goto(url)
    wait_js(page, CHARTS_DRAWN)

    # The banner, above the table, before anything else of the comparison.
    banner = page.get_by_test_id("trust-banner")
    assert banner.is_visible()
    assert re.search(r"6 of 12 jobs invalid: the client host's CPU was saturated — why\.", banner.inner_text())
    assert banner.bounding_box()["y"] < page.locator("table.comparison").first.bounding_box()["y"]
    why = banner.get_by_role("link", name="why")
    assert re.search(r"/jobs/\d+/#validity-h$", why.get_attribute("href"))
    assert "leave out the 3 cells they make untrusted" in banner.inner_text()

    # The marked cells: PostgreSQL's three QPS cells carry an "invalid" badge whose title and text give the reason.
    table = page.locator("table.comparison").first
    qps = table.locator(f"td[data-metric=qps][data-product='{postgresql.pk}']")
    assert qps.count() == 3
    for i in range(3):
        cell = qps.nth(i)
        assert cell.get_attribute("data-untrusted") == "1"
        badge = cell.locator("a.badge.verdict-invalid")
        assert "2 of 2 jobs invalid: the client host's CPU was saturated" in badge.get_attribute("title")
        assert "the client host's CPU was saturated" in cell.inner_text()
    assert table.locator(f"td[data-metric=qps][data-product='{mariadb.pk}'][data-untrusted]").count() == 0

    # The charts mark the same points, crossed, and say why on hover.
    chart = "Chart.getChart(document.querySelector('canvas[data-chart=qps_lines]'))"
    assert page.evaluate(f"{chart}.data.datasets[1].data.map(p => p.verdict)") == ["invalid"] * 3
    assert page.evaluate(f"{chart}.data.datasets[1].pointStyle") == ["crossRot"] * 3
    assert page.evaluate(f"{chart}.data.datasets[0].pointStyle") == ["circle"] * 3
    canvas = page.locator("canvas[data-chart=qps_lines]").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    x, y = page.evaluate(f"[{chart}.getDatasetMeta(1).data[2].x, {chart}.getDatasetMeta(1).data[2].y]")
    page.mouse.move(box["x"] + x, box["y"] + y)
    wait_js(page, f"{chart}.tooltip.opacity > 0 && {chart}.tooltip.body && {chart}.tooltip.body.length > 0")
    lines = page.evaluate(f"{chart}.tooltip.body.flatMap(b => b.lines)")
    assert "invalid: the client host's CPU was saturated (click for the findings)" in lines, lines

    # The conclusion: from trusted cells, saying what it left out, claiming nothing.
    conclusion = page.get_by_test_id("conclusion").first.inner_text()
    assert ("No row has trusted results of both PostgreSQL (local) and MariaDB (local) (3 rows with suspect or "
            "invalid cells left out)") in conclusion
    assert "faster" not in conclusion and "slower" not in conclusion
    # Every Δ% shows its interval under it, the cell saying it comes from untrusted cells.
    delta = table.locator("tr[data-threads='1'] td[data-metric=delta]")
    assert re.search(r"\+\d+\.\d%\n[-+]\d+\.\d% … \+\d+\.\d%\ntoo few runs to tell \(n = 2\)\nfrom untrusted cells",
                     delta.inner_text()), delta.inner_text()
    page.screenshot(path=str(SHOTS / "28-compare-untrusted-1440.png"), full_page=False)

    # The switch: the comparison stays whole (both products), and the conclusion now counts every cell.
    switch = banner.get_by_role("switch", name="Include untrusted cells")
    assert switch.get_attribute("aria-checked") == "false"
    switch.click()
    page.wait_for_url(re.compile(r"untrusted=on"))
    wait_js(page, CHARTS_DRAWN)
    assert page.get_by_role("switch", name="Include untrusted cells").get_attribute("aria-checked") == "true"
    assert page.locator("h1").inner_text() == "MariaDB (local) vs PostgreSQL (local)"
    assert "The conclusions below count the 3 untrusted cells" in page.get_by_test_id("trust-banner").inner_text()
    conclusion = page.get_by_test_id("conclusion").first.inner_text()
    assert "PostgreSQL (local) is faster than MariaDB (local): +" in conclusion
    one = re.search(r"(?:from|to) (\+\d+\.\d)% \(95% CI ([-+]\d+\.\d)% … (\+\d+\.\d)%\) at 1 thread", conclusion)
    assert one, conclusion
    low, high = float(one.group(2)), float(one.group(3))
    assert low < 0 < float(one.group(1)) < high
    assert "too few runs to tell in" in conclusion and "significant in 1 of 3 rows" in conclusion
    page.screenshot(path=str(SHOTS / "28-compare-untrusted-included-1440.png"), full_page=True)

    # The print-ready report: the banner and a summary from the trusted cells.
    page.goto(f"/compare/report/?products={mariadb.pk}&products={postgresql.pk}")
    assert "6 of 12 jobs invalid" in page.get_by_test_id("trust-banner").inner_text()
    summary = page.locator("section", has=page.get_by_role("heading", name="1. Summary")).inner_text()
    assert "No row has trusted results of both" in summary

    # Other widths: the banner and switch stay whole at 1280 and on a phone.
    for width, height, name in ((1280, 800, "1280"), (390, 844, "phone")):
        context, narrow = open_page(browser, page.url.split("/compare")[0], problems,
                                    viewport={"width": width, "height": height}, is_mobile=width < 500)
        try:
            log_in(narrow, "trust-viewer", PASSWORD)
            narrow.goto(url)
            banner = narrow.get_by_test_id("trust-banner")
            assert banner.is_visible()
            switch_box = banner.get_by_role("switch").bounding_box()
            assert switch_box["x"] >= 0 and switch_box["x"] + switch_box["width"] <= width
            if width == 1280:
                # Two products' table, every metric and detail shown, fits without scrolling sideways:
                # headers wrap between words, the cells' details between their parts.
                fits = narrow.evaluate("[...document.querySelectorAll('table.comparison')].map(t => "
                                       "[t.scrollWidth, t.closest('.table-scroll').clientWidth])")
                assert fits and all(table_w <= box_w for table_w, box_w in fits), fits
            narrow.screenshot(path=str(SHOTS / f"28-compare-untrusted-{name}.png"), full_page=False)
        finally:
            context.close()
    assert not problems.items, "\n".join(problems.items)
