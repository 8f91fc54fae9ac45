"""The run page's jobs table fits (issue "A first comparison in five minutes", Reading results), as the comparison's
tables do: the first columns stick while the rest scroll, the QPS / TPS / latency switch shows one metric group at a
time and is remembered, printed on A4 no column is cut, and on a 390×844 phone each job is a card naming its cells.

The run is a finished one of two targets with long names, two seed scenarios, two thread counts and two
repetitions, one job failed with its error: as wide as a run's table gets."""
from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from campaigns.comparison.formatting import fmt_number
from campaigns.models import Campaign, Job, JobResult, Run, Scenario, Target
from campaigns.seeds.services import template_load_all
from tests.factories import InstanceSpecFactory, ProductFactory
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
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

METRIC_HEADERS = {"qps": "QPS", "tps": "TPS", "latency_avg_ms": "Avg ms", "latency_pct_ms": "pct ms"}


def _finished_run() -> Run:
    template_load_all()
    scenarios = list(Scenario.objects.filter(name__in=["seed 001 · full cache · write",
                                                       "seed 001 · full cache · read-write range select"]))
    assert len(scenarios) == 2
    spec = InstanceSpecFactory(label="4-core 23 GB (local, NVMe)", cpu_cores=4, memory_gb=23)
    targets = [Target.objects.create(name=f"{name} on the benchmark host's local disk", spec=spec,
                                     product=ProductFactory(name=name), driver="mysql", host="127.0.0.1", port=3306,
                                     database="sbtest", user="root")
               for name in ("MariaDB 10.11 (local)", "MySQL 8.4 (local)")]
    campaign = Campaign.objects.create(name="wide run table", threads=[8, 64], repetitions=2)
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.PARTIALLY_SUCCEEDED, started_at=now, finished_at=now)
    position = 0
    for target in targets:
        for scenario in scenarios:
            for threads in (8, 64):
                for repetition in (1, 2):
                    failed = position == 5
                    job = Job.objects.create(
                        run=run, target=target, scenario=scenario, threads=threads, repetition=repetition,
                        position=position, tables=scenario.dataset.tables, table_size=scenario.dataset.table_size,
                        status=Job.Status.FAILED if failed else Job.Status.SUCCEEDED, phase="done", started_at=now,
                        finished_at=now, command_line=f"sysbench {scenario.test} --threads={threads} run",
                        error="sysbench exited 1: FATAL: mysql_stmt_execute() returned error 1213 (Deadlock found "
                              "when trying to get lock; try restarting transaction)" if failed else "",
                        cache_hit_ratio=None if failed else 0.9987)
                    if not failed:
                        qps = 12_345.67 * threads ** 0.5 * (1 + position / 100)
                        JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=threads / qps * 1000,
                                                 latency_pct=95.0, latency_pct_ms=2 * threads / qps * 1000)
                    position += 1
    return run


def _visible_metrics(table: Any) -> set[str]:
    """The metric groups whose header and first row's cell are both shown."""
    return {metric for metric in METRIC_HEADERS
            if table.locator(f"thead th[data-metric={metric}]").is_visible()
            and table.locator(f"tbody tr:first-child td[data-metric={metric}]").is_visible()}


# Every header and every cell of the jobs table, scrolled into its box's view: inside the box, and the element a
# user would hit there (not under the sticky columns, not beyond the page's right edge).
UNREACHABLE = """() => {
  const out = [];
  const table = document.getElementById("jobs-table");
  const box = table.closest(".table-scroll");
  for (const cell of table.querySelectorAll("thead th, tbody tr:first-child > *")) {
    if (cell.offsetParent === null) continue;  // hidden by the column switch
    box.scrollLeft = 0;
    cell.scrollIntoView({block: "nearest", inline: "nearest"});
    const c = box.getBoundingClientRect(), r = cell.getBoundingClientRect();
    const x = Math.min(r.right - 2, r.left + r.width / 2), y = r.top + Math.min(r.height / 2, 8);
    const hit = document.elementFromPoint(x, y);
    const inside = r.left >= c.left - 1 && r.right <= c.right + 1 && r.right <= window.innerWidth + 1;
    if (!inside || !hit || !(hit === cell || cell.contains(hit))) out.push(cell.textContent.trim().slice(0, 40));
  }
  box.scrollLeft = 0;
  return out;
}"""


def test_the_run_table_switches_metrics_prints_whole_and_is_cards_on_a_phone(live_server, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    run = _finished_run()
    make_user("run-table-viewer", "viewer")
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context, page = open_page(browser, live_server.url, problems, viewport={"width": 1440, "height": 900})
        log_in(page, "run-table-viewer", PASSWORD)
        page.goto(f"/runs/{run.pk}/")
        table = page.locator("#jobs-table")
        # Every column at first, every one of them reachable at 1440 px.
        assert page.get_by_role("group", name="Columns").is_visible()
        assert page.get_by_label("all", exact=True).is_checked()
        assert _visible_metrics(table) == set(METRIC_HEADERS)
        assert page.evaluate(UNREACHABLE) == []
        assert "Deadlock found" in table.locator("tbody tr").nth(5).inner_text()
        page.screenshot(path=str(SHOTS / "run-table-1440-all.png"), full_page=True)

        # Latency only: the QPS and TPS columns go, the two latency columns and the job's keys stay; a reload (and
        # the comparison page) keep the choice.
        page.get_by_label("latency", exact=True).check()
        assert _visible_metrics(table) == {"latency_avg_ms", "latency_pct_ms"}
        assert table.locator("thead th").all_inner_texts()[:5] == ["#", "Target", "Scenario", "Threads", "Status"]
        page.reload()
        assert page.get_by_label("latency", exact=True).is_checked()
        assert _visible_metrics(table) == {"latency_avg_ms", "latency_pct_ms"}
        assert page.evaluate(UNREACHABLE) == []
        page.get_by_label("TPS", exact=True).check()
        assert _visible_metrics(table) == {"tps"}
        page.get_by_label("QPS", exact=True).check()
        assert _visible_metrics(table) == {"qps"}
        first = table.locator("tbody tr").first
        qps = JobResult.objects.get(job__run=run, job__position=0).qps
        assert first.locator("td[data-metric=qps]").inner_text() == fmt_number(qps) == "34,919"
        page.screenshot(path=str(SHOTS / "run-table-1440-qps.png"), full_page=True)

        # Squeezed below its width, the table scrolls and the job's number and target stay at the box's left edge.
        page.set_viewport_size({"width": 900, "height": 900})
        page.get_by_label("all", exact=True).check()
        scroll = page.locator(".table-scroll").filter(has=table)
        assert scroll.evaluate("e => e.scrollWidth > e.clientWidth")
        wait_js(page, "document.getElementById('jobs-table').classList.contains('sticky-2')")
        scroll.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        box = scroll.bounding_box()
        number = first.locator("th[scope=row]").bounding_box()
        target = first.locator("td").first.bounding_box()
        assert abs(number["x"] - box["x"]) <= 2 and target["x"] <= number["x"] + number["width"] + 2
        assert page.evaluate(UNREACHABLE) == []
        page.screenshot(path=str(SHOTS / "run-table-900-scrolled.png"))

        # Printed on A4: every column within the page's width, whatever the switch shows.
        page.get_by_label("QPS", exact=True).check()
        page.set_viewport_size({"width": A4_PRINTABLE_PX, "height": 1100})
        page.emulate_media(media="print")
        page.reload()
        wait_js(page, "document.readyState === 'complete'")
        assert _visible_metrics(table) == set(METRIC_HEADERS)
        outside = page.evaluate("""(width) => [...document.querySelectorAll("#jobs-table :is(th, td)")]
            .filter(c => c.offsetParent !== null && c.getBoundingClientRect().right > width + 1)
            .map(c => c.textContent.trim())""", A4_PRINTABLE_PX)
        assert outside == [], outside[:5]
        assert "Deadlock found" in table.inner_text()
        table.screenshot(path=str(SHOTS / "run-table-a4.png"))
        page.pdf(path=str(SHOTS / "run-table-a4.pdf"), format="A4")
        context.close()

        # A phone: each job is a card, its cells labelled by their column, none wider than the screen.
        phone, page = open_page(browser, live_server.url, problems, viewport={"width": 390, "height": 844},
                                is_mobile=True, has_touch=True)
        log_in(page, "run-table-viewer", PASSWORD)
        page.goto(f"/runs/{run.pk}/")
        table = page.locator("#jobs-table")
        assert page.get_by_label("all", exact=True).is_checked()
        card = table.locator("tbody tr").first
        assert card.evaluate("r => getComputedStyle(r).display") == "block"
        number = card.locator("th[scope=row] a")
        assert number.evaluate("a => getComputedStyle(a, '::before').content") + number.inner_text() == '"Job #"1'
        labels = card.locator("td").evaluate_all(
            "cells => cells.map(c => getComputedStyle(c, '::before').content.replace(/^\"|\"$/g, ''))")
        assert labels == ["Target", "Scenario", "Threads", "Status", "QPS", "TPS", "Avg latency (ms)",
                          "Percentile latency (ms)", "Cache hits"]
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        cells = table.locator("tbody tr:nth-child(-n+6) :is(th, td)").evaluate_all(
            "cells => cells.map(c => c.getBoundingClientRect().toJSON())")
        assert all(c["x"] >= 0 and c["x"] + c["width"] <= 390 + 1 for c in cells)
        page.get_by_label("latency", exact=True).check()
        assert not card.locator("td[data-metric=qps]").is_visible()
        assert card.locator("td[data-metric=latency_pct_ms]").is_visible()
        page.get_by_label("all", exact=True).check()
        table.locator("tbody tr").nth(4).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "run-table-phone-cards.png"))
        phone.close()
        browser.close()
    assert not problems.items, "\n".join(problems.items)
