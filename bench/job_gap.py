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
import statistics
import time

from _local import local_target, local_worker, queue_setup
from _timing import RunTiming, run_timing


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--runs", type=int, default=3)
    args.add_argument("--jobs", type=int, default=8)
    args.add_argument("--time", type=int, default=2)
    args.add_argument("--driver", choices=("mysql", "pgsql"), default="mysql",
                      help="the local MariaDB (default) or the local PostgreSQL")
    opts = args.parse_args()
    queue, host = queue_setup("job-gap")
    from campaigns import services
    from campaigns.models import Campaign, Dataset, Run, Scenario

    target = local_target("job gap", driver=opts.driver)
    dataset, _ = Dataset.objects.get_or_create(name="job gap 1x10000", defaults={"tables": 1, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="job gap point select", defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": opts.time,
                                               "warmup_s": 0, "report_interval_s": 1,
                                               "cleanup": Scenario.Cleanup.KEEP})

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

    with local_worker(queue=queue, hostname=host, concurrency=2, log=f"/tmp/{queue}.log"):
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


if __name__ == "__main__":
    main()
