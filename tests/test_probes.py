"""Probes and DDL on a PostgreSQL target end with a plain cause instead of waiting forever on a lock."""
from __future__ import annotations

import time

import psycopg
import pytest

from campaigns.probes import ProbeError, execute_ddl
from campaigns.sysbench.command import Connection
from tests.helpers.pg_targets import pg_target_port


@pytest.mark.integration
def test_ddl_waiting_on_a_locked_table_stops_after_the_probe_timeout(target_databases, settings):
    settings.BENCHAPP_PROBE_TIMEOUT_S = 1
    database = target_databases["pgsql"]
    conn = Connection(driver="pgsql", host="127.0.0.1", port=pg_target_port(), database=database, user="postgres",
                      password="")
    execute_ddl(conn, ["DROP TABLE IF EXISTS probe_locked", "CREATE TABLE probe_locked (id int)"])
    with psycopg.connect(host="127.0.0.1", port=pg_target_port(), user="postgres", dbname=database) as holder:
        holder.execute("LOCK TABLE probe_locked IN ACCESS EXCLUSIVE MODE")  # held until the block ends
        started = time.monotonic()
        with pytest.raises(ProbeError, match="timeout"):
            execute_ddl(conn, ["ALTER TABLE probe_locked ADD COLUMN k int"])
        assert time.monotonic() - started < 10
    execute_ddl(conn, ["DROP TABLE probe_locked"])
