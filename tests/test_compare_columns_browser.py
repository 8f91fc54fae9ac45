"""Tables that fit and choosing made easy, in a real browser.

Four measured products with TPS, average and p95 latency and three repetitions a cell: the widest comparison table
the page draws (23 columns). At 1280 px no cell is cut by the page: the table scrolls inside its own box, its
first column stays in sight when it is scrolled to the right and its header row when it is scrolled down. The
column chooser hides metric columns and cell details, on the comparison and the report, and a reload keeps the
choice. "Change what is compared" is searchable chips: typed to filter, picked with Enter, taken off with
Backspace, submitted into the URL, and shown again after a reload; the baseline is a searchable single choice of its
own beside them, typed and picked with Enter, and the page reads "Baseline: X" with the other columns as chips that
make one the baseline in a click (or Enter), kept in the URL.
The page printed as it is goes on A4 landscape with every table within the page and every header whole.
Screenshots at 1440×900, 1280×800, A4 print and 390×844 in test-output/screenshots/tables-*.png.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from campaigns.models import Campaign, Job, JobResult, Product, Run, Scenario, Target
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, BrowserProblems, log_in, open_page, wait_js
from tests.helpers.ui import PASSWORD, make_user

# Seven page loads of a 132-job comparison in three browser contexts: on two cores shared with other suites that
# can pass the suite's 300 s default.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

NAMES = ("Alpha DB", "Beta DB", "Gamma DB", "Delta DB")


def _measure(product: Product, scenario: Scenario, base_qps: float, threads: tuple[int, ...]) -> Target:
    """Succeeded jobs of one target: three repetitions per thread count, with TPS and both latencies."""
    spec = InstanceSpecFactory(label="8-core 32 GB (local)", cpu_cores=8, memory_gb=32)
    target = Target.objects.create(name=f"{product.name} local", product=product, spec=spec, driver="mysql",
                                   host="127.0.0.1", port=3306, database="sbtest", user="root")
    campaign = Campaign.objects.create(name=f"campaign {product.name}", threads=list(threads), repetitions=3)
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    position = 0
    for count in threads:
        for repetition, factor in enumerate((0.97, 1.0, 1.04), start=1):
            qps = base_qps * count ** 0.5 * factor
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=count, repetition=repetition,
                                     position=position, tables=scenario.dataset.tables,
                                     table_size=scenario.dataset.table_size, status=Job.Status.SUCCEEDED,
                                     phase="done", started_at=now, finished_at=now,
                                     command_line=f"sysbench {scenario.test} --threads={count} run")
            JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=count / qps * 1000,
                                     latency_pct=95.0, latency_pct_ms=2 * count / qps * 1000)
            position += 1
    return target


def _comparison() -> list[Target]:
    scenario = ScenarioFactory(name="oltp read write, 8 tables",
                               dataset=DatasetFactory(name="wide ds", tables=8, table_size=1_000_000))
    threads = tuple(2 ** i for i in range(11))  # 1 … 1024: more rows than the box is high
    return [_measure(ProductFactory(name=name), scenario, 10_000.0 * (i + 1), threads) for i, name in enumerate(NAMES)]


# Every visible cell of every measured comparison table, scrolled into its box's view: is the box inside the page
# (no cell cut by the window's edge) and the cell inside the box, where nothing sticky covers it?
CLIPPED = """() => {
  const out = [];
  const page = document.documentElement.clientWidth;
  for (const cell of document.querySelectorAll("table.comparison:not(.beside) :is(th, td)")) {
    if (cell.offsetParent === null) continue;  // a column the chooser hides
    const box = cell.closest(".table-scroll");
    const b = box.getBoundingClientRect();
    if (b.left < -1 || b.right > page + 1) { out.push("box outside the page: " + b.left + "–" + b.right); break; }
    if (box.scrollWidth <= box.clientWidth) {  // no scrolling: the cell must be in the box as it is
      const r = cell.getBoundingClientRect();
      if (r.left < b.left - 1 || r.right > b.right + 1) out.push(cell.textContent.trim());
      continue;
    }
    // A group's heading over more columns than the box shows at once beside its sticky columns is read by
    // scrolling along it.
    const beside = box.clientWidth - (parseFloat(box.style.scrollPaddingLeft) || 0);
    if (cell.colSpan > 1 && cell.getBoundingClientRect().width > beside) continue;
    box.scrollLeft = 0;
    cell.scrollIntoView({block: "nearest", inline: "nearest"});
    const r = cell.getBoundingClientRect();
    if (r.left < b.left - 1 || r.right > b.right + 1) {
      out.push(cell.textContent.trim() + ` ${r.left}–${r.right} in ${b.left}–${b.right}`);
    }
  }
  return out;
}"""


# Printed: each visible comparison table ends within the page, and no header's words or cell's figures run past
# their cell's edge.
PRINT_FIT = """() => {
  const out = [];
  const page = document.documentElement.clientWidth;
  for (const table of document.querySelectorAll("table.comparison")) {
    if (table.offsetParent === null) continue;
    const right = table.getBoundingClientRect().right;
    if (right > page + 1) out.push(`${table.id || "a table"} ends at ${Math.round(right)} px on a ${page} px page`);
    for (const th of table.querySelectorAll("thead th")) {
      if (th.offsetParent !== null && th.scrollWidth > th.clientWidth + 1) out.push("header cut: " + th.textContent.trim());
    }
    for (const td of table.querySelectorAll("tbody td")) {
      if (td.offsetParent !== null && td.scrollWidth > td.clientWidth + 1) out.push("cell spills: " + td.textContent.trim());
    }
  }
  return out;
}"""

# Is the element the one a user sees (and hits) at a point inside it, near its top left?
ON_TOP = """(el) => { const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + 4, r.top + Math.min(r.height / 2, 10));
  return hit === el || el.contains(hit); }"""


def _browser(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def _page(browser: Any, live_server: Any, problems: BrowserProblems, **options: Any) -> tuple[Any, Any]:
    """open_page with a minute for each wait: a comparison of 132 jobs on a shared machine of two busy cores."""
    context, page = open_page(browser, live_server.url, problems, **options)
    context.set_default_timeout(60_000)
    return context, page


def test_no_cell_is_clipped_at_1280_and_the_first_column_and_header_stay_while_scrolling(live_server, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    targets = _comparison()
    query = "&".join(f"targets={t.pk}" for t in targets)
    make_user("columns-viewer", "viewer")
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = _browser(playwright)
        context, page = _page(browser, live_server, problems, viewport={"width": 1280, "height": 800})
        log_in(page, "columns-viewer", PASSWORD)
        page.goto(f"/compare/?{query}")
        table = page.locator("table.comparison").first
        box = page.locator(".table-scroll").filter(has=table)
        assert "p95 latency (ms)" in table.locator("thead").inner_text()
        # The page itself never scrolls sideways; the table does, inside its box, and no cell is cut.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert box.evaluate("e => e.scrollWidth > e.clientWidth")
        assert page.evaluate(CLIPPED) == []
        box.evaluate("e => { e.scrollLeft = 0; e.scrollTop = 0; }")
        page.screenshot(path=str(SHOTS / "tables-1280.png"))

        # Scrolled to the far right: the specification column is still at the box's left edge, and on top there.
        box.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        edge = box.bounding_box()
        first = table.locator("tbody th[scope=row]").first
        spec = first.bounding_box()
        assert abs(spec["x"] - edge["x"]) <= 2
        assert first.evaluate(ON_TOP), "the cells scrolled left cover the first column"
        # Scrolled down as well: the header row stays at the box's top.
        assert box.evaluate("e => e.scrollHeight > e.clientHeight")
        box.evaluate("e => { e.scrollTop = e.scrollHeight; }")
        corner = table.locator("thead th").first
        assert abs(corner.bounding_box()["y"] - box.bounding_box()["y"]) <= 2
        assert corner.evaluate(ON_TOP), "the rows scrolled under the head cover its first cell"
        box.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "tables-1280-scrolled.png"))
        box.evaluate("e => { e.scrollLeft = 0; e.scrollTop = 0; }")

        # The column chooser: TPS and the spread lines hidden, in every table; a reload keeps the choice.
        chooser = page.get_by_test_id("column-chooser")
        assert chooser.is_visible()
        width = box.evaluate("e => e.scrollWidth")
        chooser.get_by_label("TPS", exact=True).uncheck()
        chooser.get_by_label("min–max, sd, CV").uncheck()
        assert not table.locator("td[data-metric=tps]").first.is_visible()
        assert not table.locator(".spread").first.is_visible()
        assert table.locator("td[data-metric=latency_pct_ms]").first.is_visible()
        assert box.evaluate("e => e.scrollWidth") < width
        page.reload()
        assert not chooser.get_by_label("TPS", exact=True).is_checked()
        assert not table.locator("td[data-metric=tps]").first.is_visible()
        assert not table.locator(".spread").first.is_visible()
        assert page.evaluate(CLIPPED) == []
        page.screenshot(path=str(SHOTS / "tables-1280-chooser.png"))
        # The report on screen follows the same choice: its TPS table is gone, its latency table is there.
        page.goto(f"/compare/report/?{query}")
        assert not page.locator("table.comparison[id$='-tps']").first.is_visible()
        assert page.locator("table.comparison[id$='-latency']").first.is_visible()
        assert page.evaluate(CLIPPED) == []
        page.get_by_test_id("column-chooser").get_by_role("button", name="show all").click()
        assert page.locator("table.comparison[id$='-tps']").first.is_visible()
        page.screenshot(path=str(SHOTS / "tables-1280-report.png"))
        context.close()

        # 1440×900 as the reader had it, and a phone, where each row is a card within the screen.
        context, page = _page(browser, live_server, problems, viewport={"width": 1440, "height": 900})
        log_in(page, "columns-viewer", PASSWORD)
        page.goto(f"/compare/?{query}")
        assert page.evaluate(CLIPPED) == []
        page.screenshot(path=str(SHOTS / "tables-1440.png"))
        context.close()
        # The page printed as it is (not its print-ready report): A4 landscape, whose 277 mm between the margins
        # are 1,047 px; every table within the page, no header word or figure past its cell.
        context, page = _page(browser, live_server, problems, viewport={"width": 1047, "height": 740})
        log_in(page, "columns-viewer", PASSWORD)
        page.goto(f"/compare/?{query}")
        page.emulate_media(media="print")
        page.screenshot(path=str(SHOTS / "tables-a4-landscape-print.png"), full_page=True)
        assert page.evaluate(PRINT_FIT) == []
        pdf = page.pdf(path=str(SHOTS / "tables-a4-landscape.pdf"), prefer_css_page_size=True, print_background=True)
        sizes = {(round(float(w)), round(float(h))) for w, h in re.findall(rb"MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", pdf)}
        assert sizes == {(842, 595)}, sizes  # A4 landscape in points
        context.close()
        context, page = _page(browser, live_server, problems, viewport={"width": 390, "height": 844},
                                  is_mobile=True, has_touch=True)
        log_in(page, "columns-viewer", PASSWORD)
        page.goto(f"/compare/?{query}")
        assert page.evaluate("document.documentElement.scrollWidth <= 390")
        card = page.locator("table.comparison tbody tr").first
        card.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "tables-390.png"))
        context.close()
        browser.close()
    assert not problems.items, "\n".join(problems.items)


def _label(target: Target) -> str:
    """A target as the choice lists name it."""
    return f"{target.name} ({target.product.name})"


def _chips(chips: Any) -> list[str]:
    """The chips' texts, without their remove buttons' ×."""
    return [text.replace("×", "").strip() for text in chips.all_inner_texts()]


def test_targets_are_chosen_as_searchable_chips_with_the_keyboard_and_kept_in_the_url(live_server, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    alpha, beta, gamma, _ = _comparison()
    make_user("chips-viewer", "viewer")
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = _browser(playwright)
        context, page = _page(browser, live_server, problems, viewport={"width": 1280, "height": 800})
        log_in(page, "chips-viewer", PASSWORD)
        page.goto(f"/compare/?targets={gamma.pk}")  # a comparison open: its choice form is collapsed
        page.locator("#compare-choice summary").click()
        wait_js(page, "!!document.querySelector('#id_targets.tomselected')")
        field = page.get_by_role("combobox", name="Targets", exact=True)
        chips = page.locator("#id_targets + .ts-wrapper .item")
        assert _chips(chips) == [_label(gamma)]
        # Backspace in the empty box takes the last chip off; typing filters; Enter adds the one found.
        field.focus()  # as Tab reaches it
        field.press("Backspace")
        assert chips.count() == 0
        field.type("alph")
        shown = "[...document.querySelectorAll('#id_targets-ts-dropdown .option')].map(o => o.textContent.trim())"
        wait_js(page, f"{shown}.length === 1")  # the four targets narrowed to the one that matches
        assert page.evaluate(shown) == [_label(alpha)]
        field.press("Enter")
        field.type("beta")
        wait_js(page, f"{shown}.length === 1")
        field.press("Enter")
        assert _chips(chips) == [_label(alpha), _label(beta)]
        assert page.evaluate("[...document.getElementById('id_targets').selectedOptions].map(o => +o.value)") == [
            alpha.pk, beta.pk]
        page.screenshot(path=str(SHOTS / "tables-chips-1280.png"))
        page.locator("#compare-submit").click()
        page.wait_for_url(lambda url: f"targets={alpha.pk}" in url)
        wanted = {str(alpha.pk), str(beta.pk)}
        assert set(parse_qs(urlsplit(page.url).query)["targets"]) == wanted
        heading = page.locator("h1").inner_text()
        assert alpha.product.name in heading and beta.product.name in heading
        head = page.locator("table.comparison thead").first.inner_text()
        assert "Alpha DB" in head and "Beta DB" in head and "Gamma DB" not in head

        # The baseline is a searchable single choice of its own, read "Baseline: X": typed and picked with Enter, it
        # goes into the URL with Compare.
        page.locator("#compare-choice summary").click()
        wait_js(page, "!!document.querySelector('#id_baseline.tomselected')")
        baseline = page.get_by_role("combobox", name="Baseline", exact=True)
        chosen = "document.querySelector('#id_baseline + .ts-wrapper .item').textContent.trim()"
        value = "document.getElementById('id_baseline').value"
        assert page.evaluate(chosen) == "Alpha DB"
        assert page.get_by_test_id("baseline-choice").inner_text().startswith("Baseline: Alpha DB")
        baseline.focus()
        baseline.type("bet")
        shown = "[...document.querySelectorAll('#id_baseline-ts-dropdown .option')].map(o => o.textContent.trim())"
        wait_js(page, f"{shown}.length === 1")
        assert page.evaluate(shown) == ["Beta DB"]
        baseline.press("Enter")  # picks Beta, does not submit the form
        assert page.evaluate(chosen) == "Beta DB" and page.evaluate(value) == str(beta.product_id)
        assert "baseline=" not in page.url
        page.screenshot(path=str(SHOTS / "tables-baseline-choice-1280.png"))
        page.locator("#compare-submit").click()
        page.wait_for_url(lambda url: f"baseline={beta.product_id}" in url)
        assert "Δ% QPS vs Beta DB" in page.locator("table.comparison thead").first.inner_text()

        # A reload shows the same chips (the URL holds them) and the same baseline.
        page.reload()
        page.locator("#compare-choice summary").click()
        wait_js(page, "!!document.querySelector('#id_targets.tomselected')")
        wait_js(page, "!!document.querySelector('#id_baseline.tomselected')")
        assert sorted(_chips(chips)) == sorted([_label(alpha), _label(beta)])
        assert page.evaluate(chosen) == "Beta DB"
        choice = page.get_by_test_id("baseline-choice")
        assert choice.inner_text().startswith("Baseline: Beta DB")
        page.screenshot(path=str(SHOTS / "tables-chips-baseline.png"))

        # Above the tables, the other column is a chip that makes it the baseline in one click, from the keyboard too.
        page.locator("#compare-choice summary").click()  # closed again
        other = choice.get_by_role("link", name="Alpha DB", exact=True)
        other.focus()
        page.keyboard.press("Enter")
        page.wait_for_url(lambda url: f"baseline={alpha.product_id}" in url)
        assert "Δ% QPS vs Alpha DB" in page.locator("table.comparison thead").first.inner_text()
        assert page.get_by_test_id("baseline-choice").inner_text().startswith("Baseline: Alpha DB")
        assert set(parse_qs(urlsplit(page.url).query)["targets"]) == wanted
        context.close()

        # Without JavaScript the same form is plain lists that submit the same parameters.
        context = browser.new_context(base_url=live_server.url, java_script_enabled=False,
                                      viewport={"width": 1280, "height": 800})
        page = context.new_page()
        log_in(page, "chips-viewer", PASSWORD)
        page.goto("/compare/")
        page.locator("#id_targets").select_option([str(alpha.pk), str(gamma.pk)])
        page.locator("#compare-submit").click()
        assert set(parse_qs(urlsplit(page.url).query)["targets"]) == {str(alpha.pk), str(gamma.pk)}
        assert "Gamma DB" in page.locator("table.comparison thead").first.inner_text()
        context.close()
        browser.close()
    assert not problems.items, "\n".join(problems.items)
