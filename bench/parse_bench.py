"""Parse and store a 1-hour, 6-client log with 1 s intervals (21,600 interval lines).

Goals: parse < 0.5 s; parse + insert into PostgreSQL < 2 s. The log is built from the report-line
format of a real run's output (tests/data/sysbench/), repeated with varying figures.

Usage: .venv/bin/python bench/parse_bench.py
"""
from __future__ import annotations

import random
import time

from _django import setup

LINE = ("[ {t}s ] thds: 128 tps: {tps:.2f} qps: {qps:.2f} (r/w/o: {r:.2f}/{w:.2f}/{o:.2f}) "
        "lat (ms,99%): {lat:.2f} err/s: 0.00 reconn/s: 0.00")


def make_client_log(seed: int, seconds: int = 3600) -> str:
    rng = random.Random(seed)
    lines = ["sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)", "", "Running the test with following options:",
             "Number of threads: 128", "Report intermediate results every 1 second(s)", "", "Threads started!", ""]
    for t in range(1, seconds + 1):
        tps = 2500 + rng.random() * 200
        lines.append(LINE.format(t=t, tps=tps, qps=tps * 20, r=tps * 14, w=tps * 4, o=tps * 2, lat=80 + rng.random() * 20))
    return "\n".join(lines) + "\n"


def main() -> None:
    setup()
    from django.db import transaction
    from django.utils import timezone

    from campaigns.execution import results
    from campaigns.models import Campaign, Dataset, InstanceSpec, Job, Product, Run, Scenario, Target
    from campaigns.sysbench.parser import parse_output

    logs = [make_client_log(seed) for seed in range(6)]
    lines = sum(log.count("thds:") for log in logs)
    started = time.perf_counter()
    parsed = [parse_output(log) for log in logs]
    parse_s = time.perf_counter() - started
    product, _ = Product.objects.get_or_create(name="parse bench", defaults={"engine": "mysql"})
    spec, _ = InstanceSpec.objects.get_or_create(label="parse bench spec", defaults={"cpu_cores": 1, "memory_gb": 1})
    target, _ = Target.objects.get_or_create(name="parse-bench", defaults={
        "product": product, "spec": spec, "driver": "mysql", "host": "127.0.0.1", "port": 3306,
        "database": "x", "user": "root"})
    dataset, _ = Dataset.objects.get_or_create(name="parse bench", defaults={"tables": 1, "table_size": 1})
    scenario, _ = Scenario.objects.get_or_create(name="parse bench", defaults={"test": "oltp_read_write", "dataset": dataset})
    campaign, _ = Campaign.objects.get_or_create(name="parse bench")
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=timezone.now())
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=768, clients_needed=6)
    insert_started = time.perf_counter()
    with transaction.atomic():
        for index, result in enumerate(parsed):
            results.samples_bulk_store(job_id=job.pk, client_index=index, intervals=result.intervals)
    insert_s = time.perf_counter() - insert_started
    stored = job.samples.count()
    run.delete()
    print(f"{lines:,} interval lines from 6 clients: parse {parse_s:.3f} s (goal < 0.5 s); "
          f"insert {insert_s:.3f} s; parse + insert {parse_s + insert_s:.3f} s (goal < 2 s); {stored:,} rows stored")


if __name__ == "__main__":
    main()
