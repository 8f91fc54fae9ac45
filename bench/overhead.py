"""Does running sysbench through benchapp cost the target throughput?

Runs the same oltp_point_select (local MariaDB, 4 threads, 20 s, 4 × 10,000 rows) five times as
bare sysbench and five times through a benchapp job (the code path a worker runs: streaming
reader, per-second inserts into PostgreSQL, server snapshots), interleaved so drift hits both
alike, and prints the ratio of the medians (benchapp QPS / bare QPS). Goal: >= 0.98.

Usage: .venv/bin/python bench/overhead.py [--rounds 5] [--time 20] [--threads 4]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time

from _django import setup


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rounds", type=int, default=5)
    args.add_argument("--time", type=int, default=20)
    args.add_argument("--threads", type=int, default=4)
    opts = args.parse_args()
    setup()
    from django.utils import timezone

    from benchapp.celery import app
    from campaigns import execution, services

    # The coordinator and its client run in this process, one after the other, exactly as a worker
    # would run them; no broker round trip is measured.
    app.conf.task_always_eager = True
    from campaigns.models import Campaign, Dataset, InstanceSpec, Job, Product, Run, Scenario, Target

    subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", "CREATE DATABASE IF NOT EXISTS bench_overhead"], check=True)
    product, _ = Product.objects.get_or_create(name="MariaDB (overhead bench)", defaults={"engine": "mariadb"})
    spec, _ = InstanceSpec.objects.get_or_create(label="overhead bench host", defaults={"cpu_cores": 2, "memory_gb": 24})
    target, _ = Target.objects.update_or_create(
        name="overhead-bench-mariadb",
        defaults={"product": product, "spec": spec, "driver": "mysql", "host": "127.0.0.1", "port": 3306,
                  "database": "bench_overhead", "user": "root"},
    )
    dataset, _ = Dataset.objects.get_or_create(name="overhead 4x10000", defaults={"tables": 4, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="overhead point select",
        defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": opts.time, "percentile": 95.0,
                  "cleanup": Scenario.Cleanup.KEEP, "prepare_mode": Scenario.PrepareMode.AUTO},
    )
    campaign, _ = Campaign.objects.get_or_create(name="overhead bench")
    campaign.targets.set([target])
    campaign.scenarios.set([scenario])
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, started_at=timezone.now())

    def via_job(position: int) -> float:
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=opts.threads,
                                 position=position, tables=4, table_size=10000)
        execution.job_execute(job_id=job.pk)
        job.refresh_from_db()
        if job.status != Job.Status.SUCCEEDED:
            raise SystemExit(f"job failed: {job.error}")
        return job.result.qps

    conn = services.target_connection(target=target)
    bare_argv = ["sysbench", "oltp_point_select", *conn.argv(), "--tables=4", "--table-size=10000",
                 f"--threads={opts.threads}", f"--time={opts.time}", "--report-interval=1", "--percentile=95", "run"]

    def bare() -> float:
        out = subprocess.run(bare_argv, capture_output=True, text=True, check=True).stdout
        return float(re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", out).group(1))

    via_job(0)  # prepares the dataset once; not counted
    bare_qps, job_qps = [], []
    for i in range(opts.rounds):
        bare_qps.append(bare())
        job_qps.append(via_job(i + 1))
        print(f"round {i + 1}: bare {bare_qps[-1]:,.0f} QPS, through benchapp {job_qps[-1]:,.0f} QPS", flush=True)
        time.sleep(1)
    run.status = Run.Status.SUCCEEDED
    run.finished_at = timezone.now()
    run.save()
    ratio = statistics.median(job_qps) / statistics.median(bare_qps)
    print(f"median bare {statistics.median(bare_qps):,.0f} QPS; median through benchapp "
          f"{statistics.median(job_qps):,.0f} QPS; ratio {ratio:.3f} (goal >= 0.98)")


if __name__ == "__main__":
    main()
