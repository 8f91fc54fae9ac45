"""A TPC-C-shaped workload's comparison in a real browser: one table per scenario with a row per warehouse count
("Warehouses" where a dataset's rows would be), a NewOrders-per-minute and an errors column per product beside TPS,
no cell cut at 1440 and 1280 px, and the column chooser naming both. Screenshots in
test-output/screenshots/tpcc-compare-*.png."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from campaigns.models import Campaign, Job, JobResult, Run, Scenario, Target
from campaigns.services.workloads import workload_save
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, BrowserProblems, log_in, open_page
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

TPCC_LIKE = Path(__file__).resolve().parent / "data" / "workloads" / "tpcc_like"


def _jobs(product_name: str, scenario: Scenario, factor: float) -> Target:
    spec = InstanceSpecFactory(label="4-core 16 GB (local)", cpu_cores=4, memory_gb=16)
    target = Target.objects.create(name=f"{product_name} local", product=ProductFactory(name=product_name),
                                   spec=spec, driver="mysql", host="127.0.0.1", port=3306, database="sbtest",
                                   user="root", workloads_allowed=True)
    campaign = Campaign.objects.create(name=f"tpcc {product_name}", threads=[4, 16], repetitions=2,
                                       table_sizes=[1, 2])
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    position = 0
    for warehouses in (1, 2):
        for threads in (4, 16):
            for repetition, noise in enumerate((0.98, 1.02), start=1):
                tps = 180 * factor * warehouses ** 0.3 * threads ** 0.5 * noise
                job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads,
                                         repetition=repetition, position=position, tables=1, table_size=warehouses,
                                         status=Job.Status.SUCCEEDED, phase="done", started_at=now, finished_at=now,
                                         verdict="valid", check_outcome="passed")
                transactions = int(tps * 60)
                JobResult.objects.create(job=job, qps=tps * 9, tps=tps, transactions=transactions,
                                         ignored_errors=int(transactions * 0.0047), duration_s=60.0,
                                         counted=int(transactions * 0.45), counted_per_min=transactions * 0.45,
                                         latency_avg_ms=threads / tps * 1000, latency_pct=95.0,
                                         latency_pct_ms=2.2 * threads / tps * 1000)
                position += 1
    return target


def test_warehouses_neworders_and_errors_columns_fit_at_1440_and_1280(live_server, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    files = {path.name: path.read_text() for path in sorted(TPCC_LIKE.glob("*.lua"))}
    version = workload_save(user=None, name="tpcc-like-browser", files=files, entry="tpcc_like.lua",
                            expected_errors_pct=0.5,
                            declared={"size_option": "scale", "size_unit": "warehouses",
                                      "counted_function": "new_order", "counted_label": "NewOrders",
                                      "check_command": "check"})
    scenario = ScenarioFactory(name="tpcc-like", test=version.label(), workload_version=version, options={},
                               dataset=DatasetFactory(name="tpcc-like 1", tables=1, table_size=1))
    targets = [_jobs("MariaDB", scenario, 1.0), _jobs("PostgreSQL", scenario, 0.8)]
    query = "&".join(f"targets={t.pk}" for t in targets)
    make_user("tpcc-viewer", "viewer")
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width, height in ((1440, 900), (1280, 800)):
            context, page = open_page(browser, live_server.url, problems, viewport={"width": width, "height": height})
            context.set_default_timeout(60_000)
            log_in(page, "tpcc-viewer", PASSWORD)
            page.goto(f"/compare/?{query}")
            table = page.locator("table.comparison").first
            head = table.locator("thead").inner_text()
            assert "Warehouses" in head and "NewOrders per minute" in head and "Errors / 1k txn" in head, head
            sizes = table.locator("tbody td[data-metric=table_size]").all_inner_texts()
            assert sorted(set(sizes)) == ["1", "2"], sizes
            counted = table.locator("tbody td[data-metric=counted]").all_inner_texts()
            assert len(counted) == 8 and all(text.strip() not in ("", "—") for text in counted), counted
            errors = table.locator("tbody td[data-metric=errors]").first.inner_text()
            assert errors.split() == ["4.68", "expected", "5"], errors
            assert "1 × 1, 1 × 2 warehouses" in page.locator("h2, h3").all_inner_texts().__str__()
            # The words name the size as the table does: each curve its own, the conclusion its rows'.
            text = page.locator("main").inner_text()
            assert "MariaDB (1 × 2 warehouses) peaks at" in text and "16 threads, 1 × 2 warehouses" in text, text
            assert " rows at" not in text and "× 1 rows" not in text and "× 2 rows" not in text
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            chooser: Any = page.locator("[data-column-chooser], .column-chooser").first
            if chooser.count():
                text = chooser.inner_text()
                assert "NewOrders per minute" in text and "Warehouses" in text, text
            page.screenshot(path=str(SHOTS / f"tpcc-compare-{width}.png"), full_page=True)
            context.close()
        browser.close()
    assert not problems.items, "\n".join(problems.items)
