"""Keeping measurements apart: a job waits for a quiet server before it measures, and a measurement spoiled from
outside is measured again (execution.results, SPOILED_FROM_OUTSIDE): another
application's queries on the server during the first attempt make it disagree with sysbench; the job is measured
again, the spoiled attempt kept as an earlier one with its seconds, and the result is the clean attempt's."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import MySQLdb
import pytest

from campaigns import services
from campaigns.execution.results import SPOILED_FROM_OUTSIDE
from campaigns.models import Job
from tests.conftest import WorkerProcess, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import own_queue_worker
from tests.helpers.seconds import stored_seconds
from tests.helpers.servers import MariaDBServer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def keeping_apart(test_db_name: str, settings) -> Iterator[WorkerProcess]:
    """A worker of the test's own queue with the rules on that the suite's workers have off (tests/pytest_env.py):
    waiting for quiet, measuring a spoiled job again."""
    with own_queue_worker("client-apart", test_db_name, settings, queue=f"apart-{test_db_name}", env={
            "BENCHAPP_QUIET_CHECK": "true", "BENCHAPP_REMEASURE_SPOILED": "true"}) as worker:
        yield worker


def test_a_job_spoiled_by_foreign_queries_is_measured_again_and_its_result_is_the_clean_attempts(
        keeping_apart, own_mariadb: MariaDBServer):
    own_mariadb.sql("CREATE DATABASE sbspoil")
    target = TargetFactory(port=own_mariadb.port, database="sbspoil")
    scenario = ScenarioFactory(name="spoil", time_s=8, options={},
                               dataset=DatasetFactory(name="spoil 1x1000", tables=1, table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1], job_tries=2,
                               remeasure_spoiled=True, noise_cv_pct=100)
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    stop = threading.Event()

    def foreign_workload() -> None:
        """Another application's statements on the server, while the first attempt measures, and only then."""
        wait_for(lambda: Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, attempt=1).exists()
                 or stop.is_set(), timeout_s=120, what="the first attempt to measure")
        db = MySQLdb.connect(host="127.0.0.1", port=own_mariadb.port, user="root", connect_timeout=5)
        with db.cursor() as cursor:
            while not stop.is_set() and Job.objects.filter(pk=job.pk, attempt=1).exists():
                for _ in range(200):
                    cursor.execute("SELECT 1")
        db.close()

    thread = threading.Thread(target=foreign_workload, daemon=True)
    thread.start()
    try:
        wait_for(lambda: Job.objects.get(pk=job.pk).is_finished(), timeout_s=240, what="the job to finish")
    finally:
        stop.set()
        thread.join(timeout=10)
    job.refresh_from_db()
    assert (job.status, job.attempt) == (Job.Status.SUCCEEDED, 2), (job.status, job.attempt, job.error)
    (spoiled,) = job.attempts.all()
    assert spoiled.cause.startswith("spoiled from outside: "), spoiled
    assert "server" in spoiled.cause, spoiled
    assert len(stored_seconds(job, 1)) >= 3, "the spoiled attempt's seconds stay, apart"
    assert stored_seconds(job, 2) and job.result is not None
    assert "server-disagrees" not in {f["code"] for f in job.findings}, job.findings
    history = [row["text"] for row in job.attempt_history()]
    assert history[0].startswith("attempt 1 lost at t = "), history


def test_a_campaign_that_keeps_spoiled_measurements_does_not_measure_again(keeping_apart,
                                                                          own_mariadb: MariaDBServer):
    """remeasure_spoiled off: the spoiled measurement is the result, with its verdict, as before."""
    own_mariadb.sql("CREATE DATABASE sbkeep")
    target = TargetFactory(port=own_mariadb.port, database="sbkeep")
    scenario = ScenarioFactory(name="keep", time_s=8, options={},
                               dataset=DatasetFactory(name="keep 1x1000", tables=1, table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1], job_tries=2,
                               remeasure_spoiled=False, noise_cv_pct=100)
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    stop = threading.Event()

    def foreign_workload() -> None:
        wait_for(lambda: Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).exists() or stop.is_set(),
                 timeout_s=120, what="the job to measure")
        db = MySQLdb.connect(host="127.0.0.1", port=own_mariadb.port, user="root", connect_timeout=5)
        with db.cursor() as cursor:
            while not stop.is_set():
                cursor.execute("SELECT 1")
        db.close()

    thread = threading.Thread(target=foreign_workload, daemon=True)
    thread.start()
    try:
        wait_for(lambda: Job.objects.get(pk=job.pk).is_finished(), timeout_s=180, what="the job to finish")
    finally:
        stop.set()
        thread.join(timeout=10)
    job.refresh_from_db()
    assert (job.status, job.attempt, job.attempts.count()) == (Job.Status.SUCCEEDED, 1, 0)
    # Spoiled from outside (the foreign queries, or this machine's other processes), and kept as the result.
    assert job.verdict == Job.Verdict.INVALID, job.findings
    assert {f["code"] for f in job.findings} & SPOILED_FROM_OUTSIDE, job.findings


def test_a_job_waits_for_a_quiet_server_before_it_measures(keeping_apart, own_mariadb: MariaDBServer):
    """Another application's queries on the server when the job is about to measure: it waits, saying why, and
    measures once they stop (here after about 8 s), not beside them."""
    own_mariadb.sql("CREATE DATABASE sbquiet")
    target = TargetFactory(port=own_mariadb.port, database="sbquiet")
    scenario = ScenarioFactory(name="quiet", time_s=3, options={},
                               dataset=DatasetFactory(name="quiet 1x500", tables=1, table_size=500))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1], quiet_s=2)
    stop = threading.Event()
    noisy_until: list[float] = []

    def foreign_workload() -> None:
        db = MySQLdb.connect(host="127.0.0.1", port=own_mariadb.port, user="root", connect_timeout=5)
        with db.cursor() as cursor:
            while not stop.is_set():
                cursor.execute("SELECT 1")
                time.sleep(0.005)
        db.close()
        noisy_until.append(time.time())

    thread = threading.Thread(target=foreign_workload, daemon=True)
    thread.start()
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    try:
        def waits() -> bool:
            job.refresh_from_db()
            return job.wait_reason.startswith("waits for quiet")

        wait_for(waits, timeout_s=120, what="the job to wait for quiet")
        assert "the server ran " in job.wait_reason and " queries/s from others" in job.wait_reason, job.wait_reason
        time.sleep(6)
    finally:
        stop.set()
        thread.join(timeout=10)
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished(), timeout_s=120, what="the job to finish")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    started = min(c.started_at for c in job.clients.all() if c.started_at)
    assert noisy_until and started.timestamp() >= noisy_until[0], "it measured only once the server was quiet"
