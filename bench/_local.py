"""This machine's servers as the bench scripts use them: the local MariaDB (127.0.0.1:3306, root without a password,
as scripts/setup.sh leaves it) with a database of each bench's own, that database as a benchapp target, and a
Celery worker of the bench's own on a queue of its own.

The functions that make rows need Django set up first (`queue_setup()` or `_django.setup()`); the MariaDB ones do
not.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

from _django import ROOT, setup

from tests.helpers.waiting import wait_for

if TYPE_CHECKING:
    from django.test import Client

    from campaigns.models import Scenario, Target
    from campaigns.sysbench.command import Connection

MARIADB_HOST, MARIADB_PORT, MARIADB_USER = "127.0.0.1", 3306, "root"


def queue_setup(name: str) -> tuple[str, str]:
    """Sets Django up with a queue of the bench's own, `{name}-` and six hex digits (BENCHAPP_QUEUE is read by the
    settings, so it is set first: what the bench launches goes to that queue); returns the queue and the host name
    its worker is to announce, `{name}-` and this machine's name."""
    queue = f"{name}-{uuid.uuid4().hex[:6]}"
    os.environ["BENCHAPP_QUEUE"] = queue
    setup()
    return queue, f"{name}-{socket.gethostname()}"


def mariadb_sql(sql: str, *, check: bool = True) -> None:
    """Runs SQL as root on the local MariaDB."""
    subprocess.run(["mariadb", "-h", MARIADB_HOST, "-u", MARIADB_USER, "-e", sql], check=check, timeout=60)


def mariadb_database(name: str, *, fresh: bool = False) -> None:
    """The bench's own database on the local MariaDB: made if missing; with `fresh`, dropped first (empty)."""
    drop = f"DROP DATABASE IF EXISTS {name}; " if fresh else ""
    mariadb_sql(f"{drop}CREATE DATABASE IF NOT EXISTS {name}")


def mariadb_database_drop(name: str, *, check: bool = True) -> None:
    mariadb_sql(f"DROP DATABASE IF EXISTS {name}", check=check)


def mariadb_connection(database: str) -> Connection:
    """How sysbench and the samplers reach the bench's database on the local MariaDB."""
    from campaigns.sysbench.command import Connection

    return Connection(driver="mysql", host=MARIADB_HOST, port=MARIADB_PORT, database=database, user=MARIADB_USER)


def pg_targets_port() -> int:
    """The port of the PostgreSQL cluster targets live on (scripts/pg-targets.sh, made by scripts/setup.sh)."""
    done = subprocess.run(["bash", "scripts/pg-targets.sh", "--port"], capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise SystemExit(f"no PostgreSQL targets cluster: run scripts/setup.sh ({done.stderr.strip()})")
    return int(done.stdout.strip())


def pg_database_ensure(url: str) -> None:
    """The PostgreSQL database a DATABASE_URL names, made if missing (a bench's own, on a fresh machine)."""
    import dj_database_url

    db = dj_database_url.parse(url)
    argv = ["createdb", "-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432), "-U", db["USER"] or "postgres",
            db["NAME"]]
    done = subprocess.run(argv, capture_output=True, text=True, check=False,
                          env={**os.environ, "PGPASSWORD": db["PASSWORD"] or ""})
    if done.returncode != 0 and "already exists" not in done.stderr:
        raise SystemExit(f"cannot make the database {db['NAME']}: {done.stderr.strip()}")


def local_target(bench: str, *, driver: str = "mysql") -> Target:
    """The bench's own database on the local MariaDB (driver mysql) or PostgreSQL (pgsql), made if missing, as a
    benchapp target, made or brought up to date. All is named after `bench`: for "live lag" on MariaDB, the database
    bench_live_lag, the target live-lag-bench-mariadb, its product "MariaDB (live lag bench)" and its instance spec
    "live lag bench host" (2 cores, 8 GB)."""
    from campaigns.models import InstanceSpec, Product, Target

    database = f"bench_{bench.replace(' ', '_')}"
    if driver == "mysql":
        mariadb_database(database)
        engine, label, host, port, user = "mariadb", "MariaDB", MARIADB_HOST, MARIADB_PORT, MARIADB_USER
    else:
        # The targets cluster (scripts/pg-targets.sh): benchapp's own is closed to sysbench's user.
        port = pg_targets_port()
        pg_database_ensure(f"postgres://postgres@127.0.0.1:{port}/{database}")
        engine, label, host, user = "postgresql", "PostgreSQL", "127.0.0.1", "postgres"
    product, _ = Product.objects.get_or_create(name=f"{label} ({bench} bench)", defaults={"engine": engine})
    spec, _ = InstanceSpec.objects.get_or_create(label=f"{bench} bench host", defaults={"cpu_cores": 2, "memory_gb": 8})
    target, _ = Target.objects.update_or_create(
        name=f"{bench.replace(' ', '-')}-bench-{engine}",
        defaults={"product": product, "spec": spec, "driver": driver, "host": host, "port": port,
                  "database": database, "user": user})
    return target


def local_scenario(bench: str, *, test: str, time_s: int) -> Scenario:
    """The bench's scenario "{bench} {test}" on its dataset "{bench} 1x10000" (one table of 10,000 rows): `time_s`
    measured, 1 s warm-up, a report every second; made, or brought up to date."""
    from campaigns.models import Dataset, Scenario

    dataset, _ = Dataset.objects.get_or_create(name=f"{bench} 1x10000", defaults={"tables": 1, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name=f"{bench} {test}", defaults={"test": test, "dataset": dataset, "time_s": time_s, "warmup_s": 1,
                                          "report_interval_s": 1})
    return scenario


def superuser_client(bench: str) -> Client:
    """Django's test client logged in as the bench's own superuser, `{bench}-bench` (made if missing)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username=f"{bench.replace(' ', '-')}-bench",
                                                     defaults={"is_superuser": True})
    client = Client()
    client.force_login(user)
    return client


@contextlib.contextmanager
def local_worker(*, queue: str, hostname: str, concurrency: int, extra_env: dict[str, str] | None = None,
                 log: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A Celery worker process of the bench's own (the development database, `queue` only, announcing itself as
    `hostname`), once it is online as a client host; stopped on leaving. Its warnings and errors go to the file
    `log`, else nowhere."""
    from django.utils import timezone

    from campaigns.models import ClientHost

    env = {**os.environ, "BENCHAPP_QUEUE": queue, "BENCHAPP_HOSTNAME": hostname, "PYTHONUNBUFFERED": "1",
           **(extra_env or {})}
    argv = [sys.executable, "-m", "celery", "-A", "benchapp", "worker", "--loglevel", "WARNING", "--concurrency",
            str(concurrency), "-Q", queue, "-n", f"{hostname}@%h", "--without-gossip", "--without-mingle"]
    with open(log or os.devnull, "w") as stderr:
        worker = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                                  start_new_session=True)
        try:
            wait_for(lambda: ClientHost.objects.filter(
                hostname=hostname, last_heartbeat__gte=timezone.now() - timedelta(seconds=10)).exists(),
                timeout_s=60, what=f"the worker {hostname} to come online{f' (see {log})' if log else ''}")
            yield worker
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
