"""Upgrades without losing a job: a worker asked to drain while a job runs finishes it, takes no other,
stays healthy ("draining") and offline for placement; the run's next job waits for the next worker, which runs it.

The issue's drill: a 60 s job (BENCHAPP_TEST_DRAIN_JOB_S, default 60), drained a few seconds into its measurement:
it ends well, and nothing new is taken."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from campaigns.models import ClientHost, Job
from tests.conftest import ROOT
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named, launch_through, wait_measuring, wait_status

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
JOB_S = int(os.environ.get("BENCHAPP_TEST_DRAIN_JOB_S", "60"))


def _manage(env: dict[str, str], *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout_s)


def test_a_draining_worker_finishes_its_job_and_takes_no_other(own_redis, make_worker, test_db_name, fault_db):
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}", **own_redis.env,
           "DB_CONN_MAX_AGE": "0"}
    drainer = host_named("drainer")
    worker = make_worker(drainer, extra_env=own_redis.env)
    scenario = ScenarioFactory(name="drain", time_s=JOB_S, dataset=DatasetFactory(name="drain", tables=1,
                                                                                   table_size=1000))
    campaign = CampaignFactory(targets=[TargetFactory(database=fault_db)], threads=[1, 2], scenarios=[scenario])
    run = launch_through(own_redis, campaign.pk, test_db_name)
    first, second = run.jobs.order_by("position")
    wait_measuring(first, samples=1)

    started = time.monotonic()
    done = _manage(env, "worker_drain", "--hostname", drainer, "--wait", str(JOB_S + 120), timeout_s=JOB_S + 180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "draining (stopped consuming" in done.stdout and done.stdout.rstrip().endswith("idle"), done.stdout
    # It came back only once the running job had ended, and the job ended well.
    first.refresh_from_db()
    assert first.status == Job.Status.SUCCEEDED, first.error
    assert time.monotonic() - started < JOB_S + 120
    # Offline for placement at once, yet healthy: a drain is no reason to restart it.
    assert not ClientHost.objects.get(hostname=drainer).is_online()
    health = _manage(env, "worker_health", "--hostname", drainer)
    assert health.returncode == 0 and "draining" in health.stdout, health.stdout + health.stderr

    time.sleep(5)  # the next job was sent when the first ended: the draining worker leaves it alone
    second.refresh_from_db()
    assert second.status in (Job.Status.QUEUED, Job.Status.WAITING) and second.claimed_by == "", second.status
    assert worker.proc.poll() is None

    # The upgraded worker (here: another one on the same queue) takes it: nothing was lost.
    make_worker(host_named("successor"), extra_env=own_redis.env)
    wait_status(second, (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED), timeout_s=JOB_S + 90)
    assert second.status == Job.Status.SUCCEEDED and second.claimed_by == host_named("successor"), second.error


def test_draining_a_host_without_a_worker_says_so(own_redis, test_db_name):
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}", **own_redis.env}
    done = _manage(env, "worker_drain", "--hostname", "no-such-host")
    assert done.returncode == 1 and "no worker of host no-such-host answered" in done.stderr
