"""Losing a client host ("Client hosts for real", Losing one).

Lost before its sysbench started measuring (its task never picked up, or waiting at the barrier), a client's share
is sent to another eligible host, up to the campaign's client_tries sends; the job keeps the history. Lost while
measuring, or with no try or host left, the job fails with the cause and the run goes on (partially succeeded).

The reconciler's decisions are checked on rows it finds (no worker); the integration tests kill a real worker with
SIGKILL during a job's warm-up, so that its client share is sent to a host that is gone.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client as PageClient
from django.utils import timezone

from campaigns import execution, roles
from campaigns.models import Campaign, ClientHost, Job, JobClient, Run
from tests.conftest import WorkerProcess, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named, launch_through, sysbench_pids, wait_status
from tests.helpers.servers import OWN_QUEUE, RedisServer
from tests.helpers.users import client_for, make_user

LONG_AGO = timedelta(seconds=60)


# ---------------------------------------------------------------- the reconciler's decision, on rows


@pytest.fixture
def sent(sent_tasks: Any) -> Any:
    """The tasks sent (tests.helpers.dispatched.SentTasks), on a queue of the test's own."""
    return sent_tasks


def _host_row(name: str, *, online: bool, labels: list[str] | None = None) -> None:
    beat = timezone.now() - (timedelta(hours=1) if not online else timedelta(0))
    ClientHost.objects.create(hostname=name, queue=f"q.{name}", last_heartbeat=beat, labels=labels or [])


def _waiting_job(*, tries: int = 2, choice: list[str] | None = None) -> tuple[Job, JobClient, JobClient]:
    """A running two-client job: client 0 on "near" ready at the barrier, client 1 sent to "gone" a minute ago and
    never picked up ("gone" has stopped beating)."""
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="loss-data", tables=1, table_size=500))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], threads=[2], clients_min=2,
                               client_tries=tries, client_hosts=choice or [])
    long_ago = timezone.now() - LONG_AGO
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, started_at=long_ago, queue=OWN_QUEUE)
    job = Job.objects.create(run=run, target=campaign.targets.get(), scenario=scenario, threads=2, clients_needed=2,
                             status=Job.Status.RUNNING, phase="run", claimed_by="near", started_at=long_ago,
                             heartbeat_at=timezone.now())
    ready = JobClient.objects.create(job=job, index=0, host_name="near", threads=1, status=JobClient.Status.READY,
                                     heartbeat_at=timezone.now())
    lost = JobClient.objects.create(job=job, index=1, host_name="gone", threads=1, heartbeat_at=long_ago)
    _host_row("near", online=True)
    _host_row("gone", online=False)
    return job, ready, lost


@pytest.mark.django_db
def test_a_client_whose_host_is_gone_before_it_started_is_sent_to_another_eligible_host(sent):
    job, ready, lost = _waiting_job(choice=["near", "lab"])
    _host_row("spare", online=True, labels=["lab"])
    _host_row("outsider", online=True)  # online, but not among the campaign's hosts
    Job.objects.filter(pk=job.pk).update(release_at=timezone.now() + timedelta(hours=1))

    outcome = execution.jobs_reconcile(stale_after_s=30, redispatch_after_s=30)

    lost.refresh_from_db()
    job.refresh_from_db()
    assert outcome["lost"] == 1
    assert (lost.status, lost.host_name, lost.attempt) == (JobClient.Status.PENDING, "spare", 2)
    assert job.status == Job.Status.RUNNING and job.error == ""
    assert job.release_at is None, "the barrier starts over for the new host"
    assert sent.messages == [([lost.pk, 2], f"{OWN_QUEUE}.host.spare")]
    (earlier,) = lost.earlier_sends.all()
    assert (earlier.number, earlier.host, earlier.outcome) == (1, "gone", "lost")
    assert earlier.cause == "client lost: host gone went offline before starting its client"
    history = lost.attempt_history()
    assert [(a["attempt"], a["host"], a["outcome"]) for a in history] == [(1, "gone", "lost"), (2, "spare", "pending")]
    assert history[0]["sent_at"] == job.started_at and history[1]["sent_at"] == history[0]["ended_at"]
    assert JobClient.objects.get(pk=ready.pk).status == JobClient.Status.READY, "the ready peer waits on"

    # The job's API and page show every send of the share.
    viewer = client_for(make_user(roles.VIEWER, "loss-viewer"))
    shown = viewer.get(f"/api/v1/jobs/{job.pk}/").json()["clients"][1]
    assert shown["attempt"] == 2
    assert [(a["attempt"], a["host"], a["outcome"]) for a in shown["attempts"]] == [
        (1, "gone", "lost"), (2, "spare", "pending")]
    assert shown["attempts"][0]["cause"].startswith("client lost: host gone")
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "loss-page-viewer"))
    html = page.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="attempts"' in html and "2 of 2" in html and "went offline before starting its client" in html


@pytest.mark.django_db
def test_a_client_that_stopped_beating_at_the_barrier_is_sent_to_another_host(sent):
    job, ready, lost = _waiting_job()
    _host_row("spare", online=True)
    # "gone" took its task and waited at the barrier, then died: ready, with its heartbeat a minute old.
    JobClient.objects.filter(pk=lost.pk).update(status=JobClient.Status.READY)
    execution.jobs_reconcile(stale_after_s=30, redispatch_after_s=30)
    lost.refresh_from_db()
    assert (lost.status, lost.host_name, lost.attempt) == (JobClient.Status.PENDING, "spare", 2)
    assert lost.earlier_sends.get().cause == (
        "client host gone lost at the start barrier: no heartbeat from its worker for 30 s (the worker was killed or "
        "stopped, or the host is down or cut off)")
    assert sent.messages == [([lost.pk, 2], f"{OWN_QUEUE}.host.spare")]
    assert not ClientHost.objects.get(hostname="gone").is_online()


@pytest.mark.django_db
@pytest.mark.parametrize("tries, spare, why", [
    (1, True, "not sent again: its 1 try is used (gone)"),
    (2, False, "not sent again: no other client host is online (tried gone)"),
])
def test_with_no_try_or_no_host_left_the_job_fails_naming_the_host_and_the_tries(sent, tries, spare, why):
    job, ready, lost = _waiting_job(tries=tries)
    if spare:
        _host_row("spare", online=True)
    execution.jobs_reconcile(stale_after_s=30, redispatch_after_s=30)
    lost.refresh_from_db()
    job.refresh_from_db()
    assert lost.status == JobClient.Status.FAILED and lost.attempt == 1 and not lost.earlier_sends.exists()
    assert job.status == Job.Status.FAILED
    assert job.error == f"client lost: host gone went offline before starting its client; {why}", job.error
    assert sent.messages == []


@pytest.mark.django_db
@pytest.mark.parametrize("job_tries", [1, 2])
def test_a_client_lost_after_a_peer_started_measuring_measures_the_job_again_while_tries_last(sent, job_tries):
    job, ready, lost = _waiting_job()
    Campaign.objects.filter(runs__jobs=job).update(job_tries=job_tries)
    _host_row("spare", online=True)
    JobClient.objects.filter(pk=ready.pk).update(status=JobClient.Status.RUNNING, started_at=timezone.now())
    execution.jobs_reconcile(stale_after_s=30, redispatch_after_s=30)
    job.refresh_from_db()
    cause = "client lost: host gone went offline before starting its client"
    if job_tries == 1:
        assert job.status == Job.Status.FAILED
        assert job.error == cause, job.error
    else:
        # The peer's measurement is spoiled: the job is measured again, its clients start over.
        assert (job.status, job.attempt, job.phase) == (Job.Status.QUEUED, 2, "")
        assert list(job.attempts.values_list("cause", flat=True)) == [cause]
        assert not job.clients.exists()
        assert sent.messages == [([job.pk], OWN_QUEUE)]  # sent to be measured again at once
        return
    assert sent.messages == []


@pytest.mark.django_db
@pytest.mark.parametrize("value, ok", [(0, False), (1, True), (5, True), (6, False), ("two", False)])
def test_client_tries_is_a_campaign_setting_from_1_to_5(value, ok):
    operator = client_for(make_user(roles.OPERATOR, "tries-operator"))
    response = operator.post("/api/v1/campaigns/", {"name": f"tries-{value}", "threads": [2], "client_tries": value},
                             format="json")
    if ok:
        assert response.status_code == 201, response.content
        assert response.json()["client_tries"] == value
    else:
        assert response.status_code == 400 and "client_tries" in response.json(), response.content
    assert CampaignFactory().client_tries == 2


# ---------------------------------------------------------------- a real worker killed before its client starts


def _workers(make_worker: Callable[..., WorkerProcess], broker: RedisServer, names: list[str]) -> list[WorkerProcess]:
    """Client hosts on the test's own broker, each reconciling from its main process every second (as production
    workers do), with short limits: a host is offline after 6 s of silence."""
    env = {**broker.env, "BENCHAPP_RECONCILE_IN_WORKER": "true", "BENCHAPP_RECONCILE_S": "1",
           "BENCHAPP_STALE_S": "6", "BENCHAPP_REDISPATCH_S": "3", "BENCHAPP_HOST_OFFLINE_S": "6"}
    workers = [make_worker(host_named(name), extra_env=env) for name in names]
    hosts = {w.hostname for w in workers}
    wait_for(lambda: set(ClientHost.objects.online().values_list("hostname", flat=True)) >= hosts,
             timeout_s=30, what=f"client hosts {sorted(hosts)} online")
    return workers


def _names(workers: list[WorkerProcess]) -> list[str]:
    """The campaign's choice of hosts: the test's own workers, never a worker another test left running on the
    session's broker (its host is online in the database too, and its name may sort first)."""
    return [w.hostname for w in workers]


def _kill_the_second_pick(job: Job, workers: list[WorkerProcess], marker: str
                          ) -> tuple[WorkerProcess, WorkerProcess, datetime]:
    """Waits until the coordinator has picked the job's hosts (its own first, then the others by name) and is
    preparing or warming up, then SIGKILLs the host picked for client 1, before that client exists. Returns the
    coordinator's worker, the victim and when it was killed."""
    def preparing() -> str | None:
        job.refresh_from_db()
        assert not job.is_finished(), f"job ended early: {job.status} {job.error}"
        return job.claimed_by if job.status == Job.Status.PREPARING and sysbench_pids(marker) else None

    coordinator = wait_for(preparing, timeout_s=60, interval_s=0.05, what=f"job {job.pk} to prepare or warm up")
    victim = min((w for w in workers if w.hostname != coordinator), key=lambda w: w.hostname)
    assert not job.clients.exists(), "the kill must come before the clients are sent"
    killed_at = timezone.now()
    victim.stop(signal.SIGKILL)
    return next(w for w in workers if w.hostname == coordinator), victim, killed_at


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_host_killed_before_its_client_started_is_replaced_and_the_job_succeeds(
        own_redis, make_worker, test_db_name, fault_db):
    workers = _workers(make_worker, own_redis, ["loss-a", "loss-b", "loss-c"])
    target = TargetFactory(database=fault_db)
    # The warm-up (on the coordinator, before any client is sent) is the window for the kill.
    scenario = ScenarioFactory(time_s=3, warmup_s=6, dataset=DatasetFactory(name="loss-ok", tables=1, table_size=500))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2], clients_min=2,
                               client_hosts=_names(workers))
    run = launch_through(own_redis, campaign.pk, test_db_name)
    job = run.jobs.get()
    coordinator, victim, killed_at = _kill_the_second_pick(job, workers, f"--mysql-db={fault_db}")
    spare = next(w for w in workers if w not in (coordinator, victim))

    wait_status(job, Job.FINISHED, timeout_s=120)
    assert job.status == Job.Status.SUCCEEDED, job.error
    first, second = job.clients.order_by("index")
    assert first.host_name == coordinator.hostname and first.attempt == 1
    assert (second.host_name, second.attempt, second.status) == (spare.hostname, 2, JobClient.Status.SUCCEEDED)
    assert [(a["host"], a["outcome"]) for a in second.attempt_history()] == [
        (victim.hostname, "lost"), (spare.hostname, "succeeded")]
    assert second.earlier_sends.first().cause.startswith(f"client lost: host {victim.hostname} went offline")
    # Both clients measured, together: the job's figures are the sum of theirs.
    assert all(c.exit_code == 0 for c in (first, second))
    assert job.result.qps == pytest.approx(first.summary["qps"] + second.summary["qps"])
    assert job.start_skew_ms is not None and job.start_skew_ms < 1000
    wait_status(run, (Run.Status.SUCCEEDED,), timeout_s=30)
    resent_s = (second.earlier_sends.first().ended_at - killed_at).total_seconds()
    record_measurement(f"client host SIGKILLed before its client started: share re-sent {resent_s:.1f} s after the "
                       f"kill (the warm-up still running for part of it), job succeeded on another host "
                       f"(BENCHAPP_HOST_OFFLINE_S=6, REDISPATCH_S=3, reconcile every 1 s)")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_lost_host_with_no_try_left_fails_its_job_and_the_run_partially_succeeds(
        own_redis, make_worker, test_db_name, fault_db):
    workers = _workers(make_worker, own_redis, ["once-a", "once-b"])
    target = TargetFactory(database=fault_db)
    data = DatasetFactory(name="loss-once", tables=1, table_size=500)
    # Two clients for the first job (on two hosts), one for the second; one try per share.
    scenarios = [ScenarioFactory(name="once-1-pair", time_s=2, warmup_s=6, dataset=data),
                 ScenarioFactory(name="once-2-single", time_s=2, dataset=data)]
    campaign = CampaignFactory(targets=[target], scenarios=scenarios, clients_min=1, clients_per_threads=1,
                               client_hosts=_names(workers),
                               threads_by_scenario={"once-1-pair": [2], "once-2-single": [1]}, client_tries=1)
    run = launch_through(own_redis, campaign.pk, test_db_name)
    first, second = run.jobs.order_by("position")
    coordinator, victim, _ = _kill_the_second_pick(first, workers, f"--mysql-db={fault_db}")

    wait_status(first, Job.FINISHED, timeout_s=90)
    assert first.status == Job.Status.FAILED
    assert first.error == (f"client lost: host {victim.hostname} went offline before starting its client; "
                           f"not sent again: its 1 try is used ({victim.hostname})"), first.error
    wait_status(second, Job.FINISHED, timeout_s=90)
    assert second.status == Job.Status.SUCCEEDED, second.error
    assert second.clients.get().host_name == coordinator.hostname
    wait_status(run, (Run.Status.PARTIALLY_SUCCEEDED,), timeout_s=30)
    assert run.error == "1 of 2 jobs failed"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_host_killed_while_its_client_waits_at_the_barrier_is_replaced_and_the_job_succeeds(
        own_redis, make_worker, test_db_name, fault_db):
    workers = _workers(make_worker, own_redis, ["loss-a", "loss-b", "loss-c"])
    # A fourth host that is online but whose worker has not started yet: its client holds the barrier. Its name
    # sorts first, so the coordinator picks it (after itself), then the first of the other two real hosts.
    late = host_named("loss-0-late")
    beating = threading.Event()

    def beat() -> None:
        while not beating.wait(0.5):
            execution.host_heartbeat(hostname=late)
        connection.close()

    execution.host_heartbeat(hostname=late)
    beater = threading.Thread(target=beat, daemon=True)
    beater.start()
    try:
        target = TargetFactory(database=fault_db)
        scenario = ScenarioFactory(time_s=3, dataset=DatasetFactory(name="loss-barrier", tables=1, table_size=500))
        campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[3], clients_min=3,
                                   client_hosts=[*_names(workers), late])
        run = launch_through(own_redis, campaign.pk, test_db_name)
        job = run.jobs.get()

        def ready_at_the_barrier() -> list[JobClient] | None:
            clients = list(job.clients.order_by("index"))
            job.refresh_from_db()
            assert not job.is_finished(), f"job ended early: {job.status} {job.error}"
            ready = [c for c in clients if c.status == JobClient.Status.READY]
            return clients if len(clients) == 3 and len(ready) == 2 else None

        clients = wait_for(ready_at_the_barrier, timeout_s=60, interval_s=0.05, what="two clients at the barrier")
        assert clients[1].host_name == late and clients[1].status == JobClient.Status.PENDING
        victim = next(w for w in workers if w.hostname == clients[2].host_name)
        coordinator = next(w for w in workers if w.hostname == clients[0].host_name)
        spare = next(w for w in workers if w not in (coordinator, victim))
        victim.stop(signal.SIGKILL)

        def resent() -> JobClient | None:
            client = JobClient.objects.get(pk=clients[2].pk)
            return client if client.attempt == 2 else None

        replaced = wait_for(resent, timeout_s=60, what="the victim's share to be sent again")
        assert replaced.host_name == spare.hostname
        assert replaced.earlier_sends.first().cause.startswith(
            f"client host {victim.hostname} lost at the start barrier: no heartbeat from its worker for 6 s"), \
            replaced.earlier_sends.first().cause
        job.refresh_from_db()
        assert job.status == Job.Status.RUNNING and job.release_at is None, "nobody has started measuring"
        # The late host's worker starts (beating for itself once ready): it finds its client task waiting, and
        # the barrier releases all three.
        make_worker(late, extra_env={**own_redis.env, "BENCHAPP_STALE_S": "6", "BENCHAPP_HOST_OFFLINE_S": "6"})
    finally:
        beating.set()
        beater.join(timeout=10)
    wait_status(job, Job.FINISHED, timeout_s=90)
    assert job.status == Job.Status.SUCCEEDED, job.error
    final = list(job.clients.order_by("index"))
    assert [c.host_name for c in final] == [coordinator.hostname, late, spare.hostname]
    assert all(c.status == JobClient.Status.SUCCEEDED and c.exit_code == 0 for c in final)
    assert [(a["host"], a["outcome"]) for a in final[2].attempt_history()] == [
        (victim.hostname, "lost"), (spare.hostname, "succeeded")]
    assert job.start_skew_ms is not None and job.start_skew_ms < 1000


@pytest.mark.django_db
@pytest.mark.parametrize("posted, kept", [(None, 2), ("", 2), ("4", 4), ("0", None), ("9", None)])
def test_the_campaign_form_takes_client_tries_from_1_to_5_and_defaults_to_2(posted, kept):
    from campaigns.forms import CampaignForm

    data = {"name": f"form-tries-{posted}", "threads": "2", "repetitions": "1", "clients_min": "1",
            "scale_factor": "1"}
    if posted is not None:
        data["client_tries"] = posted
    form = CampaignForm(data=data)
    if kept is None:
        assert not form.is_valid() and "client_tries" in form.errors
    else:
        assert form.is_valid(), form.errors
        assert form.save_by(user=None).client_tries == kept
