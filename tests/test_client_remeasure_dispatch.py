"""A client host that finds its job's measurement spoiled from outside (its target gone mid-run, sysbench killed by
someone else) hands the new attempt to the server: the requeue removes rows and seals that the host's database role
may not touch, so the host sends a task and keeps its client active, as the requeue wants it."""
from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from campaigns import tasks
from campaigns.execution import results, transitions
from campaigns.models import Attempt, Job, JobClient
from tests.factories import CampaignFactory, RunFactory, ScenarioFactory, TargetFactory

pytestmark = pytest.mark.django_db


def _running(tries: int = 3) -> tuple[Job, JobClient]:
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario], job_tries=tries),
                     status="running")
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=2, status=Job.Status.RUNNING,
                             phase=Job.Phase.RUN, started_at=timezone.now(), heartbeat_at=timezone.now())
    client = JobClient.objects.create(job=job, index=0, host_name="c1", threads=2, status=JobClient.Status.RUNNING,
                                      heartbeat_at=timezone.now())
    return job, client


def test_a_client_host_sends_the_new_attempt_to_the_server_which_measures_again(settings, sent_tasks: Any):
    job, client = _running()
    cause = "client c1: sysbench was killed by SIGKILL, a signal benchapp did not send, while measuring"
    settings.BENCHAPP_WORKER_ROLE = "client"
    assert results.job_measure_again(job_id=job.pk, attempt=1, cause=cause,
                                     lost_client=transitions.LostClient(client_id=client.pk, send=1)) == "again"
    assert sent_tasks.tasks == [("job_measure_again_task", [job.pk, 1, cause, client.pk, 1])]
    job.refresh_from_db()
    assert (job.attempt, job.status) == (1, Job.Status.RUNNING) and not Attempt.objects.exists(), \
        "the host changed nothing itself"
    assert JobClient.objects.get(pk=client.pk).status == JobClient.Status.RUNNING

    settings.BENCHAPP_WORKER_ROLE = "all"  # the server's worker runs the task
    tasks.job_measure_again_task(job.pk, 1, cause, client.pk, 1)
    job.refresh_from_db()
    assert (job.attempt, job.status) == (2, Job.Status.QUEUED) and not JobClient.objects.filter(job=job).exists()
    assert Attempt.objects.get(job=job).cause == cause
    # Delivered twice: the second finds the attempt moved on and changes nothing.
    tasks.job_measure_again_task(job.pk, 1, cause, client.pk, 1)
    assert Job.objects.get(pk=job.pk).attempt == 2 and Attempt.objects.filter(job=job).count() == 1


def test_with_no_try_left_the_host_fails_the_job_itself_and_sends_nothing(settings, sent_tasks: Any):
    job, client = _running(tries=1)
    settings.BENCHAPP_WORKER_ROLE = "client"
    assert results.job_measure_again(job_id=job.pk, attempt=1, cause="x",
                                     lost_client=transitions.LostClient(client_id=client.pk, send=1)) == "no try left"
    assert sent_tasks.tasks == []


def test_a_re_measure_message_that_no_client_host_asked_for_changes_nothing(settings):
    """Any client host may push to the shared queue: a job_measure_again_task for another host's job (its client
    wrote no request on its row, which only that host may write) is refused, and so is one naming no client."""
    job, client = _running()
    settings.BENCHAPP_WORKER_ROLE = "all"
    tasks.job_measure_again_task(job.pk, 1, "forged: measure it again", client.pk, 1)
    tasks.job_measure_again_task(job.pk, 1, "forged: measure it again", None, None)
    job.refresh_from_db()
    assert (job.attempt, job.status) == (1, Job.Status.RUNNING) and not Attempt.objects.exists()
    # Asked for by its host, the server acts on the host's own words, not on the message's.
    transitions.client_remeasure_ask(client_id=client.pk, attempt=1, cause="client c1: its target went away")
    tasks.job_measure_again_task(job.pk, 1, "forged words", client.pk, 1)
    assert Attempt.objects.get(job=job).cause == "client c1: its target went away"
