"""Loaded as an early plugin (-p in pyproject) so these variables are set before pytest-django
imports the settings: tests use Redis database 15 and a queue of their own, so a developer's
`make run` worker never consumes a test's messages."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import dj_database_url


def _shared_redis(db: int) -> str:
    """The machine's Redis on 6379, database `db`: with the password of var/secrets.env (or TEST_REDIS_PASSWORD) when
    it asks for one, as it does once scripts/setup.sh gave it one; without, on a machine where it has none."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            asks = sock.recv(64).startswith(b"-NOAUTH")
    except OSError:
        asks = False  # no Redis yet: the tests that need it say so plainly
    password = (os.environ.get("TEST_REDIS_PASSWORD") or _secret("BENCHAPP_REDIS_PASSWORD")) if asks else ""
    return f"redis://:{password}@127.0.0.1:6379/{db}" if password else f"redis://127.0.0.1:6379/{db}"


def _secret(name: str) -> str:
    path = Path(os.environ.get("BENCHAPP_SECRETS_FILE", Path(__file__).resolve().parent.parent / "var" / "secrets.env"))
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return ""
    return next((line.partition("=")[2].strip() for line in reversed(lines) if line.startswith(f"{name}=")), "")


os.environ["REDIS_URL"] = os.environ.get("TEST_REDIS_URL") or _shared_redis(15)
# One id per test session, shared by pytest-xdist's worker processes (they inherit the controller's environment):
# the leftover sweep below skips every database of its own session. Each worker process still has its own queue,
# cache prefix and target databases (suffix _gw0, _gw1 ...), since its tests start their own Celery workers and
# prepare and drop their own datasets.
_SESSION = os.environ.setdefault("BENCHAPP_TEST_SESSION", uuid.uuid4().hex[:8])
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_OWN = f"{_SESSION}_{_WORKER}" if _WORKER else _SESSION
os.environ["BENCHAPP_QUEUE"] = f"test-{_OWN}"
# The API cache: a database next to the broker's and a key prefix per session (no test clears it).
os.environ["BENCHAPP_CACHE_URL"] = os.environ.get("TEST_CACHE_URL") or _shared_redis(14)
os.environ["BENCHAPP_CACHE_PREFIX"] = f"test-{_OWN}"
# The test database too, so two test sessions on one machine never drop each other's (pytest-django adds the
# xdist worker's suffix itself).
os.environ.setdefault("BENCHAPP_TEST_DB_NAME", f"test_benchapp_{_SESSION}")
# Target databases of this session on the local MariaDB and PostgreSQL, dropped at the end.
os.environ["BENCHAPP_TEST_TARGET_DB"] = f"bench_{_OWN}"
os.environ.setdefault("BENCHAPP_HOSTNAME", "test-runner")
# Pages render without a collectstatic first: unhashed static names (tests/test_observability.py checks the hashed
# storage on a collectstatic of its own).
os.environ["BENCHAPP_STATIC_UNHASHED"] = "true"
# Workers of the suite leave reconciling to the session worker's beat, as the fault tests expect; the thread
# that production workers run is tested on its own (tests/test_worker_signals.py).
os.environ["BENCHAPP_RECONCILE_IN_WORKER"] = "false"
# The suite's own load (other test processes' sysbench on this host and on the shared servers) would make every job
# wait for quiet and be measured again: the rules are off for its workers, and the tests of them start a worker with
# them on (tests/test_remeasure_spoiled.py).
os.environ["BENCHAPP_QUIET_CHECK"] = "false"
os.environ["BENCHAPP_REMEASURE_SPOILED"] = "false"
# The workload cache of this session's processes and of the workers they start: a directory of their own, not
# var/workloads, which `make run` gives to the user benchapp (scripts/supervise.sh) and which the cache then refuses
# to anyone else: tests run after a `make run` in the same checkout failed so. Removed at the end (conftest).
os.environ["BENCHAPP_WORKLOAD_DIR"] = str(Path(tempfile.gettempdir()) / f"benchapp-test-workloads-{_OWN}")
# Host tests' files (fileio's) of this session's workers: sysbench writes them as the sandbox's user, who must pass
# through every parent, which a checkout's var/ (0700 once it holds the secrets file) does not let it do.
_HOSTTESTS = Path(tempfile.gettempdir()) / f"benchapp-test-hosttests-{_OWN}"
_HOSTTESTS.mkdir(mode=0o711, exist_ok=True)
_HOSTTESTS.chmod(0o711)
os.environ.setdefault("BENCHAPP_HOSTTEST_DIR", str(_HOSTTESTS))


# ---------------------------------------------------------------- databases left by killed sessions
#
# Each session holds a PostgreSQL advisory lock named after its id for as long as its process lives (the
# connection below stays open; the server releases the lock when the process dies, however it dies). At start,
# every test database of another session whose lock can be taken is the leftover of a dead session: dropped.
# A live session's lock cannot be taken, so two sessions running side by side never touch each other's.

_LEFTOVER = re.compile(r"^(?:test_benchapp|bench)_([0-9a-f]{8})(?:_[0-9a-z_]+)?$")
_lock_connection = None


def _lock_key(session: str) -> str:
    return f"benchapp-test-session:{session}"


def _leftovers_drop() -> None:
    global _lock_connection
    import psycopg

    url = dj_database_url.parse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/benchapp"))
    if _lock_connection is None:
        try:
            _lock_connection = psycopg.connect(
                host=url["HOST"] or None, port=url["PORT"] or None, user=url["USER"] or None,
                password=url["PASSWORD"] or None, dbname="postgres", autocommit=True, connect_timeout=5)
        except psycopg.Error:
            return  # no server yet: pytest-django says so plainly in a moment
        # Held until the process ends, with the connection. A try: under pytest-xdist the controller of this session
        # holds it already, which is as good.
        _lock_connection.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [_lock_key(_SESSION)])
    conn = _lock_connection
    names = [row[0] for row in conn.execute("SELECT datname FROM pg_database WHERE datname ~ '^(test_benchapp|bench)_'")]
    mysql_names = _mysql_databases()
    targets = _targets_connection()
    target_names = [row[0] for row in targets.execute(
        "SELECT datname FROM pg_database WHERE datname ~ '^bench_'")] if targets is not None else []
    for session in sorted({m.group(1) for m in map(_LEFTOVER.match, names + mysql_names + target_names) if m}):
        if session == _SESSION:
            continue
        if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [_lock_key(session)]).fetchone()[0]:
            continue  # a live session holds it
        try:
            pg_own = [name for name in names if (m := _LEFTOVER.match(name)) and m.group(1) == session]
            # Someone still connected is alive, whatever the lock says (a checkout older than this lock).
            if conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = ANY(%s)", [pg_own]).fetchone()[0]:
                continue
            for name in pg_own:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            target_own = [name for name in target_names if (m := _LEFTOVER.match(name)) and m.group(1) == session]
            if targets is not None and target_own and not targets.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = ANY(%s)", [target_own]).fetchone()[0]:
                for name in target_own:
                    targets.execute(f'DROP DATABASE IF EXISTS "{name}"')
            for name in mysql_names:
                if (m := _LEFTOVER.match(name)) and m.group(1) == session:
                    subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", f"DROP DATABASE IF EXISTS `{name}`"],
                                   capture_output=True, timeout=30, check=False)
        except psycopg.Error:
            pass  # dropped by a neighbour meanwhile, or still in use: the next session tries again
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", [_lock_key(session)])
    if targets is not None:
        targets.close()


def _targets_connection() -> Any:
    """The PostgreSQL targets cluster (tests/helpers/pg_targets.py), where PostgreSQL target databases are; None
    when there is none yet."""
    import psycopg

    from tests.helpers.pg_targets import pg_target_port

    try:
        return psycopg.connect(host="127.0.0.1", port=pg_target_port(), user="postgres", dbname="postgres",
                               autocommit=True, connect_timeout=5)
    except (psycopg.Error, RuntimeError):
        return None


def _mysql_databases() -> list[str]:
    try:
        done = subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e", "SHOW DATABASES LIKE 'bench\\_%'"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.split() if done.returncode == 0 else []


_leftovers_drop()
