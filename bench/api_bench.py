"""How fast is the REST API on a realistic history?

Fills a PostgreSQL database of its own (benchapp_bench: migrated here, never the development
one) with 10,000 jobs and 5,000,000 interval samples (COPY; about 45 s on a 2-core machine), then
starts gunicorn on 127.0.0.1 (a spare port; --workers × --threads, default 4 × 2 as scripts/web.sh
on 2 cores) and loads it
from an asyncio HTTP/1.1 client with 16 keep-alive connections, 30 s per endpoint group:

    lists        every list endpoint in turn (default page of 50), and 11    goal p95 < 50 ms
                 filtered, ordered or deeper pages (one run's jobs, ?offset=5000, ...)
    series       1-hour jobs' series downsampled to ≤ 1,000 points         goal p95 < 100 ms
                 (100 jobs × minmax and lttb: 200 distinct answers; series_uncached: a
                 max_points of its own per request, so never from the cache: the work itself)
    samples      finished jobs' samples ?since= (polling a past job)       goal p95 < 100 ms
    comparison   2 products × 5 scenarios × 11 specs (990 cells of 10 reps) goal p95 < 200 ms
                 (in turn with 38 narrower comparisons of the same products: either product
                 as the baseline, one scenario, one spec, a thread range; 40 distinct answers)

Comparisons, list pages (keyed by PostgreSQL's snapshot: nothing writes during the bench) and
finished jobs' series and samples are cached in Redis (campaigns/cache.py); the server gets
a cache key prefix of its own per bench run, so each run starts cold (its entries are dropped
at the end). For those groups the bench first prints the cold figures (every distinct request
once, one connection, empty cache), then the warm ones under load.

With 2 or more CPUs the load client is pinned to CPU 0 and gunicorn to CPU 1 (taskset;
PostgreSQL and Redis are not pinned), so that the client's own work is not counted as the
server's; --no-pin leaves both to the scheduler.

and prints p50/p95/p99, requests per second, error counts, and the CPU time per request of gunicorn's
processes and of the PostgreSQL backends serving the bench (steadier than req/s when other work shares the
machine). Each group runs twice: saturated (16 connections sending back-to-back, as wrk does: the goals
above) and paced (the same 16 connections at a moderate total rate: PACED_RATES), because on a 2-core machine shared by client
and server the saturated p95 is mostly time spent queueing behind the other 15 connections
(closed loop: p95 ≈ 16 × service time / 2 cores).

Usage: .venv/bin/python bench/api_bench.py [--duration 30] [--connections 16] [--refill] [--groups lists,series]
                                           [--workers 4] [--threads 2] [--no-pin]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "benchapp_bench"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
JOBS = 10_000
SAMPLES = 5_000_000
LONG_JOBS = 100  # 1-hour jobs: 2 clients × 3,600 s
LONG_SECONDS = 3_600
PRODUCTS = ("MySQL 8.0 (bench)", "TDSQL-C MySQL (bench)")
SPECS = 11
SCENARIOS = ("oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp_point_select", "oltp_update_index")
THREADS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
GOALS_MS = {"lists": 50, "series": 100, "series_uncached": 100, "samples": 100, "comparison": 200}
CACHED_GROUPS = ("lists", "series", "samples", "comparison")
# Requests per second of the paced runs: a busy team's dashboards and CI scripts, not a flood.
PACED_RATES = {"lists": 40.0, "series": 20.0, "series_uncached": 10.0, "samples": 40.0, "comparison": 5.0}


def _psql(sql: str, db: str = "postgres") -> str:
    return subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", db, "-tAc", sql],
                          check=True, capture_output=True, text=True).stdout.strip()


def cluster_xid() -> int:
    """The server's next transaction id: it moves with every write transaction of any database on it."""
    return int(_psql("SELECT pg_snapshot_xmax(pg_current_snapshot())"))


def cpu_seconds(server: subprocess.Popen[bytes]) -> tuple[float, float]:
    """CPU seconds (user + system) used so far by gunicorn's processes and by the PostgreSQL backends connected to
    the bench's database: per request, a figure that other work on the machine moves far less than req/s."""
    import psutil

    from campaigns.execution.metrics import processes_cpu_s

    master = psutil.Process(server.pid)
    backends = {int(pid) for pid in _psql(f"SELECT pid FROM pg_stat_activity WHERE datname = '{DB_NAME}' "
                                          f"AND pid <> pg_backend_pid()").split()}
    return processes_cpu_s([master, *master.children(recursive=True)]), \
        processes_cpu_s(proc for proc in psutil.process_iter() if proc.pid in backends)


def setup_django() -> None:
    if _psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'") != "1":
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB_NAME], check=True)
    os.environ["DATABASE_URL"] = DB_URL
    # The server (started with this environment) and this process share a cache prefix of this run.
    os.environ["BENCHAPP_CACHE_PREFIX"] = f"api-bench-{os.getpid()}-{time.time_ns()}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


# ---------------------------------------------------------------- the history


def fill(refill: bool) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from campaigns.execution.results import sample_row, samples_copy
    from campaigns.models import (
        Campaign,
        Dataset,
        InstanceSpec,
        IntervalSample,
        Job,
        JobResult,
        Product,
        Run,
        Scenario,
        Target,
    )
    from campaigns.sysbench.parser import Interval

    if not refill and Job.objects.count() == JOBS and IntervalSample.objects.count() >= SAMPLES:
        print(f"history already there: {JOBS:,} jobs, {IntervalSample.objects.count():,} samples")
        return
    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE campaigns_intervalsample, campaigns_jobresult, campaigns_jobclient, campaigns_job, "
                       "campaigns_run, campaigns_campaign_targets, campaigns_campaign_scenarios, campaigns_campaign, "
                       "campaigns_target, campaigns_scenario, campaigns_dataset, campaigns_instancespec, "
                       "campaigns_product RESTART IDENTITY CASCADE")
    rng = random.Random(42)
    with transaction.atomic():
        products = [Product.objects.create(name=name, engine="mysql") for name in PRODUCTS]
        specs = [InstanceSpec.objects.create(label=f"{2 ** (i // 2 + 1)}-core {4 * 2 ** (i // 2 + 1)} GB #{i}",
                                             cpu_cores=2 ** (i // 2 + 1), memory_gb=4 * 2 ** (i // 2 + 1))
                 for i in range(SPECS)]
        targets = [Target.objects.create(name=f"{p.name} on {s.label}", product=p, spec=s, driver="mysql",
                                         host="127.0.0.1", port=3306, database="sbtest", user="root")
                   for p in products for s in specs]
        dataset = Dataset.objects.create(name="bench 10 x 1M", tables=10, table_size=1_000_000)
        scenarios = [Scenario.objects.create(name=f"bench {t}", test=t, dataset=dataset, time_s=300)
                     for t in SCENARIOS]
        campaign = Campaign.objects.create(name="bench campaign", threads=list(THREADS))
        campaign.targets.set(targets)
        campaign.scenarios.set(scenarios)
        now = timezone.now()
        cells = [(t, s, n) for t in targets for s in scenarios for n in THREADS]  # 990
        jobs: list[Job] = []
        run_index = 0
        while len(jobs) < JOBS:
            run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now,
                                     finished_at=now, label=f"bench run {run_index}")
            for position, (target, scenario, threads) in enumerate(cells):
                if len(jobs) == JOBS:
                    break
                jobs.append(Job(run=run, target=target, scenario=scenario, threads=threads, position=position,
                                repetition=1, tables=10, table_size=1_000_000, status=Job.Status.SUCCEEDED,
                                started_at=now, finished_at=now))
            run_index += 1
        Job.objects.bulk_create(jobs, batch_size=2000)
        results = []
        for job in jobs:
            speed = {"MySQL": 1.0}.get(job.target.product.name.split()[0], 1.4)
            qps = 400 * min(job.threads, 64) ** 0.8 * speed * rng.uniform(0.95, 1.05)
            results.append(JobResult(job=job, tps=qps / 20, qps=qps, latency_avg_ms=job.threads * 1000 / qps * 20,
                                     latency_pct=95.0, latency_pct_ms=job.threads * 1500 / qps * 20, duration_s=300))
        JobResult.objects.bulk_create(results, batch_size=2000)
    print(f"rows: {len(jobs):,} jobs in {run_index} runs, {len(results):,} results "
          f"({time.monotonic() - started:.1f} s)")

    # Samples: 100 one-hour jobs (2 clients × 3,600 s), the rest 2 clients × as many seconds as fill 5 M.
    started = time.monotonic()
    long_jobs = jobs[:LONG_JOBS]
    per_short = (SAMPLES - LONG_JOBS * 2 * LONG_SECONDS) // ((JOBS - LONG_JOBS) * 2)

    def rows() -> Iterator[tuple[object, ...]]:
        nonlocal written
        for index, job in enumerate(jobs):
            seconds = LONG_SECONDS if index < LONG_JOBS else per_short
            if index == len(jobs) - 1:
                seconds = (SAMPLES - written) // 2
            share = max(1, job.threads // 2)
            for client in (0, 1):
                for t in range(1, seconds + 1):
                    qps = 2000 + 300 * ((t * 7 + client) % 13) / 13
                    yield sample_row(job_id=job.pk, client_index=client, attempt=1, interval=Interval(
                        t=float(t), threads=share, tps=round(qps / 20, 2), qps=round(qps, 2),
                        reads_per_s=round(qps * 0.7, 2), writes_per_s=round(qps * 0.2, 2),
                        other_per_s=round(qps * 0.1, 2), latency_pct_ms=1 + (t % 17) / 4, latency_pct=95.0,
                        errors_per_s=0.0, reconnects_per_s=0.0))
                written += seconds

    written = 0
    samples_copy(rows())
    # As autovacuum would have by then: fresh statistics and a visibility map (index-only scans).
    connection.ensure_connection()
    autocommit = connection.get_autocommit()
    connection.set_autocommit(True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    connection.set_autocommit(autocommit)
    print(f"samples: {written:,} rows by COPY ({time.monotonic() - started:.1f} s); "
          f"{len(long_jobs)} one-hour jobs of {2 * LONG_SECONDS:,} rows")


# ---------------------------------------------------------------- the load


class Client:
    """A minimal HTTP/1.1 keep-alive client: cheap enough not to steal the server's CPU."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = f"Host: 127.0.0.1\r\nAuthorization: Token {token}\r\nAccept: application/json\r\n"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            try:
                self.writer.write(f"GET {path} HTTP/1.1\r\n{self.headers}\r\n".encode())
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.writer.close()
                self.writer = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _response(self) -> tuple[int, bytes]:
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            body = await self.reader.read()
        if headers.get("connection", "").lower() == "close" and self.writer is not None:
            self.writer.close()
            self.writer = None
        return status, body


async def load(port: int, token: str, paths: list[str], *, duration_s: float, connections: int,
               rate: float | None, max_requests: int | None = None) -> dict[str, object]:
    """Runs the paths round-robin from `connections` connections; rate=None means back to back."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.monotonic() + duration_s
    counter = iter(range(10**9))
    interval = connections / rate if rate else 0.0

    async def worker(index: int) -> None:
        client = Client(port, token)
        next_at = time.monotonic() + (interval * index / connections if interval else 0)
        while True:
            if interval:
                delay = next_at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_at += interval
            if time.monotonic() >= deadline:
                break
            index = next(counter)
            if max_requests is not None and index >= max_requests:
                break
            path = paths[index % len(paths)]
            started = time.perf_counter()
            try:
                status, _ = await client.get(path)
            except Exception as exc:  # noqa: BLE001 - counted and reported, the load goes on
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                client = Client(port, token)
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            if status != 200:
                errors[f"HTTP {status}"] = errors.get(f"HTTP {status}", 0) + 1

    began = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(connections)))
    elapsed = time.monotonic() - began
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))] if latencies else float("nan")

    return {"n": len(latencies), "rps": len(latencies) / elapsed, "p50": pct(0.50), "p95": pct(0.95),
            "p99": pct(0.99), "max": latencies[-1] if latencies else float("nan"), "errors": errors}


def cache_forget() -> None:
    """Drops this run's cache entries (their prefix is this run's): hundreds of MB otherwise."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])
    keys = list(client.scan_iter(match=f"{settings.CACHES['default']['KEY_PREFIX']}:*", count=1000))
    for start in range(0, len(keys), 1000):
        client.unlink(*keys[start:start + 1000])


def spare_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gunicorn(port: int, *, workers: int, threads: int, cpu: int | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ, DATABASE_URL=DB_URL, DEBUG="false", DB_CONN_MAX_AGE="600", LOG_LEVEL="ERROR")
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    proc = subprocess.Popen(
        [*pin, str(ROOT / ".venv/bin/gunicorn"), "benchapp.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--threads", str(threads), "--timeout", "60", "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not start within 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per endpoint group and mode")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--refill", action="store_true", help="rebuild the history even if it is there")
    parser.add_argument("--groups", default="lists,series,series_uncached,samples,comparison")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2, help="gunicorn threads per worker")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the client and the server to CPUs")
    opts = parser.parse_args()

    setup_django()
    fill(opts.refill)
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from campaigns.models import InstanceSpec, Job, Product, Run, Scenario

    user, _ = get_user_model().objects.get_or_create(username="bench-viewer")
    user.groups.add(Group.objects.get(name="viewer"))
    from campaigns.services import token_issue

    token = token_issue(user=user)
    long_ids = list(Job.objects.order_by("pk").values_list("pk", flat=True)[:LONG_JOBS])
    short_ids = list(Job.objects.order_by("-pk").values_list("pk", flat=True)[:200])
    run_ids = list(Run.objects.order_by("pk").values_list("pk", flat=True)[:5])
    products = [str(p) for p in Product.objects.filter(name__in=PRODUCTS).order_by("pk").values_list("pk", flat=True)]
    product_ids = ",".join(products)
    reversed_ids = ",".join(reversed(products))
    scenario_ids = list(Scenario.objects.filter(test__in=SCENARIOS, name__startswith="bench ").values_list("pk", flat=True))
    spec_ids = list(InstanceSpec.objects.filter(label__contains=" GB #").values_list("pk", flat=True))
    comparisons = [f"/api/v1/comparisons/?products={product_ids}", f"/api/v1/comparisons/?products={reversed_ids}"]
    for ids in (product_ids, reversed_ids):
        comparisons += [f"/api/v1/comparisons/?products={ids}&scenarios={pk}" for pk in scenario_ids]
        comparisons += [f"/api/v1/comparisons/?products={ids}&specs={pk}" for pk in spec_ids]
        comparisons += [f"/api/v1/comparisons/?products={ids}&threads={','.join(map(str, THREADS[i:i + 3]))}"
                        for i in range(0, len(THREADS), 3)]
    # The full comparison (the goal's) as often as all the narrower ones together.
    comparison_paths = [path for i, narrow in enumerate(comparisons[2:]) for path in (comparisons[i % 2], narrow)]
    lists = ["products", "specs", "targets", "datasets", "scenarios", "campaigns", "runs", "jobs", "results",
             "client-hosts"]
    groups = {
        # Every list's first page, and the filtered, ordered and deeper pages scripts ask for.
        "lists": [f"/api/v1/{name}/" for name in lists] + [
            f"/api/v1/jobs/?run={run_id}&ordering=position" for run_id in run_ids[:5]] + [
            "/api/v1/jobs/?status=succeeded&ordering=-threads", "/api/v1/jobs/?offset=5000",
            "/api/v1/results/?ordering=-qps", "/api/v1/results/?offset=2000&limit=100",
            "/api/v1/runs/?status=succeeded&ordering=-started_at", "/api/v1/targets/?ordering=name"],
        "series": [f"/api/v1/jobs/{pk}/series/{query}" for query in ("", "?method=lttb") for pk in long_ids],
        # Finished jobs' series are cached; a max_points of its own per request measures the work itself.
        "series_uncached": [f"/api/v1/jobs/{pk}/series/?max_points={random.Random(pk * 7 + i).randint(500, 1000)}"
                            for i in range(20) for pk in long_ids],
        "samples": [f"/api/v1/jobs/{pk}/samples/?since={random.Random(pk).randint(0, 150)}" for pk in short_ids],
        "comparison": comparison_paths,
    }
    port = spare_port()
    pin = not opts.no_pin and len(os.sched_getaffinity(0)) >= 2
    cpus = sorted(os.sched_getaffinity(0))
    server = start_gunicorn(port, workers=opts.workers, threads=opts.threads, cpu=cpus[1] if pin else None)
    if pin:
        os.sched_setaffinity(0, {cpus[0]})
    placement = (f"client pinned to CPU {cpus[0]}, gunicorn to CPU {cpus[1]}, PostgreSQL and Redis unpinned"
                 if pin else "nothing pinned")
    print(f"gunicorn on 127.0.0.1:{port} ({opts.workers} workers × {opts.threads} threads); {placement}; "
          f"{os.cpu_count()} CPUs; {opts.connections} connections, {opts.duration:.0f} s per run; "
          f"load average {os.getloadavg()[0]:.1f} (other work on the machine skews every figure)")
    failed = []
    try:
        for name in opts.groups.split(","):
            paths = groups[name]
            if name in CACHED_GROUPS:
                # Cold: every distinct request once, one at a time, before anything is cached.
                distinct = list(dict.fromkeys(paths))
                result = asyncio.run(load(port, token, distinct, duration_s=3600, connections=1, rate=None,
                                          max_requests=len(distinct)))
                print(f"{name:<15} {'cold':<11} n={result['n']:>6} (each distinct request once, empty cache)  "
                      f"p50 {result['p50']:6.1f} ms  p95 {result['p95']:6.1f} ms  max {result['max']:7.1f} ms  "
                      f"errors {sum(result['errors'].values())} {result['errors'] or ''}")
            # Warm the workers (imports, connections) before measuring.
            asyncio.run(load(port, token, paths, duration_s=2, connections=opts.connections, rate=None))
            for mode, rate in (("saturated", None), (f"paced {PACED_RATES[name]:.0f}/s", PACED_RATES[name])):
                xid_before, cpu_before = cluster_xid(), cpu_seconds(server)
                result = asyncio.run(load(port, token, paths, duration_s=opts.duration,
                                          connections=opts.connections, rate=rate))
                writes = cluster_xid() - xid_before
                web_cpu, db_cpu = (after - before for after, before in zip(cpu_seconds(server), cpu_before, strict=True))
                goal = GOALS_MS[name]
                verdict = "ok" if result["p95"] < goal and not result["errors"] else "MISSED"
                if verdict != "ok":
                    failed.append(f"{name} {mode}")
                print(f"{name:<15} {mode:<11} n={result['n']:>6} {result['rps']:7.1f} req/s  "
                      f"p50 {result['p50']:6.1f} ms  p95 {result['p95']:6.1f} ms  p99 {result['p99']:6.1f} ms  "
                      f"max {result['max']:7.1f} ms  errors {sum(result['errors'].values())} {result['errors'] or ''}"
                      f"  goal p95 < {goal} ms: {verdict}")
                if result["n"]:
                    print(f"{'':<15} CPU per request: gunicorn {1000 * web_cpu / result['n']:.2f} ms, PostgreSQL "
                          f"{1000 * db_cpu / result['n']:.2f} ms (user + system time of their processes)")
                if writes > 2 and name in CACHED_GROUPS:
                    print(f"{'':<15} {writes} write transactions ran on the PostgreSQL server meanwhile (other "
                          f"databases included): cached answers are keyed by its snapshot, so each one outdated "
                          f"the cache and this figure is not the cached one")
        if "lists" in opts.groups:
            for path in groups["lists"]:
                result = asyncio.run(load(port, token, [path], duration_s=max(3.0, opts.duration / 10),
                                          connections=opts.connections, rate=20.0))
                print(f"  {path:<26} paced 20/s: p50 {result['p50']:6.1f} ms  p95 {result['p95']:6.1f} ms  "
                      f"errors {sum(result['errors'].values())}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        cache_forget()
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("all goals met" if not failed else f"goals missed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
