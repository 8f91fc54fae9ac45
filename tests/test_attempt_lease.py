"""A lost attempt keeps its server and client hosts until its sysbench cannot run any more: a pool child killed while
measuring leaves a sysbench that runs to its own --time, so no job (another run's, the next of its run, its own next
attempt) measures there before the lost attempt's lease (its measuring start + --time + a grace) has run out; and a
job measured again waits for the run's job that went on measuring meanwhile."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.execution.turns import hosts_busy, measuring_before, target_busy
from campaigns.models import Job, JobClient
from tests.factories import CampaignFactory, RunFactory, ScenarioFactory, TargetFactory

pytestmark = pytest.mark.django_db


def _measuring_job(run, target, scenario, *, position=0, released_s_ago=5.0, time_s=60, hosts=("c1",)) -> Job:
    now = timezone.now()
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=4, position=position, time_s=time_s,
                             status=Job.Status.RUNNING, phase=Job.Phase.RUN, claimed_at=now - timedelta(seconds=30),
                             started_at=now - timedelta(seconds=released_s_ago + 1),
                             release_at=now - timedelta(seconds=released_s_ago), heartbeat_at=now)
    for index, host in enumerate(hosts):
        JobClient.objects.create(job=job, index=index, host_name=host, threads=4, status=JobClient.Status.RUNNING)
    return job


def _run(target=None, scenario=None):
    target, scenario = target or TargetFactory(), scenario or ScenarioFactory()
    return RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status="running"), target, \
        scenario


def test_a_lost_attempt_holds_its_server_and_hosts_against_every_job_until_its_sysbench_has_run_out():
    run, target, scenario = _run()
    lost = _measuring_job(run, target, scenario, released_s_ago=5, time_s=60)
    assert transitions.job_requeue(job_id=lost.pk, attempt=1, cause="worker process lost", t_s=5.0)
    (attempt,) = lost.attempts.all()
    assert attempt.hosts == ["c1"]
    expected = lost.release_at + timedelta(seconds=60 + transitions.LEASE_GRACE_S)
    assert attempt.lease_until == expected

    # Another run's job on the same server (another database of it), the lost job's own next attempt, and a job on
    # the lost attempt's client host: each waits, saying for what and until when.
    other_run, _, _ = _run(TargetFactory(database="another_db"), scenario)
    other = Job.objects.create(run=other_run, target=other_run.campaign.targets.get(), scenario=scenario, threads=4,
                               status=Job.Status.PREPARING, claimed_at=timezone.now())
    busy = target_busy(other)
    assert busy is not None and busy.job.pk == lost.pk
    assert f"attempt 1 of job #{lost.pk} (run #{run.pk}), lost while measuring, may still measure there until" in \
        busy.reason
    again = Job.objects.get(pk=lost.pk)
    assert target_busy(again) is not None, "its own next attempt waits for the old sysbench too"
    on_host = hosts_busy(other, ["c1", "c2"])
    assert on_host is not None and on_host.reason.startswith("waits for client host c1: attempt 1 of job")
    assert hosts_busy(other, ["c2"]) is None

    # Once the lease has run out, nothing holds them.
    type(attempt).objects.filter(pk=attempt.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert target_busy(other) is None and target_busy(again) is None and hosts_busy(other, ["c1"]) is None


def test_an_attempt_whose_every_sysbench_was_seen_to_exit_holds_nothing():
    run, target, scenario = _run()
    lost = _measuring_job(run, target, scenario, hosts=("c1", "c2"))
    JobClient.objects.filter(job=lost).update(exited_at=timezone.now())  # killed by a signal: its worker saw it end
    assert transitions.job_requeue(job_id=lost.pk, attempt=1, cause="sysbench was killed by SIGKILL", t_s=3.0)
    attempt = lost.attempts.get()
    assert (attempt.lease_until, attempt.hosts) == (None, [])
    assert target_busy(Job.objects.get(pk=lost.pk)) is None


def test_an_attempt_lost_before_it_measured_holds_nothing():
    run, target, scenario = _run()
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=4, status=Job.Status.PREPARING,
                             phase=Job.Phase.PREPARE, claimed_at=timezone.now(), heartbeat_at=timezone.now())
    assert transitions.job_requeue(job_id=job.pk, attempt=1, cause="coordinator lost", t_s=None)
    assert job.attempts.get().lease_until is None
    assert target_busy(Job.objects.get(pk=job.pk)) is None


def test_a_job_measured_again_waits_for_the_job_of_its_run_that_went_on_measuring_meanwhile():
    run, target, scenario = _run()
    first = _measuring_job(run, target, scenario, position=0, released_s_ago=80, time_s=60)  # its lease is over
    transitions.job_requeue(job_id=first.pk, attempt=1, cause="worker process lost", t_s=5.0)
    second = _measuring_job(run, target, scenario, position=1, released_s_ago=1, hosts=("c2",))
    again = Job.objects.get(pk=first.pk)
    assert measuring_before(again).pk == second.pk, "the earlier position does not go first while a later one measures"
    assert measuring_before(second) is None, "and the later one never waits for it (no deadlock)"
    Job.objects.filter(pk=second.pk).update(measured_at=timezone.now())
    assert measuring_before(again) is None
