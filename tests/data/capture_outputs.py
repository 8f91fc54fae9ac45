#!/usr/bin/env python3
"""Capture real sysbench outputs for the parser tests.

Runs the local sysbench against the local MariaDB and PostgreSQL servers and writes
each run's stdout to tests/data/sysbench/<name>.txt, with a small <name>.json sidecar
holding the argv, the exit code, stderr and the wall time. The parser tests read only
these files, so they never need sysbench or a database themselves.

Usage (from the repository root):

    python tests/data/capture_outputs.py            # capture everything
    python tests/data/capture_outputs.py --only mysql_oltp_read_write  # names that start so

It uses its own databases (`sbparse` on both servers) so it does not disturb anyone
else's tables, keeps every run short (2 tables x 1,000 rows, 2-4 s) and never writes a
password except the deliberately wrong one used to capture the "access denied" output.
It is plain Python (no Django) and starts processes only with argv lists, never a shell.
"""

# The 0.5 reconstruction below keeps sysbench's printf formats as %-formats on purpose, so they
# can be compared with the C source line by line.
# ruff: noqa: UP031

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent / "sysbench"
DB_NAME = "sbparse"
MYSQL_HOST = os.environ.get("SBPARSE_MYSQL_HOST", "127.0.0.1")
MYSQL_PORT = int(os.environ.get("SBPARSE_MYSQL_PORT", "3306"))
PG_HOST = os.environ.get("SBPARSE_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("SBPARSE_PG_PORT", "5432"))
# A port nobody listens on, to capture the "unable to connect" output.
CLOSED_PORT = 3399
WRONG_PASSWORD = "wrong-pw"
# Generous: sysbench can overrun --time (see SYSBENCH-NOTES.md); a hung run must not hang us.
RUN_TIMEOUT_S = 60.0

SIZE = ["--tables=2", "--table-size=1000"]
RUN = ["--time=3", "--report-interval=1"]

MYSQL = [
    "sysbench",
    "--db-driver=mysql",
    f"--mysql-host={MYSQL_HOST}",
    f"--mysql-port={MYSQL_PORT}",
    "--mysql-user=root",
    f"--mysql-db={DB_NAME}",
]
PGSQL = [
    "sysbench",
    "--db-driver=pgsql",
    f"--pgsql-host={PG_HOST}",
    f"--pgsql-port={PG_PORT}",
    "--pgsql-user=postgres",
    f"--pgsql-db={DB_NAME}",
]

OLTP_TESTS = [
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
]


@dataclass(slots=True)
class Step:
    """One sysbench invocation: saved under `name` unless `name` is None (setup only)."""

    name: str | None
    argv: list[str]
    # Send SIGKILL this many seconds after the start, to capture a run cut off mid-way.
    kill_after_s: float | None = None
    # Called this many seconds after the start (e.g. to kill the server-side connections).
    during: Callable[[], None] | None = None
    during_after_s: float = 2.0
    note: str = ""
    extra: dict[str, object] = field(default_factory=dict)
    # The later steps need this one's side effect (e.g. prepare), so --only never skips it.
    required: bool = False


def run_quiet(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run a helper command (mariadb, psql) and return its result without raising."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


def ensure_databases() -> None:
    """Create our own `sbparse` databases; both commands are no-ops when they exist."""
    res = run_quiet(
        ["mariadb", "-uroot", f"-h{MYSQL_HOST}", f"-P{MYSQL_PORT}", "-e", f"create database if not exists {DB_NAME}"]
    )
    if res.returncode != 0:
        sys.exit(f"cannot create the MariaDB database: {res.stderr.strip()}")
    listing = run_quiet(
        ["psql", "-U", "postgres", "-h", PG_HOST, "-p", str(PG_PORT), "-Atc", "select datname from pg_database"]
    )
    if DB_NAME not in listing.stdout.split():
        res = run_quiet(["createdb", "-U", "postgres", "-h", PG_HOST, "-p", str(PG_PORT), DB_NAME])
        if res.returncode != 0:
            sys.exit(f"cannot create the PostgreSQL database: {res.stderr.strip()}")


def kill_mysql_connections() -> None:
    """Kill every server-side connection to our database, as a server restart would."""
    res = run_quiet(
        [
            "mariadb",
            "-uroot",
            f"-h{MYSQL_HOST}",
            f"-P{MYSQL_PORT}",
            "-N",
            "-e",
            f"select id from information_schema.processlist where db = '{DB_NAME}' and id <> connection_id()",
        ]
    )
    for conn_id in res.stdout.split():
        run_quiet(["mariadb", "-uroot", f"-h{MYSQL_HOST}", f"-P{MYSQL_PORT}", "-e", f"kill connection {int(conn_id)}"])


def kill_pgsql_connections() -> None:
    """Terminate every backend connected to our database (what a server stop does to clients)."""
    run_quiet(
        [
            "psql",
            "-U",
            "postgres",
            "-h",
            PG_HOST,
            "-p",
            str(PG_PORT),
            "-Atc",
            f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{DB_NAME}' and pid <> pg_backend_pid()",
        ]
    )


def execute(step: Step, *, save: bool = True) -> None:
    """Run one step; save stdout and the sidecar when the step has a name and `save` is set."""
    started = time.monotonic()
    proc = subprocess.Popen(step.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timers: list[threading.Timer] = []
    if step.kill_after_s is not None:
        timers.append(threading.Timer(step.kill_after_s, proc.send_signal, args=(signal.SIGKILL,)))
    if step.during is not None:
        timers.append(threading.Timer(step.during_after_s, step.during))
    for timer in timers:
        timer.start()
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    for timer in timers:
        timer.cancel()
        timer.join()
    wall_s = round(time.monotonic() - started, 2)
    label = step.name if step.name and save else f"(setup) {' '.join(step.argv[-2:])}"
    print(f"{label:45s} rc={proc.returncode:4d} {wall_s:6.2f}s {len(stdout):6d} bytes", flush=True)
    if step.name is None or not save:
        return
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / f"{step.name}.txt").write_bytes(stdout)
    sidecar: dict[str, object] = {
        "argv": step.argv,
        # A negative code is the signal that ended sysbench (e.g. -9 for SIGKILL, -11 for SIGSEGV).
        "returncode": proc.returncode,
        "stderr": stderr.decode("utf-8", "replace"),
        "wall_s": wall_s,
    }
    if step.kill_after_s is not None:
        sidecar["killed_after_s"] = step.kill_after_s
    if step.note:
        sidecar["note"] = step.note
    sidecar.update(step.extra)
    (OUT_DIR / f"{step.name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")


def plan() -> list[Step]:
    """The captures, in an order where every run finds the tables it needs."""
    steps: list[Step] = []
    for driver, base in (("mysql", MYSQL), ("pgsql", PGSQL)):
        # Start from no tables so the "run before prepare" capture is real.
        steps.append(Step(None, [*base, *SIZE, "oltp_read_write", "cleanup"]))
        steps.append(Step(None, [*base, "--threads=1", "bulk_insert", "cleanup"]))
        steps.append(
            Step(
                f"{driver}_run_before_prepare",
                [*base, *SIZE, *RUN, "oltp_read_write", "run"],
                note="tables do not exist yet",
            )
        )
        steps.append(Step(f"{driver}_prepare", [*base, *SIZE, "oltp_read_write", "prepare"], required=True))
        for test in OLTP_TESTS:
            steps.append(Step(f"{driver}_{test}", [*base, *SIZE, *RUN, test, "run"]))
        steps.append(
            Step(f"{driver}_oltp_read_only_histogram", [*base, *SIZE, *RUN, "--histogram=on", "oltp_read_only", "run"])
        )
        for pct in (0, 99, 100):
            steps.append(
                Step(
                    f"{driver}_oltp_point_select_percentile_{pct}",
                    [*base, *SIZE, *RUN, f"--percentile={pct}", "oltp_point_select", "run"],
                )
            )
        steps.append(
            Step(
                f"{driver}_oltp_point_select_rate",
                [*base, *SIZE, *RUN, "--rate=100", "oltp_point_select", "run"],
                note="--rate adds queue length lines",
            )
        )
        steps.append(
            Step(
                f"{driver}_oltp_read_only_checkpoints",
                [
                    *base,
                    *SIZE,
                    "--time=4",
                    "--report-interval=1",
                    "--report-checkpoints=1,2",
                    "--histogram=on",
                    "oltp_read_only",
                    "run",
                ],
                note="checkpoint blocks look like the final block; the final one covers only the time since the last checkpoint",
            )
        )
        if driver == "mysql":
            steps.append(
                Step(
                    "mysql_oltp_read_write_checkpoints_whole_run",
                    [
                        *base,
                        *SIZE,
                        "--threads=2",
                        "--time=9",
                        "--report-interval=1",
                        "--report-checkpoints=3,6",
                        "--histogram=on",
                        "oltp_read_write",
                        "run",
                    ],
                    note="a longer run with two checkpoints: the whole run is the sum of the three blocks (events, "
                    "queries) over the final 'total time'; the histogram covers the last block only",
                )
            )
        steps.append(
            Step(
                f"{driver}_oltp_read_only_killed",
                [*base, *SIZE, "--time=10", "--report-interval=1", "oltp_read_only", "run"],
                kill_after_s=2.5,
                note="client killed with SIGKILL mid-run",
            )
        )
        killer = kill_mysql_connections if driver == "mysql" else kill_pgsql_connections
        steps.append(
            Step(
                f"{driver}_oltp_read_only_connection_killed",
                [*base, *SIZE, "--time=6", "--report-interval=1", "--threads=2", "oltp_read_only", "run"],
                during=killer,
                during_after_s=2.2,
                note="server-side connections killed mid-run (like a server restart)",
            )
        )
        steps.append(Step(None, [*base, *SIZE, "oltp_read_write", "cleanup"]))
        # bulk_insert creates tables of its own shape, one per thread, so it runs on a clean database.
        steps.append(Step(None, [*base, "--threads=1", "bulk_insert", "prepare"]))
        steps.append(
            Step(
                f"{driver}_bulk_insert", [*base, "--threads=1", "--time=2", "--report-interval=1", "bulk_insert", "run"]
            )
        )
        steps.append(Step(None, [*base, "--threads=1", "bulk_insert", "cleanup"]))

    # Error captures. Duplicate keys need concurrency on few rows: one table, 4 threads.
    steps.append(Step(None, [*MYSQL, "--tables=1", "--table-size=1000", "oltp_read_write", "prepare"]))
    skip_trx = [
        *MYSQL,
        "--tables=1",
        "--table-size=1000",
        "--time=3",
        "--report-interval=1",
        "--threads=4",
        "--skip-trx=on",
    ]
    steps.append(
        Step(
            "mysql_oltp_read_write_skip_trx_ignore_1062",
            [*skip_trx, "--mysql-ignore-errors=1062", "oltp_read_write", "run"],
            note="duplicate-key errors counted as ignored errors",
        )
    )
    steps.append(
        Step(
            "mysql_oltp_read_write_skip_trx_fatal_1062",
            [*skip_trx, "oltp_read_write", "run"],
            note="without --mysql-ignore-errors the first duplicate key is fatal",
        )
    )
    steps.append(Step(None, [*MYSQL, "--tables=1", "--table-size=1000", "oltp_read_write", "cleanup"]))
    steps.append(
        Step(
            "mysql_wrong_password",
            [*MYSQL, f"--mysql-password={WRONG_PASSWORD}", "--threads=2", *SIZE, *RUN, "oltp_read_write", "run"],
            note="deliberately wrong password",
        )
    )
    closed = [a if not a.startswith("--mysql-port=") else f"--mysql-port={CLOSED_PORT}" for a in MYSQL]
    steps.append(
        Step(
            "mysql_closed_port",
            [*closed, "--threads=2", *SIZE, *RUN, "oltp_read_write", "run"],
            note="nothing listens on this port",
        )
    )
    pg_closed = [a if not a.startswith("--pgsql-port=") else f"--pgsql-port={CLOSED_PORT}" for a in PGSQL]
    steps.append(
        Step(
            "pgsql_closed_port",
            [*pg_closed, *SIZE, *RUN, "oltp_read_write", "run"],
            note="nothing listens on this port",
        )
    )
    return steps


# --- sysbench 0.5 outputs, reconstructed -------------------------------------------------------
#
# sysbench 0.5 cannot be installed here (Debian ships 1.0.20 only), so these outputs are
# reconstructed: each line below is a printf format of sysbench 0.5's own print statements
# (sysbench.c and sb_logger.c for the banner, report lines and "General statistics", db_driver.c
# for "OLTP test statistics", drv_mysql.c and script_lua.c for the error lines), rewritten as
# Python %-formats, fed with figures that add up the way sysbench's counters do. The figures
# are invented (seeded, so reruns give identical files) and shaped after the white papers in
# shared/seeds/ (128 threads, --percentile=99, 10 s reports; 500 threads, 1 s reports).


@dataclass(slots=True)
class V05Run:
    """Inputs of one reconstructed 0.5 output."""

    name: str
    threads: int
    report_s: int
    max_time_s: int
    pct: int
    # Per event: reads, writes and "other" queries (BEGIN/COMMIT), and whether COMMIT is
    # issued: 0.5 counts a transaction per COMMIT, so select.lua and update_*.lua report tps 0.
    reads_per_event: int
    writes_per_event: int
    other_per_event: int
    commits: bool
    events_per_s: float
    latency_ms: float
    seed: int
    # "early": reads/s, writes/s and no errors on report lines, "deadlocks:" in the final
    # block; "per_request": the older logger's "Test execution summary:"/"per-request
    # statistics:" layout; "late": the last 0.5 layout with errors and reconnects.
    layout: str = "late"
    tx_rate: int = 0
    # Stop after this many report lines and print these error lines instead of the final block.
    cut_after: int | None = None
    error_lines: list[str] = field(default_factory=list)
    # Text printed before the banner, as when a terminal session is pasted.
    preamble: list[str] = field(default_factory=list)


def _v05_lines(run: V05Run) -> list[str]:
    import random

    rnd = random.Random(run.seed)
    out = list(run.preamble)
    out += ["sysbench 0.5:  multi-threaded system evaluation benchmark", ""]
    out += ["Running the test with following options:", "Number of threads: %d" % run.threads]
    if run.tx_rate:
        out.append("Target transaction rate: %d/sec" % run.tx_rate)
    out += [
        "Report intermediate results every %d second(s)" % run.report_s,
        "Random number generator seed is 0 and will be ignored",
        "",
        "",
    ]
    if run.layout == "late":
        out += ["Initializing worker threads...", ""]
    out += ["Threads started!", ""]

    total_events = 0
    # The last report is not printed when --max-time is a whole number of report intervals.
    n_reports = run.max_time_s // run.report_s - 1
    if run.cut_after is not None:
        n_reports = run.cut_after
    for i in range(1, n_reports + 1):
        t = i * run.report_s
        # The first interval is slower (cold buffer pool), then the rate settles with noise.
        ramp = 0.72 if i == 1 else 1.0
        eps = run.events_per_s * ramp * rnd.uniform(0.97, 1.03)
        events = int(eps * run.report_s)
        total_events += events
        tps = (events if run.commits else 0) / run.report_s
        reads = events * run.reads_per_event / run.report_s
        writes = events * run.writes_per_event / run.report_s
        rt = run.latency_ms * (1.6 if i == 1 else 1.0) * rnd.uniform(0.95, 1.08)
        if run.layout == "late":
            out.append(
                "[%4.0fs] threads: %d, tps: %4.2f, reads: %4.2f, writes: %4.2f, response time: %4.2fms (%u%%), "
                "errors: %4.2f, reconnects: %5.2f" % (t, run.threads, tps, reads, writes, rt, run.pct, 0.0, 0.0)
            )
        else:
            out.append(
                "[%4.0fs] threads: %d, tps: %4.2f, reads/s: %4.2f, writes/s: %4.2f, response time: %4.2fms (%u%%)"
                % (t, run.threads, tps, reads, writes, rt, run.pct)
            )
        if run.tx_rate:
            out.append(
                "[%4.0fs] queue length: %d, concurrency: %d" % (t, rnd.randint(0, 3), rnd.randint(40, run.threads))
            )
    if run.cut_after is not None:
        return out + run.error_lines

    # The run goes on for the unreported last interval before the statistics are printed.
    tail_events = int(run.events_per_s * run.report_s * rnd.uniform(0.98, 1.02))
    total_events += tail_events
    seconds = run.max_time_s + rnd.uniform(0.001, 0.009)
    reads = total_events * run.reads_per_event
    writes = total_events * run.writes_per_event
    other = total_events * run.other_per_event
    transactions = total_events if run.commits else 0
    errors = 0
    out += [
        "OLTP test statistics:",
        "    queries performed:",
        "        read:                            %d" % reads,
        "        write:                           %d" % writes,
        "        other:                           %d" % other,
        "        total:                           %d" % (reads + writes + other),
        "    transactions:                        %-6d (%.2f per sec.)" % (transactions, transactions / seconds),
    ]
    if run.layout != "late":
        out.append("    deadlocks:                           %-6d (%.2f per sec.)" % (errors, errors / seconds))
    out += [
        "    read/write requests:                 %-6d (%.2f per sec.)" % (reads + writes, (reads + writes) / seconds),
        "    other operations:                    %-6d (%.2f per sec.)" % (other, other / seconds),
    ]
    if run.layout == "late":
        out += [
            "    ignored errors:                      %-6d (%.2f per sec.)" % (errors, errors / seconds),
            "    reconnects:                          %-6d (%.2f per sec.)" % (0, 0.0),
        ]
    avg_ms = run.latency_ms * 0.62
    exec_s = total_events * avg_ms / 1000.0
    out.append("")
    if run.layout == "per_request":
        out += [
            "Test execution summary:",
            "    total time:                          %.4fs" % seconds,
            "    total number of events:              %d" % total_events,
            "    total time taken by event execution: %.4f" % exec_s,
            "    per-request statistics:",
        ]
    else:
        out += [
            "General statistics:",
            "    total time:                          %.4fs" % seconds,
            "    total number of events:              %d" % total_events,
            "    total time taken by event execution: %.4fs" % exec_s,
            "    response time:",
        ]
    out += [
        "         min:                            %10.2fms" % (run.latency_ms * 0.18),
        "         avg:                            %10.2fms" % avg_ms,
        "         max:                            %10.2fms" % (run.latency_ms * 7.3),
        "         approx. %3d percentile:         %10.2fms" % (run.pct, run.latency_ms),
        "",
        "Threads fairness:",
        "    events (avg/stddev):           %.4f/%3.2f" % (total_events / run.threads, rnd.uniform(5, 90)),
        "    execution time (avg/stddev):   %.4f/%3.2f" % (exec_s / run.threads, rnd.uniform(0, 0.05)),
        "",
    ]
    return out


V05_RUNS = [
    # Seed 000: 4 point selects + 1 index update per transaction, 128 threads, --percentile=99.
    V05Run(
        "oltp_v05_point_select_index_update",
        threads=128,
        report_s=10,
        max_time_s=60,
        pct=99,
        reads_per_event=4,
        writes_per_event=1,
        other_per_event=2,
        commits=True,
        events_per_s=9620.0,
        latency_ms=21.4,
        seed=5,
    ),
    # Seeds 000 part 2 / 004: update_non_index.lua at 500 threads, 1 s reports: no COMMIT, so tps 0.
    V05Run(
        "update_non_index_v05_500_threads",
        threads=500,
        report_s=1,
        max_time_s=12,
        pct=99,
        reads_per_event=0,
        writes_per_event=1,
        other_per_event=0,
        commits=False,
        events_per_s=61250.0,
        latency_ms=14.9,
        seed=7,
    ),
    # select.lua on an early 0.5 build: "reads/s:" report lines and "deadlocks:".
    V05Run(
        "select_v05_early_layout",
        threads=50,
        report_s=5,
        max_time_s=30,
        pct=99,
        reads_per_event=1,
        writes_per_event=0,
        other_per_event=0,
        commits=False,
        events_per_s=304585.0,
        latency_ms=0.26,
        seed=11,
        layout="early",
    ),
    # The older logger's "Test execution summary:" / "per-request statistics:" layout.
    V05Run(
        "oltp_v05_per_request_statistics",
        threads=16,
        report_s=10,
        max_time_s=60,
        pct=95,
        reads_per_event=14,
        writes_per_event=4,
        other_per_event=2,
        commits=True,
        events_per_s=812.0,
        latency_ms=31.6,
        seed=13,
        layout="per_request",
    ),
    # --tx-rate adds "queue length" lines after each report line.
    V05Run(
        "oltp_v05_tx_rate",
        threads=64,
        report_s=10,
        max_time_s=40,
        pct=95,
        reads_per_event=4,
        writes_per_event=1,
        other_per_event=2,
        commits=True,
        events_per_s=2000.0,
        latency_ms=6.2,
        seed=17,
        tx_rate=2000,
    ),
    # Server lost mid-run: the failing query's ALERT, then the Lua error, no statistics.
    V05Run(
        "oltp_v05_lost_connection",
        threads=128,
        report_s=10,
        max_time_s=1800,
        pct=99,
        reads_per_event=4,
        writes_per_event=1,
        other_per_event=2,
        commits=True,
        events_per_s=9400.0,
        latency_ms=22.8,
        seed=19,
        cut_after=4,
        error_lines=[
            "ALERT: mysql_drv_query() returned error 2013 (Lost connection to MySQL server during query) "
            "for query 'SELECT c FROM sbtest12 WHERE id=5021877'",
            "FATAL: failed to execute function `event': SELECT c FROM sbtest12 WHERE id=5021877",
            "ALERT: mysql_drv_query() returned error 2013 (Lost connection to MySQL server during query) "
            "for query 'COMMIT'",
            "FATAL: failed to execute function `event': COMMIT",
        ],
    ),
    # Wrong password, pasted together with the command that was typed (the test name shows).
    V05Run(
        "select_v05_access_denied",
        threads=500,
        report_s=1,
        max_time_s=360000,
        pct=99,
        reads_per_event=1,
        writes_per_event=0,
        other_per_event=0,
        commits=False,
        events_per_s=0.0,
        latency_ms=0.0,
        seed=23,
        cut_after=0,
        preamble=[
            "$ ./sysbench --num-threads=500 --test=./tests/db/select.lua --oltp-table-size=2180000 "
            "--oltp-tables-count=10 --percentile=99 --report-interval=1 --mysql-user=sbtest "
            "--mysql-password=wrong-pw --mysql-db=caccts --max-time=360000 --max-requests=0 run"
        ],
        error_lines=[
            "FATAL: unable to connect to MySQL server, aborting...",
            "FATAL: error 1045: Access denied for user 'sbtest'@'10.0.0.21' (using password: YES)",
            "PANIC: unprotected error in call to Lua API (Failed to connect to the database)",
        ],
    ),
]


def reconstruct_v05() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for run in V05_RUNS:
        path = OUT_DIR / f"{run.name}.txt"
        path.write_text("\n".join(_v05_lines(run)) + "\n")
        print(f"{run.name:45s} reconstructed {path.stat().st_size:6d} bytes", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="capture only the named outputs whose name starts with this (setup steps still run)",
    )
    parser.add_argument(
        "--v05",
        action="store_true",
        help="only rewrite the reconstructed sysbench 0.5 outputs (needs no sysbench, no server)",
    )
    args = parser.parse_args(argv)
    if args.v05:
        reconstruct_v05()
        return 0
    ensure_databases()
    for step in plan():
        selected = step.name is None or not args.only or any(step.name.startswith(p) for p in args.only)
        if selected or step.required:
            execute(step, save=selected)
    if not args.only:
        reconstruct_v05()
    return 0


if __name__ == "__main__":
    sys.exit(main())
