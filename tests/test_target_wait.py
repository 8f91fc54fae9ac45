"""A job whose target refuses connections waits and tries again with a growing back-off, the run's jobs on other
targets go first meanwhile, and only after the campaign's target_wait_s does that target's work fail.

The coordinator runs here, in the test's process, against a real closed port (nothing listens on it: the
connection is really refused); the Celery messages it would send are recorded instead (tests/test_client_loss.py
does the same), the worker side of it is in tests/test_job_attempts.py.
"""
from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from campaigns import execution
from campaigns.execution import dispatch, transitions
from campaigns.models import Job, Run
from campaigns.probes import ProbeError, mysql_probe_error
from campaigns.sysbench.command import Connection
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.servers import OWN_QUEUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(sent_tasks: Any, settings: Any) -> Any:
    """The tasks sent (tests.helpers.dispatched.SentTasks), on a queue of the test's own; retries 5 s to 2 min."""
    settings.BENCHAPP_TARGET_RETRY_S = 5
    settings.BENCHAPP_TARGET_RETRY_MAX_S = 120
    return sent_tasks


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when this returns: a connection to it is refused


def _run(*, wait_s: int = 1800) -> tuple[Run, list[Job]]:
    """A running run: two jobs on a target nobody listens on, then one on another target."""
    gone, other = TargetFactory(name="a-gone", port=_closed_port()), TargetFactory(name="b-other")
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="wait-data", tables=1, table_size=100))
    campaign = CampaignFactory(targets=[gone, other], scenarios=[scenario], threads=[1], target_wait_s=wait_s)
    run = transitions.run_create(waits=False, campaign=campaign, queue=OWN_QUEUE)
    jobs = transitions.jobs_create(jobs=[
        Job(run=run, target=gone, scenario=scenario, threads=1, position=0),
        Job(run=run, target=gone, scenario=scenario, threads=2, position=1),
        Job(run=run, target=other, scenario=scenario, threads=1, position=2),
    ])
    return run, jobs


def test_a_job_whose_target_refuses_waits_and_tries_again_later_and_later(sent):
    run, (first, second, other) = _run()
    retry_in_s = execution.job_execute(job_id=first.pk, host="h1")
    first.refresh_from_db()
    assert first.status == Job.Status.WAITING and first.attempt == 1
    assert first.wait_reason.startswith(f"connection refused to 127.0.0.1:{first.target.port}"), first.wait_reason
    assert retry_in_s is not None and 2.5 <= retry_in_s <= 5
    assert first.next_try_at == pytest.approx(first.unreachable_since + timedelta(seconds=retry_in_s),
                                              abs=timedelta(seconds=1))
    assert first.waiting_text().startswith("waiting: target a-gone unreachable since ")
    assert ", next try in " in first.waiting_text()
    # Its target's other job waits its turn; the other target's job is the run's next one.
    assert dispatch.job_next(run_id=run.pk) == other
    # Away for 40 s by the next try: the wait has doubled along (half of it random).
    Job.objects.filter(pk=first.pk).update(unreachable_since=timezone.now() - timedelta(seconds=40))
    retry_in_s = execution.job_execute(job_id=first.pk, host="h1")
    assert retry_in_s is not None and 20 <= retry_in_s <= 40
    first.refresh_from_db()
    assert first.status == Job.Status.WAITING and second.status == Job.Status.QUEUED


def test_a_waiting_jobs_try_that_comes_while_another_job_of_its_run_runs_waits_for_that_one(sent):
    run, (first, second, other) = _run()
    execution.job_execute(job_id=first.pk, host="h1")
    transitions.job_claim(job_id=other.pk, host="h2")
    Job.objects.filter(pk=first.pk).update(next_try_at=timezone.now() - timedelta(seconds=1))
    assert execution.job_execute(job_id=first.pk, host="h1") is None
    first.refresh_from_db()
    assert first.status == Job.Status.WAITING, "not claimed beside the running job"
    assert first.waiting_text().endswith(", next try when job #3 has finished"), first.waiting_text()


@pytest.mark.parametrize("wait_s", [0, 300])
def test_after_the_campaigns_wait_the_targets_work_fails_with_the_cause(sent, wait_s):
    run, (first, second, other) = _run(wait_s=wait_s)
    if wait_s:
        execution.job_execute(job_id=first.pk, host="h1")
        Job.objects.filter(pk=first.pk).update(unreachable_since=timezone.now() - timedelta(seconds=wait_s + 1))
    assert execution.job_execute(job_id=first.pk, host="h1") is None
    first.refresh_from_db()
    second.refresh_from_db()
    other.refresh_from_db()
    assert first.status == Job.Status.FAILED and first.phase == "done"
    refused = f"connection refused to 127.0.0.1:{first.target.port}"
    if wait_s:
        assert first.error.startswith("target a-gone unreachable since "), first.error
        assert "(5 min 1 s; the campaign waits 5 min 0 s): " + refused in first.error, first.error
    else:
        assert first.error.startswith(refused), first.error  # as before this setting: at once, the cause alone
    assert (second.status, second.error) == (Job.Status.FAILED, first.error)
    assert other.status == Job.Status.QUEUED, "another target's work goes on"


@pytest.mark.parametrize("code, unreachable", [
    (2003, True), (2013, True), (2006, True), (1040, True), (1290, True), (1836, True),
    (1045, False), (1049, False), (1064, False),
])
def test_mysql_errors_that_say_the_server_is_away_are_told_from_mistakes(code, unreachable):
    conn = Connection(driver="mysql", host="db", port=3306, database="sb", user="u", password="secret")
    error = mysql_probe_error(Exception(code, "text"), conn)
    assert isinstance(error, ProbeError) and error.unreachable is unreachable
