"""Building sysbench's argument list.

Values always travel as separate argv items (never through a shell, never joined and split);
validate_options in the catalogue has already refused anything that could read as another
argument. The password is part of the argv built here (so that the command a user sees says
--mysql-password=***, through redact_argv), but never of a process's argv: the runner moves it into
the process's environment (secrets_to_env), where other local users cannot read it (`ps` shows every
argv; /proc/PID/environ is readable by its owner only).
"""
from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaigns.sysbench.catalogue import (
    CONNECTION_OPTIONS,
    REFUSED_OPTIONS,
    TESTS,
    OptionError,
    TestSpec,
    canonical_option_name,
    options_to_argv,
    test_script_argument,
    unsafe_reason,
)

LUA_DIR = Path(__file__).resolve().parent / "lua"
REDACTED = "***"
# Each password option and the variable its client library reads instead (libmariadb: MYSQL_PWD, libpq:
# PGPASSWORD); sysbench passes an empty password when the option is absent, and both libraries then use it.
_SECRET_ENV = {"--mysql-password=": "MYSQL_PWD", "--pgsql-password=": "PGPASSWORD"}
_SECRET_OPTIONS = tuple(_SECRET_ENV)


@dataclass(frozen=True, slots=True)
class Connection:
    """Where sysbench connects: a target's endpoint, password in clear (never stored)."""

    driver: str
    host: str
    port: int
    database: str
    user: str
    password: str = ""

    def argv(self) -> list[str]:
        prefix = "mysql" if self.driver == "mysql" else "pgsql"
        args = [
            f"--db-driver={self.driver}",
            f"--{prefix}-host={self.host}",
            f"--{prefix}-port={self.port}",
            f"--{prefix}-user={self.user}",
            f"--{prefix}-db={self.database}",
        ]
        if self.password:
            args.append(f"--{prefix}-password={self.password}")
        return args


# One label of a host name (RFC 1123, plus '_', which container names use): no dash at either end.
_HOST_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def host_problem(host: str) -> str | None:
    """Why `host` cannot be a server's address (--mysql-host=…), or None: an IPv4 or IPv6 address, or a host
    name of letters, digits, '-', '_' and dots."""
    reason = unsafe_reason(host)
    if reason:
        return reason
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    name = host.removesuffix(".")
    if len(name) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in name.split(".")):
        return "is not a host name or IP address (letters, digits, '-', '_' and dots; no port, path or scheme)"
    return None


def connection_problems(*, host: str, user: str, database: str) -> dict[str, str]:
    """Per field, why a target's host, user or database cannot travel as one sysbench option value: the same
    rule as a scenario's options (no whitespace, control character, shell metacharacter or leading '-'),
    and a host must be a host name or IP address. Empty values are left to the fields' own checks."""
    problems = {}
    for field, value, check in (("host", host, host_problem), ("user", user, unsafe_reason),
                                ("database", database, unsafe_reason)):
        reason = check(value) if value else None
        if reason:
            problems[field] = f"{field} {reason}"
    return problems


def dataset_options(test: str | TestSpec, *, tables: int, table_size: int) -> dict[str, int]:
    """The dataset as the test spells it: 1.0 scripts say --tables, 0.5 ones --oltp-tables-count; a workload of
    one's own gets those of the two it declares (sysbench refuses an option a script does not declare)."""
    spec = test if isinstance(test, TestSpec) else TESTS[test]
    if spec.workload:
        given = {"tables": tables, "table-size": table_size}
        if spec.size_option:  # the workload's own option takes the size (sysbench-tpcc: --scale, in warehouses)
            if spec.size_option not in spec.options:  # a version older (or newer) than the declaration
                raise OptionError(spec.size_option, f"the workload's size option --{spec.size_option} is not an "
                                                    f"option of {spec.name}: the dataset's size could not be given; "
                                                    "change the workload's size option or the scenario's version")
            given = {"tables": tables, spec.size_option: table_size}
        return {name: value for name, value in given.items() if name in spec.options}
    if spec.legacy:
        return {"oltp-tables-count": tables, "oltp-table-size": table_size}
    return {"tables": tables, "table-size": table_size}


def build_argv(
    *,
    sysbench: str,
    test: str | TestSpec,
    command: str,
    connection: Connection,
    tables: int,
    table_size: int,
    options: Mapping[str, object],
    threads: int = 1,
    time_s: int | None = None,
    report_interval_s: int | None = None,
    percentile: float | None = None,
    histogram: bool = False,
    forced_shutdown_s: int | None = None,
) -> list[str]:
    """The full argv for one sysbench phase (prepare, run or cleanup, or a workload's own command it defines, such
    as sysbench-tpcc's check)."""
    own = isinstance(test, TestSpec) and test.workload and command in test.commands and command != "help"
    if command not in ("prepare", "run", "cleanup") and not own:
        raise ValueError(f"unknown sysbench command {command!r}")
    options_refuse_connection(options)
    merged: dict[str, object] = dict(options)
    merged.update(dataset_options(test, tables=tables, table_size=table_size))
    merged["threads"] = threads
    phase_options_apply(merged, command, time_s=time_s, report_interval_s=report_interval_s,
                        percentile=percentile, histogram=histogram, forced_shutdown_s=forced_shutdown_s)
    argv = [
        sysbench,
        test_script_argument(test, str(LUA_DIR)),
        *connection.argv(),
        *options_to_argv(merged),
        command,
    ]
    argv_check_connection(argv, connection)
    return argv


# Options that only shape the measured phase: they would clutter prepare/cleanup output.
RUN_ONLY_OPTIONS = ("report-interval", "histogram", "percentile", "time", "events", "rate", "report-checkpoints",
                    "forced-shutdown")


def phase_options_apply(merged: dict[str, object], command: str, *, time_s: int | None,
                        report_interval_s: int | None, percentile: float | None, histogram: bool,
                        forced_shutdown_s: int | None) -> None:
    """Adds the measured phase's options to `merged` for `run`, and takes every run-only option out of it for
    prepare and cleanup (a database test's and a host test's commands alike)."""
    if command != "run":
        for key in RUN_ONLY_OPTIONS:
            merged.pop(key, None)
        return
    if time_s is not None:
        merged["time"] = time_s
    if report_interval_s:
        merged["report-interval"] = report_interval_s
    if percentile is not None:
        # sysbench takes whole percentiles only (Scenario.clean refuses fractions).
        merged["percentile"] = int(percentile)
    if histogram:
        merged["histogram"] = True
    if forced_shutdown_s is not None:
        merged["forced-shutdown"] = forced_shutdown_s


def options_refuse_connection(options: Mapping[str, object]) -> None:
    """Raises OptionError when a scenario's options name where or how sysbench connects (any option of the
    catalogue's connection scope, in any spelling) or one a scenario may never set: those come from the target
    alone. Forms, the API and imports refuse them when a scenario is saved; this checks a stored row again at
    the moment its command is built, so that a row written past them (by hand, in the database) never connects."""
    for name in options:
        canonical = canonical_option_name(name) if isinstance(name, str) else ""
        if canonical in CONNECTION_OPTIONS:
            raise OptionError(str(name), "a connection option: it belongs to the target, not to the scenario")
        if canonical in REFUSED_OPTIONS:
            raise OptionError(str(name), f"not allowed in a scenario: {REFUSED_OPTIONS[canonical]}")


def argv_check_connection(argv: Sequence[str], connection: Connection) -> None:
    """The connection options of a built command are exactly the target's, each once (sysbench keeps the last of
    a repeated option, so a second --mysql-host anywhere would win over the target's)."""
    expected = connection.argv()
    found = [item for item in argv
             if item.startswith("--") and canonical_option_name(item.split("=", 1)[0]) in CONNECTION_OPTIONS]
    if found != expected:
        extra = next((item for item in found if item not in expected), found[-1] if found else "")
        raise OptionError(extra.split("=", 1)[0].lstrip("-") or "connection",
                          "a connection option that is not the target's: refused")


def redact_argv(argv: Sequence[str]) -> list[str]:
    redacted = []
    for item in argv:
        for prefix in _SECRET_OPTIONS:
            if item.startswith(prefix):
                item = prefix + REDACTED
                break
        redacted.append(item)
    return redacted


def secrets_to_env(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """argv without its password options, and the environment that carries them instead.

    The environment always names both variables (empty when there is no password), so that a
    password the worker itself inherited never reaches a target.
    """
    env = dict.fromkeys(_SECRET_ENV.values(), "")
    kept = []
    for item in argv:
        prefix = next((p for p in _SECRET_OPTIONS if item.startswith(p)), None)
        if prefix is None:
            kept.append(item)
        else:
            env[_SECRET_ENV[prefix]] = item[len(prefix):]
    return kept, env


def format_command(argv: Sequence[str]) -> str:
    """The command line a user can copy, with the password replaced by ***."""
    return shlex.join(redact_argv(argv))


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """Removes every occurrence of each non-empty secret, in case a tool echoes it back."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


# Where a command connects: the target's address, port, socket, user and database (and password), which a
# shared comparison must not show. --db-driver says only which kind of server it is, and stays.
_ENDPOINT_OPTIONS = tuple(f"--{prefix}-{name}=" for prefix in ("mysql", "pgsql")
                          for name in ("host", "port", "socket", "user", "db", "password"))


def redact_endpoint(text: str) -> str:
    """A stored command line (one command per line) with every endpoint option's value replaced by ***:
    `--mysql-host=db1 --mysql-port=3307` → `--mysql-host=*** --mysql-port=***`."""
    lines = []
    for line in text.splitlines():
        try:
            argv = shlex.split(line)
        except ValueError:  # not a command we wrote (unbalanced quotes): keep nothing of its endpoint either
            lines.append(re.sub(r"(--(?:mysql|pgsql)-(?:host|port|socket|user|db|password)[= ])\S+", r"\1***", line))
            continue
        if not argv:
            lines.append(line)
            continue
        redacted = []
        for item in argv:
            prefix = next((p for p in _ENDPOINT_OPTIONS if item.startswith(p)), None)
            redacted.append(item if prefix is None else prefix + REDACTED)
        lines.append(shlex.join(redacted))
    return "\n".join(lines)
