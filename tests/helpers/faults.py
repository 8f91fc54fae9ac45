"""Fault-test helpers: host names of this session, sysbench processes by marker, waits on a job's status and measuring,
and launching a campaign through a Redis of the test's own."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from campaigns.models import Job, JobClient, Run, Scenario
from tests.conftest import ROOT, SESSION_QUEUE, WorkerProcess, wait_for
from tests.factories import DatasetFactory, ScenarioFactory
from tests.helpers.servers import RedisServer

SESSION_ID = SESSION_QUEUE.removeprefix("test-")


def host_named(name: str) -> str:
    return f"{name}-{SESSION_ID}"


def wait_status(obj: Job | Run, statuses: tuple[str, ...], *, timeout_s: float) -> None:
    def reached() -> bool:
        obj.refresh_from_db()
        return obj.status in statuses

    wait_for(reached, timeout_s=timeout_s, what=f"{type(obj).__name__} {obj.pk} to become {'/'.join(statuses)}")


def wait_measuring(job: Job, *, clients: int = 1, samples: int = 2, timeout_s: float = 60) -> list[JobClient]:
    """Waits until every client's sysbench is running and has reported `samples` seconds."""
    def measuring() -> list[JobClient] | None:
        running = list(JobClient.objects.filter(job=job, status=JobClient.Status.RUNNING, pid__isnull=False))
        if len(running) == clients and job.samples.filter(client_index=0).count() >= samples:
            return running
        job.refresh_from_db()
        assert not job.is_finished(), f"job ended before measuring: {job.status} {job.error}"
        return None

    return wait_for(measuring, timeout_s=timeout_s, interval_s=0.1, what=f"job {job.pk} to be measuring")


def shared_mysql(statement: str) -> str:
    return subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e", statement],
                          check=True, capture_output=True, text=True, timeout=30).stdout


def launch_through(broker: RedisServer, campaign_id: int, test_db_name: str) -> Run:
    """Launches the campaign from a separate process whose Celery publishes to `broker`."""
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}",
           **broker.env, "DB_CONN_MAX_AGE": "0"}
    code = ("from campaigns import services; from campaigns.models import Campaign; "
            f"print('RUN', services.campaign_launch(campaign=Campaign.objects.get(pk={campaign_id})).pk)")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    match = re.search(r"^RUN (\d+)$", done.stdout, re.M)
    assert done.returncode == 0 and match, done.stdout + done.stderr
    return Run.objects.get(pk=int(match.group(1)))


def two_scenarios(prefix: str, dataset: str, *, long_s: int, short_s: int = 2, **kwargs: object) -> list[Scenario]:
    """A long scenario to break, then a short one on the same dataset that shows the run going on
    (scenarios run in name order)."""
    data = DatasetFactory(name=dataset, tables=1, table_size=2000)
    return [ScenarioFactory(name=f"{prefix}-1-long", time_s=long_s, dataset=data, **kwargs),
            ScenarioFactory(name=f"{prefix}-2-next", time_s=short_s, dataset=data, **kwargs)]


def alive(pid: int) -> bool:
    """True while pid is a live process (a zombie has already died; only its parent has not looked)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def sysbench_pids(marker: str, *, commands: tuple[bytes, ...] | None = None) -> list[int]:
    """Live sysbench processes whose arguments include marker (e.g. --mysql-db=<a test's own database>); with
    commands, only those running one of them (b"run", b"prepare", ...)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"sysbench") and marker.encode() in argv and alive(int(entry.name)):
            if commands is None or any(command in argv for command in commands):
                pids.append(int(entry.name))
    return pids


@contextmanager
def sysbench_overlaps(marker: str) -> Iterator[list[list[int]]]:
    """Watches every 50 ms, while the block runs, for two sysbench processes running `run` with marker in their
    arguments at once (two measurements on one target); yields the list of such sightings, empty if none."""
    overlap: list[list[int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            running = sysbench_pids(marker, commands=(b"run",))
            if len(running) > 1:
                overlap.append(running)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield overlap
    finally:
        stop.set()
        watcher.join(timeout=5)


@contextmanager
def own_queue_worker(hostname: str, test_db_name: str, settings: Any, *, queue: str,
                     env: dict[str, str]) -> Iterator[WorkerProcess]:
    """A worker of a queue of the test's own with `env` (a rule the suite's workers have off, tests/pytest_env.py);
    the test's launches go to that queue while it runs."""
    worker = WorkerProcess(hostname, test_db_name, extra_env={"BENCHAPP_QUEUE": queue, **env})
    try:
        worker.wait_ready()
        settings.CELERY_TASK_DEFAULT_QUEUE = queue
        yield worker
    finally:
        worker.stop()
