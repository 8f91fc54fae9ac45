"""How long does benchapp leave a target idle between two jobs? Goal (issue "Client hosts for real"): median gap
under 0.25 s, the barrier's release lead included.

Starts a real Celery worker process (its own queue, the development database, concurrency 2 as scripts/worker.sh),
prepares one dataset on the local MariaDB or PostgreSQL (1 × 10,000 rows, kept), then launches --runs runs of 8 jobs of 2 s
(oltp_point_select, 2 threads, no warm-up) on it. The gap before a job is the time from the previous job's last
sysbench exit to this job's first sysbench start, read from the stored timestamps (JobClient.started_at/exited_at);
prints each gap, their median, min and max, and wall time against measured time.

Usage: .venv/bin/python bench/job_gap.py [--runs 3] [--jobs 8] [--time 2] [--driver mysql|pgsql]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid

from _django import ROOT, setup
from _timing import RunTiming, run_timing


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--runs", type=int, default=3)
    args.add_argument("--jobs", type=int, default=8)
    args.add_argument("--time", type=int, default=2)
    args.add_argument("--driver", choices=("mysql", "pgsql"), default="mysql",
                      help="the local MariaDB (default) or the local PostgreSQL")
    opts = args.parse_args()
    queue = f"job-gap-{uuid.uuid4().hex[:6]}"
    os.environ["BENCHAPP_QUEUE"] = queue
    host = f"gap-{socket.gethostname()}"
    setup()
    from django.utils import timezone

    from campaigns import services
    from campaigns.models import Campaign, ClientHost, Dataset, InstanceSpec, Product, Run, Scenario, Target

    db = "bench_job_gap"
    if opts.driver == "mysql":
        subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", f"CREATE DATABASE IF NOT EXISTS {db}"], check=True)
        engine, port, user = "mariadb", 3306, "root"
    else:
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", db], stderr=subprocess.DEVNULL)
        engine, port, user = "postgresql", 5432, "postgres"
    product, _ = Product.objects.get_or_create(name=f"{engine} (job gap bench)", defaults={"engine": engine})
    spec, _ = InstanceSpec.objects.get_or_create(label="job gap bench host", defaults={"cpu_cores": 2, "memory_gb": 8})
    target, _ = Target.objects.update_or_create(
        name=f"job-gap-{engine}", defaults={"product": product, "spec": spec, "driver": opts.driver,
                                            "host": "127.0.0.1", "port": port, "database": db, "user": user})
    dataset, _ = Dataset.objects.get_or_create(name="job gap 1x10000", defaults={"tables": 1, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="job gap point select", defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": opts.time,
                                               "warmup_s": 0, "report_interval_s": 1,
                                               "cleanup": Scenario.Cleanup.KEEP})

    env = {**os.environ, "BENCHAPP_QUEUE": queue, "BENCHAPP_HOSTNAME": host, "PYTHONUNBUFFERED": "1"}
    log = open(f"/tmp/{queue}.log", "w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "benchapp", "worker", "--loglevel", "WARNING", "--concurrency", "2",
         "-Q", queue, "-n", f"{host}@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)

    def launch(name: str, repetitions: int) -> Run:
        campaign, _ = Campaign.objects.update_or_create(
            name=name, defaults={"threads": [2], "repetitions": repetitions, "keep_data": True})
        campaign.targets.set([target])
        campaign.scenarios.set([scenario])
        run = services.campaign_launch(campaign=campaign)
        deadline = time.monotonic() + 60 + repetitions * (opts.time + 30)
        while not run.is_finished():
            if time.monotonic() > deadline:
                raise SystemExit(f"run #{run.pk} did not finish in time; see /tmp/{queue}.log")
            time.sleep(0.2)
            run.refresh_from_db()
        return run

    try:
        deadline = time.monotonic() + 60
        while not ClientHost.objects.filter(hostname=host, last_heartbeat__gte=timezone.now()
                                            - timezone.timedelta(seconds=10)).exists():
            if time.monotonic() > deadline:
                raise SystemExit("the worker did not come online within 60 s")
            time.sleep(0.2)
        first = launch(f"job gap bench {queue} prepare", 1)  # prepares the dataset (or finds it ready)
        print(f"dataset: run #{first.pk} {first.status}")
        total = RunTiming()
        for number in range(1, opts.runs + 1):
            run = launch(f"job gap bench {queue} {number}", opts.jobs)
            failed = run.jobs.exclude(status="succeeded").count()
            timing = run_timing(run)
            total.add(timing)
            print(f"\nrun #{run.pk}: {run.status}, {opts.jobs} jobs of {opts.time} s, {failed} not succeeded")
            print("  gaps (s): " + " ".join(f"{gap:.3f}" for gap in timing.gaps_s))
            print("\n".join(timing.lines()))
        gaps = sorted(total.gaps_s)
        print(f"\nall {opts.runs} runs:")
        print("\n".join(total.lines()))
        if gaps:
            print(f"\nmedian gap {statistics.median(gaps):.3f} s, min {gaps[0]:.3f} s (goal: median under 0.25 s)")
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)


if __name__ == "__main__":
    main()
