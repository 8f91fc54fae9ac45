"""Memory of a client host's worker (under 80 MB): the summed PSS of all its processes, started the way
scripts/join-client.sh starts it, before and after it runs real jobs.

The worker is started by `scripts/join-client.sh --no-install --foreground` from an env file like the one
scripts/serve-clients.sh writes (DATABASE_URL, REDIS_URL, BENCHAPP_FIELD_KEY, a queue of the bench's own), so it
runs as the user `benchapp` when this script runs as root, with BENCHAPP_WORKER_ROLE=client and the script's default
concurrency. No other worker consumes the bench's queue: the client host coordinates every job (target checks, the
dataset's prepare, warm-up) and runs its client (sysbench, per-second samples, host and server metrics), the largest
part of what a client host does. It prints each process's PSS (/proc/PID/smaps_rollup, as bench/memory.py) after
start-up and after the jobs, and whether numpy, scipy, Django's admin or DRF were loaded.

    PYTHONPATH=. .venv/bin/python bench/memory_client.py [--threads 1,2] [--time-s 10] [--keep]

Needs PostgreSQL, Redis (with var/secrets.env's password) and MariaDB on their usual ports, and sysbench.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from _django import ROOT
from memory import (
    Group,
    bench_target,
    cmdline,
    databases_create,
    databases_drop,
    django_setup,
    numerics,
    pss_kb,
    redis_url,
    secrets_read,
)

from tests.helpers.joining import join_client_command
from tests.helpers.waiting import wait_for

DB = "benchapp_memory_client"
TARGET_DB = "memory_client"
HOSTNAME = "memory-client"


def modules_loaded(pid: int) -> str:
    """Which of the server's heavy packages the process has mapped (numpy and scipy have shared objects; Django's
    admin and DRF are pure Python, so the worker's log line at start-up says those, see main())."""
    return numerics(pid).strip() or "no numpy, no scipy"


def report(title: str, group: Group) -> float:
    rows = [(pid, pss_kb(pid)) for pid in group.pids()]
    total = sum(kb for _, kb in rows) / 1024
    print(f"\n{title}")
    for pid, kb in rows:
        print(f"  {pid:>7}  {kb / 1024:6.1f} MB  {cmdline(pid)[:70]}  ({modules_loaded(pid)})")
    print(f"  client host worker: {total:.1f} MB in {len(rows)} process{'es' if len(rows) != 1 else ''}")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default="1,2", help="the campaign's thread counts: one job each")
    parser.add_argument("--time-s", type=int, default=10, help="each job's measurement")
    parser.add_argument("--keep", action="store_true", help="leave the bench's databases behind")
    args = parser.parse_args()

    secrets_file, secrets = secrets_read()
    database_url = f"postgres://postgres@127.0.0.1:5432/{DB}"
    queue = f"memory-client-{os.getpid()}"
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url(secrets, 11), "BENCHAPP_QUEUE": queue,
           "BENCHAPP_SECRETS_FILE": str(secrets_file), "BENCHAPP_HOSTNAME": "memory-client-server"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    print("memory_client.py: migrate, load_demo ...", flush=True)
    databases_create(env, DB, TARGET_DB, manage=(["migrate", "--noinput"], ["load_demo"]))

    state = Path(tempfile.mkdtemp(prefix="memory-client-"))
    state.chmod(0o755)
    join = join_client_command(state, hostname=HOSTNAME, database_url=database_url, redis_url=env["REDIS_URL"],
                               queue=queue)
    # Only what a client host's shell would have: the settings come from the env file, as on a real client host.
    client_env = {name: os.environ[name] for name in ("PATH", "LANG", "TERM") if name in os.environ}
    client_env["PYTHONUNBUFFERED"] = "1"
    logs = ROOT / "var" / "memory-bench"
    logs.mkdir(parents=True, exist_ok=True)
    group = Group("client", join, client_env, logs / "client-only.log")
    try:
        drive(group, env, args)
    finally:
        group.stop()
        subprocess.run(["rm", "-rf", str(state)], check=False)
        if not args.keep:
            databases_drop(DB, TARGET_DB)


def drive(group: Group, env: dict[str, str], args: argparse.Namespace) -> None:
    def ready() -> bool:
        if group.proc.poll() is not None:
            raise SystemExit(f"the client worker died:\n{group.log_path.read_text()[-3000:]}")
        return "ready." in group.log_path.read_text(errors="replace")

    wait_for(ready, timeout_s=120, what="the client worker")
    time.sleep(3)
    before = report("PSS after start-up (MB)", group)

    # The bench's own Django, on the same database, only to make the objects a user would make and launch the run.
    django_setup(env, ("DATABASE_URL", "REDIS_URL", "BENCHAPP_QUEUE", "BENCHAPP_SECRETS_FILE", "BENCHAPP_HOSTNAME"))
    from django.contrib.auth import get_user_model

    from campaigns import services
    from campaigns.models import Campaign, ClientHost, Dataset, Job, Run, Scenario

    host = wait_for(lambda: ClientHost.objects.filter(hostname=HOSTNAME).first(), timeout_s=30,
                    what="the client host's row")
    print(f"\nclient host {host.hostname}: role {host.role}, {host.cores} cores")
    user = get_user_model().objects.filter(is_superuser=True).first() or get_user_model().objects.create_superuser(
        "memory-admin", password=None)
    target = bench_target("memory-client-mariadb", TARGET_DB)
    dataset = Dataset.objects.create(name="memory-client-tiny", tables=2, table_size=20000)
    scenario = Scenario.objects.create(name="memory-client read-write", test="oltp_read_write", dataset=dataset,
                                       time_s=args.time_s)
    threads = [int(t) for t in args.threads.split(",")]
    campaign = Campaign.objects.create(name="memory-client", threads=threads, repetitions=1)
    campaign.targets.set([target])
    campaign.scenarios.set([scenario])
    started = time.monotonic()
    run = services.campaign_launch(campaign=campaign, user=user)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=120 + 3 * args.time_s * len(threads),
             what="the run")
    run.refresh_from_db()
    jobs = list(Job.objects.filter(run=run).order_by("pk"))
    samples = sum(job.samples.count() for job in jobs)
    print(f"\nrun #{run.pk} {run.status} in {time.monotonic() - started:.0f} s: "
          + ", ".join(f"job {job.pk} {job.status} on {job.claimed_by or '?'}" for job in jobs)
          + f"; {samples} per-second samples stored")
    if any(job.claimed_by != HOSTNAME for job in jobs):
        raise SystemExit("memory_client.py: a job ran elsewhere than on the client host: the figure would be wrong")
    time.sleep(2)
    after = report("PSS after the jobs (MB)", group)
    print(f"\nclient host worker: {before:.0f} MB after start-up, {after:.0f} MB after {len(jobs)} jobs "
          f"(goal: under 80)")


if __name__ == "__main__":
    main()
