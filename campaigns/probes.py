"""Talking to targets directly (not through sysbench): connection checks and server snapshots.

MySQL and MariaDB go through mysqlclient, PostgreSQL through psycopg. Every call has a connect
timeout, and every failure becomes a ProbeError whose message names the cause (refused, denied,
unknown database) without ever containing the password.

Every connection refuses to hand the password over in clear text, whatever the server asks: psycopg's
libpq with `require_auth=!password`, libmariadb with a `restricted-auth` list (mysql_restricted_auth.cnf).
sysbench's own libraries cannot be told so, which is why a job checks its target through here right before
each sysbench starts (connection_verify). Every connection also refuses benchapp's own database and Redis
(campaigns.endpoints), resolved again at that moment.
"""
from __future__ import annotations

import ast
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import MySQLdb
import psycopg
from django.conf import settings

from campaigns.endpoints import own_service_problem
from campaigns.sysbench.command import Connection, redact_text

CONNECT_TIMEOUT_S = 5
MYSQL_RESTRICTED_AUTH_FILE = Path(__file__).resolve().parent / "mysql_restricted_auth.cnf"
# libpq learnt require_auth in PostgreSQL 16.
_PQ_REQUIRE_AUTH_VERSION = 160000
# libmariadb: the server asked for a plugin outside restricted-auth (CR_PLUGIN_NOT_ALLOWED).
_MYSQL_PLUGIN_NOT_ALLOWED = 5010

MYSQL_SETTINGS = (
    "version", "version_comment", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit",
    "sync_binlog", "log_bin", "binlog_format", "innodb_flush_method", "innodb_log_file_size",
    "innodb_io_capacity", "thread_handling", "thread_pool_size", "max_connections",
    "transaction_isolation", "tx_isolation", "innodb_doublewrite", "performance_schema",
    "rpl_semi_sync_master_enabled",
)
MYSQL_STATUS = (
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Questions", "Com_commit",
    "Innodb_rows_read", "Innodb_rows_updated", "Innodb_data_reads", "Innodb_data_writes",
    "Threads_connected", "Uptime",
)
PGSQL_SETTINGS = (
    "server_version", "shared_buffers", "effective_cache_size", "synchronous_commit", "fsync",
    "wal_level", "full_page_writes", "max_connections", "checkpoint_timeout", "max_wal_size",
    "default_transaction_isolation", "work_mem",
)


class ProbeError(Exception):
    """The target could not be reached or queried; the message says why, for a user.

    `unreachable` is True when the cause is the server's absence rather than a mistake (refused, reset, timed
    out, too many connections, shutting down, read-only after a failover): a job then waits and tries again.
    """

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


# MySQL/MariaDB errors that say the server is away or cannot take us now, not that a setting is wrong:
# 2002/2003 can't connect (socket, TCP), 2005 unknown host, 2006 server has gone away, 2013 lost connection,
# 2055 lost connection (system error), 1040 too many connections, 1053 server shutdown in progress,
# 1077/1927 connection killed, 1290 running with --read-only, 1836 read-only mode, 1792 read-only transaction,
# 4031 disconnected by the server (inactivity).
MYSQL_UNREACHABLE = frozenset({2002, 2003, 2005, 2006, 2013, 2055, 1040, 1053, 1077, 1927, 1290, 1836, 1792, 4031})
# PostgreSQL SQLSTATEs of the same kind: class 08 (connection exception), 57P01 admin shutdown, 57P02 crash
# shutdown, 57P03 cannot connect now (starting up), 53300 too many connections, 25006 read-only transaction.
PG_UNREACHABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300", "25006"})


def pg_unreachable(exc: BaseException) -> bool:
    """Whether a psycopg error says the server is away (a connection that failed has no SQLSTATE at all)."""
    state = getattr(exc, "sqlstate", None)
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith("08") or state in PG_UNREACHABLE_STATES


@dataclass(slots=True)
class ServerInfo:
    version: str
    settings: dict[str, str]
    status: dict[str, int] = field(default_factory=dict)
    dataset_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "settings": self.settings, "status": self.status,
                "dataset_bytes": self.dataset_bytes}



def _one(cursor: Any) -> Sequence[Any]:
    """The one row an aggregate query always returns."""
    row = cursor.fetchone()
    if row is None:
        raise ProbeError("the server returned no row for an aggregate query")
    return row

def mysql_error_parts(exc: Exception) -> tuple[int | None, str]:
    """mysqlclient's (code, message), without ever reading `exc.args[1]`.

    mysqlclient builds its exceptions' args with PyUnicode_FromString(mysql_error()); when the client library's
    message is not UTF-8, that item is left NULL, and reading it crashes the whole process (SIGSEGV: a web or
    worker process). A server chooses those bytes: libmariadb's CR_PLUGIN_NOT_ALLOWED names the plugin
    the server asked for, from memory already freed. str() of the exception prints the args tuple, which shows
    a NULL item as <NULL>; the message is read back from that text.
    """
    args = exc.args  # the tuple itself is safe to hold; only a NULL item inside it is not
    code = args[0] if args and isinstance(args[0], int) else None
    shown = str(exc)
    if len(args) != 2:
        return code, shown
    try:
        parsed = ast.literal_eval(shown)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return code, "the server's message could not be read"
    if isinstance(parsed, tuple) and len(parsed) == 2 and isinstance(parsed[1], str):
        return code, parsed[1]
    return code, shown


def mysql_probe_error(exc: Exception, conn: Connection) -> ProbeError:
    code, text = mysql_error_parts(exc)
    if code == _MYSQL_PLUGIN_NOT_ALLOWED:
        # Its message quotes freed memory (garbage, or a piece of anything the process held): never shown.
        msg = cleartext_refused_message(conn)
    elif code in (2002, 2003, 2005):
        msg = f"connection refused to {conn.host}:{conn.port} ({text})"
    elif code == 1045:
        msg = f"access denied for user '{conn.user}' ({text})"
    elif code == 1049:
        msg = f"database '{conn.database}' does not exist on {conn.host}:{conn.port}"
    elif code in (2013, 2006):
        msg = f"lost the connection to {conn.host}:{conn.port} ({text})"
    elif code == 1040:
        msg = f"too many connections on {conn.host}:{conn.port} ({text})"
    elif code in (1290, 1836, 1792):
        msg = f"{conn.host}:{conn.port} is read-only ({text})"
    else:
        msg = f"MySQL error {code}: {text}"
    return ProbeError(redact_text(msg, [conn.password]), unreachable=code in MYSQL_UNREACHABLE)


def pg_probe_error(exc: Exception, conn: Connection) -> ProbeError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "authentication method requirement" in str(exc):
        msg = cleartext_refused_message(conn)
    elif "Connection refused" in str(exc) or "could not connect" in str(exc):
        msg = f"connection refused to {conn.host}:{conn.port} ({text})"
    elif "password authentication failed" in str(exc) or "no password supplied" in str(exc):
        msg = f"access denied for user '{conn.user}' ({text})"
    elif "does not exist" in str(exc) and "database" in str(exc):
        msg = f"database '{conn.database}' does not exist on {conn.host}:{conn.port}"
    elif "timeout expired" in str(exc):
        msg = f"connection to {conn.host}:{conn.port} timed out ({text})"
    else:
        msg = f"PostgreSQL error: {text}"
    unreachable = pg_unreachable(exc) and msg.startswith(("connection ", "PostgreSQL error"))
    return ProbeError(redact_text(msg, [conn.password]), unreachable=unreachable)


def cleartext_refused_message(conn: Connection) -> str:
    return (f"refused to authenticate to {conn.host}:{conn.port}: the server asked for the password in clear "
            "text (or by a method that would reveal it), which benchapp never sends; use "
            + ("mysql_native_password or ed25519" if conn.driver == "mysql" else "scram-sha-256, md5 or trust")
            + " for this user")


def connection_guard(conn: Connection) -> None:
    """Raises ProbeError when the endpoint is benchapp's own database or Redis (resolved now)."""
    problem = own_service_problem(host=conn.host, port=conn.port, database=conn.database)
    if problem:
        raise ProbeError(f"refused: {problem}")


def _statement_timeout_s() -> int:
    """The longest a probe query or a scenario's DDL may run or wait on a lock (BENCHAPP_PROBE_TIMEOUT_S)."""
    return max(1, int(settings.BENCHAPP_PROBE_TIMEOUT_S))


def mysql_connect(conn: Connection, *, database: bool = True) -> Any:
    connection_guard(conn)
    kwargs: dict[str, Any] = {
        "host": conn.host, "port": conn.port, "user": conn.user, "password": conn.password,
        "connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": _statement_timeout_s(),
        "write_timeout": _statement_timeout_s(),
        # restricted-auth: no plugin that would send the password in clear (mysql_clear_password).
        "read_default_file": str(MYSQL_RESTRICTED_AUTH_FILE),
    }
    if database:
        kwargs["database"] = conn.database
    return MySQLdb.connect(**kwargs)


def _pg_require_auth(conn: Connection) -> dict[str, Any]:
    """libpq's refusal of clear-text password authentication (trust, md5 and SCRAM stay allowed)."""
    if psycopg.pq.version() >= _PQ_REQUIRE_AUTH_VERSION:
        return {"require_auth": "!password"}
    if conn.password:
        raise ProbeError(f"this psycopg's libpq ({psycopg.pq.version()}) cannot refuse clear-text password "
                         "authentication (PostgreSQL 16 or later needed); not sending the target's password")
    return {}


def pg_connect(conn: Connection) -> psycopg.Connection[Any]:
    connection_guard(conn)
    params = _pg_require_auth(conn)
    params.update(
        host=conn.host, port=conn.port, user=conn.user, password=conn.password or None,
        dbname=conn.database, connect_timeout=CONNECT_TIMEOUT_S,
        # The server ends a probe or a DDL statement that runs or waits on a lock too long (a table
        # another session keeps locked), as read_timeout does for MySQL targets.
        options=f"-c statement_timeout={_statement_timeout_s() * 1000} -c lock_timeout={_statement_timeout_s() * 1000}",
    )
    return psycopg.connect(autocommit=True, **params)


def connection_verify(conn: Connection) -> None:
    """Connects as sysbench is about to, through the restrictions above; ProbeError when refused."""
    try:
        if conn.driver == "mysql":
            db = mysql_connect(conn)
            try:
                db.cursor().execute("SELECT 1")
            finally:
                db.close()
        else:
            with pg_connect(conn) as pg:
                pg.execute("SELECT 1")
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None


def server_info(conn: Connection, *, tables: list[str] | None = None) -> ServerInfo:
    """Version, the settings that decide results, status counters and the dataset's size."""
    if conn.driver == "mysql":
        return _mysql_info(conn, tables or [])
    return _pg_info(conn, tables or [])


def _mysql_info(conn: Connection, tables: list[str]) -> ServerInfo:
    try:
        db = mysql_connect(conn)
        try:
            cur = db.cursor()
            cur.execute("SHOW GLOBAL VARIABLES")
            variables = {str(k): str(v) for k, v in cur.fetchall()}
            cur.execute("SHOW GLOBAL STATUS")
            status_raw = {str(k): str(v) for k, v in cur.fetchall()}
            size = None
            if tables:
                placeholders = ",".join(["%s"] * len(tables))
                cur.execute(
                    "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables"
                    f" WHERE table_schema = %s AND table_name IN ({placeholders})",
                    [conn.database, *tables],
                )
                size = int(_one(cur)[0] or 0)
        finally:
            db.close()
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None
    settings = {k: variables[k] for k in MYSQL_SETTINGS if k in variables}
    status = {k: int(status_raw[k]) for k in MYSQL_STATUS if status_raw.get(k, "").isdigit()}
    return ServerInfo(version=variables.get("version", ""), settings=settings, status=status,
                      dataset_bytes=size)


def _pg_info(conn: Connection, tables: list[str]) -> ServerInfo:
    try:
        with pg_connect(conn) as db, db.cursor() as cur:
            cur.execute("SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)",
                        [list(PGSQL_SETTINGS)])
            settings = {name: f"{value}{'' if not unit else ' ' + unit}" for name, value, unit in cur.fetchall()}
            cur.execute(
                "SELECT COALESCE(sum(blks_hit), 0), COALESCE(sum(blks_read), 0),"
                " COALESCE(sum(xact_commit), 0), COALESCE(sum(tup_fetched), 0)"
                " FROM pg_stat_database WHERE datname = current_database()"
            )
            hit, read, commits, fetched = (int(v) for v in _one(cur))
            size = None
            if tables:
                cur.execute(
                    "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE c.relname = ANY(%s) AND n.nspname = current_schema() AND c.relkind = 'r'",
                    [tables],
                )
                size = int(_one(cur)[0])
            cur.execute("SELECT version()")
            version = str(_one(cur)[0])
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None
    status = {"blks_hit": hit, "blks_read": read, "xact_commit": commits, "tup_fetched": fetched}
    return ServerInfo(version=version, settings=settings, status=status, dataset_bytes=size)


def blocked_sessions(conn: Connection) -> str:
    """What the target's sessions on the job's database are waiting for, in the server's own words: the most
    common MySQL/MariaDB processlist state that starts with "Waiting" ("Waiting for backup lock: 4 sessions, for
    31 s"), or PostgreSQL's pg_stat_activity wait event of active sessions ("Lock transactionid: …"); "" when
    nothing waits or the server cannot be asked."""
    try:
        if conn.driver == "mysql":
            db = mysql_connect(conn)
            try:
                cur = db.cursor()
                cur.execute(
                    "SELECT state, COUNT(*), MAX(time) FROM information_schema.processlist"
                    " WHERE id <> CONNECTION_ID() AND db = %s AND state LIKE 'Waiting%%'"
                    " GROUP BY state ORDER BY COUNT(*) DESC LIMIT 1", [conn.database])
                row = cur.fetchone()
            finally:
                db.close()
        else:
            with pg_connect(conn) as pg:
                row = pg.execute(
                    "SELECT wait_event_type || ' ' || wait_event, count(*),"
                    " max(extract(epoch FROM now() - query_start))::int FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'"
                    " AND wait_event_type IN ('Lock', 'LWLock', 'BufferPin', 'IPC', 'IO')"
                    " GROUP BY 1 ORDER BY 2 DESC LIMIT 1").fetchone()
    except (MySQLdb.Error, psycopg.Error, ProbeError):
        return ""
    if not row:
        return ""
    state, count, seconds = row
    sessions = f"{count} session{'s' if count != 1 else ''}"
    return f"{state} ({sessions}, for {int(seconds or 0)} s)"


# How long a write probe waits for a lock before the target counts as blocked.
WRITE_PROBE_WAIT_S = 2
MYSQL_LOCK_WAIT_TIMEOUT = 1205


def writes_blocked(conn: Connection, *, table: str) -> str:
    """What keeps writes on the job's table from going through now, in the server's own words ("Waiting for backup
    lock (1 session, for 1 s)": a FLUSH TABLES WITH READ LOCK, a backup, a LOCK TABLE …), "" when a write that
    changes nothing (UPDATE … WHERE id = 0: sysbench's ids start at 1) goes through within WRITE_PROBE_WAIT_S, or
    fails for any other reason (a missing table is the dataset check's business, an unreachable server the probes').

    The write runs on a thread of its own; while it waits, blocked_sessions() reads what it waits for."""
    failure: list[BaseException] = []

    def write() -> None:
        try:
            if conn.driver == "mysql":
                db = mysql_connect(conn)
                try:
                    cur = db.cursor()
                    # MDL waits (global read lock, backup lock, LOCK TABLES) and InnoDB row lock waits.
                    cur.execute(f"SET SESSION lock_wait_timeout = {WRITE_PROBE_WAIT_S}")
                    cur.execute(f"SET SESSION innodb_lock_wait_timeout = {WRITE_PROBE_WAIT_S}")
                    cur.execute(f"UPDATE {table} SET k = k WHERE id = 0")
                    db.rollback()
                finally:
                    db.close()
            else:
                with pg_connect(conn) as pg:
                    pg.execute(f"SET lock_timeout = '{WRITE_PROBE_WAIT_S}s'")
                    pg.execute(f"UPDATE {table} SET k = k WHERE id = 0")
        except (MySQLdb.Error, psycopg.Error, ProbeError) as exc:
            failure.append(exc)

    writer = threading.Thread(target=write, daemon=True, name="benchapp-write-probe")
    writer.start()
    writer.join(WRITE_PROBE_WAIT_S / 2)
    waiting = blocked_sessions(conn) if writer.is_alive() else ""
    writer.join(WRITE_PROBE_WAIT_S + CONNECT_TIMEOUT_S + _statement_timeout_s())
    if writer.is_alive():
        return waiting or f"a write has waited over {WRITE_PROBE_WAIT_S} s"
    if not failure:
        return ""
    exc = failure[0]
    lock_timeout = (isinstance(exc, MySQLdb.Error) and bool(exc.args) and exc.args[0] == MYSQL_LOCK_WAIT_TIMEOUT) or (
        isinstance(exc, psycopg.errors.LockNotAvailable))
    if not lock_timeout:
        return ""
    return waiting or f"a write waited {WRITE_PROBE_WAIT_S} s for a lock ({exc})"


def cache_hit_ratio(before: dict[str, int], after: dict[str, int]) -> float | None:
    """Share of page requests served from memory between two status snapshots."""
    if "Innodb_buffer_pool_read_requests" in before and "Innodb_buffer_pool_read_requests" in after:
        requests = after["Innodb_buffer_pool_read_requests"] - before["Innodb_buffer_pool_read_requests"]
        misses = after.get("Innodb_buffer_pool_reads", 0) - before.get("Innodb_buffer_pool_reads", 0)
        return None if requests <= 0 else max(0.0, 1.0 - misses / requests)
    if "blks_hit" in before and "blks_hit" in after:
        hits = after["blks_hit"] - before["blks_hit"]
        reads = after["blks_read"] - before["blks_read"]
        return None if hits + reads <= 0 else hits / (hits + reads)
    return None


# mysql_set_server_option(): mysqlclient turns multi-statement queries on for every connection.
MYSQL_OPTION_MULTI_STATEMENTS_OFF = 1


def execute_ddl(conn: Connection, statements: list[str]) -> None:
    """Runs a scenario's own CREATE TABLE statements (seed 002's sharded tables), already checked by
    campaigns.sysbench.ddl; each is also sent so that the server would refuse a second statement in it
    (MySQL: multi-statements off; PostgreSQL: a prepared statement, which holds one)."""
    try:
        if conn.driver == "mysql":
            db = mysql_connect(conn)
            try:
                db.set_server_option(MYSQL_OPTION_MULTI_STATEMENTS_OFF)
                cur = db.cursor()
                for statement in statements:
                    cur.execute(statement)
                db.commit()
            finally:
                db.close()
        else:
            with pg_connect(conn) as db, db.cursor() as cur:
                for statement in statements:
                    cur.execute(statement, prepare=True)
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None


def tables_max_id(conn: Connection, tables: list[str]) -> dict[str, int]:
    """MAX(id) of each of these tables that exists (0 when empty): exact, from the primary key, never the
    server's row estimate. A prepare's progress, and where a resumed one starts."""
    names = [t for t in tables if t.isidentifier() and t.isascii()]
    try:
        if conn.driver == "mysql":
            db = mysql_connect(conn)
            try:
                cur = db.cursor()
                placeholders = ",".join(["%s"] * len(names))
                cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
                            f" AND table_name IN ({placeholders})", [conn.database, *names])
                existing = sorted({str(row[0]) for row in cur.fetchall()})
                if not existing:
                    return {}
                cur.execute("SELECT " + ", ".join(f"(SELECT COALESCE(MAX(id), 0) FROM `{t}`)" for t in existing))
                return dict(zip(existing, (int(v) for v in _one(cur)), strict=True))
            finally:
                db.close()
        with pg_connect(conn) as pg, pg.cursor() as cur:
            cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY(%s)",
                        [names])
            existing = sorted({str(row[0]) for row in cur.fetchall()})
            if not existing:
                return {}
            cur.execute("SELECT " + ", ".join(f'(SELECT COALESCE(MAX(id), 0) FROM "{t}")' for t in existing))
            return dict(zip(existing, (int(v) for v in _one(cur)), strict=True))
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None


def _server_row(conn: Connection, *, mysql: str, pgsql: str) -> Sequence[Any] | None:
    """The one row a server-wide question gives on a connection of its own (the query by driver), or None when the
    server refuses to say (a managed server, a restricted user). A connection that fails raises ProbeError."""
    try:
        if conn.driver == "mysql":
            db = mysql_connect(conn)
            try:
                cur = db.cursor()
                cur.execute(mysql)
                return _one(cur)
            finally:
                db.close()
        with pg_connect(conn) as pg, pg.cursor() as cur:
            cur.execute(pgsql)
            return _one(cur)
    except (MySQLdb.Error, psycopg.Error):
        return None


def connections_in_use(conn: Connection) -> tuple[int, int] | None:
    """(connections in use, connections an ordinary user may open) on the target's server now, or None when the
    server does not say. MySQL/MariaDB: Threads_connected against max_connections (one more is kept for a
    SUPER user); PostgreSQL: client backends against max_connections less the superuser-reserved ones."""
    row = _server_row(
        conn,
        mysql="SELECT @@global.max_connections, (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
              "WHERE VARIABLE_NAME = 'THREADS_CONNECTED')",
        pgsql="SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int, "
              "(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')")
    if row is None or row[0] is None or row[1] is None:
        return None  # sysbench will say
    limit, used = row
    return int(used), int(limit)


def server_work_count(conn: Connection) -> float | None:
    """A counter of the work the whole server has been asked for, to tell a still server from a busy one:
    MySQL/MariaDB's Questions (statements from every client), PostgreSQL's committed and rolled-back transactions
    of every database. None when the server does not say."""
    try:
        row = _server_row(
            conn, mysql="SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'QUESTIONS'",
            pgsql="SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database")
    except ProbeError:
        return None
    return None if row is None or row[0] is None else float(row[0])
