"""How long does the one-click quick run of the seed white papers take on this machine?

Does what `make run` + the "Run" button on /seeds/ do, end to end: loads the demo targets (local MariaDB and
PostgreSQL) and the seed templates into the development database, starts a real Celery worker of its own on a
queue of its own, launches the quick run (seeds 001 and 003 by default, the page's default options) and waits
for every run to finish. Prints, per run: jobs, failures, wall time from launch, the median QPS per target and
workload, and where its wall time went: measured, warm-up, dataset preparation and the gaps between jobs (from one
job's last sysbench exit to the next one's first sysbench start, over jobs whose dataset was ready), each with its
share of the run's wall time (bench/_timing.py); then the total. Goal (issue "Seed white papers"): seeds 001 + 003
in under 10 minutes.

Usage: .venv/bin/python bench/quick_run.py [--templates seed-001,seed-003] [--timeout 1200]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict

from _django import ROOT, setup
from _timing import RunTiming, run_timing

QUEUE = f"bench-quick-{uuid.uuid4().hex[:8]}"


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--templates", default="seed-001,seed-003")
    args.add_argument("--timeout", type=int, default=1200)
    opts = args.parse_args()
    os.environ["BENCHAPP_QUEUE"] = QUEUE
    os.environ["BENCHAPP_HOSTNAME"] = f"{QUEUE}-host"
    setup()
    from django.core.management import call_command

    from campaigns.models import Job, Run, Target
    from campaigns.seeds.quickrun import QuickRunOptions, suite_launch
    from campaigns.services import DEMO_TARGET_NAMES

    call_command("migrate", verbosity=0)
    call_command("load_demo", verbosity=0)
    call_command("load_seed_templates", verbosity=0)
    env = {**os.environ, "BENCHAPP_QUEUE": QUEUE, "BENCHAPP_HOSTNAME": f"{QUEUE}-host"}
    worker = subprocess.Popen(
        [str(ROOT / ".venv/bin/celery"), "-A", "benchapp", "worker", "--loglevel", "WARNING", "--concurrency", "2",
         "-Q", QUEUE, "-n", f"{QUEUE}@%h", "-B", "-s", f"/tmp/{QUEUE}-beat"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(f"/tmp/{QUEUE}.log", "w"),
    )
    try:
        time.sleep(6)  # the worker registers its client host before the launch counts hosts online
        targets = list(Target.objects.filter(name__in=DEMO_TARGET_NAMES).order_by("name"))
        options = QuickRunOptions()
        print(f"quick run of {opts.templates} on {', '.join(t.name for t in targets)}: {options}")
        started = time.monotonic()
        runs = suite_launch(template_keys=opts.templates.split(","), targets=targets, options=options)
        finished: dict[int, float] = {}
        while len(finished) < len(runs):
            if time.monotonic() - started > opts.timeout:
                print(f"TIMEOUT after {opts.timeout} s; see /tmp/{QUEUE}.log")
                break
            for run in Run.objects.filter(pk__in=[r.pk for r in runs]):
                if run.is_finished() and run.pk not in finished:
                    finished[run.pk] = time.monotonic() - started
            time.sleep(1)
        timings = RunTiming()
        for run in Run.objects.filter(pk__in=[r.pk for r in runs]).select_related("campaign").order_by("pk"):
            jobs = list(run.jobs.select_related("target", "scenario", "result"))
            failed = [j for j in jobs if j.status != Job.Status.SUCCEEDED]
            took = finished.get(run.pk)
            print(f"\nrun #{run.pk} {run.campaign.name}: {run.status}, {len(jobs)} jobs, {len(failed)} not succeeded, "
                  f"done {took:.0f} s after launch" if took is not None else f"\nrun #{run.pk}: {run.status}")
            for job in failed[:5]:
                print(f"  {job.status}: {job.target.name} {job.scenario.name} {job.threads} thr: {job.error[:160]}")
            cells: dict[tuple[str, str], list[float]] = defaultdict(list)
            for job in jobs:
                if job.status == Job.Status.SUCCEEDED and job.result.qps is not None:
                    cells[(job.scenario.name, job.target.name)].append(job.result.qps)
            for (scenario, target), values in sorted(cells.items()):
                print(f"  {scenario:<55} {target:<16} QPS median {statistics.median(values):>10,.0f} "
                      f"(over {len(values)} thread counts)")
            timing = run_timing(run)
            timings.add(timing)
            print("\n".join(timing.lines()))
        total = max(finished.values()) if finished else float("nan")
        print(f"\ntotal: {len(finished)} of {len(runs)} runs finished in {total:.0f} s ({total / 60:.1f} min)")
        print("\n".join(timings.lines()))
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


if __name__ == "__main__":
    sys.exit(main())
