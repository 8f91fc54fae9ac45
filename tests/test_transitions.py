"""The state machine of campaigns.execution.transitions: every legal transition is taken, every illegal one
is refused (the row does not move, or the call raises), whatever state the row starts from."""
from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.execution import dispatch
from campaigns.execution import transitions as tr
from campaigns.models import Campaign, Job, JobClient, PreparedDataset, Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

pytestmark = pytest.mark.django_db

JS, CS, RS, PH = Job.Status, JobClient.Status, Run.Status, Job.Phase
LONG_AGO = timedelta(hours=1)


def _run(status: str = RS.RUNNING) -> Run:
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()], threads=[1])
    run = Run.objects.create(campaign=campaign)
    Run.objects.filter(pk=run.pk).update(status=status)  # the test puts the row where it wants it
    run.refresh_from_db()
    return run


def _job(status: str, phase: str = PH.NONE, run: Run | None = None) -> Job:
    run = run or _run()
    target, scenario = run.campaign.targets.get(), run.campaign.scenarios.get()
    (job,) = tr.jobs_create(jobs=[Job(run=run, target=target, scenario=scenario, threads=1)])
    Job.objects.filter(pk=job.pk).update(status=status, phase=phase,
                                         heartbeat_at=timezone.now() - LONG_AGO)
    return Job.objects.get(pk=job.pk)


def _client(status: str) -> JobClient:
    client = JobClient.objects.create(job=_job(JS.RUNNING, PH.RUN), index=0, host_name="h")
    JobClient.objects.filter(pk=client.pk).update(status=status, heartbeat_at=timezone.now() - LONG_AGO)
    return JobClient.objects.get(pk=client.pk)


JOB_MOVES: dict[str, Callable[[Job], object]] = {
    JS.PREPARING: lambda job: tr.job_claim(job_id=job.pk, host="h"),
    JS.WAITING: lambda job: tr.job_wait(job_id=job.pk, reason="r"),
    JS.RUNNING: lambda job: tr.job_start(job_id=job.pk, command_line="", server_snapshot={}),
    JS.SUCCEEDED: lambda job: tr.job_end(job_id=job.pk, status=JS.SUCCEEDED),
    JS.FAILED: lambda job: tr.job_fail(job_id=job.pk, cause="x"),
    JS.CANCELLED: lambda job: tr.job_end(job_id=job.pk, status=JS.CANCELLED),
}
CLIENT_MOVES: dict[str, Callable[[JobClient], object]] = {
    CS.PENDING: lambda c: tr.client_resend(client_id=c.pk, attempt=c.attempt, host_name="other",
                                           heartbeat_before=timezone.now(), earlier={"host": "h"}),
    CS.READY: lambda c: tr.client_claim(client_id=c.pk),
    CS.RUNNING: lambda c: tr.client_start(client_id=c.pk),
    CS.SUCCEEDED: lambda c: tr.client_close(client_id=c.pk, status=CS.SUCCEEDED),
    CS.FAILED: lambda c: tr.client_close(client_id=c.pk, status=CS.FAILED, error="x"),
    CS.CANCELLED: lambda c: tr.client_close(client_id=c.pk, status=CS.CANCELLED),
}


DS = PreparedDataset.Status


def _dataset(status: str, *, signature: str = "sig-a", target=None) -> PreparedDataset:
    target = target or TargetFactory()
    prepared = tr.dataset_record(target_id=target.pk, signature=signature, tables=1, table_size=10)
    PreparedDataset.objects.filter(pk=prepared.pk).update(status=status)
    return PreparedDataset.objects.get(pk=prepared.pk)


DATASET_MOVES: dict[str, Callable[[PreparedDataset], object]] = {
    DS.PREPARING: lambda d: tr.dataset_prepare_begin(prepared=d, job_id=_job(JS.PREPARING).pk),
    DS.READY: lambda d: tr.dataset_prepare_end(prepared_id=d.pk, status=DS.READY, prepare_s=1.5),
    DS.FAILED: lambda d: tr.dataset_prepare_end(prepared_id=d.pk, status=DS.FAILED),
    DS.DROPPED: lambda d: tr.dataset_dropped(target_id=d.target_id, signature=d.signature),
}


@pytest.mark.parametrize("source", DS.values)
@pytest.mark.parametrize("goal", list(DATASET_MOVES))
def test_a_prepared_dataset_moves_only_along_the_table(source, goal):
    prepared = _dataset(source)
    DATASET_MOVES[goal](prepared)
    prepared.refresh_from_db()
    assert prepared.status == (goal if source in tr.DATASET_SOURCES[goal] else source)
    if prepared.status == DS.READY and source != DS.READY:
        assert prepared.prepared_at is not None and prepared.prepare_s == 1.5


def test_a_prepare_that_begins_drops_the_other_datasets_of_its_target_only():
    ready = _dataset(DS.READY, signature="old")
    beside = _dataset(DS.READY, signature="other-target")
    again = _dataset(DS.FAILED, signature="new", target=ready.target)
    tr.dataset_prepare_begin(prepared=again, job_id=_job(JS.PREPARING).pk)
    statuses = dict(PreparedDataset.objects.values_list("signature", "status"))
    assert statuses == {"old": DS.DROPPED, "other-target": DS.READY, "new": DS.PREPARING}
    assert beside.target_id != ready.target_id
    # Its prepare, ended after another prepare dropped it, is not recorded as ready.
    tr.dataset_dropped(target_id=again.target_id, signature="new")
    assert not tr.dataset_prepare_end(prepared_id=again.pk, status=DS.READY, prepare_s=1.0)


def test_a_prepare_cannot_end_as_anything_but_ready_or_failed():
    prepared = _dataset(DS.PREPARING)
    with pytest.raises(tr.IllegalTransition):
        tr.dataset_prepare_end(prepared_id=prepared.pk, status=DS.DROPPED)


@pytest.mark.parametrize("source", JS.values)
@pytest.mark.parametrize("goal", list(JOB_MOVES))
def test_a_job_moves_only_along_the_table(source, goal):
    job = _job(source)
    JOB_MOVES[goal](job)
    job.refresh_from_db()
    if source in tr.JOB_SOURCES[goal]:
        assert job.status == goal
    else:
        assert job.status == source, f"{source} -> {goal} is not a transition, but the job moved"


@pytest.mark.parametrize("source", CS.values)
@pytest.mark.parametrize("goal", list(CLIENT_MOVES))
def test_a_client_moves_only_along_the_table(source, goal):
    client = _client(source)
    CLIENT_MOVES[goal](client)
    client.refresh_from_db()
    assert client.status == (goal if source in tr.CLIENT_SOURCES[goal] else source)


def test_a_resend_moves_the_share_to_the_new_host_resets_the_barrier_and_shuts_out_the_old_send():
    client = _client(CS.READY)
    Job.objects.filter(pk=client.job_id).update(release_at=timezone.now())
    assert tr.client_resend(client_id=client.pk, attempt=1, host_name="b", heartbeat_before=timezone.now(),
                            earlier={"attempt": 1, "host": "h", "outcome": "lost", "cause": "client lost: h"})
    client.refresh_from_db()
    assert (client.status, client.host_name, client.attempt) == (CS.PENDING, "b", 2)
    assert list(client.earlier_sends.values_list("number", "host", "outcome", "cause")) == [
        (1, "h", "lost", "client lost: h")]
    assert Job.objects.get(pk=client.job_id).release_at is None
    # The first send's worker, alive after all, can neither claim, start nor close the share that "b" now has.
    assert not tr.client_claim(client_id=client.pk, attempt=1)
    assert not tr.client_close(client_id=client.pk, status=CS.FAILED, attempt=1)
    assert tr.client_claim(client_id=client.pk, attempt=2)
    # A release time that the job no longer has (the barrier was reset) starts nobody.
    assert not tr.client_start(client_id=client.pk, attempt=2, release_at=timezone.now() - LONG_AGO)
    release = timezone.now()
    Job.objects.filter(pk=client.job_id).update(release_at=release)
    assert tr.client_start(client_id=client.pk, attempt=2, release_at=release)


def test_no_resend_once_a_client_of_the_job_has_started_measuring():
    lost = _client(CS.READY)
    JobClient.objects.create(job_id=lost.job_id, index=1, host_name="p", status=CS.RUNNING,
                             started_at=timezone.now())
    assert not tr.client_resend(client_id=lost.pk, attempt=1, host_name="b", heartbeat_before=timezone.now(),
                                earlier={})
    assert JobClient.objects.get(pk=lost.pk).host_name == "h"


@pytest.mark.parametrize("source", CS.values)
def test_only_an_unfinished_client_that_stopped_beating_is_lost(source):
    client = _client(source)
    lost = tr.client_lose(client_id=client.pk, heartbeat_before=timezone.now(), cause="client lost")
    client.refresh_from_db()
    assert lost == (source in tr.CLIENT_ACTIVE)
    assert client.status == (CS.FAILED if lost else source)
    fresh = _client(CS.RUNNING)
    assert not tr.client_lose(client_id=fresh.pk, heartbeat_before=timezone.now() - 2 * LONG_AGO, cause="x")


@pytest.mark.parametrize("source", RS.values)
def test_a_run_starts_only_from_pending_and_is_cancelled_only_while_unfinished(source):
    run = _run(source)
    assert tr.run_start(run=run) == (source in tr.RUN_SOURCES[RS.RUNNING])
    run = _run(source)
    assert tr.run_cancel_now(run=run) == (source in tr.RUN_SOURCES[RS.CANCELLED])
    run.refresh_from_db()
    assert run.status == (RS.CANCELLED if source in tr.RUN_SOURCES[RS.CANCELLED] else source)


@pytest.mark.parametrize("statuses, outcome", [
    ([JS.SUCCEEDED, JS.SUCCEEDED], RS.SUCCEEDED),
    ([JS.SUCCEEDED, JS.FAILED], RS.PARTIALLY_SUCCEEDED),
    ([JS.FAILED, JS.FAILED], RS.FAILED),
    ([JS.SUCCEEDED, JS.CANCELLED], RS.CANCELLED),
    ([JS.FAILED, JS.CANCELLED], RS.CANCELLED),
])
def test_a_run_closes_by_its_jobs(statuses, outcome):
    run = _run()
    for status in statuses:
        _job(status, PH.DONE, run=run)
    assert tr.run_close(run=run)
    run.refresh_from_db()
    assert run.status == outcome and run.finished_at is not None
    if outcome in (RS.PARTIALLY_SUCCEEDED, RS.FAILED):
        assert run.error == f"{statuses.count(JS.FAILED)} of {len(statuses)} jobs failed"


def test_a_run_with_an_unfinished_job_does_not_close():
    run = _run()
    _job(JS.SUCCEEDED, PH.DONE, run=run)
    _job(JS.QUEUED, run=run)
    assert not tr.run_close(run=run)
    assert Run.objects.get(pk=run.pk).status == RS.RUNNING


@pytest.mark.parametrize("phase", [PH.RUN, PH.FINALIZING])
def test_a_run_whose_cancelled_job_is_still_stopping_closes_only_after_that_job(phase):
    """A cancel marks the measuring job at once; its clients stop within a poll interval and its closer stores
    the samples and drops the tables. Till then the run holds its target: it is not closed (nor its next run
    started on the same database) by whoever advances it meanwhile, such as the reconciler."""
    run = _run()
    Campaign.objects.filter(pk=run.campaign_id).update(keep_data=True)  # nothing to drop on a target here
    job = _job(JS.CANCELLED, phase, run=run)
    dispatch.run_advance(run_id=run.pk)
    assert Run.objects.get(pk=run.pk).status == RS.RUNNING
    assert Job.objects.filter(run=run).unsettled().get() == job
    tr.job_end(job_id=job.pk, status=JS.CANCELLED)
    dispatch.run_advance(run_id=run.pk)
    assert Run.objects.get(pk=run.pk).status == RS.CANCELLED
    assert not Job.objects.filter(run=run).unsettled().exists()


@pytest.mark.parametrize("source", [PH.NONE, PH.PREPARE, PH.RUN, PH.FINALIZING, PH.DONE])
def test_exactly_one_closer_wins_the_finalizing_phase(source):
    job = _job(JS.RUNNING, source)
    assert tr.job_finalizing_begin(job_id=job.pk) == (source in tr.PHASE_SOURCES[PH.FINALIZING])
    assert not tr.job_finalizing_begin(job_id=job.pk)  # the second caller loses
    # A closer that stopped beating hands the job back to phase run, to be closed again.
    restarted = tr.job_finalizing_restart(job_id=job.pk, heartbeat_before=timezone.now() + LONG_AGO)
    assert restarted == (source in (PH.RUN, PH.FINALIZING))


def test_closing_a_job_ends_its_phase_and_a_recorded_cancel_wins():
    job = _job(JS.CANCELLED, PH.RUN)
    tr.job_end(job_id=job.pk, status=JS.SUCCEEDED)
    job.refresh_from_db()
    assert (job.status, job.phase) == (JS.CANCELLED, PH.DONE) and job.finished_at is not None


@pytest.mark.parametrize("call", [
    lambda: tr.job_end(job_id=0, status=JS.RUNNING),
    lambda: tr.job_end(job_id=0, status=JS.QUEUED),
    lambda: tr.client_close(client_id=0, status=CS.READY),
    lambda: tr.client_close(client_id=0, status=CS.PENDING),
])
def test_asking_for_a_state_that_no_transition_leads_to_raises(call):
    with pytest.raises(tr.IllegalTransition):
        call()


def test_new_jobs_are_born_queued():
    run = _run()
    target, scenario = run.campaign.targets.get(), run.campaign.scenarios.get()
    with pytest.raises(tr.IllegalTransition):
        tr.jobs_create(jobs=[Job(run=run, target=target, scenario=scenario, threads=1, status=JS.RUNNING)])


def test_a_coordinator_that_stopped_beating_loses_only_a_preparing_job():
    for status in JS.values:
        job = _job(status, PH.PREPARE)
        lost = tr.job_lose_coordinator(job_id=job.pk, heartbeat_before=timezone.now(), cause="client lost")
        assert lost == (status == JS.PREPARING)


def test_the_dispatch_count_counts_every_send_even_from_a_stale_copy(monkeypatch):
    from campaigns.execution import dispatch

    monkeypatch.setattr(dispatch, "_tasks", lambda: type("T", (), {"job_execute_task": type(
        "K", (), {"apply_async": staticmethod(lambda **kwargs: None)})})())
    job = _job(JS.QUEUED)
    stale = Job.objects.get(pk=job.pk)
    dispatch.job_dispatch(job=stale)
    dispatch.job_dispatch(job=stale)
    assert Job.objects.get(pk=job.pk).dispatch_count == 2


# ---------------------------------------------------------------- a lost attempt and the next one


def _measuring_client(monkeypatch: pytest.MonkeyPatch) -> JobClient:
    """A job measuring its first attempt with one client whose worker stopped beating; sends go nowhere."""
    monkeypatch.setattr(dispatch, "_tasks", lambda: type("T", (), {"job_execute_task": type(
        "K", (), {"apply_async": staticmethod(lambda **kwargs: None)})})())
    return _client(CS.RUNNING)


def test_a_lost_client_and_its_new_attempt_are_one_change_and_a_late_second_look_fails_nothing(monkeypatch):
    from campaigns.execution.resend import jobclient_lose

    client = _measuring_client(monkeypatch)
    snapshot = JobClient.objects.get(pk=client.pk)  # what a second looker (sweep or reconciler) read before
    assert jobclient_lose(client=client, heartbeat_before=timezone.now(), cause="worker restarted on h")
    job = Job.objects.get(pk=client.job_id)
    assert (job.status, job.attempt, job.error) == (JS.QUEUED, 2, "")
    assert not JobClient.objects.filter(pk=client.pk).exists(), "the lost attempt's client went with it"
    # The second looker finds the lost client gone: it neither loses it again nor fails the new attempt.
    assert not jobclient_lose(client=snapshot, heartbeat_before=timezone.now(), cause="worker restarted on h")
    job.refresh_from_db()
    assert (job.status, job.attempt, job.error) == (JS.QUEUED, 2, "")
    (lost,) = job.attempts.all()
    assert lost.cause == "worker restarted on h"


def test_a_client_that_beat_meanwhile_is_not_lost_and_its_attempt_stays(monkeypatch):
    from campaigns.execution.resend import jobclient_lose

    client = _measuring_client(monkeypatch)
    JobClient.objects.filter(pk=client.pk).update(heartbeat_at=timezone.now())
    assert not jobclient_lose(client=client, heartbeat_before=timezone.now() - timedelta(seconds=30), cause="x")
    job = Job.objects.get(pk=client.job_id)
    assert (job.status, job.attempt) == (JS.RUNNING, 1)
    assert JobClient.objects.get(pk=client.pk).status == CS.RUNNING


def test_the_closer_of_a_lost_attempt_never_ends_the_new_one_with_the_old_cause(monkeypatch):
    """The race of a fresh clone's make test: a closer read attempt 1 (its client lost), the job was measured again
    meanwhile, and the closer's "failed" ended attempt 2 with attempt 1's cause."""
    from campaigns.execution.results import job_close

    client = _measuring_client(monkeypatch)
    old = Job.objects.get(pk=client.job_id)
    assert tr.job_requeue(job_id=old.pk, attempt=1, cause="lost", t_s=5.0)
    job_close(old, status=JS.FAILED, error="lost")
    job = Job.objects.get(pk=old.pk)
    assert (job.status, job.phase, job.attempt, job.error) == (JS.QUEUED, PH.NONE, 2, "")
    assert not tr.job_fail(job_id=old.pk, cause="lost", attempt=1), "a failure of attempt 1 is not attempt 2's"
    assert tr.job_fail(job_id=old.pk, cause="new reason", attempt=2)
    assert Job.objects.get(pk=old.pk).error == "new reason", "the last attempt's own cause"


def test_an_attempt_being_closed_is_not_measured_again():
    job = _job(JS.RUNNING, PH.RUN)
    assert tr.job_finalizing_begin(job_id=job.pk, attempt=1)
    assert not tr.job_requeue(job_id=job.pk, attempt=1, cause="lost", t_s=None)
    job.refresh_from_db()
    assert (job.status, job.phase, job.attempt) == (JS.RUNNING, PH.FINALIZING, 1)
