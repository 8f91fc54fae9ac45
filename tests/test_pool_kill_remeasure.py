"""A pool child killed while its job measures, for real: SIGKILL of the worker's pool process whose descendant is
the job's sysbench, at about 2 s into an 8 s measurement. The attempt is lost, the job is measured again as a
later attempt, the run's next job (already sent, waiting for its turn) goes on only after that, and at no moment do
two sysbench processes measure on the target: nothing released the server while a sysbench of the job could
still run there."""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import psutil
import pytest

from campaigns import services
from campaigns.models import Job, Run
from tests.conftest import WorkerProcess, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import own_queue_worker, sysbench_overlaps, wait_measuring

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def remeasuring(test_db_name: str, settings) -> Iterator[WorkerProcess]:
    with own_queue_worker("client-poolkill", test_db_name, settings, queue=f"poolkill-{test_db_name}",
                          env={"BENCHAPP_REMEASURE_SPOILED": "true", "BENCHAPP_RECONCILE_IN_WORKER": "true"}) as worker:
        yield worker


def _pool_child_of(pid: int, worker_pid: int) -> int:
    """The worker's pool process above `pid` (its ancestor whose parent is the worker's main process)."""
    pool = next((p.pid for p in psutil.Process(pid).parents() if p.ppid() == worker_pid), None)
    assert pool is not None, f"sysbench {pid} is not below the worker {worker_pid}"
    return pool


@pytest.mark.timeout(300)
def test_a_killed_pool_child_costs_one_attempt_and_no_measurement_overlaps(remeasuring, fault_db):
    target = TargetFactory(database=fault_db)
    scenario = ScenarioFactory(name="pool kill", time_s=8, warmup_s=0,
                               dataset=DatasetFactory(name="pool kill 1x1000", tables=1, table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2], repetitions=2, job_tries=3,
                               remeasure_spoiled=True)
    with sysbench_overlaps(f"--mysql-db={fault_db}") as overlap:  # never two sysbench measuring on the target
        run = services.campaign_launch(campaign=campaign)
        first = run.jobs.order_by("position").first()
        (client,) = wait_measuring(first, samples=2)
        pool_child = _pool_child_of(client.pid, remeasuring.proc.pid)
        killed_at = time.monotonic()
        os.kill(pool_child, signal.SIGKILL)
        wait_for(lambda: Job.objects.get(pk=first.pk).attempt >= 2, timeout_s=120, what="the job's next attempt")
        noticed_s = time.monotonic() - killed_at
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=200, what="the run to end")
    assert overlap == [], overlap
    jobs = list(run.jobs.order_by("position"))
    assert [j.status for j in jobs] == [Job.Status.SUCCEEDED] * 2, [(j.pk, j.status, j.error) for j in jobs]
    first.refresh_from_db()
    lost = first.attempts.order_by("number").first()
    assert lost is not None and lost.number == 1, list(first.attempts.values_list("number", "cause"))
    assert "lost" in lost.cause or "worker" in lost.cause, lost.cause
    # The result is the new attempt's: a full measurement at the scenario's steady 200 per second.
    assert first.result.duration_s == pytest.approx(8, abs=1.5), first.result.duration_s
    assert first.result.tps == pytest.approx(200, rel=0.15), first.result.tps
    spans = sorted((c.started_at, c.exited_at, c.job_id) for j in jobs for c in j.clients.all())
    record_measurement(f"pool child SIGKILL at 2 s of 8: next attempt after {noticed_s:.1f} s; attempt "
                       f"{first.attempt} {first.result.tps:.1f} TPS; clients {len(spans)}, none overlapping")
