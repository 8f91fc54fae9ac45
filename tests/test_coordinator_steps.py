"""The coordinator's steps, each alone (execution.coordinator.STEPS), and its one table from a step's exception to
the job's outcome (OUTCOMES), through job_execute against the real database."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from campaigns.execution import coordinator, transitions
from campaigns.execution.phases import JobFailure, JobLost, JobStopped, TargetUnreachable
from campaigns.execution.turns import Previous
from campaigns.models import Campaign, Job, Scenario
from tests.factories import CampaignFactory, DatasetFactory, JobFactory, ScenarioFactory, TargetFactory
from tests.helpers.servers import OWN_QUEUE

pytestmark = pytest.mark.django_db


def _claimed(**fields: Any) -> Job:
    """A job a coordinator on host "h1" has just claimed."""
    job = JobFactory(status=Job.Status.PREPARING, claimed_by="h1", claimed_at=timezone.now(), threads=1, **fields)
    return Job.objects.select_related("run__campaign", "target", "scenario").get(pk=job.pk)


def test_the_server_turn_step_leaves_the_job_waiting_behind_the_run_that_claimed_the_server_first():
    holder = JobFactory(target=TargetFactory(database="sb_one"), status=Job.Status.RUNNING,
                        claimed_at=timezone.now() - timedelta(seconds=30))
    job = _claimed(target=TargetFactory(database="sb_two"))
    assert coordinator.step_server_turn(coordinator.Coordination(job=job, host="h1")) is False
    job.refresh_from_db()
    assert job.status == Job.Status.WAITING and f"job #{holder.pk} of run #{holder.run_id}" in job.wait_reason
    alone = _claimed(target=TargetFactory(host="10.9.9.9"))
    assert coordinator.step_server_turn(coordinator.Coordination(job=alone, host="h1")) is True


def test_the_hosts_step_waits_with_the_reason_when_none_of_the_chosen_hosts_is_online_and_clears_it_once_they_are():
    job = _claimed()
    Campaign.objects.filter(pk=job.run.campaign_id).update(client_hosts=["lab-*"])
    job = Job.objects.select_related("run__campaign").get(pk=job.pk)
    c = coordinator.Coordination(job=job, host="h1")
    assert coordinator.step_hosts(c) is False
    job.refresh_from_db()
    assert (job.status, job.wait_reason) == (Job.Status.WAITING, "waits for a client host among lab-*: none is online")
    assert c.hosts == []

    mine = _claimed()
    Job.objects.filter(pk=mine.pk).update(wait_reason="an earlier reason")
    c = coordinator.Coordination(job=mine, host="h1")
    assert coordinator.step_hosts(c) is True
    assert c.hosts == ["h1"] and Job.objects.get(pk=mine.pk).wait_reason == ""


def test_the_target_step_tells_a_refusing_server_from_a_failing_job(refused_port):
    c = coordinator.Coordination(job=_claimed(target=TargetFactory(port=refused_port)), host="h1")
    with pytest.raises(TargetUnreachable):
        coordinator.step_target(c)
    assert c.tables == ["sbtest1"], "the tables it probes are the job's"


def test_the_dataset_step_prepares_nothing_for_a_scenario_that_never_prepares():
    scenario = ScenarioFactory(prepare_mode=Scenario.PrepareMode.NEVER)
    c = coordinator.Coordination(job=_claimed(scenario=scenario), host="h1")  # no connection: none is needed
    assert coordinator.step_dataset(c) is True and c.prepare_output == ""


def test_the_snapshot_step_reuses_the_previous_jobs_after_only_when_nothing_ran_on_the_target_since():
    job = _claimed()
    after = {"status": {"Questions": 10}, "settings": {"innodb_flush_log_at_trx_commit": "1"}}
    c = coordinator.Coordination(job=job, host="h1",
                                 previous=Previous(target_id=job.target_id, tables=job.tables, snapshot_after=after))
    c.variant = {"settings": {"innodb_flush_log_at_trx_commit": {"asked": "2", "got": "2"}}}
    assert coordinator.step_snapshot(c) is True  # no connection: the previous snapshot stands
    assert c.snapshot["before"]["settings"] == {"innodb_flush_log_at_trx_commit": "2"}, "the variant read back"
    assert c.snapshot["variant"] is c.variant

    other = coordinator.Coordination(job=job, host="h1", prepare_output="prepared",
                                     previous=Previous(target_id=job.target_id, tables=job.tables,
                                                       snapshot_after=after))
    with pytest.raises(RuntimeError, match="before step_target"):
        coordinator.step_snapshot(other)  # a prepare ran since: the server is read again, and needs the target


def test_the_steps_run_in_the_order_a_job_needs():
    names = [step.__name__ for step in coordinator.STEPS]
    assert names == ["step_self_measure", "step_server_turn", "step_hosts", "step_target", "step_dataset",
                     "step_variant", "step_warmup", "step_quiet", "step_snapshot", "step_send"]


def _queued() -> Job:
    target = TargetFactory()
    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=10))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1], target_wait_s=3600)
    run = transitions.run_create(waits=False, campaign=campaign, queue=OWN_QUEUE)
    (job,) = transitions.jobs_create(jobs=[Job(run=run, target=target, scenario=scenario, threads=1, position=0)])
    return job


@pytest.mark.parametrize(("raised", "status", "error", "reraised"), [
    (TargetUnreachable("connection refused"), Job.Status.WAITING, "", False),
    (JobStopped(), Job.Status.CANCELLED, "", False),
    (JobFailure("table sbtest1 is missing"), Job.Status.FAILED, "table sbtest1 is missing", False),
    (JobLost("worker lost"), Job.Status.FAILED, "worker lost", False),
    (ValueError("a bug"), Job.Status.FAILED, "internal error: ValueError: a bug", True),
])
def test_a_steps_exception_is_the_jobs_outcome_by_one_table(monkeypatch, sent_tasks, raised, status, error, reraised):
    def step(c: coordinator.Coordination) -> bool:
        raise raised

    seen: list[int] = []
    monkeypatch.setattr(coordinator, "STEPS", (lambda c: seen.append(c.job.pk) or True, step))
    job = _queued()
    if reraised:
        with pytest.raises(ValueError):
            coordinator.job_execute(job_id=job.pk, host="h1")
    else:
        retry_in_s = coordinator.job_execute(job_id=job.pk, host="h1")
        assert (retry_in_s is not None) == (status == Job.Status.WAITING), "only a target to wait for is tried again"
    job.refresh_from_db()
    assert seen == [job.pk], "the steps before the raising one ran"
    assert (job.status, job.error) == (status, error)
    if status == Job.Status.WAITING:
        assert "connection refused" in job.wait_reason and job.unreachable_since is not None


def test_a_step_that_leaves_the_job_waiting_stops_the_walk(monkeypatch, sent_tasks):
    seen: list[str] = []

    def waits(c: coordinator.Coordination) -> bool:
        seen.append("waits")
        transitions.job_wait(job_id=c.job.pk, reason="waits for a test")
        return False

    monkeypatch.setattr(coordinator, "STEPS", (waits, lambda c: seen.append("after") or True))
    job = _queued()
    assert coordinator.job_execute(job_id=job.pk, host="h1") is None
    assert seen == ["waits"]
    assert Job.objects.get(pk=job.pk).status == Job.Status.WAITING
