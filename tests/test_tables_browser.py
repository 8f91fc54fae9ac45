"""Tables fit (issue "A first comparison in five minutes", Reading results): on a 1440 px screen the first columns
stick while the rest scroll and every column can be reached; a column chooser hides QPS, Δ% and TPS, and is
remembered; printed on A4 no column is cut; on a phone each row is a card naming every cell.

The comparison is three measured products with TPS and latency beside seed 001's published TencentDB figures,
so the widest tables the page has (the published columns beside QPS, p95 latency last)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.browser import (
    A4_PRINTABLE_PX,
    CHROMIUM,
    CHROMIUM_ARGS,
    SHOTS,
    BrowserProblems,
    log_in,
    open_page,
    wait_js,
)
from tests.helpers.measured import published_comparison
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A4 less the report's 14 mm side margins (app.css @page), in CSS pixels: what a printed page has for a table.




def _login(page: Any) -> None:
    make_user("tables-viewer", "viewer")
    log_in(page, "tables-viewer", PASSWORD)


# Every header cell of every comparison table, scrolled into its container's view: is it inside the container's
# box, and is it the element a user would hit there (not hidden under the sticky columns)?
UNREACHABLE = """() => {
  const out = [];
  for (const th of document.querySelectorAll("table.comparison thead th")) {
    if (th.offsetParent === null) continue;  // hidden by the column switch
    const box = th.closest(".table-scroll");
    box.scrollLeft = 0;
    th.scrollIntoView({block: "nearest", inline: "nearest"});
    const c = box.getBoundingClientRect(), r = th.getBoundingClientRect();
    const x = Math.min(r.right - 2, r.left + r.width / 2), y = r.top + Math.min(r.height / 2, 8);
    const hit = document.elementFromPoint(x, y);
    const inside = r.left >= c.left - 1 && r.right <= c.right + 1;
    if (!inside || !hit || !(hit === th || th.contains(hit))) out.push(th.textContent.trim());
  }
  return out;
}"""


def test_every_column_is_reachable_switchable_printable_and_a_card_on_a_phone(live_server, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    query = published_comparison()
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context, page = open_page(browser, live_server.url, problems, viewport={"width": 1440, "height": 900})
        _login(page)
        page.goto(f"/compare/?{query}")
        # The published figures are columns of the measured table: one table per document table.
        measured = page.locator("table.comparison").first
        headers = measured.locator("thead").inner_text()
        assert "p95 latency (ms)" in headers and "TPS" in headers
        assert "÷ published" in headers and measured.locator("thead th.group.published").count() >= 1
        # The widest table is wider than its box at 1440 px: it scrolls, and every header can be reached.
        scroll = page.locator(".table-scroll").filter(has=measured)
        assert scroll.evaluate("e => e.scrollWidth > e.clientWidth")
        assert page.evaluate(UNREACHABLE) == []
        # Scrolled to its far right, the specification and concurrency columns are still at the box's left edge.
        scroll.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        box = scroll.bounding_box()
        spec = measured.locator("tbody th[scope=row]").first.bounding_box()
        threads = measured.locator("tbody tr").first.locator("td").first.bounding_box()  # concurrency
        assert abs(spec["x"] - box["x"]) <= 2 and threads["x"] <= spec["x"] + spec["width"] + 2
        page.screenshot(path=str(SHOTS / "tables-1440-scrolled.png"))
        scroll.evaluate("e => { e.scrollLeft = 0; }")

        # The column chooser: latency only (QPS, Δ% and TPS unticked), and a reload keeps the choice.
        chooser = page.get_by_test_id("column-chooser")
        for label in ("QPS", "Δ% QPS", "TPS"):
            chooser.get_by_label(label, exact=True).uncheck()
        assert not measured.locator("thead th[data-metric=qps]").first.is_visible()
        assert not measured.locator("tbody td[data-metric=tps]").first.is_visible()
        assert measured.locator("thead th[data-metric=latency_pct_ms]").first.is_visible()
        page.reload()
        assert not chooser.get_by_label("TPS", exact=True).is_checked()
        assert not measured.locator("thead th[data-metric=qps]").first.is_visible()
        assert page.evaluate(UNREACHABLE) == []
        page.screenshot(path=str(SHOTS / "tables-1440-latency.png"))

        # Printed on A4: every column of every table is within the page's width, whatever the switch shows.
        page.set_viewport_size({"width": A4_PRINTABLE_PX, "height": 1100})
        page.emulate_media(media="print")
        for url in (f"/compare/?{query}", f"/compare/report/?{query}"):
            page.goto(url)
            wait_js(page, "document.readyState === 'complete'")
            outside = page.evaluate("""(width) => [...document.querySelectorAll("table.comparison :is(th, td)")]
                .filter(c => c.offsetParent !== null && c.getBoundingClientRect().right > width + 1)
                .map(c => c.textContent.trim())""", A4_PRINTABLE_PX)
            assert outside == [], (url, outside[:5])
            text = page.locator("main").inner_text()
            assert "p95 latency (ms)" in text and "÷ published" in text
        page.locator(".result-block").first.screenshot(path=str(SHOTS / "tables-a4-report.png"))
        page.pdf(path=str(SHOTS / "tables-a4-report.pdf"), format="A4")
        context.close()

        # A phone: each row is a card, and its cells say which column they are, p95 and the ratio included.
        phone, page = open_page(browser, live_server.url, problems, viewport={"width": 390, "height": 844},
                                is_mobile=True, has_touch=True)
        log_in(page, "tables-viewer", PASSWORD)
        page.goto(f"/compare/?{query}")
        page.get_by_test_id("column-chooser").get_by_role("button", name="show all").click()
        card = page.locator("table.comparison tbody tr").first
        labels = card.locator("td").evaluate_all(
            "cells => cells.map(c => getComputedStyle(c, '::before').content.replace(/^\"|\"$/g, ''))")
        assert any(label.startswith("p95 latency (ms)") for label in labels), labels
        assert all(cell["x"] >= 0 and cell["x"] + cell["width"] <= 390 + 1 for cell in
                   card.locator("td").evaluate_all("cells => cells.map(c => c.getBoundingClientRect().toJSON())"))
        ratio = card.locator("td.ratio").first
        assert ratio.is_visible()
        assert "÷ published" in ratio.evaluate("c => getComputedStyle(c, '::before').content")
        card.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "tables-phone-card.png"))
        phone.close()
        browser.close()
    assert not problems.items, "\n".join(problems.items)


def _login_again(page: Any) -> None:
    log_in(page, "tables-viewer", PASSWORD)
