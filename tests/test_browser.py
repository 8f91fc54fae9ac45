"""The web UI in a real browser: Debian's Chromium through Playwright, against the live server, a real Celery
worker, sysbench and the local MariaDB and PostgreSQL.

One user story end to end: log in, register the two local databases as targets (testing each connection),
paste a seed 003 command into a scenario, build a campaign of two thread counts, launch it, watch the live
chart gain points, then compare MariaDB with PostgreSQL and check the table against the stored results.
Every step leaves a screenshot in test-output/screenshots/ (desktop width, and phone width for the pages
that matter there). Any console error, page error, failed request or 4xx/5xx static file fails the test.
"""
from __future__ import annotations

import os
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from campaigns.comparison import fmt_number
from campaigns.models import InstanceSpec, Job, JobResult, Run, Scenario, Target
from tests.conftest import record_measurement
from tests.helpers.browser import PASSWORD, USER, log_in, phone_shots, shot, wait_js
from tests.helpers.pg_targets import pg_target_port

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SEED_003_READ_ONLY = """sysbench --db-driver=mysql --mysql-host=XXX --mysql-port=XXX
--mysql-user=XXX --mysql-password=XXX --mysql-db=sbtest --table_size=10000000
--tables=10 --events=0 --time=300 --threads={2~3000} --percentile=95 --skip-trx=1 --report-interval=1
oltp_read_only
run"""


















def _create_product(page: Any, name: str, engine: str) -> None:
    page.goto("/products/new/")
    page.locator("#id_name").fill(name)
    page.locator("#id_engine").select_option(engine)
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/products/")


def _create_target(page: Any, *, name: str, product: str, spec: str, driver: str, port: int, user: str,
                   database: str) -> Target:
    page.goto("/targets/new/")
    page.locator("#id_name").fill(name)
    page.locator("#id_product").select_option(label=product)
    page.get_by_label("Spec").select_option(label=spec)
    page.locator("#id_driver").select_option(driver)
    page.locator("#id_host").fill("127.0.0.1")
    page.locator("#id_port").fill(str(port))
    page.locator("#id_database").fill(database)
    page.locator("#id_user").fill(user)
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"/targets/\d+/$"))
    page.get_by_role("button", name="Test connection").click()
    page.wait_for_selector("#check-result")
    assert page.locator("[data-testid=server-version]").inner_text().strip()
    return Target.objects.get(name=name)


# alone: its page reloads race the live run's own refresh on a loaded machine (net::ERR_ABORTED in a parallel run).
@pytest.mark.alone
def test_a_user_builds_runs_and_compares_a_campaign_in_the_browser(
        browser_page, live_server, celery_worker_process, target_databases):
    browser, page, problems = browser_page
    get_user_model().objects.create_superuser(USER, "admin@example.com", PASSWORD)
    InstanceSpec.objects.create(label="local 2-core", cpu_cores=2, memory_gb=4, price_per_hour="0.10")
    database = os.environ["BENCHAPP_TEST_TARGET_DB"]

    page.goto("/")
    assert "/accounts/login/" in page.url
    shot(page, "01-login")
    log_in(page, USER, PASSWORD)
    shot(page, "02-dashboard")

    # Targets for the local MariaDB and PostgreSQL, each with "Test connection".
    _create_product(page, "MariaDB (browser test)", "mariadb")
    _create_product(page, "PostgreSQL (browser test)", "postgresql")
    maria = _create_target(page, name="browser-mariadb", product="MariaDB (browser test)", spec="local 2-core",
                           driver="mysql", port=3306, user="root", database=database)
    assert "MariaDB" in page.locator("[data-testid=server-version]").inner_text()
    shot(page, "03-target-mariadb-connection")
    pg = _create_target(page, name="browser-postgresql", product="PostgreSQL (browser test)", spec="local 2-core",
                        driver="pgsql", port=pg_target_port(), user="postgres", database=database)
    assert "PostgreSQL" in page.locator("[data-testid=server-version]").inner_text()
    shot(page, "04-target-postgresql-connection")

    # A scenario from a pasted seed 003 command, made tiny and short.
    page.goto("/scenarios/new/")
    page.locator("#id_command").fill(SEED_003_READ_ONLY)
    page.get_by_role("button", name="Fill the form from the command").click()
    page.wait_for_selector("#parse-report")
    assert page.locator("#id_test").input_value() == "oltp_read_only"
    assert page.locator("#id_opt__skip_trx").input_value() == "on"
    assert page.locator("#id_new_dataset_table_size").input_value() == "10000000"
    assert "a campaign sets the thread counts" in page.locator("#parse-report").inner_text()
    shot(page, "05-scenario-pasted-command")
    page.locator("#id_name").fill("seed 003 read-only (browser)")
    page.get_by_label("New dataset: name").fill("browser tiny")
    page.get_by_label("tables", exact=True).fill("2")
    page.get_by_label("rows per table").fill("1000")
    page.locator("#id_time_s").fill("3")
    page.get_by_role("button", name="Save scenario").click()
    # The pasted thread counts ride along for the page's "Run it on…".
    page.wait_for_url(re.compile(r"/scenarios/\d+/(\?threads=[^/]*)?$"))
    scenario = Scenario.objects.get(name="seed 003 read-only (browser)")
    assert scenario.options == {"skip-trx": True} and scenario.time_s == 3
    shot(page, "06-scenario-saved")

    # A campaign over both targets at two thread counts: the plan first, then launch.
    page.goto("/campaigns/new/")
    page.locator("#id_name").fill("browser campaign")
    page.get_by_label(re.compile(r"browser-mariadb \(")).check()
    page.get_by_label(re.compile(r"browser-postgresql \(")).check()
    page.get_by_label(re.compile(r"seed 003 read-only \(browser\) \(")).check()
    page.locator("#id_threads").fill("1, 2")
    page.get_by_role("button", name="Save and see the plan").click()
    page.wait_for_url(re.compile(r"/campaigns/\d+/$"))
    assert page.locator("[data-testid=plan-jobs]").inner_text() == "4"
    shot(page, "07-campaign-plan")
    page.get_by_role("button", name=re.compile(r"^Launch 4 jobs")).click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get(campaign__name="browser campaign")

    # The live chart gains points while a job runs, without reloading the page.
    page.wait_for_selector("#live:not([hidden])", timeout=60_000)
    wait_js(page, "Number(document.getElementById('sample-count').textContent) >= 1", timeout_ms=60_000)
    first = int(page.locator("#sample-count").inner_text())
    wait_js(page, f"Number(document.getElementById('sample-count').textContent) > {first}",
                           timeout_ms=10_000)
    points = page.evaluate("Chart.getChart('chart-throughput').data.datasets[0].data.length")
    assert points > first >= 1
    # sysbench's output arrives too: the prepare output first, then the run's tail (saved every 2 s).
    wait_js(page, "document.getElementById('live-tail').textContent.includes('sysbench')", timeout_ms=60_000)
    shot(page, "08-run-live-chart")
    wait_js(page, "document.getElementById('run-status').dataset.status === 'succeeded'",
                           timeout_ms=120_000)
    page.wait_for_timeout(1000)  # the page reloads itself once the run has finished; let it, then settle
    page.reload()
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, list(run.jobs.values_list("status", "error"))
    shot(page, "09-run-finished")
    record_measurement(f"ui browser: run #{run.pk} took {(run.finished_at - run.started_at).total_seconds():.1f} s")

    # A job's page: its verdict and findings, and the client host and server drawn on sysbench's time axis.
    job = run.jobs.filter(target=maria).order_by("position").last()
    page.goto(f"/jobs/{job.pk}/")
    validity = page.locator("[data-testid=validity]")
    assert validity.get_attribute("data-verdict") == job.verdict != ""
    assert "same-host" in validity.inner_text()
    wait_js(page, "Chart.getChart('chart-host') && Chart.getChart('chart-host').data.datasets.length > 0"
                           " && Chart.getChart('chart-host').data.datasets[0].data.length >= 2", timeout_ms=10_000)
    wait_js(page, "Chart.getChart('chart-server').data.datasets.some(d => d.data.length >= 2)",
                           timeout_ms=10_000)
    assert "server seconds" in page.locator("#metrics-note").inner_text()
    shot(page, "10-job-validity-and-metrics")

    # The comparison of MariaDB and PostgreSQL: the table's cells are the stored results.
    page.goto("/compare/")
    # The choice lists are searchable chips (Tom Select; tests/test_compare_columns_browser.py types into them):
    # here they are set through Tom Select's own API, as picking them would.
    wait_js(page, "!!document.querySelector('#id_targets.tomselected') && "
                  "!!document.querySelector('#id_campaign.tomselected')")
    campaign_pk = Run.objects.filter(campaign__name="browser campaign").values_list("campaign_id", flat=True).first()
    page.evaluate("([targets, campaign]) => { document.getElementById('id_targets').tomselect.setValue(targets); "
                  "document.getElementById('id_campaign').tomselect.setValue([campaign]); }",
                  [[str(maria.pk), str(pg.pk)], str(campaign_pk)])
    page.get_by_role("button", name="Compare").click()
    page.wait_for_selector("table.comparison")
    wait_js(page, "document.querySelectorAll('.charts canvas').length > 0 && "
                           "[...document.querySelectorAll('.charts canvas')].every(c => Chart.getChart(c))")
    table = page.locator(f"#table-t{scenario.dataset_id}-{scenario.pk}")
    header = table.locator("thead").inner_text()
    assert header.index("MariaDB (browser test)") < header.index("PostgreSQL (browser test)")
    for product_target in (maria, pg):
        for threads in (1, 2):
            job = Job.objects.get(run=run, target=product_target, threads=threads)
            result = JobResult.objects.get(job=job)
            cell = table.locator(f"tr[data-threads='{threads}'] td[data-metric=qps]"
                                 f"[data-product='{product_target.product_id}']")
            assert float(cell.get_attribute("data-value")) == pytest.approx(result.qps)
            # The figure, then the job's verdict when it is not to be trusted (a loaded test machine can make it so).
            figure, *badge = cell.inner_text().split()
            assert figure == fmt_number(result.qps)
            # An untrusted cell's badge is followed by its reason in words.
            assert badge[:1] == ([job.verdict] if job.verdict in ("suspect", "invalid") else []), job.findings
            assert cell.get_attribute("data-verdict") == job.verdict
            tps = table.locator(f"tr[data-threads='{threads}'] td[data-metric=tps]").nth(
                0 if product_target == maria else 1)
            assert float(tps.get_attribute("data-value")) == pytest.approx(result.tps)
    conclusion = page.locator("[data-testid=conclusion]").first.inner_text()
    # The second product against the first, in the marks' own words: never "within noise".
    assert re.search(r"PostgreSQL \(browser test\) (is faster than|is slower than|and|against|from) MariaDB "
                     r"\(browser test\)",
                     conclusion), conclusion
    shot(page, "10-comparison")

    page.get_by_role("link", name="Print-ready report").click()
    page.wait_for_selector("article.whitepaper")
    assert "Test environment" in page.inner_text("article.whitepaper")
    page.emulate_media(media="print")
    shot(page, "11-report-print")
    page.emulate_media(media="screen")
    compare_url = page.url.replace("/compare/report/", "/compare/")

    phone_shots(browser, live_server, problems, {
        "12-phone-dashboard": "/", "13-phone-run": f"/runs/{run.pk}/", "14-phone-comparison": compare_url,
    })
    assert not problems.items, "\n".join(problems.items)
