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
import statistics
import time

from _local import local_scenario, local_target, local_worker, queue_setup, superuser_client


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rounds", type=int, default=3)
    args.add_argument("--time", type=int, default=10)
    opts = args.parse_args()
    queue, host = queue_setup("live-lag")
    from campaigns import services
    from campaigns.models import Campaign, JobClient

    target = local_target("live lag")
    scenario = local_scenario("live lag", test="oltp_point_select", time_s=opts.time)
    client = superuser_client("live lag")

    with local_worker(queue=queue, hostname=host, concurrency=1):
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


if __name__ == "__main__":
    main()
