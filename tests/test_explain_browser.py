"""The comparison page's explanations in a real browser: under the conclusion, each product's peak and knee over
its thread ladder, what ran out per thread count and why the significant differences are what they are, at
1440 px, on a phone (390 px) and in the print-ready report."""
from __future__ import annotations

import pytest

from campaigns.models import JobResult
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
    assert problems.items == [], problems.items
