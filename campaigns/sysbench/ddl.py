"""A scenario's own CREATE TABLE (seed 002's sharded table), checked before it reaches a target.

The DDL runs with the target's credentials, so it is never sent as written: it must be exactly one
CREATE TABLE of the table benchapp names (`{table}` stands for sbtest1, sbtest2, …), optionally ending with
one of the partitioning clauses below, matched by strict patterns. sqlglot parses the rest in the
target's dialect; only a plain table definition passes (an allow-list of syntax nodes, not a deny-list,
so that syntax sqlglot learns later is refused until someone looks at it), and what runs is sqlglot's
rendering of that tree followed by the clause as we rebuild it. Comments are refused in the raw text
because MySQL executes `/*!50000 … */`, and a backslash because MySQL and sqlglot may disagree on where a
string ends when the server runs with NO_BACKSLASH_ESCAPES.

Pure Python (sqlglot and strings): no Django here, as for the rest of campaigns.sysbench. The parsed statement's
checks live in ddl_tree, imported when a DDL is first rendered: sqlglot is 8 MB of a process's memory, and a client
host's worker that never prepares a dataset with a DDL of its own never loads it (bench/memory_client.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDER = "{table}"
MAX_DDL_CHARS = 100_000

# Target.driver → sqlglot dialect, and the name a message uses.
DIALECTS = {"mysql": "mysql", "pgsql": "postgres"}
DRIVER_LABELS = {"mysql": "MySQL/MariaDB", "pgsql": "PostgreSQL"}


class DdlError(ValueError):
    """The table DDL is refused; the message says why, for a user."""


# ---------------------------------------------------------------- trailing partitioning clauses

_IDENT = r"(?:`[A-Za-z_][A-Za-z0-9_]{0,63}`|[A-Za-z_][A-Za-z0-9_]{0,63})"
_COUNT = r"[1-9][0-9]{0,3}"
# Huawei DDM (seed 002): "dbpartition by hash(id)", then or alone "tbpartition by hash(id) tbpartitions 4".
_DDM_TB = rf"tbpartition\s+by\s+hash\s*\(\s*(?P<tb_col>{_IDENT})\s*\)\s+tbpartitions\s+(?P<tb_n>{_COUNT})"
_DDM = re.compile(
    rf"(?:dbpartition\s+by\s+hash\s*\(\s*(?P<db_col>{_IDENT})\s*\)(?:\s+{_DDM_TB})?|{_DDM_TB.replace('?P<tb_', '?P<only_tb_')})",
    re.IGNORECASE,
)
# MySQL/MariaDB: "PARTITION BY [LINEAR] HASH(col) PARTITIONS n" or "PARTITION BY [LINEAR] KEY(col) PARTITIONS n".
_MYSQL = re.compile(
    rf"partition\s+by\s+(?P<linear>linear\s+)?(?P<kind>hash|key)\s*\(\s*(?P<col>{_IDENT})\s*\)"
    rf"\s+partitions\s+(?P<n>{_COUNT})",
    re.IGNORECASE,
)
# A clause ends the statement and follows the closing parenthesis of the column list or a table option.
_TRAILING = re.compile(rf"(?<=[\s)])(?P<clause>{_DDM.pattern}|{_MYSQL.pattern})\s*\Z", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PartitionClause:
    kind: str  # "ddm" or "mysql"
    text: str  # rebuilt from the matched parts, never the raw text


def partition_clause_split(ddl: str) -> tuple[str, PartitionClause | None]:
    """The DDL without its trailing partitioning clause, and that clause rebuilt (None when there is none)."""
    match = _TRAILING.search(ddl)
    if match is None:
        return ddl, None
    clause = match.group("clause")
    body = ddl[:match.start()].rstrip()
    ddm = _DDM.fullmatch(clause)
    if ddm is not None:
        parts = []
        if ddm.group("db_col"):
            parts.append(f"dbpartition by hash({ddm.group('db_col')})")
        tb_col, tb_n = ddm.group("tb_col") or ddm.group("only_tb_col"), ddm.group("tb_n") or ddm.group("only_tb_n")
        if tb_col:
            parts.append(f"tbpartition by hash({tb_col}) tbpartitions {int(tb_n)}")
        return body, PartitionClause(kind="ddm", text=" ".join(parts))
    mysql = _MYSQL.fullmatch(clause)
    if mysql is None:  # pragma: no cover - _TRAILING only matches one of the two
        raise DdlError("unrecognised partitioning clause")
    linear = "LINEAR " if mysql.group("linear") else ""
    text = f"PARTITION BY {linear}{mysql.group('kind').upper()}({mysql.group('col')}) PARTITIONS {int(mysql.group('n'))}"
    return body, PartitionClause(kind="mysql", text=text)


# ---------------------------------------------------------------- raw text

_COMMENT_MARKERS = (("/*", "a /* … */ comment (MySQL executes /*! … */)"), ("*/", "a /* … */ comment"),
                    ("--", "a -- comment"), ("#", "a # comment"))


def _raw_text_check(ddl: str) -> str:
    """Refuses what must never reach a server whatever a parser makes of it; returns the text without its one
    optional trailing semicolon."""
    if len(ddl) > MAX_DDL_CHARS:
        raise DdlError(f"at most {MAX_DDL_CHARS:,} characters")
    for marker, what in _COMMENT_MARKERS:
        if marker in ddl:
            raise DdlError(f"comments are not allowed: it contains {what}")
    if "\\" in ddl:
        raise DdlError("a backslash is not allowed (MySQL and PostgreSQL read it differently in strings)")
    if any(not ch.isprintable() and ch not in " \t\r\n" for ch in ddl):
        raise DdlError("control characters are not allowed")
    text = ddl.strip()
    if text.endswith(";"):
        text = text[:-1].rstrip()
    if ";" in text:
        raise DdlError("exactly one statement is allowed: it contains a ';' before its end")
    if not text:
        raise DdlError("it is empty")
    return text


# ---------------------------------------------------------------- rendering

def table_ddl_render(ddl: str, *, table: str, driver: str) -> str:
    """The one statement that creates `table` on a target of this driver, or DdlError saying why not."""
    dialect = DIALECTS.get(driver)
    if dialect is None:
        raise DdlError(f"unknown driver {driver!r}")
    text = _raw_text_check(ddl.replace(PLACEHOLDER, table))
    body, clause = partition_clause_split(text)
    if clause is not None and dialect != "mysql":
        raise DdlError(f"the partitioning clause '{clause.text}' is for MySQL/MariaDB (or DDM) targets only")
    from campaigns.sysbench.ddl_tree import create_table_render

    statement = create_table_render(body, table=table, dialect=dialect, label=DRIVER_LABELS[driver])
    return f"{statement} {clause.text}" if clause is not None else statement


def table_names(tables: int) -> list[str]:
    return [f"sbtest{i}" for i in range(1, tables + 1)]


# Checked and rendered once under this name, then renamed per table: a dataset may have thousands of tables.
# Table names are [a-z0-9] only, so the renaming cannot change where a string or identifier ends.
_SENTINEL = "benchapp_table_placeholder_x7"


def table_ddl_statements(ddl: str, *, tables: int, driver: str) -> list[str]:
    """One checked CREATE TABLE per sbtest table, as it will run on a target of this driver."""
    if PLACEHOLDER not in ddl and tables > 1:
        raise DdlError(f"the table DDL must contain {PLACEHOLDER} when the dataset has several tables")
    if PLACEHOLDER not in ddl:
        return [table_ddl_render(ddl, table="sbtest1", driver=driver)]
    if _SENTINEL in ddl.lower():
        raise DdlError(f"the name {_SENTINEL} is reserved")
    statement = table_ddl_render(ddl, table=_SENTINEL, driver=driver)
    return [statement.replace(_SENTINEL, name) for name in table_names(tables)]


def table_ddl_problems(ddl: str) -> dict[str, str]:
    """Per driver, why the DDL cannot run on a target of that driver (a driver it passes for is absent)."""
    problems: dict[str, str] = {}
    for driver in DIALECTS:
        try:
            table_ddl_render(ddl, table="sbtest1", driver=driver)
        except DdlError as exc:
            problems[driver] = str(exc)
    return problems


def table_ddl_error(ddl: str) -> str | None:
    """A message for a DDL that cannot run on any target (None when it runs on at least one driver's)."""
    problems = table_ddl_problems(ddl)
    if len(problems) < len(DIALECTS):
        return None
    messages = set(problems.values())
    if len(messages) == 1:
        return messages.pop()
    return "; ".join(f"for {DRIVER_LABELS[driver]} targets: {message}" for driver, message in problems.items())


# ---------------------------------------------------------------- tables of more than 2^31 - 1 rows

# oltp_common.lua (and 0.5's common.lua on PostgreSQL) create `id INTEGER` and `k INTEGER`, signed 32-bit
# columns: a table of more rows than this cannot be loaded by sysbench's own prepare.
SYSBENCH_INT_MAX_ROWS = 2_147_483_647
# Storage engines benchapp passes on from the scenario's options (the guard refuses any other anyway).
_WIDE_ENGINE_OPTIONS = ("mysql-storage-engine", "mysql-table-engine")


def wide_table_needed(table_size: int) -> bool:
    """Whether sysbench's own CREATE TABLE cannot hold this many rows, so benchapp creates the tables."""
    return table_size > SYSBENCH_INT_MAX_ROWS


def wide_table_ddl(*, driver: str, options: dict[str, object]) -> str:
    """sysbench's sbtest table (oltp_common.lua's columns, defaults and id key) with 64-bit `id` and `k`.

    `auto-inc` (`oltp-auto-inc`) and the storage engine are read from the scenario's options as sysbench
    reads them; the secondary index on k is not here: the loader creates it after the rows, as sysbench does.
    A `{table}` template for table_ddl_statements(), which checks and renders it as it does a user's DDL.
    """
    auto_inc = bool(options.get("auto-inc", options.get("oltp-auto-inc", True)))
    secondary = bool(options.get("secondary", options.get("oltp-secondary", False)))
    if driver == "mysql":
        engine = next((str(options[o]) for o in _WIDE_ENGINE_OPTIONS if options.get(o)), "innodb")
        id_key = "KEY xid (id)" if secondary else "PRIMARY KEY (id)"
        return (f"CREATE TABLE {PLACEHOLDER} (id BIGINT NOT NULL{' AUTO_INCREMENT' if auto_inc else ''}, "
                "k BIGINT DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, "
                f"{id_key}) ENGINE={engine}")
    if driver == "pgsql":
        if secondary:
            raise DdlError("a secondary id key (--secondary) cannot be created on PostgreSQL by sysbench either")
        return (f"CREATE TABLE {PLACEHOLDER} (id {'BIGSERIAL' if auto_inc else 'BIGINT'} NOT NULL, "
                "k BIGINT DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, "
                "PRIMARY KEY (id))")
    raise DdlError(f"unknown driver {driver!r}")


# Bytes an sbtest row takes on disk with its primary key and the secondary index on k, per driver, for sysbench's
# own table (`id INTEGER`, loaded by `sysbench oltp_read_only prepare`) and benchapp's wide one (BIGINT id and k,
# loaded by our loader), the index on k built after the rows in both. Measured once, 2026-11-26, on this project's
# MariaDB 10.11 (InnoDB, 16 KiB pages) and PostgreSQL 15, after a prepare of one table of 1,000,000 rows:
# MariaDB SUM(data_length + index_length) after ANALYZE TABLE, PostgreSQL pg_total_relation_size(), divided by the
# rows (241.4, 260.4, 254.3 and 266.9 bytes). tests/test_bigint_tables.py checks a freshly prepared table against
# these within 20 %.
_ROW_BYTES_ON_DISK = {("mysql", False): 241, ("mysql", True): 260, ("pgsql", False): 254, ("pgsql", True): 267}


def row_bytes_on_disk(*, driver: str, wide: bool) -> int:
    return _ROW_BYTES_ON_DISK.get((driver, wide), _ROW_BYTES_ON_DISK[("mysql", wide)])
