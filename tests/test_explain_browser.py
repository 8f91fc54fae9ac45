"""The comparison page's explanations in a real browser: under the conclusion, each product's peak and knee over
its thread ladder, what ran out per thread count and why the significant differences are what they are, at
1440 px, on a phone (390 px) and in the print-ready report; and a cell's side panel with its costs beside the
baseline's, what ran out, why it differs and its jobs' seconds on one time axis."""
from __future__ import annotations

import pytest

from campaigns.models import IntervalSample, Job, JobClient, JobResult, ServerSample
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.browser import SHOTS, log_in
from tests.helpers.measured import measure
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LADDER = (1, 2, 4, 8, 16, 32)


def _costs(misses: float, hit: float, reads: float) -> dict[str, float | None]:
    return {"rows_read_per_query": 20.0, "bp_misses_per_1k_queries": misses, "bp_hit_pct": hit,
            "data_reads_per_txn": reads, "data_writes_per_txn": 0.5, "row_lock_waits_per_s": 0.0,
            "lock_waits_per_txn": 0.0, "threads_running": 3.0, "threads_asked": 4.0,
            "server_cpu_ms_per_1k_queries": 60.0, "server_cpu_share_pct": 40.0, "client_cpu_ms_per_1k_queries": 20.0,
            "client_busy_share": 0.0, "host_busy_pct": 60.0, "rtt_ms": 0.1, "rtt_share_pct": 5.0}


def test_the_explanations_name_peaks_bounds_and_reasons_at_1440_390_and_on_paper(browser_page):
    browser, page, problems = browser_page
    spec = InstanceSpecFactory(label="4-core 16 GB", cpu_cores=4, memory_gb=16.0)
    scenario = ScenarioFactory(name="read only", test="oltp_read_only",
                               dataset=DatasetFactory(name="explain 1x200k", tables=1, table_size=200_000))
    # Big pool scales to 16 threads; small pool's misses keep it lower and it flattens after 4.
    big = measure(product=ProductFactory(name="big pool"), spec=spec, scenario=scenario, figures={
        t: [q * f for f in (0.99, 1.0, 1.01)] for t, q in zip(LADDER, (1000, 1950, 3800, 7000, 9000, 8800),
                                                                strict=True)})
    small = measure(product=ProductFactory(name="small pool"), spec=spec, scenario=scenario, figures={
        t: [q * f for f in (0.99, 1.0, 1.01)] for t, q in zip(LADDER, (400, 780, 1400, 1600, 1650, 1640),
                                                                strict=True)})
    JobResult.objects.filter(job__target=big).update(costs=_costs(0.0, 100.0, 0.0))
    JobResult.objects.filter(job__target=small).update(costs=_costs(1188.0, 94.0, 14.0))
    make_user("explain-viewer", "viewer")
    log_in(page, "explain-viewer", PASSWORD)
    query = f"products={big.product_id}&products={small.product_id}"

    for width, height, name in ((1440, 900, "1440"), (390, 844, "390")):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/compare/?{query}")
        block = page.get_by_test_id("explain").first
        block.scroll_into_view_if_needed()
        text = block.inner_text()
        assert "big pool peaks at 9,000 QPS at 16 threads (the true peak lies between 8 and 32" in text, text
        assert "small pool peaks at 1,650 QPS at 16 threads" in text and "stops scaling after 4 threads" in text
        assert "What ran out for small pool: I/O (buffer-pool misses) at 1, 2, 4, 8, 16 and 32 threads." in text
        assert "What ran out for big pool: no measured resource at 1, 2, 4, 8, 16 and 32 threads." in text
        # The same reasons at every count: said once, with the counts.
        assert text.count("small pool against big pool: 1,188 buffer-pool misses per 1,000 queries against none; "
                          "14.00 data-file reads per transaction against none.") == 1, text
        assert "At 1, 2, 4, 8, 16 and 32 threads: small pool against big pool" in text
        box = block.bounding_box()
        assert box["width"] <= width, box  # no sideways scrolling on a phone
        page.screenshot(path=str(SHOTS / f"44-explain-{name}.png"), full_page=False)

    page.goto(f"/compare/report/?{query}")
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 794, "height": 1123})
    report = page.get_by_test_id("explain").first
    report.scroll_into_view_if_needed()
    assert "What ran out for small pool: I/O" in report.inner_text()
    page.screenshot(path=str(SHOTS / "44-explain-report-a4.png"), full_page=False)
    # The report's section of costs: a line per cell, the costs its Why names in bold, what ran out.
    costs = page.get_by_test_id("report-costs").first
    costs.scroll_into_view_if_needed()
    lines = costs.locator("tbody tr")
    assert lines.count() == 2 * len(LADDER)
    small_at_8 = costs.locator("tbody tr", has_text="small pool").nth(3)
    assert "1,188" in small_at_8.inner_text() or "1188" in small_at_8.inner_text(), small_at_8.inner_text()
    assert small_at_8.locator("strong").first.inner_text() in ("1188", "1,188")
    assert "I/O (buffer-pool misses)" in small_at_8.inner_text()
    box = costs.bounding_box()
    assert box["width"] <= 794, box
    page.screenshot(path=str(SHOTS / "44-costs-report-a4.png"), full_page=False)
    assert problems.items == [], problems.items


def _seconds(job, qps: float, bp_reads: float) -> None:
    """20 seconds of sysbench's figures and of the server's counters for one job."""
    IntervalSample.objects.bulk_create([IntervalSample(
        job=job, client_index=0, t=float(t), threads=job.threads, tps=qps / 20, qps=qps * (1 + 0.01 * (t % 3)),
        reads_per_s=qps * 0.7, writes_per_s=0.0, other_per_s=qps * 0.3, latency_pct_ms=2000 * job.threads / qps,
        errors_per_s=0.0, reconnects_per_s=0.0) for t in range(1, 21)])
    ServerSample.objects.bulk_create([ServerSample(
        job=job, t=float(t), rates={"Questions": qps, "Innodb_buffer_pool_reads": bp_reads},
        gauges={"Threads_running": 3}) for t in range(1, 21)])


def test_a_cells_side_panel_shows_its_costs_bound_reasons_and_seconds_at_1440_and_390(browser_page):
    browser, page, problems = browser_page
    spec = InstanceSpecFactory(label="4-core 16 GB", cpu_cores=4, memory_gb=16.0)
    scenario = ScenarioFactory(name="read only", test="oltp_read_only",
                               dataset=DatasetFactory(name="panel 1x200k", tables=1, table_size=200_000))
    big = measure(product=ProductFactory(name="big pool"), spec=spec, scenario=scenario,
                  figures={4: [3800.0, 3850.0, 3790.0], 8: [7000.0, 7100.0, 6950.0]})
    small = measure(product=ProductFactory(name="small pool"), spec=spec, scenario=scenario,
                    figures={4: [1400.0, 1390.0, 1410.0], 8: [1600.0, 1610.0, 1590.0]})
    JobResult.objects.filter(job__target=big).update(costs=_costs(0.0, 100.0, 0.0))
    JobResult.objects.filter(job__target=small).update(costs=_costs(1188.0, 94.0, 14.0))
    for target, bp_reads in ((big, 0.0), (small, 1900.0)):
        for job in Job.objects.filter(target=target, threads=8).select_related("result"):
            _seconds(job, job.result.qps, bp_reads)
    # Server profiles (perf): the small pool's server spends its time reading pages, the big one's parsing.
    JobClient.objects.filter(job__target=big).update(profile={"samples": 500, "hz": 99, "window_s": 14.0, "symbols": [
        ["mariadbd", "MYSQLparse", 30.0], ["kernel", "finish_task_switch", 20.0], ["mariadbd", "buf_page_get_gen", 2.0]]})
    JobClient.objects.filter(job__target=small).update(profile={"samples": 400, "hz": 99, "window_s": 14.0, "symbols": [
        ["mariadbd", "buf_page_get_gen", 35.0], ["kernel", "finish_task_switch", 21.0], ["mariadbd", "MYSQLparse", 8.0]]})
    make_user("panel-viewer", "viewer")
    log_in(page, "panel-viewer", PASSWORD)
    query = f"products={big.product_id}&products={small.product_id}"

    for width, height, name in ((1440, 900, "1440"), (390, 844, "390")):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/compare/?{query}")
        row = page.locator("table.comparison tbody tr[data-threads='8']").first
        row.locator("td[data-metric=qps]").nth(1).click()
        panel = page.locator("dialog.cell-panel")
        panel.wait_for(state="visible")
        page.get_by_test_id("panel-seconds-note").filter(has_text="solid").wait_for()
        text = panel.inner_text()
        assert "Cell: small pool" in text and "read only" in text and "8 threads" in text, text
        assert "1,600 QPS, geometric mean of 3 runs" in text and "against big pool" in text, text
        assert "What ran out: I/O (buffer-pool misses): the buffer pool served 94.0 % of page requests" in text, text
        assert "Why: small pool against big pool: 1,188 buffer-pool misses per 1,000 queries against none" in text
        costs = page.get_by_test_id("panel-costs")
        reason = costs.locator("tr.reason").first
        assert "Buffer-pool misses per 1,000 queries" in reason.inner_text()
        assert "1,188" in reason.inner_text()
        assert "big pool (baseline)" in costs.inner_text()
        note = page.get_by_test_id("panel-seconds-note").inner_text()
        assert note.startswith("6 jobs: this cell solid, big pool dashed") and "Innodb_buffer_pool_reads" in note, note
        assert page.get_by_test_id("panel-server-box").is_visible()
        # The differential profile: the functions whose share differs most first, with both shares.
        profile = page.get_by_test_id("panel-profile-table").locator("tbody tr")
        assert profile.nth(0).inner_text().split("\t") == ["buf_page_get_gen (mariadbd)", "35.0%", "2.0%", "+33.0"]
        assert profile.nth(1).inner_text().split("\t") == ["MYSQLparse (mariadbd)", "8.0%", "30.0%", "-22.0"]
        assert "1,200 samples from 3 jobs" in page.get_by_test_id("panel-profile-note").inner_text()
        box = panel.bounding_box()
        assert box["width"] <= width and box["x"] + box["width"] <= width + 1, box  # a side panel, inside the window
        if width == 1440:
            assert box["x"] > 700, box  # on the right, the table still in view beside it
        page.wait_for_timeout(300)
        panel.screenshot(path=str(SHOTS / f"44-panel-{name}.png"))
        page.screenshot(path=str(SHOTS / f"44-panel-page-{name}.png"), full_page=False)
        page.locator("canvas[data-chart=panel-server]").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"44-panel-seconds-{name}.png"), full_page=False)
        page.get_by_test_id("panel-profile").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"44-panel-profile-{name}.png"), full_page=False)
        # The baseline column's panel says it is the baseline; Escape closes the panel.
        page.keyboard.press("Escape")
        row.locator("td[data-metric=qps]").nth(0).click()
        page.get_by_test_id("panel-why").filter(has_text="baseline column").wait_for()
        page.keyboard.press("Escape")
    assert problems.items == [], problems.items
