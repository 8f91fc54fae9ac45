"""Runs benchapp's sysbench 0.5-era legacy Lua scripts with the real sysbench.

The scripts live in campaigns/sysbench/lua/oltp_legacy/. These tests start
/usr/bin/sysbench against the local MariaDB (127.0.0.1:3306, root, no
password) and the PostgreSQL targets cluster (127.0.0.1, scripts/pg-targets.sh, postgres, trust), in a database
of this session's own (``DB``) that is created when missing. Every test skips with a
reason when sysbench, a client program or a server is missing.

Runs are bounded by ``--events`` (single thread), so the statement counts in
sysbench's "queries performed" block are exact: a statement without a result
set counts as a write only when it changed a row, BEGIN/COMMIT count as other.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.pg_targets import pg_target_port

REPO = Path(__file__).resolve().parent.parent
LUA_DIR = REPO / "campaigns" / "sysbench" / "lua" / "oltp_legacy"
OLTP = LUA_DIR / "oltp.lua"
SELECT = LUA_DIR / "select.lua"
UPDATE_NON_INDEX = LUA_DIR / "update_non_index.lua"

# This session's and xdist process's own (bench_<session>_gwN_legacy, tests/pytest_env.py): with one fixed name, two
# processes of make test created and dropped each other's tables. A killed session's is dropped by the next one.
DB = f"{os.environ['BENCHAPP_TEST_TARGET_DB']}_legacy"
TABLES = 2
ROWS = 500
EVENTS = 100

SYSBENCH = shutil.which("sysbench")
MYSQL_CLIENT = shutil.which("mariadb") or shutil.which("mysql")
PSQL = shutil.which("psql")
CREATEDB = shutil.which("createdb")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(SYSBENCH is None, reason="sysbench is not installed"),
]

MYSQL_OPTS = [
    "--db-driver=mysql",
    "--mysql-host=127.0.0.1",
    "--mysql-port=3306",
    "--mysql-user=root",
    "--mysql-password=",
    f"--mysql-db={DB}",
]
PG_PORT = str(pg_target_port())
PGSQL_OPTS = [
    "--db-driver=pgsql",
    "--pgsql-host=127.0.0.1",
    f"--pgsql-port={PG_PORT}",
    "--pgsql-user=postgres",
    f"--pgsql-db={DB}",
]
SIZE_OPTS = [f"--oltp-tables-count={TABLES}", f"--oltp-table-size={ROWS}"]

# 0.5-era option names the scripts must accept (and list in `help`).
LEGACY_OPTIONS = [
    "oltp-tables-count",
    "oltp-table-size",
    "oltp-range-size",
    "oltp-point-selects",
    "oltp-simple-ranges",
    "oltp-sum-ranges",
    "oltp-order-ranges",
    "oltp-distinct-ranges",
    "oltp-index-updates",
    "oltp-non-index-updates",
    "oltp-delete-inserts",
    "oltp-range-selects",
    "oltp-read-only",
    "oltp-write-only",
    "oltp-skip-trx",
    "oltp-auto-inc",
    "oltp-secondary",
    "oltp-create-secondary",
    "mysql-table-engine",
    "skip-create-table",
]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _run(argv: list[str], timeout: float = 30, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or REPO,
        stdin=subprocess.DEVNULL,
    )


def sysbench(script: Path | str, db_opts: list[str], *args: str, check: bool = True, cwd: Path | None = None):
    proc = _run([SYSBENCH, str(script), *db_opts, *args], cwd=cwd)
    if check:
        assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def run_events(script: Path, db_opts: list[str], *args: str, events: int = EVENTS) -> dict[str, int]:
    proc = sysbench(script, db_opts, *SIZE_OPTS, *args, f"--events={events}", "--time=0", "run")
    return parse_queries(proc.stdout)


def parse_queries(stdout: str) -> dict[str, int]:
    stats = {}
    for key in ("read", "write", "other", "total", "transactions"):
        m = re.search(rf"^\s+{key}:\s+(\d+)", stdout, re.MULTILINE)
        assert m, f"no '{key}:' line in sysbench output:\n{stdout}"
        stats[key] = int(m.group(1))
    return stats


def mysql_query(sql: str) -> list[list[str]]:
    proc = _run([MYSQL_CLIENT, "-h127.0.0.1", "-P3306", "-uroot", "--batch", "--skip-column-names", DB, "-e", sql])
    assert proc.returncode == 0, proc.stderr
    return [line.split("\t") for line in proc.stdout.splitlines()]


def pg_query(sql: str) -> list[list[str]]:
    proc = _run([PSQL, "-h", "127.0.0.1", "-p", PG_PORT, "-U", "postgres", "-d", DB, "-At", "-F", "\t", "-c", sql])
    assert proc.returncode == 0, proc.stderr
    return [line.split("\t") for line in proc.stdout.splitlines()]


def mysql_tables() -> set[str]:
    rows = mysql_query(f"SELECT table_name FROM information_schema.tables WHERE table_schema='{DB}'")
    return {r[0] for r in rows if r[0].startswith("sbtest")}


def pg_tables() -> set[str]:
    rows = pg_query("SELECT tablename FROM pg_tables WHERE schemaname='public'")
    return {r[0] for r in rows if r[0].startswith("sbtest")}


def drop_all_mysql() -> None:
    for t in mysql_tables():
        mysql_query(f"DROP TABLE IF EXISTS {t}")


def drop_all_pg() -> None:
    for t in pg_tables():
        pg_query(f"DROP TABLE IF EXISTS {t}")


# ---------------------------------------------------------------------------
# servers
# ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def mysql_server():
    if MYSQL_CLIENT is None:
        pytest.skip("no mariadb/mysql client program")
    try:
        proc = _run(
            [MYSQL_CLIENT, "-h127.0.0.1", "-P3306", "-uroot", "-e", f"CREATE DATABASE IF NOT EXISTS {DB}"],
            timeout=15,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("MariaDB at 127.0.0.1:3306 does not answer")
    if proc.returncode != 0:
        pytest.skip(f"MariaDB at 127.0.0.1:3306 not usable: {proc.stderr.strip()}")
    return MYSQL_OPTS


@pytest.fixture(scope="session")
def pgsql_server():
    if PSQL is None or CREATEDB is None:
        pytest.skip("no psql/createdb client programs")
    try:
        proc = _run(
            [
                PSQL,
                "-h",
                "127.0.0.1",
                "-p",
                PG_PORT,
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-At",
                "-c",
                f"SELECT 1 FROM pg_database WHERE datname='{DB}'",
            ],
            timeout=15,
        )
        if proc.returncode != 0:
            pytest.skip(f"PostgreSQL at 127.0.0.1:{PG_PORT} not usable: {proc.stderr.strip()}")
        if proc.stdout.strip() != "1":
            made = _run([CREATEDB, "-h", "127.0.0.1", "-p", PG_PORT, "-U", "postgres", DB], timeout=15)
            if made.returncode != 0 and "already exists" not in made.stderr:
                pytest.skip(f"cannot create database {DB}: {made.stderr.strip()}")
    except subprocess.TimeoutExpired:
        pytest.skip(f"PostgreSQL at 127.0.0.1:{PG_PORT} does not answer")
    return PGSQL_OPTS


@pytest.fixture
def mysql_db(mysql_server):
    """An empty DB on MariaDB before and after the test."""
    drop_all_mysql()
    yield mysql_server
    drop_all_mysql()


@pytest.fixture
def pgsql_db(pgsql_server):
    drop_all_pg()
    yield pgsql_server
    drop_all_pg()


@pytest.fixture
def mysql_prepared(mysql_db):
    sysbench(OLTP, mysql_db, *SIZE_OPTS, "prepare")
    return mysql_db


@pytest.fixture
def pgsql_prepared(pgsql_db):
    sysbench(OLTP, pgsql_db, *SIZE_OPTS, "prepare")
    return pgsql_db


@pytest.fixture(params=["mysql", "pgsql"])
def prepared(request):
    """Both drivers, tables prepared with the defaults (2 x 500 rows)."""
    return request.getfixturevalue(f"{request.param}_prepared")


# ---------------------------------------------------------------------------
# help, option names, finding common.lua
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("script", [OLTP, SELECT, UPDATE_NON_INDEX], ids=lambda p: p.name)
def test_help_lists_05_option_names(script, tmp_path):
    # From an unrelated working directory: common.lua must still be found.
    proc = _run([SYSBENCH, str(script), "help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in LEGACY_OPTIONS:
        assert re.search(rf"^\s+--{name}[=\[]", proc.stdout, re.MULTILINE), f"--{name} missing:\n{proc.stdout}"
    assert re.search(r"--oltp-point-selects=N\s.*\[10\]", proc.stdout)
    assert re.search(r"--oltp-auto-inc\[=on\|off\]\s.*\[on\]", proc.stdout)


def test_relative_script_path_and_deprecated_test_option(tmp_path):
    rel = OLTP.relative_to(REPO)
    proc = _run([SYSBENCH, str(rel), "help"], cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--oltp-tables-count" in proc.stdout
    proc = _run([SYSBENCH, f"--test={OLTP}", "help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--oltp-tables-count" in proc.stdout


def test_unknown_option_is_refused():
    proc = _run([SYSBENCH, str(OLTP), "--oltp-no-such-option=1", "help"])
    assert proc.returncode != 0
    assert "invalid option" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# prepare / run / cleanup on both drivers
# ---------------------------------------------------------------------------
def test_prepare_creates_tables_mysql(mysql_prepared):
    assert mysql_tables() == {"sbtest1", "sbtest2"}
    for t in ("sbtest1", "sbtest2"):
        assert mysql_query(f"SELECT COUNT(*), MIN(id), MAX(id) FROM {t}") == [["500", "1", "500"]]
    cols = mysql_query(
        "SELECT column_name, column_type FROM information_schema.columns "
        f"WHERE table_schema='{DB}' AND table_name='sbtest1' ORDER BY ordinal_position"
    )
    assert cols == [["id", "int(10) unsigned"], ["k", "int(10) unsigned"], ["c", "char(120)"], ["pad", "char(60)"]]
    ddl = mysql_query("SHOW CREATE TABLE sbtest1")[0][1]
    assert "PRIMARY KEY (`id`)" in ddl
    assert "AUTO_INCREMENT" in ddl  # --oltp-auto-inc defaults to on, as in 0.5
    assert "KEY `k_1` (`k`)" in ddl
    c, pad = mysql_query("SELECT c, pad FROM sbtest1 WHERE id=7")[0]
    assert re.fullmatch(r"(\d{11}-){9}\d{11}", c)
    assert re.fullmatch(r"(\d{11}-){4}\d{11}", pad)


def test_prepare_creates_tables_pgsql(pgsql_prepared):
    assert pg_tables() == {"sbtest1", "sbtest2"}
    for t in ("sbtest1", "sbtest2"):
        assert pg_query(f"SELECT COUNT(*), MIN(id), MAX(id) FROM {t}") == [["500", "1", "500"]]
    cols = pg_query(
        "SELECT column_name, data_type, character_maximum_length FROM information_schema.columns "
        "WHERE table_name='sbtest1' ORDER BY ordinal_position"
    )
    assert cols == [["id", "integer", ""], ["k", "integer", ""], ["c", "character", "120"], ["pad", "character", "60"]]
    idx = {r[0] for r in pg_query("SELECT indexname FROM pg_indexes WHERE tablename='sbtest1'")}
    assert idx == {"sbtest1_pkey", "k_1"}


def test_point_selects_and_index_update_mix(prepared):
    s = run_events(
        OLTP,
        prepared,
        "--oltp-point-selects=4",
        "--oltp-simple-ranges=0",
        "--oltp-sum-ranges=0",
        "--oltp-order-ranges=0",
        "--oltp-distinct-ranges=0",
        "--oltp-index-updates=1",
        "--oltp-non-index-updates=0",
        "--oltp-delete-inserts=0",
    )
    n = s["transactions"]
    assert n == EVENTS
    assert (s["read"], s["write"], s["other"]) == (4 * n, 1 * n, 2 * n)


def test_default_oltp_mix_is_14_reads_4_writes_2_other(prepared):
    s = run_events(OLTP, prepared)
    n = s["transactions"]
    assert n == EVENTS
    assert (s["read"], s["write"], s["other"]) == (14 * n, 4 * n, 2 * n)


def test_select_lua_is_one_point_select_per_event(prepared):
    s = run_events(SELECT, prepared)
    assert (s["transactions"], s["read"], s["write"], s["other"]) == (EVENTS, EVENTS, 0, 0)


def test_update_non_index_lua_is_one_update_per_event(prepared):
    s = run_events(UPDATE_NON_INDEX, prepared)
    assert (s["transactions"], s["read"], s["write"], s["other"]) == (EVENTS, 0, EVENTS, 0)


@pytest.mark.parametrize(
    "flags, per_trx",
    [
        (["--oltp-read-only=on"], (14, 0, 2)),
        (["--oltp-write-only=on"], (0, 4, 2)),
        (["--oltp-skip-trx=on"], (14, 4, 0)),
        (["--oltp-range-selects=off"], (10, 4, 2)),
        (["--oltp_point_selects=1", "--oltp_delete_inserts=2"], (5, 6, 2)),  # underscore spelling too
    ],
    ids=["read-only", "write-only", "skip-trx", "no-ranges", "underscores"],
)
def test_mix_flags_mysql(mysql_prepared, flags, per_trx):
    s = run_events(OLTP, mysql_prepared, *flags)
    n = s["transactions"]
    assert (s["read"], s["write"], s["other"]) == tuple(x * n for x in per_trx)


def test_cleanup_drops_tables(prepared):
    sysbench(OLTP, prepared, *SIZE_OPTS, "cleanup")
    if "--db-driver=mysql" in prepared:
        assert mysql_tables() == set()
    else:
        assert pg_tables() == set()


# ---------------------------------------------------------------------------
# schema options
# ---------------------------------------------------------------------------
def test_secondary_and_auto_inc_on_mysql(mysql_db):
    # 0.5 spelling with underscores and the bare boolean flag, as in seed 002.
    sysbench(OLTP, mysql_db, *SIZE_OPTS, "--oltp_secondary", "--oltp_auto_inc=on", "prepare")
    ddl = mysql_query("SHOW CREATE TABLE sbtest2")[0][1]
    assert "PRIMARY KEY" not in ddl
    assert "KEY `xid` (`id`)" in ddl
    assert "AUTO_INCREMENT" in ddl
    assert mysql_query("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest2") == [["500", "1", "500"]]
    s = run_events(OLTP, mysql_db, "--oltp_secondary", "--oltp_auto_inc=on", "--oltp_range_size=5")
    n = s["transactions"]
    assert (s["read"], s["write"], s["other"]) == (14 * n, 4 * n, 2 * n)


def test_auto_inc_off_gives_explicit_ids_mysql(mysql_db):
    sysbench(OLTP, mysql_db, *SIZE_OPTS, "--oltp-auto-inc=off", "prepare")
    ddl = mysql_query("SHOW CREATE TABLE sbtest1")[0][1]
    assert "AUTO_INCREMENT" not in ddl
    assert "PRIMARY KEY (`id`)" in ddl
    assert mysql_query("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1") == [["500", "1", "500"]]


def test_secondary_on_pgsql_uses_separate_index(pgsql_db):
    sysbench(OLTP, pgsql_db, *SIZE_OPTS, "--oltp-secondary=on", "--oltp-auto-inc=off", "prepare")
    idx = {r[0] for r in pg_query("SELECT indexname FROM pg_indexes WHERE tablename='sbtest1'")}
    assert idx == {"xid_1", "k_1"}
    s = run_events(OLTP, pgsql_db, "--oltp-secondary=on")
    n = s["transactions"]
    assert (s["read"], s["write"], s["other"]) == (14 * n, 4 * n, 2 * n)


def test_aliases_tables_and_table_size_mysql(mysql_db):
    sysbench(OLTP, mysql_db, "--tables=3", "--table-size=20", "prepare")
    assert mysql_tables() == {"sbtest1", "sbtest2", "sbtest3"}
    assert mysql_query("SELECT COUNT(*) FROM sbtest3") == [["20"]]
    sysbench(OLTP, mysql_db, "--tables=3", "cleanup")
    assert mysql_tables() == set()


# ---------------------------------------------------------------------------
# custom DDL (seed 002: one pre-created, sharded table)
# ---------------------------------------------------------------------------
def test_skip_create_table_loads_into_existing_table_mysql(mysql_db):
    mysql_query(
        "CREATE TABLE sbtest1 (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        "k INTEGER UNSIGNED DEFAULT '0' NOT NULL, c VARCHAR(1200) DEFAULT '' NOT NULL, "
        "pad VARCHAR(1200) DEFAULT '' NOT NULL) COMMENT='precreated'"
    )
    common = [
        "--oltp_tables_count=1",
        f"--oltp-table-size={ROWS}",
        "--oltp_auto_inc=on",
        "--oltp_range_size=5",
        "--oltp_secondary",
        "--mysql-table-engine=innodb",
        "--rand-init=on",
        "--id-start-val=1",
        "--id-step-val=1000",
    ]
    sysbench(OLTP, mysql_db, *common, "--skip-create-table", "--threads=4", "prepare")
    assert mysql_query("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1") == [["500", "1", "500"]]
    ddl = mysql_query("SHOW CREATE TABLE sbtest1")[0][1]
    assert "varchar(1200)" in ddl and "precreated" in ddl  # our CREATE TABLE was not sent
    proc = sysbench(OLTP, mysql_db, *common, f"--events={EVENTS}", "--time=0", "run")
    s = parse_queries(proc.stdout)
    assert (s["read"], s["write"], s["other"]) == (14 * EVENTS, 4 * EVENTS, 2 * EVENTS)


def test_skip_create_table_without_table_fails_clearly_mysql(mysql_db):
    proc = sysbench(OLTP, mysql_db, "--skip-create-table=on", "--oltp-table-size=10", "prepare", check=False)
    assert proc.returncode != 0
    assert "does not exist: create it first" in proc.stdout
