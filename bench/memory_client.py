"""Memory of a client host's worker (issue #29.6: under 80 MB): the summed PSS of all its processes, started the way
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
import sys
import tempfile
import time
from pathlib import Path

from memory import Group, cmdline, numerics, pss_kb, tree, wait_for

ROOT = Path(__file__).resolve().parent.parent
DB = "benchapp_memory_client"
TARGET_DB = "memory_client"
HOSTNAME = "memory-client"


def modules_loaded(pid: int) -> str:
    """Which of the server's heavy packages the process has mapped (numpy and scipy have shared objects; Django's
    admin and DRF are pure Python, so the worker's log line at start-up says those, see main())."""
    return numerics(pid).strip() or "no numpy, no scipy"


def report(title: str, group: Group) -> float:
    pids = [p for p in tree(group.proc.pid) if cmdline(p) and not cmdline(p).startswith(("bash ", "/bin/bash"))]
    rows = [(pid, pss_kb(pid)) for pid in sorted(pids)]
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

    sys.path.insert(0, str(ROOT))
    from benchapp import local_secrets

    secrets_file = Path(os.environ.get("BENCHAPP_SECRETS_FILE", ROOT / "var" / "secrets.env"))
    secrets = local_secrets.local_secrets(secrets_file, write=False)
    password = secrets.get("BENCHAPP_REDIS_PASSWORD", "")
    redis_url = f"redis://:{password}@127.0.0.1:6379/11" if password else "redis://127.0.0.1:6379/11"
    database_url = f"postgres://postgres@127.0.0.1:5432/{DB}"
    queue = f"memory-client-{os.getpid()}"
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "BENCHAPP_QUEUE": queue,
           "BENCHAPP_SECRETS_FILE": str(secrets_file), "BENCHAPP_HOSTNAME": "memory-client-server"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", "--force", DB], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB], check=True)
    subprocess.run(["mysql", "-h127.0.0.1", "-uroot", "-e",
                    f"DROP DATABASE IF EXISTS {TARGET_DB}; CREATE DATABASE {TARGET_DB}"], check=True)
    py = str(ROOT / ".venv" / "bin" / "python")
    print("memory_client.py: migrate, load_demo ...", flush=True)
    for command in (["migrate", "--noinput"], ["load_demo"]):
        subprocess.run([py, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)

    state = Path(tempfile.mkdtemp(prefix="memory-client-"))
    state.chmod(0o755)
    env_file = state / "client.env"
    env_file.touch(mode=0o600)
    env_file.write_text(f"DATABASE_URL={database_url}\nREDIS_URL={redis_url}\n"
                        f"BENCHAPP_FIELD_KEY={secrets['BENCHAPP_FIELD_KEY']}\nBENCHAPP_QUEUE={queue}\n")
    # Only what a client host's shell would have: the settings come from the env file, as on a real client host.
    client_env = {name: os.environ[name] for name in ("PATH", "LANG", "TERM") if name in os.environ}
    client_env["PYTHONUNBUFFERED"] = "1"
    logs = ROOT / "var" / "memory-bench"
    logs.mkdir(parents=True, exist_ok=True)
    group = Group("client", ["bash", "scripts/join-client.sh", "--no-install", "--foreground", "--env-file",
                             str(env_file), "--config-dir", str(state / "etc"), "--hostname", HOSTNAME],
                  client_env, logs / "client-only.log")
    try:
        drive(group, env, args)
    finally:
        group.stop()
        subprocess.run(["rm", "-rf", str(state)], check=False)
        if not args.keep:
            subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", "--force", DB], check=False)
            subprocess.run(["mysql", "-h127.0.0.1", "-uroot", "-e", f"DROP DATABASE IF EXISTS {TARGET_DB}"],
                           check=False)


def drive(group: Group, env: dict[str, str], args: argparse.Namespace) -> None:
    def ready() -> bool:
        if group.proc.poll() is not None:
            raise SystemExit(f"the client worker died:\n{group.log_path.read_text()[-3000:]}")
        return "ready." in group.log_path.read_text(errors="replace")

    wait_for(ready, 120, "the client worker")
    time.sleep(3)
    before = report("PSS after start-up (MB)", group)

    # The bench's own Django, on the same database, only to make the objects a user would make and launch the run.
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "REDIS_URL", "BENCHAPP_QUEUE", "BENCHAPP_SECRETS_FILE",
                                           "BENCHAPP_HOSTNAME")})
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchapp.settings"
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from campaigns import services
    from campaigns.models import Campaign, ClientHost, Dataset, Job, Run, Scenario, Target

    host = wait_for(lambda: ClientHost.objects.filter(hostname=HOSTNAME).first(), 30, "the client host's row")
    print(f"\nclient host {host.hostname}: role {host.role}, {host.cores} cores")
    user = get_user_model().objects.filter(is_superuser=True).first() or get_user_model().objects.create_superuser(
        "memory-admin", password=None)
    demo = Target.objects.get(name="demo-mariadb")
    target = Target.objects.create(name="memory-client-mariadb", product=demo.product, spec=demo.spec,
                                   driver=demo.driver, host=demo.host, port=demo.port, database=TARGET_DB,
                                   user=demo.user)
    dataset = Dataset.objects.create(name="memory-client-tiny", tables=2, table_size=20000)
    scenario = Scenario.objects.create(name="memory-client read-write", test="oltp_read_write", dataset=dataset,
                                       time_s=args.time_s)
    threads = [int(t) for t in args.threads.split(",")]
    campaign = Campaign.objects.create(name="memory-client", threads=threads, repetitions=1)
    campaign.targets.set([target])
    campaign.scenarios.set([scenario])
    started = time.monotonic()
    run = services.campaign_launch(campaign=campaign, user=user)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), 120 + 3 * args.time_s * len(threads), "the run")
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
