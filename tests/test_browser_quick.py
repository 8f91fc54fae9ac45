"""Quick compare in a real browser: from an empty dashboard to a finished run in one form.

The user starts on an empty install, follows the dashboard's first step, adds the local MariaDB inline (the
port left blank: the driver's default), ticks two tests, gives a thread ladder, sees the plan and launches;
a real Celery worker runs sysbench and the run page shows it succeeded. Screenshots at 1440×900 and 390×844.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from campaigns.models import Job, Run, Target
from tests.conftest import record_measurement
from tests.factories import PgTargetFactory
from tests.helpers.browser import PASSWORD, SHOTS, USER, log_in, phone_shots, shot, wait_js


def shot_path(name: str) -> Path:
    return SHOTS / f"{name}.png"


pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_new_user_gets_a_first_comparison_from_the_quick_compare_page(
        browser_page, live_server, celery_worker_process, target_databases):
    browser, page, problems = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    get_user_model().objects.create_superuser(USER, "admin@example.com", PASSWORD)
    log_in(page, USER, PASSWORD)

    # An empty install: the dashboard says what to do first.
    steps = page.locator("[data-testid=first-steps]")
    assert "Start here" in steps.inner_text()
    assert steps.get_by_role("link", name="Seed papers").first.get_attribute("href") == "/seeds/"
    shot(page, "quick-01-empty-dashboard", full=False)
    steps.get_by_role("link", name="Quick compare").first.click()
    page.wait_for_url("**/quick/")

    # No target yet: the inline form is open. The port follows the driver; left blank it is the default.
    assert page.locator("#add-target").get_attribute("open") is not None
    assert page.locator("#id_new_port").get_attribute("placeholder") == "3306"
    page.locator("#id_new_driver").select_option("pgsql")
    assert page.locator("#id_new_port").get_attribute("placeholder") == "5432"
    page.locator("#id_new_driver").select_option("mysql")
    page.locator("#id_new_name").fill("local mariadb")
    page.locator("#id_new_host").fill("127.0.0.1")
    page.locator("#id_new_database").fill(target_databases["mysql"])
    page.locator("#id_new_user").fill("root")
    page.locator("#id_new_product_name").fill("MariaDB (quick)")
    page.locator("#id_new_product_engine").select_option("mariadb")
    page.get_by_role("button", name="Test the connection and add").click()
    page.wait_for_selector("[data-testid=target-added]")
    assert "MariaDB" in page.locator("[data-testid=server-version]").inner_text()
    target = Target.objects.get(name="local mariadb")
    assert target.port == 3306
    assert page.get_by_label(re.compile(r"local mariadb \(")).is_checked()

    # The list of tests is searchable: typing keeps the matching ones (and any ticked one) in sight.
    tests_filter = page.get_by_label("Filter sysbench tests")
    tests_filter.fill("read")
    visible = page.locator("#id_tests label:visible").all_inner_texts()
    assert sorted(t.strip() for t in visible) == ["oltp_read_only", "oltp_read_write"]
    page.get_by_label("oltp_read_only", exact=True).check()
    tests_filter.fill("point")
    visible = sorted(t.strip() for t in page.locator("#id_tests label:visible").all_inner_texts())
    assert visible == ["oltp_point_select", "oltp_read_only", "select_random_points"]
    shot(page, "quick-02-searchable-tests", full=False)
    tests_filter.fill("")

    # Two tests, a thread ladder, a short duration: the plan first.
    page.get_by_label("oltp_point_select", exact=True).check()
    page.get_by_label("oltp_read_only", exact=True).check()
    page.locator("#id_threads").fill("1, 4")
    page.locator("#id_time_s").fill("2")
    page.locator("#id_repetitions").fill("1")  # the default is 3; one keeps this test short
    PgTargetFactory(name="a colleague's postgresql")  # made by someone else meanwhile
    page.get_by_role("button", name="See the plan").click()
    page.wait_for_selector("#quick-plan")
    # Targets mix the user's and a colleague's: "Mine only" keeps the user's in sight.
    colleague = page.get_by_label(re.compile(r"a colleague's postgresql \("))
    assert colleague.is_visible()
    page.locator("#q-targets-h + .field").get_by_label("Mine only").check()
    assert not colleague.is_visible() and page.get_by_label(re.compile(r"local mariadb \(")).is_visible()
    page.locator("section[aria-labelledby=q-targets-h]").screenshot(path=str(shot_path("quick-03-mine-only")))
    page.locator("#q-targets-h + .field").get_by_label("Mine only").uncheck()
    assert colleague.is_visible() and not colleague.is_checked()
    assert page.locator("[data-testid=plan-jobs]").inner_text() == "4"
    plan_text = page.locator("#quick-plan").inner_text()
    assert "oltp_point_select · 4 × 10,000" in plan_text and "oltp_read_only · 4 × 10,000" in plan_text
    assert page.get_by_label("oltp_read_only", exact=True).is_checked()  # what was ticked stays
    shot(page, "quick-03-plan-1440")
    page.locator("#quick-plan").scroll_into_view_if_needed()
    shot(page, "quick-04-plan-1440-viewport", full=False)

    assert page.locator("[data-testid=plan-matrix]").inner_text().startswith(
        "1 target × 2 tests × 2 thread counts × 1 repetition; each job 2 s measured")
    page.get_by_role("button", name="Launch 4 jobs").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get()
    assert run.campaign.name.startswith("Quick compare")
    wait_js(page, "document.getElementById('run-status').dataset.status === 'succeeded'", timeout_ms=180_000)
    page.wait_for_timeout(1000)  # the run page reloads itself once the run has finished
    page.reload()
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, list(run.jobs.values_list("status", "error"))
    jobs = list(Job.objects.filter(run=run).select_related("scenario", "result").order_by("position"))
    assert [(j.scenario.name, j.threads) for j in jobs] == [
        ("oltp_point_select · 4 × 10,000", 1), ("oltp_point_select · 4 × 10,000", 4),
        ("oltp_read_only · 4 × 10,000", 1), ("oltp_read_only · 4 × 10,000", 4)]
    assert all(j.result.qps and j.result.qps > 0 for j in jobs)
    shot(page, "quick-05-run-finished", full=False)
    record_measurement(f"quick compare browser: run #{run.pk} of 4 jobs took "
                       f"{(run.finished_at - run.started_at).total_seconds():.1f} s")

    # "Compare selected" on the runs list opens the comparison of the ticked runs.
    page.goto("/runs/")
    page.get_by_label(f"Select run #{run.pk} to compare").check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_selector("table.comparison")
    assert f"runs={run.pk}" in page.url
    # One table per test, each with its two thread counts' QPS cells. Read from the DOM, never as innerText: a
    # comparison block is content-visibility: auto, so Chromium leaves a block it has not yet laid out (below the
    # fold, or on a loaded machine before its first rendering) out of innerText (a CI run once failed so).
    for name in ("oltp_point_select · 4 × 10,000", "oltp_read_only · 4 × 10,000"):
        heading = page.get_by_role("heading", name=name, exact=True)
        heading.wait_for(state="attached", timeout=30_000)
        block = page.locator("section.comparison-block", has=heading)
        assert block.locator("table.comparison td[data-metric=qps]").count() == 2, name

    # The campaign it made takes a schedule; a bad cron is an error at its field, and what was typed stays.
    page.goto(f"/campaigns/{run.campaign_id}/")
    page.locator("#id_label").fill("nightly quick")
    page.locator("#id_preset").select_option("")  # "Custom": the cron field shows only for it
    page.locator("#id_cron").fill("every night at 2")
    page.locator("#id_timezone").fill("Europe/Paris")
    page.get_by_role("button", name="Add schedule").click()
    page.wait_for_selector("#id_cron_error1")
    assert page.locator("#id_cron").input_value() == "every night at 2"
    assert page.locator("#id_label").input_value() == "nightly quick"
    assert page.locator("#id_timezone").input_value() == "Europe/Paris"
    assert page.locator("#id_cron_error1").is_visible()
    shot(page, "quick-06-schedule-cron-error", full=False)

    # A pasted command with a misspelt test says which test was meant.
    page.goto("/scenarios/new/")
    page.locator("#id_command").fill("sysbench oltp_read_wirte --tables=1 run")
    page.get_by_role("button", name="Fill the form from the command").click()
    page.wait_for_selector("#id_command_error1")
    assert page.locator("#id_command_error1").inner_text() == (
        "unknown sysbench test 'oltp_read_wirte': did you mean oltp_read_write?")
    assert page.locator("#id_command").input_value() == "sysbench oltp_read_wirte --tables=1 run"
    shot(page, "quick-07-misspelt-test", full=False)

    phone_shots(browser, live_server, problems, {"quick-08-phone-quick-compare": "/quick/"})
    assert not problems.items, "\n".join(problems.items)
