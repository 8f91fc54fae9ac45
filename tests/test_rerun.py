"""Retry failed jobs and Run again: a new run of an earlier run's own jobs, linked to it, through the
service, the API and the run page. No worker: the first job is sent after commit, which a test transaction never
reaches; tests/test_rerun_runs.py runs one for real."""
from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from campaigns import roles, services
from campaigns.models import Job, Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def _finished_run(statuses: list[str], *, trigger: str = Run.Trigger.MANUAL) -> Run:
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.PARTIALLY_SUCCEEDED, trigger=trigger,
                             started_at=now, finished_at=now)
    for position, status in enumerate(statuses):
        Job.objects.create(run=run, target=target, scenario=scenario, threads=4 * (position + 1), repetition=position,
                           position=position, tables=2, table_size=5000, clients_needed=2, time_s=7, warmup_s=3,
                           status=status)
    return run


def test_retry_failed_makes_a_linked_run_of_the_failed_and_cancelled_jobs_as_they_were():
    run = _finished_run([Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED])
    retry = services.run_rerun(run=run, scope=Run.Rerun.FAILED)
    assert retry.campaign_id == run.campaign_id and retry.rerun_of_id == run.pk and retry.rerun == "failed"
    assert retry.status == Run.Status.RUNNING and retry.label == f"retry of the failed jobs of run #{run.pk}"
    jobs = list(retry.jobs.order_by("position").values_list(
        "threads", "repetition", "position", "tables", "table_size", "clients_needed", "time_s", "warmup_s", "status"))
    assert jobs == [(8, 1, 0, 2, 5000, 2, 7, 3, "queued"), (12, 2, 1, 2, 5000, 2, 7, 3, "queued")]


def test_run_again_repeats_every_job_and_a_second_rerun_waits_for_the_first_to_finish():
    run = _finished_run([Job.Status.SUCCEEDED, Job.Status.FAILED])
    again = services.run_rerun(run=run, scope=Run.Rerun.ALL)
    assert again.jobs.count() == 2 and again.rerun == "all"
    with pytest.raises(services.StateConflict, match="already has a run in progress"):
        services.run_rerun(run=run, scope=Run.Rerun.FAILED)


@pytest.mark.parametrize(("statuses", "trigger", "message"), [
    ([Job.Status.SUCCEEDED], Run.Trigger.MANUAL, "no failed or cancelled jobs"),
    ([Job.Status.FAILED], Run.Trigger.IMPORT, "imported from logs"),
])
def test_a_run_with_nothing_to_retry_or_imported_is_refused(statuses, trigger, message):
    run = _finished_run(statuses, trigger=trigger)
    with pytest.raises(services.StateConflict, match=message):
        services.run_rerun(run=run, scope=Run.Rerun.FAILED)


def test_an_active_run_cannot_be_rerun():
    run = _finished_run([Job.Status.FAILED])
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, finished_at=None)
    with pytest.raises(services.StateConflict, match="still running"):
        services.run_rerun(run=run, scope=Run.Rerun.ALL)


def test_the_api_retries_for_operators_answers_409_when_there_is_nothing_and_403_to_viewers():
    run = _finished_run([Job.Status.SUCCEEDED, Job.Status.FAILED])
    viewer = client_for(make_user(roles.VIEWER))
    assert viewer.post(f"/api/v1/runs/{run.pk}/retry-failed/").status_code == 403
    operator = client_for(make_user(roles.OPERATOR))
    response = operator.post(f"/api/v1/runs/{run.pk}/retry-failed/", HTTP_IDEMPOTENCY_KEY="retry-1")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["rerun_of"] == run.pk and body["rerun"] == "failed" and body["jobs_total"] == 1
    # The same key again: the same run, not a conflict.
    again = operator.post(f"/api/v1/runs/{run.pk}/retry-failed/", HTTP_IDEMPOTENCY_KEY="retry-1")
    assert again.status_code == 202 and again.json()["id"] == body["id"]
    done = _finished_run([Job.Status.SUCCEEDED])
    refused = operator.post(f"/api/v1/runs/{done.pk}/retry-failed/")
    assert refused.status_code == 409 and "no failed or cancelled jobs" in refused.content.decode()
    assert operator.post(f"/api/v1/runs/{done.pk}/retry-failed/", {"extra": 1}, format="json").status_code == 400


def test_the_run_page_offers_retry_and_run_again_to_operators_and_links_both_runs():
    run = _finished_run([Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.FAILED])
    page = Client()
    page.force_login(make_user(roles.VIEWER, "rerun-viewer"))
    html = page.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="retry-failed"' not in html and 'id="run-again"' not in html
    page.force_login(make_user(roles.OPERATOR, "rerun-operator"))
    html = page.get(f"/runs/{run.pk}/").content.decode()
    assert "Retry 2 failed jobs" in html and 'id="run-again"' in html
    response = page.post(f"/runs/{run.pk}/retry-failed/")
    retry = Run.objects.get(rerun_of=run)
    assert response.status_code == 302 and response["Location"] == f"/runs/{retry.pk}/"
    html = page.get(f"/runs/{retry.pk}/").content.decode()
    assert "Retries the failed and cancelled jobs of" in html and f'href="/runs/{run.pk}/"' in html
    html = page.get(f"/runs/{run.pk}/").content.decode()
    assert f'Failed jobs retried in <a href="/runs/{retry.pk}/">run #{retry.pk}</a>' in html
    # A second retry while the first is running is refused with the reason, on the page.
    html = page.post(f"/runs/{run.pk}/retry-failed/", follow=True).content.decode()
    assert "Not started: campaign" in html and "already has a run in progress" in html


def test_comparing_a_run_takes_a_retried_cell_from_its_successful_retry():
    from campaigns.models import JobResult

    run = _finished_run([Job.Status.SUCCEEDED, Job.Status.FAILED])
    JobResult.objects.create(job=run.jobs.get(position=0), qps=1000.0, tps=50.0)
    retry = services.run_rerun(run=run, scope=Run.Rerun.FAILED)
    viewer = client_for(make_user(roles.VIEWER))

    def threads_compared() -> list[int]:
        body = viewer.get(f"/api/v1/comparisons/?runs={run.pk}").json()
        return sorted(row["threads"] for group in body["groups"] for row in group["rows"])

    assert threads_compared() == [4]  # the failed cell (8 threads) has nothing yet
    job = retry.jobs.get()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED)  # as if the retry had run
    JobResult.objects.create(job=job, qps=1100.0, tps=55.0)
    assert threads_compared() == [4, 8]
