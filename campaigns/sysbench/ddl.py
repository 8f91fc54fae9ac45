"""A scenario's own CREATE TABLE (seed 002's sharded table), checked before it reaches a target.

The DDL runs with the target's credentials, so it is never sent as written: it must be exactly one
CREATE TABLE of the table benchapp names (`{table}` stands for sbtest1, sbtest2, …), optionally ending with
one of the partitioning clauses below, matched by strict patterns. sqlglot parses the rest in the
target's dialect; only a plain table definition passes (an allow-list of syntax nodes, not a deny-list,
so that syntax sqlglot learns later is refused until someone looks at it), and what runs is sqlglot's
rendering of that tree followed by the clause as we rebuild it. Comments are refused in the raw text
because MySQL executes `/*!50000 … */`, and a backslash because MySQL and sqlglot may disagree on where a
string ends when the server runs with NO_BACKSLASH_ESCAPES.

Pure Python (sqlglot and strings): no Django here, as for the rest of campaigns.sysbench.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

# sqlglot warns on its logger when it falls back to an opaque Command; we refuse those with a message.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

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


# ---------------------------------------------------------------- the parsed statement

# Syntax nodes a plain table definition is made of. Anything else (a SELECT, a function call, a reference
# to another table, LIKE, a user-defined type, an opaque Command) is refused.
# Exact types: every sqlglot XxxProperty subclasses exp.Property, so isinstance() would let them all in.
_ALLOWED_NODES: frozenset[type[exp.Expression]] = frozenset({
    exp.Create, exp.Schema, exp.Table, exp.Identifier, exp.ColumnDef, exp.DataType, exp.DataTypeParam,
    exp.ColumnConstraint, exp.NotNullColumnConstraint, exp.PrimaryKeyColumnConstraint,
    exp.AutoIncrementColumnConstraint, exp.DefaultColumnConstraint, exp.UniqueColumnConstraint,
    exp.CommentColumnConstraint, exp.CollateColumnConstraint, exp.CharacterSetColumnConstraint,
    exp.GeneratedAsIdentityColumnConstraint, exp.OnUpdateColumnConstraint, exp.CurrentTimestamp,
    exp.PrimaryKey, exp.IndexColumnConstraint, exp.IndexParameters, exp.Column, exp.ColumnPrefix, exp.Ordered,
    exp.Literal, exp.Null, exp.Boolean, exp.Neg, exp.Var, exp.Properties,
    # Table options, each checked below.
    exp.EngineProperty, exp.CharacterSetProperty, exp.CollateProperty, exp.SchemaCommentProperty,
    exp.AutoIncrementProperty, exp.RowFormatProperty, exp.UnloggedProperty, exp.Property,
})
# Storage engines that keep rows in this server's own files (CONNECT, FEDERATED, SPIDER and the like reach
# other servers or files; BLACKHOLE or ARCHIVE would not be a benchmark of anything).
_ENGINES = frozenset({"innodb", "myisam", "aria", "memory", "heap", "rocksdb", "xtradb"})
# Generic `name=value` table options, per dialect: MySQL's table options, PostgreSQL's WITH (…) storage options.
_PROPERTIES = {
    "mysql": frozenset({"key_block_size", "stats_persistent", "stats_auto_recalc", "stats_sample_pages",
                        "page_compressed", "page_compression_level", "checksum", "pack_keys", "delay_key_write",
                        "min_rows", "max_rows", "avg_row_length"}),
    "postgres": frozenset({"fillfactor", "autovacuum_enabled", "toast_tuple_target", "parallel_workers"}),
}
_PROPERTY_NODES: dict[str, frozenset[type[exp.Expression]]] = {
    "mysql": frozenset({exp.EngineProperty, exp.CharacterSetProperty, exp.CollateProperty,
                        exp.SchemaCommentProperty, exp.AutoIncrementProperty, exp.RowFormatProperty, exp.Property}),
    "postgres": frozenset({exp.UnloggedProperty, exp.Property}),
}
# Arguments a Create may carry: the table with its columns, the kind, IF NOT EXISTS and the table options.
_CREATE_ARGS = frozenset({"this", "kind", "exists", "properties"})
_INDEX_ARGS = frozenset({"columns", "using"})


def _node_label(node: exp.Expr, dialect: str) -> str:
    text = node.sql(dialect=dialect)
    return f"{type(node).__name__} ({text[:60]}{'…' if len(text) > 60 else ''})"


def _check_create(tree: exp.Expr, *, table: str, dialect: str) -> None:
    if isinstance(tree, exp.Command):
        text = " ".join(tree.sql(dialect=dialect).split())
        raise DdlError(f"sqlglot cannot read it as a plain CREATE TABLE (unsupported syntax in: {text[:100]})")
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind") or "").upper() != "TABLE":
        raise DdlError("only CREATE TABLE is allowed")
    if tree.expression is not None:
        raise DdlError("CREATE TABLE … AS SELECT (or … SELECT) is not allowed")
    extra = sorted(k for k, v in tree.args.items() if v and k not in _CREATE_ARGS)
    if extra:
        raise DdlError(f"only a plain CREATE TABLE is allowed, not {', '.join(extra).replace('_', ' ').upper()}")
    schema = tree.this
    if not isinstance(schema, exp.Schema) or not isinstance(schema.this, exp.Table):
        raise DdlError("the table must be defined by its column list (CREATE TABLE {table} (…)), not LIKE or AS")
    created = schema.this
    if created.args.get("db") is not None or created.args.get("catalog") is not None or created.name != table:
        raise DdlError(f"the statement must create {PLACEHOLDER} itself, not {created.sql(dialect=dialect)}")
    for node in tree.walk():
        if isinstance(node, exp.Table) and node is not created:
            raise DdlError(f"it refers to another table: {node.sql(dialect=dialect)}")
        if type(node) not in _ALLOWED_NODES:
            raise DdlError(f"this is not allowed in a table definition: {_node_label(node, dialect)}")
        if isinstance(node, exp.Column) and (node.args.get("table") is not None or node.args.get("db") is not None):
            raise DdlError(f"a column must be named alone: {node.sql(dialect=dialect)}")
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.USERDEFINED:
            raise DdlError(f"unknown column type: {node.sql(dialect=dialect)}")
        if isinstance(node, exp.IndexParameters) and any(
                v for k, v in node.args.items() if k not in _INDEX_ARGS):
            raise DdlError(f"index options are not allowed: {node.sql(dialect=dialect)}")
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        _check_property(prop, dialect=dialect)


def _check_property(prop: exp.Expr, *, dialect: str) -> None:
    if type(prop) not in _PROPERTY_NODES[dialect]:
        raise DdlError(f"this table option is not allowed: {prop.sql(dialect=dialect)}")
    if isinstance(prop, exp.EngineProperty):
        engine = prop.name.lower()
        if engine not in _ENGINES:
            raise DdlError(f"ENGINE={prop.name} is not allowed (only {', '.join(sorted(_ENGINES))})")
    elif type(prop) is exp.Property:
        name = prop.name.lower()
        if name not in _PROPERTIES[dialect]:
            raise DdlError(f"the table option {prop.name.upper()} is not allowed")
        if not isinstance(prop.args.get("value"), exp.Literal | exp.Var):
            raise DdlError(f"the table option {prop.name.upper()} takes a plain value")


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
    try:
        trees = [tree for tree in sqlglot.parse(body, read=dialect) if tree is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DdlError(f"not valid {DRIVER_LABELS[driver]} SQL: {first[:200]}") from None
    if len(trees) != 1:
        raise DdlError("exactly one statement is allowed")
    _check_create(trees[0], table=table, dialect=dialect)
    statement = trees[0].sql(dialect=dialect)
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
