"""The run page and the job page say what a fault did: a job measured again shows its attempts and each lost one's
cause, a job waiting for its unreachable target says since when and when it tries again. The rows are moved by the
transitions the workers use (tests/test_job_attempts.py causes the faults for real); screenshots at 1440×900.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.models import IntervalSample, Job
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import PASSWORD, SHOTS, USER, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOST = ("client host vm-2 lost while measuring: no heartbeat from its worker for 30 s (the worker was killed or "
        "stopped, or the host is down or cut off)")
REFUSED = "connection refused to 10.0.0.7:3306 (Can't connect to server on '10.0.0.7' (111))"


def test_the_pages_show_attempts_and_a_job_waiting_for_its_target(browser_page: Any, live_server: Any) -> None:
    browser, page, problems = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    get_user_model().objects.create_superuser(USER, "admin@example.com", PASSWORD)
    data = DatasetFactory(name="faults data", tables=1, table_size=1000)
    scenario = ScenarioFactory(name="point select", dataset=data, time_s=12)
    flaky, steady = TargetFactory(name="mariadb-flaky"), TargetFactory(name="mariadb-steady")
    campaign = CampaignFactory(name="faults campaign", targets=[flaky, steady], scenarios=[scenario], threads=[4])
    run = transitions.run_create(waits=False, campaign=campaign)
    lost_job, waiting_job = transitions.jobs_create(jobs=[
        Job(run=run, target=steady, scenario=scenario, threads=4, position=0, time_s=12),
        Job(run=run, target=flaky, scenario=scenario, threads=4, position=1, time_s=12),
    ])
    # Attempt 1 of the first job measured 6 s, then its host was lost: it is measured again.
    transitions.job_claim(job_id=lost_job.pk, host="vm-1")
    transitions.job_start(job_id=lost_job.pk, command_line="sysbench …", server_snapshot={})
    IntervalSample.objects.bulk_create([IntervalSample(job=lost_job, attempt=1, t=t, threads=4, tps=900.0, qps=9000.0,
                                                       reads_per_s=9000.0, writes_per_s=0, other_per_s=0,
                                                       latency_pct_ms=1.2, errors_per_s=0, reconnects_per_s=0)
                                        for t in range(1, 7)])
    assert transitions.job_requeue(job_id=lost_job.pk, attempt=1, cause=LOST, t_s=6.0)
    # The second job's target refuses connections: it waits, and tries again in a minute.
    transitions.job_claim(job_id=waiting_job.pk, host="vm-1")
    since = timezone.now() - timedelta(seconds=95)
    transitions.job_wait_target(job_id=waiting_job.pk, reason=REFUSED, since=since,
                                next_try_at=timezone.now() + timedelta(seconds=60))

    log_in(page, USER, PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    banner = page.get_by_test_id("run-waiting")
    assert "waiting: target mariadb-flaky unreachable since" in banner.inner_text()
    assert "(connection refused to 10.0.0.7:3306" in banner.inner_text()
    assert "next try in" in banner.inner_text()
    attempts = page.get_by_test_id("job-attempts")
    assert "attempt 2" in attempts.inner_text() and "attempt 1 lost: client host vm-2 lost" in attempts.inner_text()
    page.screenshot(path=str(SHOTS / "attempts-run.png"), full_page=True)

    page.goto(f"/jobs/{lost_job.pk}/")
    section = page.get_by_test_id("job-attempts")
    assert "Attempts: 2 of 3" in section.inner_text()
    assert f"attempt 1 lost at t = 6 s: {LOST}" in section.inner_text()
    page.screenshot(path=str(SHOTS / "attempts-job.png"), full_page=False)

    page.goto(f"/jobs/{waiting_job.pk}/")
    assert page.get_by_test_id("job-waiting").inner_text().startswith(
        "waiting: target mariadb-flaky unreachable since ")
    page.screenshot(path=str(SHOTS / "attempts-waiting-job.png"), full_page=False)
    assert problems.items == []
