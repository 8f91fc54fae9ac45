"""The options benchapp lets a scenario pass to sysbench, and how it checks them.

Everything here was read off the sysbench that runs the campaigns (Debian's 1.0.20): `sysbench --help`,
`sysbench <test> help` for each bundled OLTP test, and the option tables in /usr/share/sysbench/oltp_common.lua
and the tests that extend it. The legacy family (`oltp_legacy/*.lua`, benchapp's own Lua, which accepts the
sysbench 0.5 option names) follows the 0.5-era tests/db/common.lua and oltp.lua.

A scenario is only ever turned into separate argv items (never a shell string), but values are still refused
when they could read as another argument or break a command line when someone copies it into a shell: a
benchmark setting never needs a space, a quote or a `$`. tests/test_catalogue.py compares this module with
the installed sysbench's help output.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from campaigns.sysbench.hosttests import HOST_DESCRIPTIONS, HOST_OPTION_ROWS

# sysbench parses its C-level numeric options into a signed 32-bit int: `--events=2147483648` is refused with
# "Invalid value for the 'events' option", so that is the ceiling for every built-in integer option.
INT32_MAX = 2_147_483_647

# sysbench's Lua options are doubles, but it draws random ids as 32-bit unsigned numbers (sb_rand_*() take and
# return uint32_t): a table of 4e9 rows draws ids up to ~4e9, one of 5e9 rows wraps (measured: at most 705,030,180).
# oltp_common.lua's `id INTEGER` stops at 2,147,483,647; benchapp creates the tables of bigger datasets itself
# with BIGINT columns (campaigns.sysbench.ddl.wide_table_ddl), so the draw is the limit.
MAX_TABLE_ROWS = 4_294_967_295
MAX_TABLE_ROWS_REASON = "sysbench 1.0.20 draws row ids as 32-bit unsigned numbers, so a bigger table's ids wrap"

# MySQL caps max_connections at 100,000; sysbench opens one connection per thread, so more threads than this
# can never all connect.
MAX_THREADS = 100_000

OPTION_TYPES = ("int", "float", "bool", "str", "choice", "list")
OPTION_SCOPES = ("common", "test", "connection")


class OptionError(ValueError):
    """A scenario option that benchapp will not pass to sysbench; `option` is the name as the user wrote it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


@dataclass(frozen=True)
class OptionSpec:
    """One sysbench option: its canonical (hyphenated) name, type, default and accepted range or choices."""

    name: str
    type: str
    default: object
    min: float | None
    max: float | None
    choices: tuple[str, ...] | None
    help: str
    scope: str


@dataclass(frozen=True)
class TestSpec:
    """One benchmark benchapp can run: a Lua test bundled with sysbench, or one of our legacy 0.5-style scripts."""

    __test__ = False  # not a pytest test class, whatever its name says

    name: str
    script: str
    options: dict[str, OptionSpec]
    legacy: bool
    description: str
    prepares_tables: bool
    # A workload of one's own (campaigns.sysbench.workloads): `script` is its entry script's path, and `commands`
    # the sysbench commands (prepare, cleanup) it defines.
    workload: bool = False
    commands: tuple[str, ...] = ("prepare", "cleanup")
    # A workload's option that takes the dataset's size per table set in place of --table-size (Workload.size_option:
    # sysbench-tpcc's scale, in warehouses), and what that size counts ("rows" when not declared).
    size_option: str = ""
    size_unit: str = "rows"
    # One of sysbench's built-in host tests (cpu, memory, fileio, threads, mutex: campaigns.sysbench.hosttests):
    # it measures the client host it runs on, needs no database and has no tables.
    host: bool = False


# --- building blocks ------------------------------------------------------------------------------------------


def _int(name: str, default: int | None, help: str, *, min: float | None = 0, max: float | None = INT32_MAX,
         scope: str = "common") -> OptionSpec:
    return OptionSpec(name, "int", default, min, max, None, help, scope)


def _float(name: str, default: float, help: str, *, min: float | None, max: float | None,
           scope: str = "common") -> OptionSpec:
    return OptionSpec(name, "float", default, min, max, None, help, scope)


def _bool(name: str, default: bool, help: str, *, scope: str = "common") -> OptionSpec:
    return OptionSpec(name, "bool", default, None, None, None, help, scope)


def _str(name: str, default: str | None, help: str, *, scope: str = "common") -> OptionSpec:
    return OptionSpec(name, "str", default, None, None, None, help, scope)


def _choice(name: str, default: str | None, choices: tuple[str, ...], help: str, *,
            scope: str = "common") -> OptionSpec:
    return OptionSpec(name, "choice", default, None, None, choices, help, scope)


def _list(name: str, default: str, help: str, *, scope: str = "common") -> OptionSpec:
    return OptionSpec(name, "list", default, None, None, None, help, scope)


def _by_name(*specs: OptionSpec) -> dict[str, OptionSpec]:
    return {spec.name: spec for spec in specs}


# --- options every test accepts (`sysbench --help`) -------------------------------------------------------------

_COMMON = (
    _int("threads", 1, "number of threads (one database connection each)", min=1, max=MAX_THREADS),
    _int("events", 0, "limit on the total number of events (transactions); 0 means no limit"),
    _int("time", 10, "limit on the total execution time in seconds; 0 means no limit"),
    _str("forced-shutdown", "off",
         "seconds to wait after the --time limit before forcing shutdown, as N or N% of --time, or 'off'; "
         "a forced shutdown exits with rc 2"),
    _str("thread-stack-size", "64K", "size of the stack of each thread, e.g. 64K, 1M"),
    _int("rate", 0, "average transaction rate to aim for; 0 means as fast as possible"),
    _int("report-interval", 0, "seconds between intermediate reports; 0 disables them"),
    _list("report-checkpoints", "",
          "comma-separated seconds from the start at which to dump full statistics and reset the counters"),
    _bool("debug", False, "print more debugging information"),
    _bool("validate", False, "perform validation checks where possible"),
    # Below 3 sysbench no longer prints the report benchapp reads, so those levels are not offered.
    _int("verbosity", 3, "verbosity level, 3 (normal) to 5 (debug)", min=3, max=5),
    _int("percentile", 95, "latency percentile to report (1-100); 0 disables percentile calculation", max=100),
    _bool("histogram", False, "print a latency histogram in the report"),
    _choice("rand-type", "special", ("uniform", "gaussian", "special", "pareto"),
            "distribution of the random row ids"),
    _int("rand-spec-iter", 12, "iterations used to generate numbers of the special distribution", min=1),
    _int("rand-spec-pct", 1, "percentage of values treated as 'special' (special distribution)", max=100),
    _int("rand-spec-res", 75, "percentage of 'special' values to use (special distribution)", max=100),
    _int("rand-seed", 0, "seed of the random number generator; 0 seeds it from the current time"),
    _float("rand-pareto-h", 0.2, "parameter h of the pareto distribution, strictly between 0 and 1",
           min=0.0, max=1.0),
    _choice("db-ps-mode", "auto", ("auto", "disable"), "prepared statements usage mode"),
    _bool("db-debug", False, "print database-specific debug information"),
    _bool("mysql-compression", False, "use compression, if the client library supports it"),
    _bool("mysql-debug", False, "trace all client library calls"),
    _list("mysql-ignore-errors", "1213,1020,1205",
          "comma-separated MySQL error numbers to ignore, or 'all', or 'none'; with 'all', sysbench 1.0.20 "
          "crashes when it has to reconnect (upstream issue #527)"),
)

# Where the database is and who logs in belong to the target, which benchapp stores apart from scenarios (and
# whose password it never shows). A dry run replaces the target with nothing, so it belongs there too.
_CONNECTION = (
    _choice("db-driver", "mysql", ("mysql", "pgsql"), "database driver", scope="connection"),
    _list("mysql-host", "localhost", "MySQL server host(s)", scope="connection"),
    _list("mysql-port", "3306", "MySQL server port(s)", scope="connection"),
    _list("mysql-socket", "", "MySQL socket(s)", scope="connection"),
    _str("mysql-user", "sbtest", "MySQL user", scope="connection"),
    _str("mysql-password", "", "MySQL password", scope="connection"),
    _str("mysql-db", "sbtest", "MySQL database name", scope="connection"),
    _bool("mysql-dry-run", False, "pretend that every MySQL client call succeeds", scope="connection"),
    # How the client secures its connection is the target's matter too (a scenario must not turn TLS off for it).
    _bool("mysql-ssl", False, "use SSL connections, if the client library supports them", scope="connection"),
    _str("mysql-ssl-cipher", "", "a specific cipher for SSL connections", scope="connection"),
    _str("pgsql-host", "localhost", "PostgreSQL server host", scope="connection"),
    _int("pgsql-port", 5432, "PostgreSQL server port", min=1, max=65535, scope="connection"),
    _str("pgsql-user", "sbtest", "PostgreSQL user", scope="connection"),
    _str("pgsql-password", "", "PostgreSQL password", scope="connection"),
    _str("pgsql-db", "sbtest", "PostgreSQL database name", scope="connection"),
)

COMMON_OPTIONS: dict[str, OptionSpec] = _by_name(*_COMMON, *_CONNECTION)
CONNECTION_OPTIONS: dict[str, OptionSpec] = {k: v for k, v in COMMON_OPTIONS.items() if v.scope == "connection"}

# Options `sysbench --help` lists that a scenario may not set, and why; validate_options says so by name.
REFUSED_OPTIONS: dict[str, str] = {
    "help": "prints help instead of running the benchmark",
    "version": "prints the version instead of running the benchmark",
    "config-file": "reads further options from a file, which would bypass these checks",
    "tx-rate": "deprecated alias; use rate",
    "max-requests": "deprecated alias; use events",
    "max-time": "deprecated alias; use time",
    "num-threads": "deprecated alias; use threads",
    "test": "the test is chosen by the scenario, not passed as an option",
}

# --- the 1.0 OLTP tests (oltp_common.lua's option table, extended by some tests) ---------------------------------

_OLTP_COMMON = (
    _int("tables", 1, "number of tables", min=1, scope="test"),
    _int("table-size", 10000, "number of rows per table", min=1, max=MAX_TABLE_ROWS, scope="test"),
    _int("range-size", 100, "range size of the range SELECT queries", min=1, scope="test"),
    _int("point-selects", 10, "number of point SELECT queries per transaction", scope="test"),
    _int("simple-ranges", 1, "number of simple range SELECT queries per transaction", scope="test"),
    _int("sum-ranges", 1, "number of SELECT SUM() queries per transaction", scope="test"),
    _int("order-ranges", 1, "number of SELECT ORDER BY queries per transaction", scope="test"),
    _int("distinct-ranges", 1, "number of SELECT DISTINCT queries per transaction", scope="test"),
    _int("index-updates", 1, "number of UPDATE index queries per transaction", scope="test"),
    _int("non-index-updates", 1, "number of UPDATE non-index queries per transaction", scope="test"),
    _int("delete-inserts", 1, "number of DELETE/INSERT pairs per transaction", scope="test"),
    _bool("range-selects", True, "enable all range SELECT queries", scope="test"),
    _bool("auto-inc", True, "use an AUTO_INCREMENT primary key (or its PostgreSQL equivalent), "
          "otherwise client-generated ids", scope="test"),
    _bool("skip-trx", False, "run every query in autocommit mode instead of explicit transactions", scope="test"),
    _bool("secondary", False, "use a secondary index in place of the PRIMARY KEY", scope="test"),
    _bool("create-secondary", True, "create a secondary index in addition to the PRIMARY KEY", scope="test"),
    # Interpolated into CREATE TABLE ... ENGINE = <value>, hence restricted to an identifier (see _SPECIAL).
    _str("mysql-storage-engine", "innodb", "storage engine of the tables, if MySQL is used", scope="test"),
    _choice("pgsql-variant", None, ("redshift",), "PostgreSQL variant; 'redshift' disables create-secondary "
            "and sets delete-inserts to 0", scope="test"),
)

_BUILTIN_DESCRIPTIONS = {
    "oltp_read_write": "transactions of point and range SELECTs, index and non-index UPDATEs, DELETE+INSERT",
    "oltp_read_only": "transactions of point and range SELECTs",
    "oltp_write_only": "transactions of index and non-index UPDATEs and DELETE+INSERT pairs",
    "oltp_point_select": "one primary-key SELECT per event, no transaction",
    "oltp_update_index": "one UPDATE of the indexed column k per event",
    "oltp_update_non_index": "one UPDATE of the non-indexed column c per event",
    "oltp_insert": "one INSERT per event",
    "oltp_delete": "one DELETE per event",
    "select_random_points": "SELECTs with an IN() list of random k values (a single table)",
    "select_random_ranges": "SELECTs over several random BETWEEN ranges of k (a single table)",
    "bulk_insert": "multi-row INSERTs, each thread into its own table",
}

_EXTRA_OPTIONS: dict[str, tuple[OptionSpec, ...]] = {
    "select_random_points": (
        _int("random-points", 10, "number of random points in the IN() clause", min=1, scope="test"),
    ),
    "select_random_ranges": (
        _int("number-of-ranges", 10, "number of random BETWEEN ranges per SELECT", min=1, scope="test"),
        _int("delta", 5, "size of the BETWEEN ranges", min=1, scope="test"),
    ),
}

# --- the legacy family: sysbench 0.5's tests/db scripts, reimplemented in campaigns/sysbench/lua/oltp_legacy ------
# The 0.5 scripts read their options as Lua globals, so these names are the 0.5 spellings (hyphenated on the
# command line). `oltp-test-mode` is sysbench 0.4's C test and is not read by any 0.5 script, so it is absent.

_LEGACY_DATA = (
    _int("oltp-tables-count", 1, "number of tables", min=1, scope="test"),
    _int("oltp-table-size", 10000, "number of rows per table", min=1, max=MAX_TABLE_ROWS, scope="test"),
    _bool("oltp-auto-inc", True, "use an AUTO_INCREMENT id column", scope="test"),
    _bool("oltp-secondary", False, "use a secondary key (KEY xid) instead of the PRIMARY KEY on id",
          scope="test"),
    _bool("oltp-create-secondary", True, "create the secondary index on k", scope="test"),
    _str("mysql-table-engine", "innodb", "storage engine of the tables, if MySQL is used", scope="test"),
    # Not a 0.5 option: our scripts' stand-in for seed 002's edit of common.lua, which loads rows into a table
    # created beforehand (with a sharding clause sysbench cannot write).
    _bool("skip-create-table", False, "prepare loads rows into tables created beforehand instead of creating them",
          scope="test"),
)

_LEGACY_OLTP = _LEGACY_DATA + (
    _int("oltp-range-size", 100, "range size of the range SELECT queries", min=1, scope="test"),
    _int("oltp-point-selects", 10, "number of point SELECT queries per transaction", scope="test"),
    _int("oltp-simple-ranges", 1, "number of simple range SELECT queries per transaction", scope="test"),
    _int("oltp-sum-ranges", 1, "number of SELECT SUM() queries per transaction", scope="test"),
    _int("oltp-order-ranges", 1, "number of SELECT ORDER BY queries per transaction", scope="test"),
    _int("oltp-distinct-ranges", 1, "number of SELECT DISTINCT queries per transaction", scope="test"),
    _int("oltp-index-updates", 1, "number of UPDATE index queries per transaction", scope="test"),
    _int("oltp-non-index-updates", 1, "number of UPDATE non-index queries per transaction", scope="test"),
    _int("oltp-delete-inserts", 1, "number of DELETE/INSERT pairs per transaction", scope="test"),
    _bool("oltp-range-selects", True, "enable all range SELECT queries", scope="test"),
    _bool("oltp-read-only", False, "run only the SELECTs (exclusive with oltp-write-only)", scope="test"),
    _bool("oltp-write-only", False, "run only the writes (exclusive with oltp-read-only)", scope="test"),
    _bool("oltp-skip-trx", False, "run every query in autocommit mode instead of BEGIN/COMMIT", scope="test"),
)

_LEGACY_TESTS = (
    ("oltp_legacy/oltp.lua", _LEGACY_OLTP,
     "sysbench 0.5 oltp.lua: a transaction of point and range SELECTs, UPDATEs and DELETE+INSERT, "
     "each count set by an oltp-* option"),
    ("oltp_legacy/select.lua", _LEGACY_DATA, "sysbench 0.5 select.lua: one primary-key SELECT per event"),
    ("oltp_legacy/update_non_index.lua", _LEGACY_DATA,
     "sysbench 0.5 update_non_index.lua: one UPDATE of the non-indexed column c per event"),
)


def _build_tests() -> dict[str, TestSpec]:
    tests: dict[str, TestSpec] = {}
    for name, description in _BUILTIN_DESCRIPTIONS.items():
        # bulk_insert.lua declares no options at all (its `help` command is not even implemented): it makes
        # one empty table per thread and fills it during the run, so there is no dataset to prepare once.
        options = {} if name == "bulk_insert" else _by_name(*_OLTP_COMMON, *_EXTRA_OPTIONS.get(name, ()))
        tests[name] = TestSpec(name=name, script=name, options=options, legacy=False, description=description,
                               prepares_tables=name != "bulk_insert")
    for name, specs, description in _LEGACY_TESTS:
        tests[name] = TestSpec(name=name, script=name, options=_by_name(*specs), legacy=True,
                               description=description, prepares_tables=True)
    for name, rows in HOST_OPTION_ROWS.items():
        # A size ("1K", "2G") is text checked by its pattern (_SPECIAL); fileio's open flags a list of choices.
        host_specs = [OptionSpec(option, {"size": "str", "flags": "list"}.get(kind, kind), default, low, high, choices,
                                 help, "test") for option, kind, default, low, high, choices, help in rows]
        tests[name] = TestSpec(name=name, script=name, options=_by_name(*host_specs), legacy=False,
                               description=HOST_DESCRIPTIONS[name], prepares_tables=False, host=True)
    return tests


TESTS: dict[str, TestSpec] = _build_tests()

# A legacy option and its 1.0 counterpart, for reading commands written for the other family.
LEGACY_TO_BUILTIN: dict[str, str] = {
    "oltp-tables-count": "tables",
    "oltp-table-size": "table-size",
    "oltp-range-size": "range-size",
    "oltp-point-selects": "point-selects",
    "oltp-simple-ranges": "simple-ranges",
    "oltp-sum-ranges": "sum-ranges",
    "oltp-order-ranges": "order-ranges",
    "oltp-distinct-ranges": "distinct-ranges",
    "oltp-index-updates": "index-updates",
    "oltp-non-index-updates": "non-index-updates",
    "oltp-delete-inserts": "delete-inserts",
    "oltp-range-selects": "range-selects",
    "oltp-auto-inc": "auto-inc",
    "oltp-skip-trx": "skip-trx",
    "oltp-secondary": "secondary",
    "oltp-create-secondary": "create-secondary",
    "mysql-table-engine": "mysql-storage-engine",
}
BUILTIN_TO_LEGACY: dict[str, str] = {v: k for k, v in LEGACY_TO_BUILTIN.items()}


def dataset_option_names(test: str | TestSpec) -> tuple[str | None, str | None]:
    """The options that set the number of tables and rows per table for `test` (None where it has none)."""
    spec = _test_spec(test, "test")
    if spec.legacy:
        return "oltp-tables-count", "oltp-table-size"
    if "tables" in spec.options:
        return "tables", "table-size"
    return None, None


# Common options that only shape a database driver: a host test (no database) takes none of them.
DATABASE_ONLY_OPTIONS = frozenset({"db-ps-mode", "db-debug", "mysql-compression", "mysql-debug", "mysql-ignore-errors"})


def scenario_options(test: str | TestSpec) -> dict[str, OptionSpec]:
    """Every option a scenario of `test` may set: the test's own, then the common ones (no connection options)."""
    spec = _test_spec(test, "test")
    common = {k: v for k, v in COMMON_OPTIONS.items() if v.scope == "common"
              and not (spec.host and k in DATABASE_ONLY_OPTIONS)}
    return {**spec.options, **common}


# --- names and values -----------------------------------------------------------------------------------------


def canonical_option_name(name: str) -> str:
    """`--Point_Selects` -> `point-selects`: sysbench treats `_` and `-` alike in option names."""
    return name.strip().lstrip("-").replace("_", "-").lower()


# Characters that could end the value and start something else if the line were ever pasted into a shell, or
# that no benchmark setting needs. Checked before any type conversion so the message names the culprit.
_FORBIDDEN = {
    "\x00": "a NUL byte",
    "\n": "a line break",
    "\r": "a line break",
    "'": "a quote",
    '"': "a quote",
    ";": "';'",
    "`": "'`'",
    "$": "'$'",
    "|": "'|'",
    "&": "'&'",
    "<": "'<'",
    ">": "'>'",
    "\\": "a backslash",
}


def unsafe_reason(text: str) -> str | None:
    """Why `text` may not be an argv value (whitespace, shell metacharacters, a leading '-'), or None if safe."""
    for char in text:
        if char in _FORBIDDEN:
            return f"contains {_FORBIDDEN[char]}"
        if char.isspace():
            return "contains whitespace"
        if ord(char) < 32 or ord(char) == 127:
            return "contains a control character"
    if text.startswith("-"):
        return "starts with '-', which would read as another option"
    return None


_BOOL_WORDS = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}


def _as_text(option: str, value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    reason = unsafe_reason(text)
    if reason:
        raise OptionError(option, f"value {text[:40]!r} {reason}")
    if not text:
        raise OptionError(option, "empty value")
    return text


def _coerce_int(option: str, spec: OptionSpec, value: object) -> int:
    if isinstance(value, bool):
        raise OptionError(option, "expected a whole number, got a yes/no value")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise OptionError(option, f"expected a whole number, got {value!r}")
        number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        if isinstance(value, str) and re.fullmatch(r"-[0-9]{1,20}", value):
            _check_range(option, spec, int(value))
        text = _as_text(option, value)
        # sysbench's own parser refuses 1.5, 0x10 and 10k for these; only plain decimal digits are safe.
        if not re.fullmatch(r"\+?[0-9]{1,20}", text):
            raise OptionError(option, f"expected a whole number, got {text[:40]!r}")
        number = int(text)
    _check_range(option, spec, number)
    return number


def _coerce_float(option: str, spec: OptionSpec, value: object) -> float:
    if isinstance(value, bool):
        raise OptionError(option, "expected a number, got a yes/no value")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = _as_text(option, value)
        if not re.fullmatch(r"\+?(?:[0-9]+\.?[0-9]*|\.[0-9]+)", text):
            raise OptionError(option, f"expected a number, got {text[:40]!r}")
        number = float(text)
    if not math.isfinite(number):
        raise OptionError(option, "expected a finite number")
    _check_range(option, spec, number)
    return number


def _check_range(option: str, spec: OptionSpec, number: float) -> None:
    if spec.min is not None and number < spec.min:
        raise OptionError(option, f"{number:g} is below the minimum {spec.min:g}")
    if spec.max is not None and number > spec.max:
        raise OptionError(option, f"{number:g} is above the maximum {spec.max:g}")


def _coerce_bool(option: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = _as_text(option, value) if isinstance(value, str) else str(value)
    # sysbench 1.0.20 reads anything but on/true/1 as off without a word (`--histogram=yes` is off), so only
    # the spellings it really understands are accepted.
    word = _BOOL_WORDS.get(text.lower())
    if word is None:
        raise OptionError(option, f"expected on/off, true/false or 1/0, got {text[:40]!r}")
    return word


def _coerce_choice(option: str, spec: OptionSpec, value: object) -> str:
    text = _as_text(option, value).lower()
    assert spec.choices is not None
    if text not in spec.choices:
        raise OptionError(option, f"{text[:40]!r} is not one of {', '.join(spec.choices)}")
    return text


def _list_items(option: str, value: object) -> list[str]:
    if isinstance(value, (list, tuple)):
        items = [_as_text(option, item) for item in value]
    else:
        items = _as_text(option, value).split(",")
    items = [item for item in items if item != ""]
    if not items:
        raise OptionError(option, "empty list")
    return items


def _int_items(option: str, items: list[str], low: int, high: int, what: str) -> list[int]:
    numbers = []
    for item in items:
        if not re.fullmatch(r"[0-9]{1,10}", item):
            raise OptionError(option, f"{item[:40]!r} is not {what}")
        number = int(item)
        if not low <= number <= high:
            raise OptionError(option, f"{number} is not {what} ({low}-{high})")
        numbers.append(number)
    return numbers


def _ignore_errors(option: str, value: object) -> str:
    items = [item.lower() for item in _list_items(option, value)]
    if items in (["all"], ["none"]):
        return items[0]
    if "all" in items or "none" in items:
        raise OptionError(option, "'all' and 'none' stand alone, without error numbers")
    return ",".join(str(n) for n in _int_items(option, items, 1, 99_999, "a MySQL error number"))


def _checkpoints(option: str, value: object) -> str:
    # sysbench wants the points in time in order; sorting and de-duplicating keeps one canonical spelling.
    numbers = _int_items(option, _list_items(option, value), 1, INT32_MAX, "a number of seconds")
    return ",".join(str(n) for n in sorted(set(numbers)))


def _pattern(regex: str, what: str) -> Callable[[str, object], str]:
    def check(option: str, value: object) -> str:
        text = _as_text(option, value)
        if not re.fullmatch(regex, text):
            raise OptionError(option, f"{text[:40]!r} is not {what}")
        return text

    return check


# A thread's stack, as sysbench allocates it for each of its threads (100G was accepted).
THREAD_STACK_MAX = 64 << 20
_STACK_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _thread_stack_size(option: str, value: object) -> str:
    text = _pattern(r"[0-9]{1,12}[KkMmGgTt]?", "a size such as 64K or 1M")(option, value)
    digits = text.rstrip("KkMmGgTt")
    if int(digits) * _STACK_UNITS[text[len(digits):].lower()] > THREAD_STACK_MAX:
        raise OptionError(option, f"{text} per thread is above the cap of {THREAD_STACK_MAX >> 20}M")
    return text


def _forced_shutdown(option: str, value: object) -> str:
    if isinstance(value, bool):
        raise OptionError(option, "expected 'off', a number of seconds or a percentage of --time")
    text = _as_text(option, value).lower()
    if text == "off":
        return text
    if not re.fullmatch(r"[0-9]{1,10}%?", text) or int(text.rstrip("%")) > INT32_MAX:
        raise OptionError(option, f"{text[:40]!r} is not 'off', a number of seconds or a percentage of --time")
    return text


def _pareto_h(option: str, value: object) -> float:
    number = _coerce_float(option, COMMON_OPTIONS["rand-pareto-h"], value)
    # sysbench computes log(h) / log(1 - h): both ends of [0, 1] make that infinite.
    if not 0.0 < number < 1.0:
        raise OptionError(option, f"{number:g} must be strictly between 0 and 1")
    return number


def _open_flags(option: str, value: object) -> str:
    items = [item.lower() for item in _list_items(option, value)]
    for item in items:
        if item not in ("sync", "dsync", "direct"):
            raise OptionError(option, f"{item[:40]!r} is not one of sync, dsync, direct")
    return ",".join(dict.fromkeys(items))


_SIZE_VALUE = _pattern(r"[0-9]{1,12}[KkMmGgTt]?", "a size such as 1K, 512M or 2G")
_IDENTIFIER = _pattern(r"[A-Za-z][A-Za-z0-9_]{0,63}", "a storage engine name (letters, digits, '_')")

# Options whose accepted values a type alone does not describe.
_SPECIAL: dict[str, Callable[[str, object], object]] = {
    "forced-shutdown": _forced_shutdown,
    "thread-stack-size": _thread_stack_size,
    "report-checkpoints": _checkpoints,
    "mysql-ignore-errors": _ignore_errors,
    "mysql-ssl-cipher": _pattern(r"[A-Za-z0-9_:+!@.=-]{1,512}", "an OpenSSL cipher list"),
    "mysql-storage-engine": _IDENTIFIER,
    "mysql-table-engine": _IDENTIFIER,
    "rand-pareto-h": _pareto_h,
    "memory-block-size": _SIZE_VALUE,
    "memory-total-size": _SIZE_VALUE,
    "file-total-size": _SIZE_VALUE,
    "file-extra-flags": _open_flags,
}


def _coerce(option: str, spec: OptionSpec, value: object) -> object:
    if value is None:
        raise OptionError(option, "no value given")
    scalar = isinstance(value, (str, bool, int, float))
    sequence_for_list = spec.type == "list" and isinstance(value, (list, tuple))
    if not scalar and not sequence_for_list:
        raise OptionError(option, f"unsupported value type {type(value).__name__}")
    special = _SPECIAL.get(spec.name)
    if special is not None:
        return special(option, value)
    if spec.type == "int":
        return _coerce_int(option, spec, value)
    if spec.type == "float":
        return _coerce_float(option, spec, value)
    if spec.type == "bool":
        return _coerce_bool(option, value)
    if spec.type == "choice":
        return _coerce_choice(option, spec, value)
    if spec.type == "list":
        return ",".join(_list_items(option, value))
    return _as_text(option, value)


def _test_spec(test: object, option: str) -> TestSpec:
    if isinstance(test, TestSpec):  # a workload's spec, built from what sysbench said of it
        return test
    spec = TESTS.get(test) if isinstance(test, str) else None
    if spec is None:
        raise OptionError(option, f"unknown test {str(test)[:60]!r}; known tests: {', '.join(TESTS)}")
    return spec


def option_spec(test: str | TestSpec, name: str) -> OptionSpec:
    """The spec of option `name` (any spelling) for `test`; OptionError if the scenario may not set it."""
    spec = _test_spec(test, "test")
    canonical = canonical_option_name(name) if isinstance(name, str) else ""
    if not canonical:
        raise OptionError(str(name), "empty option name")
    if canonical in REFUSED_OPTIONS:
        raise OptionError(name, f"not allowed in a scenario: {REFUSED_OPTIONS[canonical]}")
    found = spec.options.get(canonical) or COMMON_OPTIONS.get(canonical)
    if found is None:
        hint = ""
        if canonical in LEGACY_TO_BUILTIN and not spec.legacy and LEGACY_TO_BUILTIN[canonical] in spec.options:
            hint = f" (sysbench 0.5 name; use {LEGACY_TO_BUILTIN[canonical]})"
        elif canonical in BUILTIN_TO_LEGACY and spec.legacy:
            hint = f" (sysbench 1.0 name; use {BUILTIN_TO_LEGACY[canonical]})"
        raise OptionError(name, f"not an option of {spec.name}{hint}")
    if found.scope == "connection":
        raise OptionError(name, "a connection option: it belongs to the target, not to the scenario")
    if spec.host and canonical in DATABASE_ONLY_OPTIONS:
        raise OptionError(name, f"a database driver's option: {spec.name} is a host test and uses no database")
    return found


def validate_options(test: str | TestSpec, options: Mapping[str, object]) -> dict[str, object]:
    """Check a scenario's options for `test`; return them under canonical names as typed Python values.

    Raises OptionError naming the first offending option: an unknown test (option "test"), an option the test
    does not have, a connection option, a wrong type, a value out of range or not among the choices, and any
    value that could smuggle in another argument.
    """
    _test_spec(test, "test")
    if not isinstance(options, Mapping):
        raise OptionError("options", "expected a mapping of option names to values")
    result: dict[str, object] = {}
    written: dict[str, str] = {}
    for name, value in options.items():
        if not isinstance(name, str):
            raise OptionError(str(name), "option names are text")
        spec = option_spec(test, name)
        if spec.name in result:
            raise OptionError(name, f"given twice (also as {written[spec.name]!r})")
        result[spec.name] = _coerce(name, spec, value)
        written[spec.name] = name
    _check_combinations(result, written)
    return result


# The options a dataset sets on every run (its tables and rows per table), in both spellings.
DATASET_OPTIONS = {"tables": "tables", "oltp-tables-count": "tables",
                   "table-size": "table_size", "oltp-table-size": "table_size"}


def dataset_option_conflict(options: Mapping[str, object], *, dataset_name: str, tables: int,
                            table_size: int, size_option: str = "", size_unit: str = "rows") -> OptionError | None:
    """An option that contradicts the scenario's dataset ({"tables": 2} on a dataset of 1 table), naming both; None
    when none does. The dataset decides: a job runs with its --tables and --table-size whatever the options say, so
    a contradicting option is refused rather than silently overridden. The same value is harmless."""
    shape = {"tables": tables, "table_size": table_size}
    given = dict(DATASET_OPTIONS)
    if size_option:
        given[size_option] = "table_size"
    for name, value in options.items():
        field = given.get(name)
        if field is None or value == shape[field] or str(value) == str(shape[field]):
            continue
        noun = "table" if tables == 1 else "tables"
        flag = size_option if field == "table_size" and size_option else field.replace("_", "-")
        return OptionError(name, f"{name}={value} contradicts the dataset '{dataset_name}' ({tables:,} {noun} × "
                                 f"{table_size:,} {size_unit}), which sets --{flag} of every run: "
                                 "choose or make a dataset of that shape instead, or leave the option out")
    return None


def _check_combinations(result: dict[str, object], written: dict[str, str]) -> None:
    # Combinations sysbench (or the legacy common.lua) refuses only after it has started.
    if result.get("percentile") == 0 and result.get("histogram") is True:
        raise OptionError(written["percentile"], "0 (disabled) cannot be combined with histogram=on")
    if result.get("oltp-read-only") is True and result.get("oltp-write-only") is True:
        raise OptionError(written["oltp-write-only"], "oltp-read-only and oltp-write-only exclude each other")


def format_value(value: object) -> str:
    """How sysbench wants a value written: on/off for booleans, plain numbers, lists comma-separated."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(int(value))
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(item) for item in value)
    return str(value)


def options_to_argv(options: Mapping[str, object]) -> list[str]:
    """`{"point_selects": 4}` -> `["--point-selects=4"]`: one argv item per option, sorted by canonical name."""
    items: list[tuple[str, str]] = []
    for name, value in options.items():
        canonical = canonical_option_name(name)
        text = format_value(value)
        # These items go to execve as they are, but a stray newline or NUL would still corrupt the call and a
        # logged command line; validate_options has normally refused them already.
        reason = unsafe_reason(text) if text else None
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", canonical):
            raise OptionError(name, "not an option name")
        if reason:
            raise OptionError(name, f"value {text[:40]!r} {reason}")
        items.append((canonical, text))
    return [f"--{name}={text}" for name, text in sorted(items, key=lambda item: item[0])]


def test_script_argument(test: str | TestSpec, lua_dir: str) -> str:
    """What to give sysbench as the test: the name of a bundled test, or the absolute path of our legacy Lua
    (or of a workload's entry script, on the client host that runs it)."""
    spec = _test_spec(test, "test")
    if spec.workload:
        return spec.script
    if not spec.legacy:
        return spec.name
    return os.path.join(os.path.abspath(lua_dir), spec.script)


test_script_argument.__test__ = False  # type: ignore[attr-defined]  # its name is not a pytest test
