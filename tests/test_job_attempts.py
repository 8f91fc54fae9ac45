"""Trouble that is not the job's own fault, each caused for real on processes of the
test's own: a target restarted mid-run or down for a while (a mariadbd of the test's own), sysbench killed by
someone else, a target whose tables are locked (FLUSH TABLES WITH READ LOCK).

A target that goes away pauses its job (it waits, and tries again with back-off), a measurement it spoiled is
measured again as a new attempt, and a hung target is named from what its sessions wait for. The worker-killed
case is in tests/test_faults.py.
"""
from __future__ import annotations

import os
import re
import signal
import time

import MySQLdb
import pytest
from django.test import Client as PageClient

from campaigns import roles, services
from campaigns.models import Job, JobClient, Run
from tests.conftest import record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import two_scenarios, wait_measuring, wait_status
from tests.helpers.seconds import stored_seconds
from tests.helpers.servers import MariaDBServer
from tests.helpers.users import client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]



def _finished(run: Run, *, timeout_s: float) -> Run:
    wait_status(run, Run.FINISHED, timeout_s=timeout_s)
    return run


def test_a_target_restarted_mid_run_is_waited_for_and_the_spoiled_job_measured_again(
        celery_worker_process, own_mariadb: MariaDBServer):
    own_mariadb.sql("CREATE DATABASE sbretry")
    target = TargetFactory(port=own_mariadb.port, database="sbretry")
    campaign = CampaignFactory(targets=[target], threads=[2],
                               scenarios=two_scenarios("restart", "restart-data", long_s=8))
    run = services.campaign_launch(campaign=campaign)
    first, second = run.jobs.order_by("position")
    wait_measuring(first, samples=3)

    restarted_at = time.monotonic()
    own_mariadb.stop()
    time.sleep(2)
    own_mariadb.start()
    back_s = time.monotonic() - restarted_at

    _finished(run, timeout_s=120)
    recovered_s = time.monotonic() - restarted_at
    assert run.status == Run.Status.SUCCEEDED, run.error
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (Job.Status.SUCCEEDED, Job.Status.SUCCEEDED), (first.error, second.error)
    assert (first.attempt, second.attempt) == (2, 1)
    (lost,) = first.attempts.all()
    assert lost.number == 1 and f"target {target.name} went away mid-run" in lost.cause, lost
    assert lost.t_s >= 3, "it had measured 3 s when the target went away"
    # The lost attempt's seconds stay, apart; the result is the second attempt's alone.
    assert len(stored_seconds(first, 1)) >= 3
    assert len(stored_seconds(first, 2, client_index=0)) >= 7
    samples = [r["tps"] for r in stored_seconds(first, 2)][1:]
    assert first.result.steady_tps == pytest.approx(sum(samples) / len(samples))
    assert first.clients.get().exit_code == 0
    history = [row["text"] for row in first.attempt_history()]
    assert re.match(rf"attempt 1 lost at t = \d+ s: target {target.name} went away mid-run", history[0]), history[0]
    record_measurement(f"target restart mid-run (down {back_s:.1f} s): run succeeded {recovered_s:.1f} s after the "
                       f"stop, the spoiled job measured again (attempt 2); no job failed")


def test_a_target_down_for_a_while_pauses_its_jobs_while_other_targets_go_on_and_they_resume_by_themselves(
        celery_worker_process, own_mariadb: MariaDBServer, fault_db):
    own_mariadb.sql("CREATE DATABASE sbdown")
    down = TargetFactory(name="a-down", port=own_mariadb.port, database="sbdown")
    up = TargetFactory(name="b-up", database=fault_db)
    scenario = ScenarioFactory(name="down-1", time_s=2, dataset=DatasetFactory(name="down-data", tables=1,
                                                                               table_size=1000))
    campaign = CampaignFactory(targets=[down, up], scenarios=[scenario], threads=[1, 2], target_wait_s=600)
    own_mariadb.stop()
    stopped_at = time.monotonic()
    run = services.campaign_launch(campaign=campaign)
    waiting = run.jobs.filter(target=down).order_by("position").first()
    others = list(run.jobs.filter(target=up))

    def waits() -> bool:
        waiting.refresh_from_db()
        return waiting.status == Job.Status.WAITING and waiting.next_try_at is not None

    wait_for(waits, timeout_s=60, what="the job to wait for its target")
    assert "connection refused" in waiting.wait_reason, waiting.wait_reason
    api = client_for(make_user(roles.VIEWER, "waiting-viewer"))
    body = api.get(f"/api/v1/jobs/{waiting.pk}/").json()
    assert body["status"] == "waiting" and body["attempt"] == 1
    assert body["waiting"].startswith("waiting: target a-down unreachable since "), body["waiting"]
    assert "(connection refused" in body["waiting"], body["waiting"]
    assert re.search(r", next try (in \d+ s|when job #\d has finished|now)$", body["waiting"]), body["waiting"]
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "waiting-page"))
    text = page.get(f"/runs/{run.pk}/").content.decode()
    assert "waiting: target a-down unreachable since" in text

    # Meanwhile the other target's jobs run.
    for job in others:
        wait_status(job, Job.FINISHED, timeout_s=90)
        assert job.status == Job.Status.SUCCEEDED, job.error
    # Still paused: none has ended (one may be between two tries, claimed to look at its target again).
    assert not run.jobs.filter(target=down, status__in=Job.FINISHED).exists(), "still waiting"
    tries = waiting.next_try_at

    own_mariadb.start()
    back_at = time.monotonic()
    _finished(run, timeout_s=180)
    resumed_s = time.monotonic() - back_at
    assert run.status == Run.Status.SUCCEEDED, run.error
    for job in run.jobs.all():
        assert job.status == Job.Status.SUCCEEDED and job.attempt == 1, (job.pk, job.status, job.error)
        assert job.unreachable_since is None and job.next_try_at is None
    record_measurement(f"target down {back_at - stopped_at:.0f} s: its jobs waited (last next try "
                       f"{tries:%H:%M:%S}), the other target's {len(others)} jobs ran meanwhile; resumed "
                       f"{resumed_s:.1f} s after the target came back, run succeeded")


def test_sysbench_killed_by_someone_else_is_measured_again(celery_worker_process, fault_db):
    target = TargetFactory(database=fault_db)
    scenario = ScenarioFactory(name="killed-1", time_s=5, dataset=DatasetFactory(name="killed-data", tables=1,
                                                                                 table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1])
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    (client,) = wait_measuring(job, samples=2)
    os.kill(client.pid, signal.SIGKILL)

    _finished(run, timeout_s=90)
    job.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, (run.error, job.error, list(job.attempts.values()))
    assert job.status == Job.Status.SUCCEEDED and job.attempt == 2
    (lost,) = job.attempts.all()
    assert lost.cause == "sysbench was killed by SIGKILL, a signal benchapp did not send, while measuring"
    assert lost.t_s >= 2
    assert job.clients.get().status == JobClient.Status.SUCCEEDED
    # (sysbench may skip printing its last second on a loaded machine: 4 of 5 is still the second attempt's run)
    assert len(stored_seconds(job, 1)) >= 2 and len(stored_seconds(job, 2)) >= 4


def test_a_job_runs_out_of_tries_and_fails_with_every_cause_kept(celery_worker_process, fault_db):
    target = TargetFactory(database=fault_db)
    scenario = ScenarioFactory(name="tries-1", time_s=20, dataset=DatasetFactory(name="tries-data", tables=1,
                                                                                 table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1], job_tries=2)
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    for attempt in (1, 2):
        wait_for(lambda a=attempt: Job.objects.filter(pk=job.pk, attempt=a).exists(), timeout_s=60,
                 what=f"attempt {attempt}")
        (client,) = wait_measuring(job, samples=1)
        os.kill(client.pid, signal.SIGKILL)
    _finished(run, timeout_s=60)
    job.refresh_from_db()
    assert run.status == Run.Status.FAILED and job.status == Job.Status.FAILED and job.attempt == 2
    assert job.error.endswith("(attempt 2 of 2: no try left)"), job.error
    assert list(job.attempts.values_list("number", flat=True)) == [1]


def test_a_write_job_blocked_by_a_table_lock_is_named_waits_for_the_lock_and_is_measured_again(
        celery_worker_process, own_mariadb: MariaDBServer):
    """FLUSH TABLES WITH READ LOCK (what a backup takes) while a write test measures: sysbench hangs until its
    --forced-shutdown, the attempt is lost with the server's own words for the wait, and the job waits for the lock
    (a write probe before measuring) instead of hanging again; once the lock is released it is measured again."""
    own_mariadb.sql("CREATE DATABASE sblock")
    target = TargetFactory(port=own_mariadb.port, database="sblock")
    scenario = ScenarioFactory(name="locked-1", test="oltp_write_only", time_s=3,
                               dataset=DatasetFactory(name="locked-data", tables=1, table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2])
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    wait_measuring(job, samples=1)
    lock = MySQLdb.connect(host="127.0.0.1", port=own_mariadb.port, user="root")
    try:
        lock.cursor().execute("FLUSH TABLES WITH READ LOCK")

        def waiting_for_the_lock() -> bool:
            job.refresh_from_db()
            assert not job.is_finished(), f"{job.status}: {job.error}"
            return job.attempt == 2 and job.status == Job.Status.WAITING and job.unreachable_since is not None

        wait_for(waiting_for_the_lock, timeout_s=120, what="the lost attempt's job to wait for the lock")
        assert job.wait_reason.startswith("writes blocked on the target: Waiting for "), job.wait_reason
        assert job.waiting_text().startswith(f"waiting: target {target.name} blocked since "), job.waiting_text()
    finally:
        lock.close()  # the lock goes with its session
    wait_status(job, Job.FINISHED, timeout_s=120)
    assert (job.status, job.attempt) == (Job.Status.SUCCEEDED, 2), f"{job.status} {job.error}"
    (lost,) = job.attempts.all()
    assert lost.cause.startswith("writes blocked on the target: Waiting for "), lost
    assert stored_seconds(job, 1), "the lost attempt's seconds stay, apart"
    assert stored_seconds(job, 2)
    assert _finished(run, timeout_s=60).status == Run.Status.SUCCEEDED
