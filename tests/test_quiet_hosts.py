"""Quiet before measuring on every client host of a job, not only the coordinating one: each worker's heartbeat
reports how busy its host's CPUs were since the last beat (execution.hosts.cpu_busy_pct, the hypervisor's steal
left out), and a job whose client runs on another host waits while that host is busy, naming it."""
from __future__ import annotations

import subprocess
import sys
import time
from collections import namedtuple
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns import services
from campaigns.execution.coordinator import QUIET_CPU_PCT, _remote_busy
from campaigns.execution.hosts import cpu_busy_pct
from campaigns.models import ClientHost, Job
from tests.conftest import WorkerProcess, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named
from tests.helpers.servers import MariaDBServer

Times = namedtuple("Times", "user nice system idle iowait irq softirq steal")


def test_busy_share_leaves_out_idle_iowait_and_the_hypervisors_steal() -> None:
    before = Times(100, 0, 50, 800, 20, 0, 0, 30)
    assert cpu_busy_pct(before, before) == 0.0
    # 100 s of CPU time later: 30 user, 10 nice, 40 idle, 10 iowait, and 10 stolen.
    after = Times(130, 10, 50, 840, 30, 0, 0, 40)
    assert cpu_busy_pct(before, after) == pytest.approx(100 * 40 / 90)
    # All of it stolen: nothing of this host's own was busy.
    assert cpu_busy_pct(before, Times(100, 0, 50, 800, 20, 0, 0, 130)) == 0.0


@pytest.mark.django_db
def test_a_remote_hosts_reading_counts_only_when_busy_and_at_most_one_beat_old() -> None:
    now = timezone.now()
    window_from = now - timedelta(seconds=2)

    def host(name: str, pct: float | None, *, ended_s_ago: float, beat_s: float = 10) -> None:
        ClientHost.objects.create(hostname=name, queue="q", cpu_busy_pct=pct,
                                  cpu_busy_to=now - timedelta(seconds=ended_s_ago),
                                  cpu_busy_from=now - timedelta(seconds=ended_s_ago + beat_s))

    host("busy", 80.0, ended_s_ago=5)  # its 10 s reading ended 3 s before the window: one beat old at most
    host("calm", QUIET_CPU_PCT - 1, ended_s_ago=0.5)
    host("stale", 95.0, ended_s_ago=30)  # a reading of 30 s ago says nothing about now
    host("silent", None, ended_s_ago=1)
    ClientHost.objects.create(hostname="new", queue="q")
    noise = _remote_busy(["busy", "calm", "stale", "silent", "new", "unknown"], window_from=window_from)
    assert noise == ["client host busy's CPUs were 80 % busy"]


def _hog() -> subprocess.Popen[bytes]:
    """A process that keeps one CPU busy at the lowest priority: the host reads busy, other tests barely slow."""
    return subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"])


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_workers_heartbeat_reports_its_hosts_cpus_busy(celery_worker_process) -> None:
    hogs = [_hog(), _hog()]
    try:
        started = timezone.now()

        def busy_reading() -> ClientHost | None:
            # The session's worker row may be missing for a moment: a transactional test before this one emptied
            # the tables, and the worker's next heartbeat (every second) makes it again.
            host = ClientHost.objects.filter(hostname=celery_worker_process.hostname).first()
            return host if host and host.cpu_busy_from and host.cpu_busy_from >= started else None

        host = wait_for(busy_reading, timeout_s=30, what="a heartbeat taken while the CPUs were busy")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert host.cpu_busy_pct > 90, host.cpu_busy_pct
    assert host.cpu_busy_to > host.cpu_busy_from


@pytest.fixture
def coordinator_and_remote(test_db_name: str, settings) -> Iterator[tuple[WorkerProcess, WorkerProcess]]:
    """A worker of the test's own queue that coordinates jobs, and a client host's (BENCHAPP_WORKER_ROLE=client: it
    consumes only its host's own queue): the job's client runs there, so the coordinator sees that host only
    through its heartbeats."""
    queue = f"quiet-{test_db_name}"
    env = {"BENCHAPP_QUEUE": queue, "BENCHAPP_QUIET_CHECK": "true"}
    coordinator = WorkerProcess(host_named("client-quietc"), test_db_name, extra_env=env)
    remote_name = host_named("client-quietr")
    remote = WorkerProcess(remote_name, test_db_name, extra_env={**env, "BENCHAPP_WORKER_ROLE": "client"})
    try:
        coordinator.wait_ready()
        remote.wait_ready()
        settings.CELERY_TASK_DEFAULT_QUEUE = queue
        wait_for(lambda: ClientHost.objects.online().filter(
            hostname__in=[coordinator.hostname, remote_name]).count() == 2, timeout_s=30, what="both hosts online")
        yield coordinator, remote
    finally:
        coordinator.stop()
        remote.stop()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
def test_a_job_waits_while_its_remote_client_host_is_busy(coordinator_and_remote, own_mariadb: MariaDBServer):
    coordinator, remote = coordinator_and_remote
    own_mariadb.sql("CREATE DATABASE sbquiethost")
    target = TargetFactory(port=own_mariadb.port, database="sbquiethost")
    scenario = ScenarioFactory(name="quiet host", time_s=2,
                               dataset=DatasetFactory(name="quiet host 1x300", tables=1, table_size=300))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1], quiet_s=2,
                               client_hosts=[remote.hostname])
    hogs = [_hog(), _hog()]
    calm_from = None
    try:
        run = services.campaign_launch(campaign=campaign)
        job = run.jobs.get()

        def waits() -> bool:
            job.refresh_from_db()
            return f"client host {remote.hostname}'s CPUs were " in job.wait_reason

        wait_for(waits, timeout_s=120, what="the job to wait for its remote host's quiet")
        assert job.wait_reason.startswith("waits for quiet"), job.wait_reason
        assert "this client host's" not in job.wait_reason  # the coordinator is not one of the job's hosts
        time.sleep(3)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        calm_from = timezone.now()
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished(), timeout_s=120, what="the job to finish")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    (client,) = job.clients.all()
    assert client.host_name == remote.hostname and job.claimed_by == coordinator.hostname
    assert client.started_at >= calm_from, "it measured only once the remote host was quiet"
