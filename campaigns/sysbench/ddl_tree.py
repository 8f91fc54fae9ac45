"""The parsed statement of a scenario's own CREATE TABLE (campaigns.sysbench.ddl): sqlglot's tree in the target's
dialect, checked against an allow-list of syntax nodes, and rendered back.

Apart from ddl because sqlglot is large (8 MB of a process's memory): ddl imports this module when a DDL is first
rendered, so a process that never renders one (a client host's worker, most of the time) never loads sqlglot.
"""
from __future__ import annotations

import logging

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from campaigns.sysbench.ddl import PLACEHOLDER, DdlError

# sqlglot warns on its logger when it falls back to an opaque Command; we refuse those with a message.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

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



def create_table_render(body: str, *, table: str, dialect: str, label: str) -> str:
    """sqlglot's rendering of `body`, which must be exactly one plain CREATE TABLE of `table` in this dialect, or
    DdlError saying why not (`label` names the dialect in the message)."""
    try:
        trees = [tree for tree in sqlglot.parse(body, read=dialect) if tree is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DdlError(f"not valid {label} SQL: {first[:200]}") from None
    if len(trees) != 1:
        raise DdlError("exactly one statement is allowed")
    _check_create(trees[0], table=table, dialect=dialect)
    return str(trees[0].sql(dialect=dialect))
