"""How soon does a second of sysbench show up? Goals: each second visible in the samples API under 1 s after
sysbench printed it; with the dataset prepared, the first point within warm-up + 1.5 s of the launch.

Starts a real Celery worker process (its own queue, the development database), launches a one-job campaign
(MariaDB point select, 1 s warm-up, --time seconds) --rounds times, and polls `GET /api/v1/jobs/{id}/samples/?since=`
every 50 ms, as the run page does every 250 ms. For each second t it records when the API first returned it;
sysbench prints second t at the client's start time + t (stored as the client's started_at), so
lag = seen − (started_at + t). Prints the launch-to-first-point time and the lag (median, p95, max) per round.

Usage: .venv/bin/python bench/live_lag.py [--rounds 3] [--time 10]
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


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rounds", type=int, default=3)
    args.add_argument("--time", type=int, default=10)
    opts = args.parse_args()
    queue = f"live-lag-{uuid.uuid4().hex[:6]}"
    os.environ["BENCHAPP_QUEUE"] = queue
    host = f"lag-{socket.gethostname()}"
    setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from campaigns import services
    from campaigns.models import Campaign, ClientHost, Dataset, InstanceSpec, JobClient, Product, Scenario, Target

    db = "bench_live_lag"
    subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", f"CREATE DATABASE IF NOT EXISTS {db}"], check=True)
    product, _ = Product.objects.get_or_create(name="MariaDB (live lag bench)", defaults={"engine": "mariadb"})
    spec, _ = InstanceSpec.objects.get_or_create(label="live lag bench host", defaults={"cpu_cores": 2, "memory_gb": 8})
    target, _ = Target.objects.update_or_create(
        name="live-lag-mariadb", defaults={"product": product, "spec": spec, "driver": "mysql", "host": "127.0.0.1",
                                           "port": 3306, "database": db, "user": "root"})
    dataset, _ = Dataset.objects.get_or_create(name="live lag 1x10000", defaults={"tables": 1, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="live lag point select", defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": opts.time,
                                                "warmup_s": 1, "report_interval_s": 1})
    user, _ = get_user_model().objects.get_or_create(username="live-lag-bench", defaults={"is_superuser": True})
    client = Client()
    client.force_login(user)

    env = {**os.environ, "BENCHAPP_QUEUE": queue, "BENCHAPP_HOSTNAME": host, "PYTHONUNBUFFERED": "1"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "benchapp", "worker", "--loglevel", "WARNING", "--concurrency", "1",
         "-Q", queue, "-n", f"{host}@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not ClientHost.objects.filter(hostname=host, last_heartbeat__gte=timezone.now()
                                            - timezone.timedelta(seconds=10)).exists():
            if time.monotonic() > deadline:
                raise SystemExit("the worker did not come online within 60 s")
            time.sleep(0.2)
        for round_no in range(opts.rounds + 1):  # round 0 prepares the dataset and is not reported
            campaign, _ = Campaign.objects.get_or_create(name=f"live lag bench {queue} {round_no}",
                                                         defaults={"threads": [2]})
            campaign.targets.set([target])
            campaign.scenarios.set([scenario])
            launched_wall = time.time()
            run = services.campaign_launch(campaign=campaign)
            job = run.jobs.get()
            seen: dict[float, float] = {}
            since = None
            while True:
                url = f"/api/v1/jobs/{job.pk}/samples/" + ("" if since is None else f"?since={since}")
                body = client.get(url).json()
                now = time.time()
                for sample in body["samples"]:
                    seen.setdefault(sample["t"], now)
                if body["samples"]:
                    since = body["last_t"]
                if body["finished"]:
                    break
                time.sleep(0.05)
            if round_no == 0:
                continue
            started = JobClient.objects.get(job=job).started_at
            job.refresh_from_db()
            if not seen or started is None:
                print(f"round {round_no}: no seconds seen (job {job.status}: {job.error})")
                continue
            lags = sorted(seen[t] - (started.timestamp() + t) for t in seen)
            first = min(seen.values()) - launched_wall
            steps = (f"claimed +{job.claimed_at.timestamp() - launched_wall:.2f} s, warmed up and measuring "
                     f"+{job.started_at.timestamp() - launched_wall:.2f} s, sysbench started "
                     f"+{started.timestamp() - launched_wall:.2f} s")
            print(f"round {round_no}: {steps}")
            print(f"round {round_no}: first point {first:.2f} s after launch (warm-up 1 s; goal 2.5 s); lag per "
                  f"second: median {statistics.median(lags):.3f} s, p95 {lags[int(0.95 * (len(lags) - 1))]:.3f} s, "
                  f"max {lags[-1]:.3f} s over {len(lags)} seconds")
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)


if __name__ == "__main__":
    main()
