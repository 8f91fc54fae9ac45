"""A host benchapp takes offline (a clean stop, a drain, a reconciler that found it silent) keeps the time it really
beat: its last heartbeat used to be rewritten to "now - 61 s", so pages said "no worker alive since" a moment that
never happened. Now offline_since says it was taken off, and the next heartbeat brings it back."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns import execution
from campaigns.execution.hosts import host_heartbeats, host_mark_offline, run_no_worker
from campaigns.models import ClientHost
from tests.factories import CampaignFactory, RunFactory

pytestmark = pytest.mark.django_db


def test_a_host_taken_offline_keeps_its_real_last_heartbeat_and_is_back_with_its_next_one(settings):
    beat = timezone.now() - timedelta(seconds=3)
    host = ClientHost.objects.create(hostname="off-a", queue=execution.host_queue("off-a"), role="all",
                                     last_heartbeat=beat)
    assert host.is_online() and ClientHost.objects.online().filter(pk=host.pk).exists()
    host_mark_offline(hostname="off-a", heartbeat_before=timezone.now())
    host.refresh_from_db()
    assert host.last_heartbeat == beat and host.offline_since is not None
    assert not host.is_online() and not ClientHost.objects.online().filter(pk=host.pk).exists()
    # A run that may use only it: no worker alive, since the host's real last beat.
    run = RunFactory(campaign=CampaignFactory(client_hosts=["off-a"]), status="running", queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    absent = run_no_worker(run=run, hosts=host_heartbeats())
    assert absent is not None and absent.since == beat
    # A heartbeat that arrives before the mark (heartbeat_before older than it) is left alone.
    execution.host_heartbeat(hostname="off-a")
    host.refresh_from_db()
    assert host.offline_since is None and host.is_online() and host.last_heartbeat > beat
    host_mark_offline(hostname="off-a", heartbeat_before=beat)
    host.refresh_from_db()
    assert host.offline_since is None
    assert run_no_worker(run=run, hosts=host_heartbeats()) is None


def test_an_attempt_lost_with_one_of_two_clients_is_recorded_where_that_client_went_silent(sent_tasks):
    """The lost client stopped at t = 20 while its peer went on to t = 52: "lost at t = 52 s" named the peer's last
    second; the attempt is recorded where the lost client went silent."""
    from campaigns.execution.results import job_measure_again
    from campaigns.execution.transitions import LostClient
    from campaigns.models import Attempt, IntervalSample, Job, JobClient
    from tests.factories import JobFactory

    run = RunFactory(status="running")
    run.campaign.job_tries = 3
    run.campaign.save()
    job = JobFactory(run=run, status=Job.Status.RUNNING, phase=Job.Phase.RUN, attempt=1)
    lost = JobClient.objects.create(job=job, index=0, host_name="vm-a", threads=1, status="running", attempt=1)
    JobClient.objects.create(job=job, index=1, host_name="vm-b", threads=1, status="running", attempt=1)
    second = {"threads": 1, "tps": 1, "qps": 1, "reads_per_s": 1, "writes_per_s": 0, "other_per_s": 0,
              "errors_per_s": 0, "reconnects_per_s": 0}
    IntervalSample.objects.bulk_create(
        [IntervalSample(job=job, client_index=0, attempt=1, t=t, **second) for t in range(1, 21)]
        + [IntervalSample(job=job, client_index=1, attempt=1, t=t, **second) for t in range(1, 53)])
    outcome = job_measure_again(job_id=job.pk, attempt=1, cause="client host vm-a went silent",
                                lost_client=LostClient(client_id=lost.pk, send=1))
    assert outcome == "again"
    assert Attempt.objects.get(job=job, number=1).t_s == 20
