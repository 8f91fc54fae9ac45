"""The target server's own counters, read through SQL once a second while a job runs.

The products we compare are often managed cloud databases where no agent can run, so what the server says
about itself over a plain connection is all there is: SHOW GLOBAL STATUS on MySQL/MariaDB, pg_stat_database and
pg_stat_activity on PostgreSQL (its backends flush their counters at most once a second, so a one-second
sample may hold a little of the next one; sums over a window are exact).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import MySQLdb
import psycopg

from campaigns.probes import ProbeError, mysql_connect, mysql_probe_error, pg_connect, pg_probe_error
from campaigns.sysbench.command import Connection

MYSQL_COUNTERS = (
    "Questions", "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback",
    "Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted",
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_data_reads", "Innodb_data_writes",
    "Innodb_row_lock_waits", "Aborted_clients", "Aborted_connects",
    # MariaDB has no Innodb_rows_* (since 10.5? they are MySQL's): its handler-level row counts stand in.
    "Rows_read", "Rows_sent",
)
MYSQL_GAUGES = ("Threads_running", "Threads_connected")
PGSQL_COUNTERS = (
    "xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted",
    "blks_read", "blks_hit", "deadlocks",
)
PGSQL_GAUGES = ("backends_active", "backends_connected")

# The server's own measure of work, compared with sysbench's: statements on MySQL/MariaDB (Questions counts
# BEGIN and COMMIT as sysbench's "other" queries do), transactions on PostgreSQL.
RATE_COUNTERS = {"mysql": ("Questions",), "pgsql": ("xact_commit", "xact_rollback")}

_MYSQL_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in (*MYSQL_COUNTERS, *MYSQL_GAUGES)))
_PGSQL_SQL = (
    "SELECT {}, (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'"
    " AND pid <> pg_backend_pid()), (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND backend_type = 'client backend' AND pid <> pg_backend_pid())"
    " FROM pg_stat_database WHERE datname = current_database()"
).format(", ".join(PGSQL_COUNTERS))


class StatusReader:
    """One light connection to the target, reused for every reading; close() when done."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.driver = conn.driver
        try:
            self._db: Any = pg_connect(conn) if self.driver == "pgsql" else mysql_connect(conn)
        except (MySQLdb.Error, psycopg.Error) as exc:
            raise (pg_probe_error if self.driver == "pgsql" else mysql_probe_error)(exc, conn) from None

    def read(self) -> tuple[dict[str, int], dict[str, int]]:
        """(counters, gauges) as the server reports them now."""
        try:
            if self.driver == "pgsql":
                row = self._db.execute(_PGSQL_SQL).fetchone()
                if row is None:
                    raise ProbeError(f"pg_stat_database has no row for database '{self.conn.database}'")
                counters = {name: int(value or 0) for name, value in zip(PGSQL_COUNTERS, row, strict=False)}
                gauges = dict(zip(PGSQL_GAUGES, (int(row[-2]), int(row[-1])), strict=True))
                return counters, gauges
            with self._db.cursor() as cursor:
                cursor.execute(_MYSQL_SQL)
                values = {str(name): int(value) for name, value in cursor.fetchall() if str(value).isdigit()}
            return ({n: values.get(n, 0) for n in MYSQL_COUNTERS}, {n: values.get(n, 0) for n in MYSQL_GAUGES})
        except (MySQLdb.Error, psycopg.Error) as exc:
            raise (pg_probe_error if self.driver == "pgsql" else mysql_probe_error)(exc, self.conn) from None

    def round_trips(self, count: int) -> list[float]:
        """`count` timed `SELECT 1` round trips, in milliseconds."""
        timings = []
        try:
            if self.driver == "pgsql":
                for _ in range(count):
                    started = time.perf_counter()
                    self._db.execute("SELECT 1").fetchone()
                    timings.append((time.perf_counter() - started) * 1000)
            else:
                with self._db.cursor() as cursor:
                    for _ in range(count):
                        started = time.perf_counter()
                        cursor.execute("SELECT 1")
                        cursor.fetchone()
                        timings.append((time.perf_counter() - started) * 1000)
        except (MySQLdb.Error, psycopg.Error) as exc:
            raise (pg_probe_error if self.driver == "pgsql" else mysql_probe_error)(exc, self.conn) from None
        return timings

    def server_pid(self) -> int | None:
        """The process id of the target server, when it runs on this host, as the server itself tells it.

        psutil finds it as the owner of the listening socket only when it may read the server's /proc/PID/fd, i.e.
        as root or as the server's user; benchapp's worker runs as neither. The server names one of its threads
        (MariaDB's PROCESSLIST.TID, 10.5 on) or its backend (pg_backend_pid()), and /proc/TID/status (Tgid) or
        /proc/PID/stat (the parent: the postmaster) lead to the server's process; both are world-readable.
        """
        try:
            if self.driver == "pgsql":
                backend = int(self._db.execute("SELECT pg_backend_pid()").fetchone()[0])
                return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
            with self._db.cursor() as cursor:
                cursor.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
                row = cursor.fetchone()
            if not row or not row[0]:
                return None
            status = Path(f"/proc/{int(row[0])}/status").read_text()
            return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Tgid:"))
        except (MySQLdb.Error, psycopg.Error, OSError, ValueError, IndexError, StopIteration, TypeError):
            return None  # another host's server, an older MariaDB, a MySQL without TID: not known

    def close(self) -> None:
        try:
            self._db.close()
        except (MySQLdb.Error, psycopg.Error):
            pass


def counter_rates(before: dict[str, int], after: dict[str, int], seconds: float) -> dict[str, float]:
    """Per-second deltas of every counter present in both readings (a counter that went backwards, after a
    server restart or FLUSH STATUS, gives no rate rather than a negative one)."""
    if seconds <= 0:
        return {}
    return {name: round((after[name] - before[name]) / seconds, 3)
            for name in after if name in before and after[name] >= before[name]}
