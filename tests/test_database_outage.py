"""A short PostgreSQL outage restarts nothing: a worker and beat of the test's own, on a PostgreSQL
cluster of the test's own, stay healthy for their health checks while that cluster is stopped, and beat keeps
sending; once it is back the worker's host is online again.

The issue's drill: PostgreSQL stopped for 90 s (BENCHAPP_TEST_PG_OUTAGE_S, default 90), longer than beat's check would
allow (--max-age 20) if beat stopped sending, and longer than the systemd timer's minute between checks."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, WorkerProcess, wait_for
from tests.helpers.servers import PostgresServer, free_port

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
OUTAGE_S = float(os.environ.get("BENCHAPP_TEST_PG_OUTAGE_S", "90"))


@pytest.fixture
def private_postgres(test_db_name: str) -> Iterator[tuple[PostgresServer, str]]:
    """A cluster of the test's own holding a copy of the test database (schema and rows, pg_dump | pg_restore)."""
    server = PostgresServer(free_port())
    try:
        assert server.sql("CREATE DATABASE benchapp_outage").returncode == 0
        dump = subprocess.run(["pg_dump", "-Fc", "-h", "127.0.0.1", "-U", "postgres", "-d", test_db_name],
                              capture_output=True, timeout=120, check=True).stdout
        subprocess.run(["pg_restore", "--no-owner", "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres",
                        "-d", "benchapp_outage"], input=dump, capture_output=True, timeout=120, check=True)
        yield server, f"postgres://postgres@127.0.0.1:{server.port}/benchapp_outage"
    finally:
        server.stop()


def _healthy(env: dict[str, str], command: str, *args: str) -> tuple[bool, str]:
    done = subprocess.run([sys.executable, "manage.py", command, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=30)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def test_a_postgresql_outage_leaves_worker_and_beat_healthy(private_postgres, own_redis, tmp_path: Path):
    server, url = private_postgres
    hostname = f"outage-{os.getpid()}"
    env = {**os.environ, "DATABASE_URL": url, **own_redis.env, "DB_CONN_MAX_AGE": "0", "BENCHAPP_RECONCILE_S": "2",
           "BENCHAPP_HEARTBEAT_S": "1", "BENCHAPP_HOSTNAME": hostname, "PYTHONUNBUFFERED": "1"}
    worker = WorkerProcess(hostname, "benchapp_outage", extra_env={"DATABASE_URL": url, **own_redis.env})
    beat_log = (tmp_path / "beat.log").open("wb")
    # beat as production runs it: django-celery-beat's DatabaseScheduler, which reads its schedule from PostgreSQL.
    beat = subprocess.Popen([sys.executable, "-m", "celery", "-A", "benchapp", "beat", "--loglevel", "INFO",
                             "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"],
                            cwd=ROOT, env=env, stdout=beat_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        worker.wait_ready()
        wait_for(lambda: _healthy(env, "worker_health", "--hostname", hostname)[0], timeout_s=30,
                 what="the worker's consumer to pulse")
        wait_for(lambda: _healthy(env, "beat_health", "--max-age", "20")[0], timeout_s=60, what="beat to send")

        server.proc.send_signal(signal.SIGINT)  # a fast shutdown: every connection is closed
        server.proc.wait(timeout=60)
        down_at = time.monotonic()
        verdicts = []
        while time.monotonic() - down_at < OUTAGE_S:
            verdicts.append(("worker", *_healthy(env, "worker_health", "--hostname", hostname)))
            verdicts.append(("beat", *_healthy(env, "beat_health", "--max-age", "20")))
            time.sleep(2)
        failing = [v for v in verdicts if not v[1]]
        assert not failing, failing
        assert worker.proc.poll() is None and beat.poll() is None

        server.start()

        # The host's heartbeat in the database resumes (written only while the consumer pulses).
        def online_again() -> bool:
            probe = server.sql("SELECT EXTRACT(EPOCH FROM now() - last_heartbeat) FROM campaigns_clienthost "
                               f"WHERE hostname = '{hostname}'", database="benchapp_outage")
            return probe.returncode == 0 and bool(probe.stdout.strip()) and float(probe.stdout.strip()) < 10

        wait_for(online_again, timeout_s=60, what="the worker's heartbeat back in PostgreSQL")
    finally:
        worker.stop()
        if beat.poll() is None:
            os.killpg(beat.pid, signal.SIGTERM)
            beat.wait(timeout=20)
        beat_log.close()
