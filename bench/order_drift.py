"""Does interleaving a run's jobs keep a drifting host out of its comparison? Blocked against interleaved job order
(Campaign.job_order) on a MariaDB slowed by a load that ramps up over the run (issue "One measurement at a time").

Starts a MariaDB server of its own on a free port (bench/_stack.py's, in a temporary directory) with two identical
databases, registered as two targets of the same instance spec whose products differ only by name ("MariaDB A" and
"MariaDB B (order drift bench)"): the true Δ% between them is 0. The server is put into a cgroup of the bench's own
(cgroup v1's cpu controller, /sys/fs/cgroup/cpu/benchapp-order-drift-*), whose cpu.cfs_quota_us is lowered every
second during a run, linearly from --quota-from to --quota-to % of one core over the run's expected length (and held
there if the run lasts longer), so that the server's throughput drifts down as it would under a neighbour's growing
load, without loading the host. Only mariadbd is throttled: sysbench and benchapp run as usual.

A Celery worker of the bench's own (bench/_local.py: its own queue, the development database) first prepares the
dataset on both targets (one unthrottled run, also a warm-up), then the same campaign runs twice through
services.campaign_create / campaign_launch, once with job_order "blocked" (every A job, then every B job) and once
"interleaved" (A B A B …), the ramp restarted from the top for each: one scenario (--test on one table of 10,000
rows), one thread count (--threads; 2 by default: mariadbd then uses about a core unthrottled on this machine, 0.6
at 1 thread, so the quota binds from the ramp's top), --reps repetitions of --time-s seconds, quiet_s=0,
remeasure_spoiled=False, confirm_alarms=False. Each run's comparison is read with
campaigns.comparison.query.comparison_build (what GET /api/v1/comparisons/?runs=<id> answers), A as the baseline.

Prints, per order: every job in execution order (target, repetition, the quota while it measured, QPS, verdict),
then B's QPS Δ% against A, its 95 % interval, whether the interval holds the truth (0 %) and by how much the Δ%
misses it. The goal: the interleaved run's interval holds 0, the blocked one's does not. Interleaved still runs A
before B in every repetition, so a steady drift leaves B one job's step of it: expect its Δ% below 0, inside a
wide interval (each target's jobs span the whole ramp).

Everything it starts is removed at the end, on an error or Ctrl-C too: the cgroup (its quota lifted first), the
MariaDB server with its data directory, the worker. The rows it makes in the development database (products, spec,
targets order-drift-a and -b, scenario, campaigns and runs) are kept, as other benches keep theirs. Needs root (the
cgroup) and about 2 minutes with the defaults on this 2-core machine.

Usage: PYTHONPATH=. .venv/bin/python bench/order_drift.py [--reps 5] [--time-s 4] [--test oltp_point_select]
                                                          [--threads 2] [--quota-from 100] [--quota-to 20]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _local import local_worker, queue_setup
from _stack import TARGET_DB, TARGET_USER, Stack
from _timing import run_timing

from tests.helpers.waiting import wait_for

if TYPE_CHECKING:
    from campaigns.models import Product, Run, Scenario, Target

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
STEP_S = 1.0
BENCH = "order drift"
ORDERS = ("blocked", "interleaved")
DATABASE_B = "sbtest_b"


@dataclass
class CpuRamp:
    """A cgroup v1 cpu group of the bench's own whose quota ramps down over a run: `start()` begins at
    `from_pct` % of one core and lowers it every STEP_S seconds, linearly, to `to_pct` % at `duration_s`
    (held there after); `stop()` lifts it (unlimited). Every quota set is logged with its wall-clock time."""

    from_pct: float
    to_pct: float
    path: Path = field(default_factory=lambda: CPU_CGROUP / f"benchapp-order-drift-{secrets.token_hex(4)}")
    log: list[tuple[float, float | None]] = field(default_factory=list)  # (time.time(), % of a core or None)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def open(self) -> None:
        if not (CPU_CGROUP / "cpu.cfs_quota_us").exists():
            raise SystemExit(f"no cgroup v1 cpu controller at {CPU_CGROUP}: this bench throttles the server with it")
        self.path.mkdir()
        self.period_us = int((self.path / "cpu.cfs_period_us").read_text())

    def add(self, pid: int) -> None:
        """Moves a process, every thread of it, into the group (threads it starts later are born there)."""
        (self.path / "cgroup.procs").write_text(str(pid))

    def quota(self, pct: float | None) -> None:
        value = -1 if pct is None else max(1000, round(self.period_us * pct / 100))
        (self.path / "cpu.cfs_quota_us").write_text(str(value))
        self.log.append((time.time(), pct))

    def start(self, duration_s: float) -> None:
        self.stop()
        self._stop.clear()
        began = time.monotonic()

        def ramp() -> None:
            while not self._stop.is_set():
                done = min(1.0, (time.monotonic() - began) / duration_s)
                self.quota(self.from_pct + (self.to_pct - self.from_pct) * done)
                self._stop.wait(STEP_S)

        self._thread = threading.Thread(target=ramp, name="cpu-ramp", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=10)
            self._thread = None
        if self.path.exists():
            self.quota(None)

    def at(self, moment: datetime) -> float | None:
        """The quota (% of a core, None: unlimited) in force at a moment."""
        stamp, found = moment.timestamp(), None
        for when, pct in self.log:
            if when > stamp:
                break
            found = pct
        return found

    def close(self) -> None:
        """Lifts the quota, moves whatever is still inside back to this process's own group, removes the group."""
        if not self.path.exists():
            return
        with contextlib.suppress(OSError):
            self.stop()
        home = CPU_CGROUP / _own_cpu_cgroup().lstrip("/")
        for pid in (self.path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (home / "cgroup.procs").write_text(pid)
        for _ in range(50):  # rmdir fails (EBUSY) while an exiting task is still counted
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        print(f"could not remove the cgroup {self.path}", file=sys.stderr)


def _own_cpu_cgroup() -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    return "/"


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # a SIGTERM cleans up as Ctrl-C does, in main()'s finally


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--reps", type=int, default=5, help="repetitions per target, 2 to 8 (default 5)")
    args.add_argument("--time-s", type=int, default=4, help="measured seconds per job, 1 to 10 (default 4)")
    args.add_argument("--test", default="oltp_point_select", choices=("oltp_point_select", "oltp_read_only"))
    args.add_argument("--threads", type=int, default=2,
                      help="sysbench threads (default 2: mariadbd then wants about a core, so the quota binds from "
                           "the ramp's top)")
    args.add_argument("--quota-from", type=float, default=100.0, help="%% of one core at the ramp's top (100)")
    args.add_argument("--quota-to", type=float, default=20.0, help="%% of one core at its bottom (20)")
    opts = args.parse_args()
    if not 2 <= opts.reps <= 8 or not 1 <= opts.time_s <= 10:
        # Two repetitions a side for an interval; at most 8 of 10 s keeps the whole bench near 10 minutes.
        raise SystemExit("--reps must be 2 to 8 and --time-s 1 to 10")
    if os.geteuid() != 0:
        raise SystemExit("needs root: it makes a cgroup of its own under /sys/fs/cgroup/cpu")
    for signum in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a shell's background job inherits it ignored
        signal.signal(signum, _terminated)
    queue, host = queue_setup("order-drift")
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # the development database, as bench/quick_run.py brings it up to date
    ramp = CpuRamp(opts.quota_from, opts.quota_to)
    stack = Stack(dir=Path(tempfile.mkdtemp(prefix="benchapp-order-drift-")))
    started = time.monotonic()
    try:
        ramp.open()
        stack._mariadb()  # the stack's MariaDB alone: no PostgreSQL, Redis or benchapp of its own
        assert stack.mariadb is not None and stack.mariadb.proc is not None
        stack.mariadb_sql(f"CREATE DATABASE {DATABASE_B}")
        ramp.add(stack.mariadb.proc.pid)
        version = stack.mariadb_sql("SELECT VERSION()").strip()
        products, targets, scenario = rows_make(stack, version, opts)
        print(f"order drift: MariaDB {version} of its own on port {stack.mariadb.port}, targets {targets[0].name} "
              f"({TARGET_DB}) and {targets[1].name} ({DATABASE_B}), identical (true Δ% 0); {opts.test}, "
              f"{opts.threads} thread(s), {opts.reps} repetitions of {opts.time_s} s per target; mariadbd's CPU "
              f"quota ramps from {opts.quota_from:g} % to {opts.quota_to:g} % of one core over each run", flush=True)
        with local_worker(queue=queue, hostname=host, concurrency=2, log=f"/tmp/{queue}.log"):
            prepared = campaign_run(f"{BENCH} bench {queue} prepare", targets, scenario, opts, order="interleaved",
                                    repetitions=1, queue=queue)
            timing = run_timing(prepared)
            # The ramp spans the run's expected length: a job as long as the unthrottled preparation run's were
            # (its preparation left out), times the jobs of a run.
            per_job_s = max(opts.time_s + 1.0, (timing.wall_s - timing.prepare_s) / max(1, timing.jobs))
            ramp_s = per_job_s * 2 * opts.reps
            print(f"datasets prepared and warmed (run #{prepared.pk}, {prepared.status}); about {per_job_s:.1f} s a "
                  f"job unthrottled: the ramp lasts {ramp_s:.0f} s", flush=True)
            results = {}
            for order in ORDERS:
                ramp.start(ramp_s)
                try:
                    run = campaign_run(f"{BENCH} bench {queue} {order}", targets, scenario, opts, order=order,
                                       repetitions=opts.reps, queue=queue)
                finally:
                    ramp.stop()
                results[order] = run_report(run, order, products, targets, ramp)
        summary(results, opts, time.monotonic() - started)
    finally:
        ramp.close()
        if stack.mariadb is not None:
            stack.mariadb.stop(timeout_s=30)
        shutil.rmtree(stack.dir, ignore_errors=True)


def rows_make(stack: Stack, version: str, opts: argparse.Namespace
              ) -> tuple[list[Product], list[Target], Scenario]:
    """The two products (alike but for their names), the spec, the two targets (made or pointed at this
    invocation's server) and the scenario, through benchapp's services where users make them."""
    from campaigns import services
    from campaigns.models import Dataset, InstanceSpec, Product, Scenario, Target

    assert stack.mariadb is not None
    spec, _ = InstanceSpec.objects.get_or_create(label=f"{BENCH} bench host", defaults={"cpu_cores": 2,
                                                                                        "memory_gb": 8})
    products, targets = [], []
    for letter, database in (("A", TARGET_DB), ("B", DATABASE_B)):
        product, _ = Product.objects.update_or_create(name=f"MariaDB {letter} ({BENCH} bench)",
                                                      defaults={"engine": Product.Engine.MARIADB, "version": version})
        products.append(product)
        fields = {"product": product, "spec": spec, "driver": Target.Driver.MYSQL, "host": "127.0.0.1",
                  "port": stack.mariadb.port, "database": database, "user": TARGET_USER}
        name = f"order-drift-{letter.lower()}"
        existing = Target.objects.filter(name=name).first()
        if existing is None:
            targets.append(services.target_create(name=name, password=stack.target_password, **fields))
        else:
            targets.append(services.target_update(target=existing, password=stack.target_password, **fields))
    dataset = Dataset.objects.filter(name=f"{BENCH} 1x10000").first() or services.dataset_create(
        name=f"{BENCH} 1x10000", tables=1, table_size=10_000)
    fields = {"test": opts.test, "dataset": dataset, "time_s": opts.time_s, "warmup_s": 1, "report_interval_s": 1,
              "cleanup": Scenario.Cleanup.KEEP, "prepare_mode": Scenario.PrepareMode.AUTO}
    existing_scenario = Scenario.objects.filter(name=f"{BENCH} {opts.test}").first()
    scenario = (services.scenario_create(name=f"{BENCH} {opts.test}", **fields) if existing_scenario is None
                else services.scenario_update(scenario=existing_scenario, **fields))
    return products, targets, scenario


def campaign_run(name: str, targets: list[Target], scenario: Scenario, opts: argparse.Namespace, *, order: str,
                 repetitions: int, queue: str) -> Run:
    """A campaign of both targets made and launched as a user does, waited for to its end."""
    from campaigns import services
    from campaigns.models import Run

    campaign = services.campaign_create(
        name=name, targets=targets, scenarios=[scenario], threads=[opts.threads], repetitions=repetitions,
        run_time_s=opts.time_s, quiet_s=0, remeasure_spoiled=False, confirm_alarms=False, job_order=order)
    run = services.campaign_launch(campaign=campaign)
    jobs = 2 * repetitions
    deadline = time.monotonic() + 120 + jobs * (opts.time_s + 30)
    try:
        while not run.is_finished():
            if time.monotonic() > deadline:
                raise SystemExit(f"run #{run.pk} ({order}) did not finish in time; see /tmp/{queue}.log")
            time.sleep(0.5)
            run.refresh_from_db()
    except BaseException:
        # Not left active on a server that is about to go: cancelled, and closed by the worker, still up, within
        # a poll or two.
        with contextlib.suppress(Exception):
            services.run_cancel(run=run)
            wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=20, what=f"run #{run.pk} to close")
        raise
    failed = run.jobs.exclude(status="succeeded")
    if failed.exists():
        raise SystemExit(f"run #{run.pk} ({order}): {failed.count()} jobs did not succeed: "
                         f"{failed.first().error[:300]}; see /tmp/{queue}.log")
    return run


def _pct(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:5.1f} %"


def run_report(run: Run, order: str, products: list[Product], targets: list[Target], ramp: CpuRamp
               ) -> dict[str, Any]:
    """Prints the run's jobs in execution order and B's Δ% against A; returns the figures."""
    from campaigns.comparison.query import comparison_build

    letters = {targets[0].pk: "A", targets[1].pk: "B"}
    print(f"\n{order}: run #{run.pk}, jobs in execution order")
    print("  pos  target  rep   quota while measuring        QPS  verdict")
    for job in run.jobs.order_by("position").select_related("result").prefetch_related("clients"):
        starts = [c.started_at for c in job.clients.all() if c.started_at is not None]
        exits = [c.exited_at for c in job.clients.all() if c.exited_at is not None]
        middle = min(starts) + (max(exits) - min(starts)) / 2 if starts and exits else None
        quota = _pct(ramp.at(middle)) if middle is not None else "?"
        print(f"  {job.position:3d}  {letters[job.target_id]:>6}  {job.repetition:3d}   {quota:>21}  "
              f"{job.result.qps:9,.0f}  {job.verdict or '-'}")
    comparison = comparison_build(run_ids=[run.pk], baseline=products[0].pk)
    row = comparison["groups"][0]["rows"][0]
    names = [column["name"] for column in comparison["products"]]
    base, cell = row["cells"][0], row["cells"][1]
    assert base is not None and cell is not None and names[0] == products[0].name, names
    delta = cell["delta_pct"]["qps"]
    interval = (cell.get("delta_ci95_pct") or {}).get("qps")
    significance = cell.get("significance") or {}
    low, high = (interval or [None, None])[:2]
    holds = low is not None and high is not None and low <= 0 <= high
    print(f"  A {base['qps']['value']:,.0f} QPS, B {cell['qps']['value']:,.0f} QPS (geometric means of "
          f"{base['n']} and {cell['n']} jobs)")
    print(f"  Δ% of B against A: {delta:+.1f} %, 95 % interval "
          f"{'none' if low is None else f'{low:+.1f} … {high:+.1f} %'}: "
          f"{'holds the truth (0 %)' if holds else 'misses the truth (0 %)'}; the Δ% is {abs(delta):.1f} points "
          f"from it" + ("" if holds or low is None else
                        f", the interval's near end {min(abs(low), abs(high)):.1f} points") +
          f"; comparison's verdict: {significance.get('verdict', '-')}")
    return {"run": run.pk, "delta": delta, "low": low, "high": high, "holds": holds,
            "verdict": significance.get("verdict")}


def summary(results: dict[str, dict[str, Any]], opts: argparse.Namespace, elapsed_s: float) -> None:
    print(f"\nsummary ({opts.reps} repetitions of {opts.time_s} s per target, quota {opts.quota_from:g} → "
          f"{opts.quota_to:g} % of a core; {elapsed_s / 60:.1f} min in all):")
    for order, r in results.items():
        interval = "no interval" if r["low"] is None else f"[{r['low']:+.1f}, {r['high']:+.1f}] %"
        miss = "" if r["holds"] or r["low"] is None else \
            f", interval {min(abs(r['low']), abs(r['high'])):.1f} points short of 0"
        print(f"  {order:<12} run #{r['run']}: Δ% {r['delta']:+6.1f} %, 95 % interval {interval}: "
              f"{'holds 0' if r['holds'] else 'misses 0'} (Δ% off by {abs(r['delta']):.1f} points{miss})")
    expected = results["interleaved"]["holds"] and not results["blocked"]["holds"]
    print(f"  goal (interleaved holds 0, blocked does not): {'met' if expected else 'NOT met'}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted: its run cancelled, its cgroup, MariaDB server and worker removed")
