"""Many client hosts reporting at once. Goal: 200 clients at 1 Hz, each second visible in the samples API under 1 s
after the clients printed it, and under 25 % of one core for the web, the worker and PostgreSQL together.

One job with --clients JobClients, made running through campaigns.execution.transitions (development database).
Client processes (--procs, each with --conns threads and so that many database connections) play the clients: at the
common start + t each simulated client takes its next line of a real recorded sysbench output
(tests/data/sysbench/mysql_oltp_point_select.txt, renumbered to [ t s ]) and does what a real client does with it,
through the same functions: parser.parse_interval_line() and results.sample_store() (one INSERT per line), the
client heartbeat of measuring.client_heartbeat() (once a second, as BENCHAPP_CANCEL_POLL_S=1), the live output tail
every 2 s, and a HostSample row a second stored in batches of metrics.FLUSH_EVERY_S (as the host sampler does).
sysbench itself is a stand-in here: the lines are replayed, nothing is measured.

Beside them: gunicorn (scripts/web.sh's command, 2 workers × 2 threads) serving the API, a Celery worker with its
reconciler thread (the run is on its queue), and a poller that asks GET /api/v1/jobs/{id}/samples/?since= every
250 ms as the run page does; second t counts as visible when the API returns it with all clients summed in.
lag = seen − (start + t). Server CPU: psutil CPU times of gunicorn's and the worker's process trees and of the
PostgreSQL backends serving them (PGAPPNAME=hosts-scale; backends of the client processes are counted apart: on a
real installation they serve remote hosts, but their work is the server's too, so the total includes them).
PostgreSQL's background writers are shared with whatever else runs on this machine: printed apart, not counted.

Usage: .venv/bin/python bench/hosts_scale.py [--clients 200] [--seconds 30] [--procs 4] [--conns 5] [--skip tail]
(the development database needs this branch's migrations; DATABASE_URL=... for another one)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from typing import Any

import psutil
from _django import ROOT, setup

APP = "hosts-scale"
RECORDED = ROOT / "tests" / "data" / "sysbench" / "mysql_oltp_point_select.txt"


def _lines() -> list[str]:
    """The recorded per-second lines, without their "[ Ns ]" prefix."""
    found = [re.sub(r"^\[ \d+s \] ", "", line) for line in RECORDED.read_text().splitlines()
             if re.match(r"^\[ \d+s \] thds:", line)]
    assert found, f"no interval line in {RECORDED}"
    return found


# ---------------------------------------------------------------- the client processes


def _client_process(job_id: int, clients: list[tuple[int, int]], conns: int, start: float, seconds: int,
                    written: Any, skip: frozenset[str]) -> None:
    """Plays `clients` ((pk, index) pairs) on `conns` threads, each with its own database connection; puts on
    `written` (t, when its last line of second t was stored) for each second."""
    os.environ["PGAPPNAME"] = f"{APP}-clients"
    setup()
    from django.db import connection

    from campaigns.execution.measuring import client_heartbeat
    from campaigns.execution.metrics import FLUSH_EVERY_S
    from campaigns.execution.results import sample_store
    from campaigns.models import HostSample, JobClient
    from campaigns.sysbench import parser
    from campaigns.sysbench.command import redact_text

    lines = _lines()
    last_write: dict[int, float] = {}
    lock = threading.Lock()

    def play(share: list[tuple[int, int]]) -> None:
        tails: dict[int, list[str]] = {pk: [] for pk, _ in share}
        hosts: dict[int, list[HostSample]] = {pk: [] for pk, _ in share}
        for t in range(1, seconds + 1):
            delay = start + t - time.time()
            if delay > 0:
                time.sleep(delay)
            for pk, index in share:
                line = f"[ {t}s ] {lines[(t - 1 + index) % len(lines)]}"
                tails[pk].append(line)
                interval = parser.parse_interval_line(line)
                if interval is not None:
                    sample_store(job_id=job_id, client_index=index, attempt=1, interval=interval)
                    with lock:
                        last_write[t] = max(last_write.get(t, 0.0), time.time())
                if "heartbeat" not in skip:
                    client_heartbeat(pk, 1)
                if t % 2 == 0 and "tail" not in skip:
                    JobClient.objects.filter(pk=pk).update(raw_output=redact_text("\n".join(tails[pk][-200:]), []))
                hosts[pk].append(HostSample(
                    job_id=job_id, client_index=index, t=t, cpu_user_pct=40.0, cpu_system_pct=5.0, cpu_iowait_pct=0.0,
                    cpu_steal_pct=0.0, cpu_busy_pct=45.0, per_core_busy_pct=[45.0, 45.0], client_cpus_busy_pct=45.0,
                    sysbench_cpu_pct=80.0, load_1m=1.0, context_switches_per_s=5000.0, net_bytes_in_per_s=1e6,
                    net_bytes_out_per_s=1e6, net_packets_in_per_s=1e4, net_packets_out_per_s=1e4,
                    memory_used_pct=30.0))
                if "host" in skip:
                    hosts[pk] = []
                elif len(hosts[pk]) >= FLUSH_EVERY_S:
                    HostSample.objects.bulk_create(hosts[pk], ignore_conflicts=True)
                    hosts[pk] = []
        connection.close()

    threads = [threading.Thread(target=play, args=(clients[i::conns],)) for i in range(conns)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written.put(last_write)


# ---------------------------------------------------------------- CPU accounting


def _tree_cpu(pid: int) -> float:
    from campaigns.execution.metrics import processes_cpu_s

    try:
        root = psutil.Process(pid)
        return processes_cpu_s([root, *root.children(recursive=True)])
    except psutil.NoSuchProcess:
        return 0.0


class BackendCpu:
    """CPU seconds of the PostgreSQL backends whose application_name starts with a prefix (kept per pid: a
    backend's last reading stands once it has ended)."""

    def __init__(self, cursor: Any, prefix: str) -> None:
        self.cursor, self.prefix = cursor, prefix
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}

    def read(self) -> None:
        self.cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name LIKE %s", [self.prefix + "%"])
        for (pid,) in self.cursor.fetchall():
            try:
                times = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            self.first.setdefault(pid, times.user + times.system)
            self.last[pid] = times.user + times.system

    def spent_s(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


def _pg_background_cpu() -> float:
    from campaigns.execution.metrics import processes_cpu_s

    background = ("walwriter", "checkpointer", "background writer", "autovacuum", "logical replication")
    return processes_cpu_s(proc for proc in psutil.process_iter(["name", "cmdline"])
                           if proc.info["name"] == "postgres"
                           and any(w in " ".join(proc.info["cmdline"] or []) for w in background))


# ---------------------------------------------------------------- the bench


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--clients", type=int, default=200)
    args.add_argument("--seconds", type=int, default=30)
    args.add_argument("--procs", type=int, default=4, help="client processes")
    args.add_argument("--conns", type=int, default=5, help="threads (database connections) per client process")
    args.add_argument("--skip", default="", help="to see what costs what: any of heartbeat,tail,host (comma-separated)")
    opts = args.parse_args()
    queue = f"hosts-scale-{uuid.uuid4().hex[:6]}"
    os.environ["BENCHAPP_QUEUE"] = queue
    os.environ["PGAPPNAME"] = f"{APP}-bench"
    setup()
    from django.contrib.auth import get_user_model
    from django.db import connection, connections

    from campaigns import services
    from campaigns.execution import transitions
    from campaigns.models import Campaign, ClientHost, Dataset, Job, JobClient, Product, Scenario, Target

    product, _ = Product.objects.get_or_create(name="MariaDB (hosts scale bench)", defaults={"engine": "mariadb"})
    target, _ = Target.objects.update_or_create(
        name="hosts-scale-mariadb", defaults={"product": product, "driver": "mysql", "host": "127.0.0.1",
                                              "port": 3306, "database": "bench_hosts_scale", "user": "root"})
    dataset, _ = Dataset.objects.get_or_create(name="hosts scale 1x10000", defaults={"tables": 1, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="hosts scale point select", defaults={"test": "oltp_point_select", "dataset": dataset,
                                                   "time_s": opts.seconds, "report_interval_s": 1})
    campaign = Campaign.objects.create(name=f"hosts scale {queue}", threads=[opts.clients], clients_min=opts.clients)
    campaign.targets.set([target])
    campaign.scenarios.set([scenario])
    run = transitions.run_create(waits=False, campaign=campaign, queue=queue)
    (job,) = transitions.jobs_create(jobs=[Job(run=run, target=target, scenario=scenario, threads=opts.clients,
                                                clients_needed=opts.clients, time_s=opts.seconds)])
    transitions.job_claim(job_id=job.pk, host="hosts-scale")
    transitions.job_start(job_id=job.pk, command_line="(replayed)", server_snapshot={})
    clients = [JobClient.objects.create(job=job, index=i, host_name=f"scale-{i:03d}", threads=1)
               for i in range(opts.clients)]
    for c in clients:
        transitions.client_claim(client_id=c.pk)
        transitions.client_start(client_id=c.pk)
    user, _ = get_user_model().objects.get_or_create(username="hosts-scale-bench", defaults={"is_superuser": True})
    token = services.token_issue(user=user)

    port = _free_port()
    env = {**os.environ, "PGAPPNAME": f"{APP}-server", "BENCHAPP_QUEUE": queue, "DB_CONN_MAX_AGE": "600",
           "BENCHAPP_HOSTNAME": f"hosts-scale-{queue}", "PYTHONUNBUFFERED": "1"}
    logs = open(ROOT / "var" / "hosts_scale.log", "wb")  # noqa: SIM115 (closed at the end)
    web = subprocess.Popen([str(ROOT / ".venv/bin/gunicorn"), "benchapp.wsgi:application", "--bind",
                            f"127.0.0.1:{port}", "--workers", "2", "--threads", "2", "--timeout", "60"],
                           cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT, start_new_session=True)
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "benchapp", "worker", "--loglevel", "WARNING",
                               "--concurrency", "1", "-Q", queue, "-n", f"{APP}@%h", "--without-gossip",
                               "--without-mingle"], cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}/api/v1/jobs/{job.pk}/samples/"
    headers = {"Authorization": f"Token {token}"}

    def get(since: int | None) -> dict[str, Any]:
        query = f"?since={since}" if since is not None else ""
        with urllib.request.urlopen(urllib.request.Request(url + query, headers=headers), timeout=10) as response:
            return dict(json.loads(response.read()))

    deadline = time.monotonic() + 60
    while True:
        try:
            get(None)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)

    connections.close_all()  # the client processes are forked: they open their own
    start = time.time() + 3.0
    pairs = [(c.pk, c.index) for c in clients]
    skip = frozenset(filter(None, opts.skip.split(",")))
    fork = multiprocessing.get_context("fork")
    written = fork.Queue()
    players = [fork.Process(target=_client_process, args=(job.pk, pairs[i::opts.procs], opts.conns, start,
                                                           opts.seconds, written, skip)) for i in range(opts.procs)]
    for player in players:
        player.start()

    cursor = connection.cursor()
    server_backends = BackendCpu(cursor, f"{APP}-server")
    client_backends = BackendCpu(cursor, f"{APP}-clients")
    seen: dict[int, float] = {}
    complete = 0
    time.sleep(max(0.0, start + 1 - time.time()))
    cpu_web0, cpu_worker0, pg_bg0 = _tree_cpu(web.pid), _tree_cpu(worker.pid), _pg_background_cpu()
    cpu_players0 = sum(_tree_cpu(p.pid or 0) for p in players)
    window0 = time.monotonic()
    while complete < opts.seconds and time.time() < start + opts.seconds + 30:
        answer = get(complete)
        now = time.time()
        for row in answer["samples"]:
            if row["clients"] == opts.clients and row["t"] not in seen:
                seen[row["t"]] = now
        while complete + 1 in seen:
            complete += 1
        server_backends.read()
        client_backends.read()
        time.sleep(0.25)
    window_s = time.monotonic() - window0
    cpu_web = _tree_cpu(web.pid) - cpu_web0
    cpu_worker = _tree_cpu(worker.pid) - cpu_worker0
    pg_bg = _pg_background_cpu() - pg_bg0
    cpu_players = sum(_tree_cpu(p.pid or 0) for p in players) - cpu_players0
    last_write: dict[int, float] = {}
    for _ in players:
        for t, when in written.get(timeout=120).items():
            last_write[t] = max(last_write.get(t, 0.0), when)
    server_backends.read()
    client_backends.read()
    for player in players:
        player.join(timeout=60)

    stored = job.samples.count()
    lags = [seen[t] - (start + t) for t in sorted(seen)]
    # Split: the stand-ins' own delay in writing second t (their CPU is this machine's, not a client host's),
    # then the time from the last write of second t to the API showing it.
    write_delays = [last_write[t] - (start + t) for t in sorted(seen) if t in last_write]
    after_write = [seen[t] - last_write[t] for t in sorted(seen) if t in last_write]
    for proc in (web, worker):
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    logs.close()
    pg_server, pg_clients = server_backends.spent_s(), client_backends.spent_s()
    total = cpu_web + cpu_worker + pg_server + pg_clients

    def pct(cpu_s: float) -> str:
        return f"{100 * cpu_s / window_s:5.1f} % of one core"

    print(f"{opts.clients} clients × {opts.seconds} s at 1 Hz, {opts.procs} client processes × {opts.conns} "
          f"connections; window {window_s:.1f} s" + (f"; skipped: {', '.join(sorted(skip))}" if skip else ""))
    print(f"samples stored: {stored} of {opts.clients * opts.seconds} ({stored / opts.seconds:.0f} per second)")
    def spread(values: list[float]) -> str:
        ordered = sorted(values)
        return (f"median {statistics.median(values):.3f} s, p95 {ordered[int(0.95 * (len(ordered) - 1))]:.3f} s, "
                f"max {ordered[-1]:.3f} s")

    if lags:
        print(f"lag printed → visible in the API (all clients of second t): {spread(lags)} "
              f"({len(lags)} of {opts.seconds} seconds seen complete; polled every 250 ms)")
    if write_delays:
        print(f"  of which the stand-ins' delay to store the last line of second t: {spread(write_delays)}")
        print(f"  and last line stored → visible in the API: {spread(after_write)}")
    print(f"web (gunicorn 2×2): {pct(cpu_web)}")
    print(f"worker (Celery, reconciler thread): {pct(cpu_worker)}")
    print(f"PostgreSQL backends of web and worker: {pct(pg_server)}")
    print(f"PostgreSQL backends of the clients' writes: {pct(pg_clients)}")
    print(f"server total (web + worker + PostgreSQL): {pct(total)}  [goal: under 25 %]")
    # Per client-second stored: steadier than a share of the window when the stand-ins fall behind a loaded machine.
    per_line_ms = 1000 * total / stored if stored else float("nan")
    print(f"  = {per_line_ms:.2f} ms of server CPU per client-second stored; at {opts.clients} clients × 1 Hz that is "
          f"{per_line_ms * opts.clients / 10:.1f} % of one core")
    print(f"PostgreSQL background processes (shared with the rest of this machine, not counted): {pct(pg_bg)}")
    print(f"the client stand-ins themselves (client hosts' CPU on a real installation, not counted): "
          f"{pct(cpu_players)}")
    print(f"load average during the bench: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    ClientHost.objects.filter(hostname=f"hosts-scale-{queue}").delete()
    campaign.delete()  # its run, job, clients and samples with it


if __name__ == "__main__":
    main()
