"""A test session killed mid-way leaves its databases behind; the next session drops them, and never those of
a session that is still running (it holds its advisory lock)."""
from __future__ import annotations

import subprocess
import uuid

import psycopg

from tests import pytest_env
from tests.helpers.pg_targets import pg_target_port


def _pg(sql: str, dbname: str = "postgres", port: int | None = None) -> list[tuple[object, ...]]:
    with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname=dbname, autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


def _exists(name: str, port: int | None = None) -> bool:
    return bool(_pg(f"SELECT 1 FROM pg_database WHERE datname = '{name}'", port=port))


def _mysql(sql: str) -> str:
    return subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e", sql], check=True, capture_output=True,
                          text=True).stdout


def test_a_dead_sessions_databases_are_dropped_and_a_live_ones_are_kept():
    dead, live = uuid.uuid4().hex[:8], uuid.uuid4().hex[:8]
    for session in (dead, live):
        _pg(f'CREATE DATABASE "test_benchapp_{session}"')
        _pg(f'CREATE DATABASE "bench_{session}"')
        _pg(f'CREATE DATABASE "bench_{session}"', port=pg_target_port())
        _mysql(f"CREATE DATABASE bench_{session}")
    # Another pytest-xdist worker of this very session: its MariaDB database has no PostgreSQL connection to
    # show it is in use, and must be kept all the same.
    sibling = f"bench_{pytest_env._SESSION}_gw99"
    _mysql(f"CREATE DATABASE IF NOT EXISTS {sibling}")
    # The live session holds its lock, as its pytest process does for as long as it runs.
    with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres", autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(hashtext(%s))", [pytest_env._lock_key(live)])
        try:
            pytest_env._leftovers_drop()
            assert not _exists(f"test_benchapp_{dead}") and not _exists(f"bench_{dead}")
            assert not _exists(f"bench_{dead}", pg_target_port()) and _exists(f"bench_{live}", pg_target_port())
            assert f"bench_{dead}" not in _mysql("SHOW DATABASES").split()
            assert _exists(f"test_benchapp_{live}") and _exists(f"bench_{live}")
            assert f"bench_{live}" in _mysql("SHOW DATABASES").split()
            assert sibling in _mysql("SHOW DATABASES").split()
        finally:
            holder.execute("SELECT pg_advisory_unlock_all()")
            for name in (f"test_benchapp_{live}", f"bench_{live}"):
                _pg(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            _pg(f'DROP DATABASE IF EXISTS "bench_{live}" WITH (FORCE)', port=pg_target_port())
            _mysql(f"DROP DATABASE IF EXISTS bench_{live}; DROP DATABASE IF EXISTS {sibling}")
