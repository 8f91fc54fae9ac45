"""What does benchapp cost while a job runs? Goal: the application's own CPU under 1 % of one core per running
client (without the metric samplers, which bench/sampler_cost.py measures), and no throughput lost.

Throughput ratios on a 2-core machine are decided by noise (a single run varies by ±15 %), so this prints what
is stable first: the CPU seconds that the application's processes spend per second of a running job, read from
/proc at the start and the end of the measured window — the Celery worker that runs the job (its processes and
threads, not the sysbench it starts), the PostgreSQL backends connected to benchapp's database, and Redis. The job
runs through a real worker process, as users run it. Then the throughput ratio (through benchapp / bare sysbench,
interleaved rounds) with its spread: min–max and a 95 % confidence interval of the mean ratio.

Usage: .venv/bin/python bench/overhead.py [--rounds 5] [--time 20] [--threads 4] [--samplers]
(--samplers keeps the host and server samplers on, to see the total.)
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time

import psutil
from _local import local_target, local_worker, queue_setup

# Two-sided 95 % Student t quantiles by degrees of freedom (n - 1), for the confidence interval of a mean.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rounds", type=int, default=5)
    args.add_argument("--time", type=int, default=20)
    args.add_argument("--threads", type=int, default=4)
    args.add_argument("--samplers", action="store_true", help="keep the metric samplers on")
    opts = args.parse_args()
    queue, host = queue_setup("overhead")
    from django.conf import settings
    from django.db import connection

    from campaigns import services
    from campaigns.execution.metrics import processes_cpu_s
    from campaigns.models import Campaign, Dataset, Job, JobClient, Scenario

    target = local_target("overhead")
    dataset, _ = Dataset.objects.get_or_create(name="overhead 4x10000", defaults={"tables": 4, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="overhead point select",
        defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": opts.time, "warmup_s": 0,
                  "percentile": 95.0, "cleanup": Scenario.Cleanup.KEEP, "prepare_mode": Scenario.PrepareMode.AUTO})

    redis = [p for p in psutil.process_iter(["name"]) if (p.info["name"] or "").startswith("redis-server")]
    database = settings.DATABASES["default"]["NAME"]

    def app_processes() -> list[psutil.Process]:
        """The worker's processes (not the sysbench they start), benchapp's PostgreSQL backends, Redis."""
        root = psutil.Process(worker.pid)
        tree = [root, *root.children(recursive=True)]
        ours = [p for p in tree if p.name() != "sysbench"]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                           [database])
            backends = [psutil.Process(pid) for (pid,) in cursor.fetchall() if psutil.pid_exists(pid)]
        return [*ours, *backends, *redis]

    def via_job(index: int) -> tuple[float, float]:
        """(QPS, application CPU % of one core over the measured window) of one job through the worker."""
        campaign = Campaign.objects.create(name=f"overhead bench {queue} {index}", threads=[opts.threads])
        campaign.targets.set([target])
        campaign.scenarios.set([scenario])
        run = services.campaign_launch(campaign=campaign)
        job = run.jobs.get()
        while not JobClient.objects.filter(job=job, status=JobClient.Status.RUNNING).exists():
            if Job.objects.get(pk=job.pk).is_finished():
                break
            time.sleep(0.05)
        processes = app_processes()
        cpu_before, at_before = processes_cpu_s(processes), time.monotonic()
        while JobClient.objects.filter(job=job, status=JobClient.Status.RUNNING).exists():
            time.sleep(0.05)
        cpu_after, at_after = processes_cpu_s(processes), time.monotonic()
        while not Job.objects.get(pk=job.pk).is_finished():
            time.sleep(0.1)
        job.refresh_from_db()
        if job.status != Job.Status.SUCCEEDED:
            raise SystemExit(f"job failed: {job.error}")
        return job.result.qps, 100 * (cpu_after - cpu_before) / (at_after - at_before)

    conn = services.target_connection(target=target)
    bare_argv = ["sysbench", "oltp_point_select", *conn.argv(), "--tables=4", "--table-size=10000",
                 f"--threads={opts.threads}", f"--time={opts.time}", "--report-interval=1", "--percentile=95", "run"]

    def bare() -> float:
        out = subprocess.run(bare_argv, capture_output=True, text=True, check=True).stdout
        return float(re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", out).group(1))

    sampling = {"BENCHAPP_METRICS_SAMPLING": "true" if opts.samplers else "false"}
    with local_worker(queue=queue, hostname=host, concurrency=1, extra_env=sampling) as worker:
        via_job(0)  # prepares the dataset once; not counted
        ratios, cpus = [], []
        for i in range(opts.rounds):
            bare_qps = bare()
            job_qps, cpu = via_job(i + 1)
            ratios.append(job_qps / bare_qps)
            cpus.append(cpu)
            print(f"round {i + 1}: bare {bare_qps:,.0f} QPS, through benchapp {job_qps:,.0f} QPS "
                  f"(ratio {ratios[-1]:.3f}); application CPU {cpu:.2f} % of one core", flush=True)
    what = "with" if opts.samplers else "without"
    print(f"application CPU per running client ({what} the metric samplers): median {statistics.median(cpus):.2f} %"
          f" of one core, min {min(cpus):.2f}, max {max(cpus):.2f} (goal < 1 %)")
    mean = statistics.fmean(ratios)
    if len(ratios) > 1:
        half = T95.get(len(ratios) - 1, 1.96) * statistics.stdev(ratios) / len(ratios) ** 0.5
        spread = f"95 % CI of the mean {mean - half:.3f}–{mean + half:.3f}"
    else:
        spread = "one round: no interval"
    print(f"throughput ratio (benchapp / bare): mean {mean:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}, "
          f"{spread}")


if __name__ == "__main__":
    main()
