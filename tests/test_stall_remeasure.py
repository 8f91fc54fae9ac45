"""A stalled load generator, for real: the job's sysbench is stopped (SIGSTOP) for 12 s in the middle of its 8 s
measurement and let go (SIGCONT). Its figures are then a run that overran its --time; that is a measurement spoiled
from outside, so the job is measured again as attempt 2, the stalled attempt kept as an earlier one, and the result is
the new attempt's, at the steady rate. At no moment do two sysbench processes of the job measure on the target."""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from campaigns import services
from campaigns.models import Job, Run
from tests.conftest import WorkerProcess, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import own_queue_worker, sysbench_overlaps, wait_measuring

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

STALL_S = 12


@pytest.fixture
def remeasuring(test_db_name: str, settings) -> Iterator[WorkerProcess]:
    """A worker of the test's own queue that measures a spoiled job again (the suite's workers do not:
    tests/pytest_env.py)."""
    with own_queue_worker("client-stall", test_db_name, settings, queue=f"stall-{test_db_name}",
                          env={"BENCHAPP_REMEASURE_SPOILED": "true"}) as worker:
        yield worker


@pytest.mark.timeout(300)
def test_a_stalled_measurement_is_measured_again_and_its_result_is_the_new_attempts(remeasuring, fault_db):
    target = TargetFactory(database=fault_db)
    scenario = ScenarioFactory(name="stall", time_s=8, warmup_s=0,
                               dataset=DatasetFactory(name="stall 1x1000", tables=1, table_size=1000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2], quiet_s=0, job_tries=3,
                               remeasure_spoiled=True)
    with sysbench_overlaps(f"--mysql-db={fault_db}") as overlap:  # never two of the job's sysbench at once
        run = services.campaign_launch(campaign=campaign)
        job = run.jobs.get()
        (client,) = wait_measuring(job, samples=2)
        os.kill(client.pid, signal.SIGSTOP)
        try:
            time.sleep(STALL_S)
        finally:
            os.kill(client.pid, signal.SIGCONT)
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=150, what="the run to end")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert overlap == [], overlap
    # Attempt 2, or a later one where make test's other processes crowded the host in attempt 2 (host-busy).
    assert job.attempt >= 2, (job.attempt, job.findings)
    stalled = job.attempts.order_by("number").first()
    assert stalled.cause.startswith("spoiled from outside:") and "longer than its --time" in stalled.cause, stalled.cause
    result = job.result
    # The new attempt's figures: sysbench's own time is its --time, and its rate the scenario's 200 per second.
    assert result.duration_s < 8 + 2, result.duration_s
    assert result.tps == pytest.approx(200, rel=0.15), result.tps
    assert "overran" not in {f["code"] for f in job.findings}, job.findings
    record_measurement(f"stall {STALL_S} s (SIGSTOP of sysbench): attempt 1 {stalled.cause[:90]}…; attempt {job.attempt} "
                       f"{result.tps:.1f} TPS over {result.duration_s:.1f} s")
