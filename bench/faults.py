"""Does a campaign survive the faults a long one meets (broker, database, target and worker restarts, killed
processes, a full disk)? One fresh run per fault on an isolated stack, then a table.

bench/_stack.py builds the stack: a PostgreSQL 15 cluster, a redis-server and a MariaDB target of its own, each on a
free port in a temporary directory, and benchapp's web, worker and beat started as `make run` starts them
(`_stack.app_launch`: honcho today, supervisord once the tree has scripts/supervise.sh;
FAULTS_APP_COMMAND for another launcher). Nothing shared is stopped. Through the REST API it
makes a target, a small dataset (1 table × 10,000 rows, prepared once by a first 2-job run) and two scenarios
(oltp_point_select; oltp_read_write for the lock fault), then for each fault a campaign of --jobs jobs of --time s
(threads 1–4 × repetitions), launches it, waits until a job has --at seconds stored (per-second rows read with
read-only SQL), injects the fault, and waits for the run to end (at most --bound s). An operator who finds web,
worker or beat gone for 60 s restarts benchapp by hand: the harness does the same and says so.

The table: fault, run status, jobs succeeded of N, attempts (sum of Job.attempt − 1), seconds stored of the attempts
that count vs expected (N jobs × (time − 1): sysbench prints no report for the last whole second; "+k" are seconds of
earlier attempts, kept apart), recovery (fault → first second stored by a measurement started after it; for a cancel,
cancel → run finished), and what the user saw (run warnings from the API, job errors, wait reasons, run error, API
answers that were not 2xx). A row passes when the run succeeded with every job and the attempts that count stored
at least N × (time − 1) seconds (a job's own gaps are listed in the notes, not judged);
the cancel's row when the run ended cancelled within CANCEL_BOUND_S of the cancel with every second stored before it
kept (its seconds column: rows of the run after it / rows when it was sent).

Usage: .venv/bin/python bench/faults.py [--only target_restart,redis_restart] [--jobs 12] [--time 12] [--at 5]
       [--bound 600] [--repeat 1] [--keep] [--list]
"""
from __future__ import annotations

import argparse
import atexit
import collections
import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil
from _netns import NetnsClient
from _stack import ROLES, TARGET_DB, TARGET_USER, ApiError, Stack, wait_for

FINISHED = ("succeeded", "partially_succeeded", "failed", "cancelled")
TABLES, TABLE_SIZE = 1, 10_000
CANCEL_BOUND_S = 60  # a cancel sent while the worker is dead ends the run within this (a restarted worker's work)
RESCUE_AFTER_S = 60  # an operator notices that benchapp is down and restarts it by hand
# The next job is coordinated while the current one measures: that wait is how every run goes, not a fault's sign.
NORMAL_WAIT = re.compile(r"starts when job #\d+ has finished measuring")


def log(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)


# ---------------------------------------------------------------- watching a run


class Watch(threading.Thread):
    """Polls one run twice a second (read-only SQL on the stack's own cluster) and its API every 2 s, and remembers
    what a user could have seen: each (job, attempt) measuring and when its first second was stored, wait reasons,
    job errors, the run's warnings and API answers that were not 2xx."""

    def __init__(self, stack: Stack, run_id: int) -> None:
        super().__init__(daemon=True)
        self.stack, self.run_id = stack, run_id
        self.first_seen: dict[tuple[int, int], float] = {}
        self.max_t: dict[tuple[int, int], float] = {}
        self.seen: dict[str, list[str]] = {"warning": [], "error": [], "wait": [], "attempt": [], "api": []}
        self.status = "pending"
        self.finished_at: float | None = None
        self._halt = threading.Event()
        self._conn: Any = None

    def note(self, kind: str, text: str) -> None:
        text = " ".join(str(text).split())
        if kind == "wait":
            if NORMAL_WAIT.fullmatch(text):
                return
            text = text.removeprefix("waiting: ")
            text = re.sub(r"\b(next try in|in) \d+(\.\d+)? ?(s|min)\b", r"\1 …", text)  # a countdown: once
        if text and text not in self.seen[kind]:
            self.seen[kind].append(text)

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:
            self.join(timeout=10)
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        assert self.stack.pg is not None
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(host="127.0.0.1", port=self.stack.pg.port, user="postgres",
                                         dbname="benchapp", autocommit=True, connect_timeout=3)
        return list(self._conn.execute(query, params).fetchall())

    def run(self) -> None:
        last_api = 0.0
        while not self._halt.is_set():
            try:
                self._poll_sql()
            except Exception:  # PostgreSQL restarting: read again next time
                if self._conn is not None:
                    with contextlib.suppress(Exception):
                        self._conn.close()
                self._conn = None
            if time.monotonic() - last_api >= 2:
                last_api = time.monotonic()
                self._poll_api()
            self._halt.wait(0.5)

    def _poll_sql(self) -> None:
        now = time.monotonic()
        for job, attempt, t in self.sql(
                "SELECT s.job_id, s.attempt, max(s.t) FROM campaigns_intervalsample s JOIN campaigns_job j "
                "ON j.id = s.job_id WHERE j.run_id = %s GROUP BY 1, 2", (self.run_id,)):
            self.first_seen.setdefault((job, attempt), now)
            self.max_t[(job, attempt)] = float(t)
        for error, wait in self.sql("SELECT error, wait_reason FROM campaigns_job WHERE run_id = %s",
                                    (self.run_id,)):
            self.note("error", error)
            self.note("wait", wait)
        rows = self.sql("SELECT status, error FROM campaigns_run WHERE id = %s", (self.run_id,))
        if rows:
            self.status = rows[0][0]
            if self.status in FINISHED and self.finished_at is None:
                self.finished_at = now

    def _poll_api(self) -> None:
        try:
            run = self.stack.api.call("GET", f"/api/v1/runs/{self.run_id}/", timeout_s=10)
        except ApiError as exc:
            self.note("api", f"HTTP {exc.status}")
            return
        except OSError:
            self.note("api", "web unreachable")
            return
        with contextlib.suppress(OSError, ApiError):
            jobs = self.stack.api.call("GET", f"/api/v1/jobs/?run={self.run_id}&ordering=position", timeout_s=10)
            for job in jobs.get("results", []) if isinstance(jobs, dict) else jobs:
                if job.get("waiting"):  # the job API's sentence for a waiting job, where the tree has it
                    self.note("wait", job["waiting"])
                for attempt in job.get("attempts") or []:  # "attempt 1 lost at t = 6 s: …", where it has them
                    if attempt.get("attempt") != job.get("attempt") and attempt.get("text"):
                        self.note("attempt", attempt["text"])
        for key, value in run.items():
            # Today's "warning" fields, and the dead-worker notice ({since, message} in `no_worker`).
            if value and ("warning" in key or key == "no_worker"):
                text = value.get("message", value) if isinstance(value, dict) else value
                self.note("warning", text if isinstance(text, str) else str(text))

    def run_error(self) -> str:
        with contextlib.suppress(Exception):
            rows = self.sql("SELECT error FROM campaigns_run WHERE id = %s", (self.run_id,))
            return " ".join((rows[0][0] or "").split()) if rows else ""
        return ""

    def longest_t(self) -> float:
        return max(self.max_t.values(), default=0.0)


# ---------------------------------------------------------------- faults


@dataclass
class Ctx:
    stack: Stack
    run_id: int
    watch: Watch
    opts: argparse.Namespace
    notes: list[str] = field(default_factory=list)
    cancelled_at: float | None = None
    stored_at_cancel: int | None = None  # per-second rows of the run when the cancel was sent
    netns: NetnsClient | None = None


def _down_then_up(ctx: Ctx, server_name: str, down_s: float) -> None:
    server = getattr(ctx.stack, server_name)
    started = time.monotonic()
    server.stop()
    stopped = time.monotonic()
    if down_s > 0:
        time.sleep(max(0.0, down_s - (stopped - started)))
    server.start()
    if server_name == "pg":
        wait_for(ctx.stack.pg_ready, timeout_s=60, what="PostgreSQL")
    elif server_name == "mariadb":
        wait_for(ctx.stack.mariadb_ready, timeout_s=60, what="MariaDB")
    ctx.notes.append(f"{server.name} down {time.monotonic() - started:.1f} s")


def target_restart(ctx: Ctx) -> None:
    _down_then_up(ctx, "mariadb", 0)


def target_down(seconds: float) -> Callable[[Ctx], None]:
    def inject(ctx: Ctx) -> None:
        _down_then_up(ctx, "mariadb", seconds)
    return inject


def redis_restart(ctx: Ctx) -> None:
    assert ctx.stack.redis is not None
    started = time.monotonic()
    ctx.stack.redis_cli("shutdown", "nosave")
    wait_for(lambda: not ctx.stack.redis.alive(), timeout_s=30, what="redis to stop")  # type: ignore[union-attr]
    time.sleep(max(0.0, 3.5 - (time.monotonic() - started)))
    ctx.stack.redis.start()
    ctx.notes.append(f"redis down {time.monotonic() - started:.1f} s")


def _kill_role(ctx: Ctx, role: str) -> float:
    """SIGKILLs one of benchapp's processes; notes what else went away with it and whether it came back."""
    proc = ctx.stack.roles()[role]
    if proc is None:
        raise RuntimeError(f"no {role} process to kill")
    proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    time.sleep(5)
    roles = ctx.stack.roles()
    gone = [r for r in ROLES if r != role and roles[r] is None]
    back = roles[role] is not None and roles[role].pid != proc.pid  # type: ignore[union-attr]
    ctx.notes.append(f"{role} SIGKILLed; " + (f"launcher also stopped {', '.join(gone)}; " if gone else "")
                     + ("brought back by the launcher" if back else "not brought back within 5 s"))
    return killed


def worker_kill(ctx: Ctx) -> None:
    _kill_role(ctx, "worker")


def gunicorn_kill(ctx: Ctx) -> None:
    _kill_role(ctx, "web")


def beat_kill(ctx: Ctx) -> None:
    killed = _kill_role(ctx, "beat")
    time.sleep(max(0.0, 66 - (time.monotonic() - killed)))
    if ctx.stack.roles()["beat"] is None:
        _rescue(ctx, "beat down 66 s")


def pg_restart(ctx: Ctx) -> None:
    _down_then_up(ctx, "pg", 0)  # SIGINT to the postmaster: what `pg_ctl restart -m fast` does


def _measuring_sysbench(ctx: Ctx) -> list[psutil.Process]:
    return wait_for(ctx.stack.sysbench, timeout_s=30, what="the job's sysbench")  # type: ignore[no-any-return]


def sysbench_kill(ctx: Ctx) -> None:
    procs = _measuring_sysbench(ctx)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
    ctx.notes.append(f"sysbench pid {', '.join(str(p.pid) for p in procs)} SIGKILLed")


def stall(ctx: Ctx) -> None:
    """A stalled machine, as sysbench sees it: stopped 5 s, then it goes on and reports late."""
    procs = _measuring_sysbench(ctx)
    for proc in procs:
        proc.send_signal(signal.SIGSTOP)
    time.sleep(5)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGCONT)
    ctx.notes.append("sysbench SIGSTOPped 5 s")


def run_rows(watch: Watch, run_id: int) -> int:
    """The run's per-second rows, of every attempt."""
    return int(watch.sql("SELECT count(*) FROM campaigns_intervalsample s JOIN campaigns_job j ON j.id = s.job_id "
                         "WHERE j.run_id = %s", (run_id,))[0][0])


def cancel_worker_dead(ctx: Ctx) -> None:
    _kill_role(ctx, "worker")
    ctx.stored_at_cancel = run_rows(ctx.watch, ctx.run_id)  # the worker, and the sysbench it read, are gone: nothing more comes
    try:
        ctx.stack.api.post(f"/api/v1/runs/{ctx.run_id}/cancel/")
    except (OSError, ApiError) as exc:
        ctx.notes.append(f"cancel refused while the worker was dead ({str(exc)[:60]}): sent after a restart")
        _rescue(ctx, "the API was down")
        ctx.stack.api.post(f"/api/v1/runs/{ctx.run_id}/cancel/")
    ctx.cancelled_at = time.monotonic()


def target_lock(ctx: Ctx) -> None:
    """FLUSH TABLES WITH READ LOCK held 100 s by a session of its own, during a write test."""
    started = time.monotonic()
    holder = subprocess.Popen(["mariadb", "--no-defaults", "-S", str(ctx.stack.mariadb_socket), "-uroot", "-N", "-B"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert holder.stdin is not None
    holder.stdin.write("FLUSH TABLES WITH READ LOCK; SELECT 'locked'; DO SLEEP(100); UNLOCK TABLES;\n")
    holder.stdin.close()
    with contextlib.suppress(Exception):
        time.sleep(10)
        states = ctx.stack.mariadb_sql("SELECT DISTINCT state FROM information_schema.processlist "
                                       "WHERE state <> ''", timeout_s=10).split("\n")
        ctx.notes.append("target processlist: " + "; ".join(s for s in states if s))
    holder.wait(timeout=200)
    ctx.notes.append(f"tables locked {time.monotonic() - started:.0f} s")


def tables_dropped(ctx: Ctx) -> None:
    ctx.stack.mariadb_sql(f"DROP TABLE IF EXISTS {', '.join(f'{TARGET_DB}.sbtest{i + 1}' for i in range(TABLES))}")
    ctx.notes.append("sbtest tables dropped before the launch")


def link_down(ctx: Ctx) -> None:
    """The client host's link goes down while it measures (packets dropped, no reset), and comes back 45 s later."""
    assert ctx.netns is not None
    started = time.monotonic()
    ctx.netns.link_down()
    time.sleep(45)
    ctx.netns.link_up()
    ctx.notes.append(f"link of {ctx.netns.name} down {time.monotonic() - started:.0f} s")
    leftover = [p.pid for p in ctx.stack.app_processes(marker=f"{ctx.stack.marker}-{ctx.netns.name}")
                if p.name() == "sysbench"]
    if leftover:
        ctx.notes.append(f"sysbench still running on {ctx.netns.name} after the link came back: pid {leftover}")


@dataclass(frozen=True)
class Fault:
    name: str
    label: str
    inject: Callable[[Ctx], None] | None
    scenario: str = "ps"
    before_launch: bool = False  # inject before the launch instead of once a job has --at s stored
    netns: bool = False  # the jobs' client runs on a client host in a network namespace of its own
    skip: str = ""
    # What the user asked for: a run that goes on to succeed, or (a cancel) one that ends cancelled.
    expect: str = "succeeded"


FAULTS = [
    Fault("baseline", "no fault (reference)", None),
    Fault("target_restart", "target MariaDB restarted", target_restart),
    Fault("target_down_60", "target down 60 s", target_down(60)),
    Fault("target_down_120", "target down 2 min", target_down(120)),
    Fault("redis_restart", "Redis shutdown nosave + start 3.5 s", redis_restart),
    Fault("worker_kill", "Celery worker SIGKILL", worker_kill),
    Fault("gunicorn_kill", "gunicorn master SIGKILL", gunicorn_kill),
    Fault("pg_restart", "PostgreSQL restart -m fast", pg_restart),
    Fault("sysbench_kill", "sysbench SIGKILL", sysbench_kill),
    Fault("beat_kill", "beat SIGKILL for 66 s", beat_kill),
    Fault("cancel_worker_dead", "cancel while the worker is dead", cancel_worker_dead, expect="cancelled"),
    Fault("target_lock", "FTWRL 100 s in a write test", target_lock, scenario="rw"),
    Fault("stall", "stall: sysbench SIGSTOP 5 s", stall),
    Fault("tables_dropped", "prepared tables dropped between runs", tables_dropped, before_launch=True),
    Fault("link_down", "client host link down 45 s", link_down, netns=True),
]


# ---------------------------------------------------------------- the stack's state between runs


def _rescue(ctx: Ctx, why: str) -> None:
    """Restarts benchapp as an operator would (everything its launcher left), and says so."""
    started = time.monotonic()
    missing = [r for r, p in ctx.stack.roles().items() if p is None]
    ctx.stack.app_stop()
    ctx.stack.app_start()
    ctx.notes.append(f"{why}: benchapp restarted by hand (missing: {', '.join(missing) or 'none'}; "
                     f"up again in {time.monotonic() - started:.0f} s)")


def stack_repair(stack: Stack) -> list[str]:
    """Brings the stack back to a clean state before a run: servers up, benchapp's three processes up, no stray
    sysbench, the prepared tables there. Returns what it had to do."""
    done = []
    assert stack.pg is not None and stack.redis is not None and stack.mariadb is not None
    for server, ready in ((stack.pg, stack.pg_ready), (stack.redis, None), (stack.mariadb, stack.mariadb_ready)):
        if not server.alive():
            server.start()
            done.append(f"{server.name} started again")
        if ready is not None:
            wait_for(ready, timeout_s=60, what=server.name)
    roles = stack.roles()
    if stack.app is None or stack.app.poll() is not None or not all(roles.values()):
        stack.app_stop()
        stack.app_start()
        done.append("benchapp restarted")
    # A run left going (a fault whose injection failed) would hold the target: a database serves one run at a time.
    watch = Watch(stack, 0)
    try:
        active = [run for (run,) in watch.sql("SELECT id FROM campaigns_run WHERE status IN ('pending', 'running')")]
        for run in active:
            with contextlib.suppress(OSError, ApiError):
                stack.api.retrying("POST", f"/api/v1/runs/{run}/cancel/")
            done.append(f"run {run} still active: cancelled")
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: not watch.sql("SELECT 1 FROM campaigns_run WHERE status IN ('pending', 'running')"),
                       timeout_s=120, what="the cancelled runs to end", interval_s=1)
    finally:
        watch.stop()
    for proc in stack.sysbench(measuring=False):
        with contextlib.suppress(psutil.Error):
            proc.kill()
            done.append(f"stray sysbench {proc.pid} killed")
    present = stack.mariadb_sql(f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{TARGET_DB}' "
                                f"AND table_name LIKE 'sbtest%'").strip()
    if present and int(present) < TABLES:
        # Behind benchapp's back again, as the fault did: sysbench's own prepare through the root socket.
        subprocess.run(["sysbench", "oltp_point_select", f"--mysql-socket={stack.mariadb_socket}",
                        "--mysql-user=root", f"--mysql-db={TARGET_DB}", f"--tables={TABLES}",
                        f"--table-size={TABLE_SIZE}", "prepare"], check=True, capture_output=True, timeout=300)
        done.append("sbtest tables prepared again by hand")
    return done


# ---------------------------------------------------------------- one run per fault


@dataclass
class Row:
    fault: str
    status: str
    succeeded: int
    jobs: int
    attempts: int
    stored: int
    expected: int
    earlier: int
    recovery_s: float | None
    message: str
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    expect: str = "succeeded"

    def passed(self) -> bool:
        """A run that must succeed: every job succeeded, no counted second missing. A cancel: the run cancelled
        within CANCEL_BOUND_S of it, every second stored before it kept (expected: the rows at the cancel)."""
        if self.expect == "cancelled":
            return (self.status == "cancelled" and self.recovery_s is not None and self.recovery_s <= CANCEL_BOUND_S
                    and self.stored >= self.expected)
        return self.status == "succeeded" and self.succeeded == self.jobs and self.stored >= self.expected


class Setup:
    """The API objects every run uses: one target, one dataset, two scenarios."""

    def __init__(self, stack: Stack, opts: argparse.Namespace) -> None:
        api, stamp = stack.api, time.strftime("%H%M%S")
        assert stack.mariadb is not None
        product = api.post("/api/v1/products/", {"name": f"MariaDB 10.11 (faults {stamp})", "engine": "mariadb"})
        spec = api.post("/api/v1/specs/", {"label": f"faults {stamp}", "cpu_cores": 2, "memory_gb": 4})
        self.product, self.spec = product["id"], spec["id"]
        self.netns: NetnsClient | None = None
        self.netns_target = 0
        self.target = api.post("/api/v1/targets/", {
            "name": f"faults-mariadb-{stamp}", "product": product["id"], "spec": spec["id"], "driver": "mysql",
            "host": "127.0.0.1", "port": stack.mariadb.port, "database": TARGET_DB, "user": TARGET_USER,
            "password": stack.target_password})["id"]
        api.post(f"/api/v1/targets/{self.target}/check/")
        dataset = api.post("/api/v1/datasets/", {"name": f"faults {stamp} {TABLES} x {TABLE_SIZE}",
                                                 "tables": TABLES, "table_size": TABLE_SIZE})["id"]
        self.scenarios = {
            key: api.post("/api/v1/scenarios/", {
                "name": f"faults {stamp} {test}", "test": test, "dataset": dataset, "time_s": opts.time,
                "warmup_s": 0, "cleanup": "keep", "prepare_mode": "auto"})["id"]
            for key, test in (("ps", "oltp_point_select"), ("rw", "oltp_read_write"))}


    def netns_client(self, stack: Stack) -> tuple[NetnsClient, int]:
        """The client host in a namespace, started the first time, and a target it reaches the MariaDB through."""
        if self.netns is None:
            assert stack.mariadb is not None
            self.netns = NetnsClient(stack, f"faults-c1-{stack.marker[:4]}")
            self.netns.start()
            self.netns_target = stack.api.post("/api/v1/targets/", {
                "name": f"faults-mariadb-via-{self.netns.name}", "product": self.product, "spec": self.spec,
                "driver": "mysql", "host": self.netns.address, "port": stack.mariadb.port, "database": TARGET_DB,
                "user": TARGET_USER, "password": stack.target_password})["id"]
        return self.netns, self.netns_target

    def close(self) -> None:
        if self.netns is not None:
            self.netns.close()
            self.netns = None


def threads_and_repetitions(jobs: int) -> tuple[list[int], int]:
    """Thread counts within 1–4 and repetitions giving exactly `jobs` jobs."""
    width = max(d for d in range(1, 5) if jobs % d == 0)
    return list(range(1, width + 1)), jobs // width


def campaign_run(stack: Stack, setup: Setup, *, name: str, scenarios: list[str], jobs: int, time_s: int,
                 target: int | None = None, client_hosts: list[str] | None = None,
                 failures: list[str] | None = None) -> int:
    """Makes a campaign and launches it; 5xx answers (the previous fault's aftermath) are retried and listed in
    `failures`: on a stale database connection a request fails at its first query, before it writes."""
    threads, repetitions = threads_and_repetitions(jobs)
    campaign = stack.api.retrying("POST", "/api/v1/campaigns/", failures=failures, body={
        "name": name, "targets": [target or setup.target], "scenarios": [setup.scenarios[s] for s in scenarios],
        "threads": threads, "repetitions": repetitions, "run_time_s": time_s, "warmup_override_s": 0,
        "keep_data": True, "client_hosts": client_hosts or []})
    launch = f"/api/v1/campaigns/{campaign['id']}/launch/"
    return int(stack.api.retrying("POST", launch, {"label": name}, failures=failures)["id"])


def run_wait(stack: Stack, run_id: int, *, timeout_s: float) -> str:
    watch = Watch(stack, run_id)
    try:
        wait_for(lambda: (watch._poll_sql(), watch.status in FINISHED)[1], timeout_s=timeout_s,
                   what=f"run {run_id}", interval_s=1)
    finally:
        watch.stop()
    return watch.status


def fault_run(stack: Stack, setup: Setup, fault: Fault, opts: argparse.Namespace, k: int) -> Row:
    repaired = stack_repair(stack)
    if repaired:
        log(f"  before the run: {'; '.join(repaired)}")
    name = f"faults {fault.name} {k} {time.strftime('%H%M%S')}"
    ctx = Ctx(stack, 0, Watch(stack, 0), opts)
    if fault.before_launch and fault.inject is not None:
        fault.inject(ctx)
    target, client_hosts = None, None
    if fault.netns:
        ctx.netns, target = setup.netns_client(stack)
        client_hosts = [ctx.netns.name]
    launched = time.monotonic()
    failures: list[str] = []
    ctx.run_id = campaign_run(stack, setup, name=name, scenarios=[fault.scenario], jobs=opts.jobs, time_s=opts.time,
                              target=target, client_hosts=client_hosts, failures=failures)
    if failures:
        log(f"  the launch was answered {len(failures)} time(s) with an error first: {'; '.join(failures)}")
    ctx.watch = watch = Watch(stack, ctx.run_id)
    watch.start()
    log(f"  run {ctx.run_id} launched ({opts.jobs} jobs × {opts.time} s)")
    t0 = None
    active: set[tuple[int, int]] = set()
    try:
        if not fault.before_launch:
            wait_for(lambda: watch.longest_t() >= opts.at or watch.status in FINISHED, timeout_s=600,
                       what=f"a job with {opts.at} s stored", interval_s=0.2)
            active = set(watch.first_seen)
            t0 = time.monotonic()
            if fault.inject is not None and watch.status not in FINISHED:
                log(f"  {fault.label} (a job has {watch.longest_t():.0f} s stored)")
                fault.inject(ctx)
        deadline = time.monotonic() + opts.bound
        missing_since: float | None = None
        while watch.status not in FINISHED and time.monotonic() < deadline:
            time.sleep(1)
            roles = stack.roles()
            if all(roles.values()):
                missing_since = None
            elif missing_since is None:
                missing_since = time.monotonic()
            elif time.monotonic() - missing_since > RESCUE_AFTER_S:
                _rescue(ctx, f"{', '.join(r for r, p in roles.items() if p is None)} gone {RESCUE_AFTER_S} s")
                missing_since = None
        if watch.status not in FINISHED:
            ctx.notes.append(f"still {watch.status} {opts.bound} s after the fault: cancelled by the harness")
            with contextlib.suppress(OSError, ApiError):
                stack.api.post(f"/api/v1/runs/{ctx.run_id}/cancel/")
            with contextlib.suppress(TimeoutError):
                wait_for(lambda: watch.status in FINISHED, timeout_s=120, what="the cancel")
            timed_out = True
        else:
            timed_out = False
    finally:
        time.sleep(1)
        watch.stop()
        if ctx.netns is not None:
            # Its worker consumes the shared queue too, and reaches no target at 127.0.0.1: not kept for later runs.
            setup.close()
    row = row_collect(watch, fault, opts, ctx, t0=t0, active=active, timed_out=timed_out)
    row.wall_s = time.monotonic() - launched
    return row


def row_collect(watch: Watch, fault: Fault, opts: argparse.Namespace, ctx: Ctx, *, t0: float | None,
                active: set[tuple[int, int]], timed_out: bool) -> Row:
    jobs = wait_for(lambda: _jobs(watch), timeout_s=60, what="the run's jobs")
    succeeded = sum(1 for j in jobs if j["status"] == "succeeded")
    attempts = sum(j["attempt"] - 1 for j in jobs)
    stored = sum(j["counted"] for j in jobs)
    earlier = sum(j["earlier"] for j in jobs)
    expected = sum(max(0, (j["time_s"] or opts.time) - 1) for j in jobs)
    recovery = None
    if ctx.cancelled_at is not None and watch.finished_at is not None:
        recovery = watch.finished_at - ctx.cancelled_at
    elif t0 is not None:
        later = [seen for key, seen in watch.first_seen.items() if key not in active and seen >= t0]
        recovery = min(later) - t0 if later else None
    errors = collections.Counter(" ".join(j["error"].split()) for j in jobs if j["error"])
    parts = [f"warning: {w}" for w in watch.seen["warning"]]
    parts += [f"{n}× {e}" if n > 1 else e for e, n in errors.most_common()]
    parts += [f"waiting: {w}" for w in watch.seen["wait"]]
    parts += watch.seen["attempt"]
    run_error = watch.run_error()
    if run_error:
        parts.append(f"run: {run_error}")
    if watch.seen["api"]:
        parts.append(f"API: {', '.join(watch.seen['api'])}")
    notes = list(ctx.notes)
    gaps = [f"job {j['id']} succeeded without t = {j['missing']}" for j in jobs if j["missing"] and j["status"] ==
            "succeeded"]
    notes += gaps
    notes += [f"job {j['id']} ({j['status']}): seconds stored past its --time {j['time_s']}: t = {j['late']}"
              for j in jobs if j["late"]]
    status = watch.status + (" (timed out)" if timed_out else "")
    if fault.expect == "cancelled" and ctx.stored_at_cancel is not None:
        # Of a cancelled run, every row stored before the cancel must stay, whichever attempt it belongs to.
        stored, expected, earlier = run_rows(watch, ctx.run_id), ctx.stored_at_cancel, 0
    return Row(fault.name, status, succeeded, len(jobs), attempts, stored, expected, earlier, recovery,
               " | ".join(parts) or "—", notes, expect=fault.expect)


def _jobs(watch: Watch) -> list[dict[str, Any]] | None:
    try:
        rows = watch.sql(
            "SELECT j.id, j.status, j.error, j.attempt, j.time_s, "
            "(SELECT array_agg(DISTINCT s.t ORDER BY s.t) FROM campaigns_intervalsample s WHERE s.job_id = j.id "
            " AND s.attempt = j.attempt), "
            "(SELECT count(*) FROM campaigns_intervalsample s WHERE s.job_id = j.id AND s.attempt <> j.attempt) "
            "FROM campaigns_job j WHERE j.run_id = %s ORDER BY j.position, j.id", (watch.run_id,))
    except Exception:
        return None
    jobs = []
    for job_id, status, error, attempt, time_s, seconds, earlier in rows:
        time_s = time_s or 0
        ts = [float(t) for t in seconds or []]
        counted = [t for t in ts if 0 < t <= time_s] if time_s else ts
        missing = sorted(set(range(1, time_s)) - {int(t) for t in counted}) if time_s else []
        late = [int(t) for t in ts if time_s and t > time_s]
        jobs.append({"id": job_id, "status": status, "error": error or "", "attempt": attempt,
                     "time_s": time_s, "counted": len(counted), "earlier": earlier, "missing": _spans(missing),
                     "late": _spans(late)})
    return jobs


def _spans(values: list[int]) -> str:
    """[5, 6, 7, 10] -> "5–7, 10"."""
    spans: list[list[int]] = []
    for v in values:
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    return ", ".join(f"{a}–{b}" if a != b else f"{a}" for a, b in spans)


# ---------------------------------------------------------------- the table


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table_lines(rows: list[Row], *, message_width: int = 70) -> list[str]:
    """The result table (Markdown), then each row's full message and notes."""
    head = ["fault", "run", "jobs ok", "attempts", "seconds stored / expected", "recovery", "pass",
            "what the user saw"]
    body = []
    for row in rows:
        seconds = f"{row.stored} / {row.expected}" + (f" (+{row.earlier} earlier)" if row.earlier else "")
        recovery = f"{row.recovery_s:.1f} s" if row.recovery_s is not None else "—"
        body.append([row.fault, row.status, f"{row.succeeded} / {row.jobs}", str(row.attempts), seconds, recovery,
                     "yes" if row.passed() else "NO", _cell(row.message, message_width)])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(head, widths, strict=True)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in body]
    details = []
    for row in rows:
        if len(row.message) > message_width or row.notes:
            details.append(f"- {row.fault} ({row.wall_s:.0f} s): {row.message}")
            details += [f"    · {note}" for note in row.notes]
    return lines + ([""] + details if details else [])


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--only", default="", help="faults to run, comma-separated (--list shows them)")
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--time", type=int, default=12, help="measured seconds per job")
    parser.add_argument("--at", type=float, default=5, help="inject once a job has this many seconds stored")
    parser.add_argument("--bound", type=float, default=600, help="longest wait for a run's end after its fault")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="leave the stack up at the end (Ctrl-C stops it)")
    parser.add_argument("--list", action="store_true")
    opts = parser.parse_args()
    if opts.list:
        for fault in FAULTS:
            print(f"{fault.name:<20} {fault.label}{'  (skipped: ' + fault.skip + ')' if fault.skip else ''}")
        return 0
    names = [n.strip() for n in opts.only.split(",") if n.strip()]
    unknown = sorted(set(names) - {f.name for f in FAULTS})
    if unknown:
        parser.error(f"--only: unknown fault(s) {', '.join(unknown)}; --list shows them")
    if opts.jobs < 1 or opts.time < 2 or opts.at >= opts.time:
        parser.error("--jobs must be ≥ 1, --time ≥ 2 and --at below --time")
    chosen = [f for f in FAULTS if not names or f.name in names]

    stack = Stack()
    stopped = False

    def stop_stack() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            log(f"stopping the stack ({stack.dir})")
            stack.stop()
            log(f"logs kept in {stack.logs_dir}")

    atexit.register(stop_stack)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    rows: list[Row] = []
    setup: Setup | None = None
    try:
        log("starting the isolated stack")
        stack.start(log=log)
        setup = Setup(stack, opts)
        log("preparing the dataset once (a 2-job run, one per scenario)")
        prepare_run = campaign_run(stack, setup, name=f"faults prepare {time.strftime('%H%M%S')}",
                                   scenarios=["ps", "rw"], jobs=1, time_s=2)
        status = run_wait(stack, prepare_run, timeout_s=600)
        if status != "succeeded":
            raise RuntimeError(f"the preparing run {prepare_run} ended {status}")
        for k in range(1, opts.repeat + 1):
            for fault in chosen:
                if fault.skip:
                    log(f"{fault.name}: skipped: {fault.skip}")
                    continue
                log(f"{fault.name} ({k}/{opts.repeat}): {fault.label}")
                try:
                    row = fault_run(stack, setup, fault, opts, k)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as exc:  # one fault's harness trouble must not lose the other rows
                    log(f"  harness error: {exc!r}")
                    row = Row(fault.name, "harness error", 0, opts.jobs, 0, 0, 0, 0, None, repr(exc)[:300])
                rows.append(row)
                log(f"  -> {row.status}, {row.succeeded}/{row.jobs} jobs, {row.stored}/{row.expected} s, "
                    f"in {row.wall_s:.0f} s")
        if opts.keep:
            log(f"--keep: the stack stays up at http://127.0.0.1:{stack.web_port}/ ({stack.dir}); Ctrl-C stops it")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        if setup is not None:
            setup.close()
        if rows:
            print()
            print(f"{opts.jobs}-job runs of {opts.time} s jobs, fault once a job had {opts.at:.0f} s stored; "
                  f"{time.monotonic() - started:.0f} s in all")
            print("\n".join(table_lines(rows)))
        stop_stack()
    return 0 if rows and all(r.passed() for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
