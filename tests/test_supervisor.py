"""`make run`'s process supervisor (deploy/supervisord.conf, started by scripts/supervise.sh) with real processes:
the same configuration, with this test's own port, run directory, Redis and database. A program that dies is
restarted alone while the others keep running; gunicorn's master killed never touches the Celery worker's pool;
SIGINT (Ctrl-C on `make run`) stops all three."""
from __future__ import annotations

import os
import pwd
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from campaigns.models import ClientHost, Job, Run
from tests.conftest import ROOT, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named, launch_through, wait_measuring, wait_status
from tests.helpers.seconds import stored_seconds
from tests.helpers.servers import RedisServer, free_port
from tests.helpers.supervisor import Supervisor, descendants, pgid, process_group

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]












@pytest.fixture
def supervisor(tmp_path: Path, own_redis: RedisServer, test_db_name: str) -> Iterator[Supervisor]:
    env = {
        **os.environ,
        "BENCHAPP_ROOT": str(ROOT), "BENCHAPP_RUN_DIR": str(tmp_path), "BENCHAPP_PORT": str(free_port()),
        "BENCHAPP_RUN_AS": pwd.getpwuid(os.getuid()).pw_name, "BENCHAPP_WORKER_STOP_S": "60",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}", **own_redis.env,
        "BENCHAPP_HOSTNAME": host_named("supervised"), "BENCHAPP_HEARTBEAT_S": "1", "DB_CONN_MAX_AGE": "0",
        "WEB_WORKERS": "1", "WORKER_CONCURRENCY": "1", "PYTHONUNBUFFERED": "1",
        "BENCHAPP_RECONCILE_IN_WORKER": "true", "BENCHAPP_REDISPATCH_S": "5",
    }
    sup = Supervisor(tmp_path, env)
    try:
        for program in ("web", "worker", "beat"):
            wait_for(lambda p=program: sup.running(p) or sup.proc.poll() is not None, timeout_s=90,
                     what=f"supervised {program} to run")
        assert sup.proc.poll() is None, sup.output()[-3000:]
        wait_for(sup.web_answers, timeout_s=180, what="web to answer")
        yield sup
    finally:
        sup.stop()


def _pool(worker: int) -> set[int]:
    """The Celery worker's pool processes: its Python children (not a short-lived command it runs, as a probe)."""
    try:
        return {c.pid for c in psutil.Process(worker).children() if "python" in c.name() or "celery" in c.name()}
    except psutil.NoSuchProcess:
        return set()


# alone: supervisord's restarts are timed against web requests every 0.5 s.
@pytest.mark.alone
def test_a_killed_worker_or_web_master_is_restarted_alone_and_ctrl_c_stops_everything(supervisor):
    sup = supervisor
    hostname = sup.env["BENCHAPP_HOSTNAME"]
    wait_for(lambda: ClientHost.objects.filter(hostname=hostname).exists(), timeout_s=60,
             what="the supervised worker to register its host")
    pids = {program: sup.pid(program) for program in ("web", "worker", "beat")}
    # Every program is a process group of its own.
    assert {program: pgid(pid) for program, pid in pids.items()} == pids

    # Web is asked twice a second throughout; any failure while the worker is down would show here.
    failures: list[float] = []
    asked = 0
    stop = threading.Event()

    def ask() -> None:
        nonlocal asked
        while not stop.wait(0.5):
            asked += 1
            if not sup.web_answers():
                failures.append(time.monotonic())

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    try:
        killed_at = time.monotonic()
        os.kill(pids["worker"], signal.SIGKILL)
        new_worker = wait_for(lambda: (p := sup.running("worker")) and p != pids["worker"] and p, timeout_s=60,
                              what="supervisord to start the worker again")
        restarted_s = time.monotonic() - killed_at
        wait_for(lambda: descendants(new_worker), timeout_s=60, what="the new worker's pool process")
        # The killed worker's pool children do not outlive it.
        wait_for(lambda: not process_group(pids["worker"]), timeout_s=30, what="the killed worker's pool to exit")
    finally:
        stop.set()
        asker.join(timeout=10)
    assert sup.pid("web") == pids["web"] and sup.pid("beat") == pids["beat"], "web and beat kept running"
    assert asked >= 2 and not failures, f"web failed {len(failures)} of {asked} requests while the worker restarted"

    # gunicorn's master SIGKILLed: its own workers go, the Celery worker and its pool children stay.
    pool = _pool(new_worker)
    assert pool, "the worker has its pool process"
    killed_at = time.monotonic()
    os.kill(pids["web"], signal.SIGKILL)
    wait_for(lambda: (p := sup.running("web")) and p != pids["web"], timeout_s=60, what="web to start again")
    wait_for(sup.web_answers, timeout_s=180, what="the new web to answer")
    web_back_s = time.monotonic() - killed_at
    assert sup.pid("worker") == new_worker and _pool(new_worker) == pool, "the worker's pool was untouched"
    assert sup.pid("beat") == pids["beat"]

    # Ctrl-C: supervisord stops all three, and nothing of theirs is left.
    groups = {program: sup.pid(program) for program in ("web", "worker", "beat")}
    sup.proc.send_signal(signal.SIGINT)
    sup.proc.wait(timeout=90)
    wait_for(lambda: not any(process_group(pid) for pid in groups.values()), timeout_s=20,
             what="every supervised process to be gone")
    record_measurement(f"supervisord: SIGKILLed worker running again after {restarted_s:.1f} s, web answered all "
                       f"{asked} requests meanwhile; SIGKILLed gunicorn master answering again after "
                       f"{web_back_s:.1f} s, the Celery pool untouched")


def test_stopping_the_supervised_worker_mid_job_lets_the_job_finish_and_hands_the_next_one_back(
        supervisor, test_db_name, fault_db):
    """`supervisorctl stop worker` (what Ctrl-C and a deployment's restart do): SIGTERM to the worker's process group
    is Celery's warm shutdown; the measuring job ends normally and the next job, already prefetched, is not lost."""
    sup = supervisor
    data = DatasetFactory(name="warm-stop", tables=1, table_size=1000)
    campaign = CampaignFactory(targets=[TargetFactory(database=fault_db)], threads=[1, 2],
                               scenarios=[ScenarioFactory(name="warm-stop", time_s=8, dataset=data)])
    run = launch_through(_Broker(sup.env), campaign.pk, test_db_name)  # type: ignore[arg-type]
    first, second = run.jobs.order_by("position")
    wait_measuring(first, samples=2)
    stopped_at = time.monotonic()
    sup.ctl("stop", "worker")  # returns once the worker has exited
    stop_s = time.monotonic() - stopped_at
    first.refresh_from_db()
    assert first.status == Job.Status.SUCCEEDED, f"{first.status} {first.error}"
    assert stop_s < 60
    second.refresh_from_db()
    assert second.status == Job.Status.QUEUED, "the next job was handed back, not started or lost"
    sup.ctl("start", "worker")
    wait_status(second, Job.FINISHED, timeout_s=120)
    assert second.status == Job.Status.SUCCEEDED, second.error
    wait_status(run, (Run.Status.SUCCEEDED,), timeout_s=30)
    record_measurement(f"supervisorctl stop worker mid-job: warm shutdown took {stop_s:.1f} s, the measuring job "
                       "succeeded, the next one ran after the worker was started again")


def test_a_worker_killed_mid_job_and_brought_back_measures_the_job_again_and_says_the_worker_restarted(
        supervisor, test_db_name, fault_db):
    """SIGKILL of the supervised worker while it measures: supervisord starts it again, and the new worker beats at
    once. The lost attempt must not read "worker process lost … the host's worker still beats" (as if only a pool
    process had gone): the worker restarted, and the job is measured again."""
    sup = supervisor
    hostname = sup.env["BENCHAPP_HOSTNAME"]
    data = DatasetFactory(name="restart-kill", tables=1, table_size=1000)
    campaign = CampaignFactory(targets=[TargetFactory(database=fault_db)], threads=[1],
                               scenarios=[ScenarioFactory(name="restart-kill", time_s=8, dataset=data)])
    run = launch_through(_Broker(sup.env), campaign.pk, test_db_name)  # type: ignore[arg-type]
    (job,) = run.jobs.all()
    wait_measuring(job, samples=3)
    old = sup.pid("worker")
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: (p := sup.running("worker")) and p != old, timeout_s=60,
             what="supervisord to start the worker again")
    wait_status(job, Job.FINISHED, timeout_s=240)
    assert (job.status, job.attempt) == (Job.Status.SUCCEEDED, 2), f"{job.status} {job.error}"
    (lost,) = job.attempts.all()
    assert lost.cause.startswith(f"worker restarted on {hostname} while measuring: the job's process went with "
                                    "the old worker (killed or stopped); the new one started at "), lost
    assert lost.t_s >= 3
    assert job.attempt_history()[0]["text"].startswith(f"attempt 1 lost at t = {lost.t_s:.0f} s: worker restarted")
    assert len(stored_seconds(job, 1)) >= 3, "the lost attempt's seconds stay, apart"
    assert job.samples.filter(attempt=2).exists()
    wait_status(run, (Run.Status.SUCCEEDED,), timeout_s=30)


class _Broker:
    """What launch_through needs of a broker: the environment that points a process at it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = {"REDIS_URL": env["REDIS_URL"], "BENCHAPP_QUEUE": env["BENCHAPP_QUEUE"]}
