"""What do the per-second samplers cost? Goal: under 0.5 % of one core each.

Runs the host sampler (psutil: CPU per core, the sysbench process, the local target server's threads, network,
memory) and the server sampler (SHOW GLOBAL STATUS over one connection to the local MariaDB) for --time
seconds beside a real sysbench point-select load, the way a client task runs them, and prints each sampler's
own CPU time (thread CPU clock) per second of run, as a percentage of one core, and the rows it stored.

Usage: .venv/bin/python bench/sampler_cost.py [--time 30] [--threads 2]
It needs `make run`'s database (migrated) and the local MariaDB; it writes to a job of its own.
"""
from __future__ import annotations

import argparse
import subprocess
import time

from _django import setup
from _local import local_target, mariadb_connection


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--time", type=int, default=30)
    args.add_argument("--threads", type=int, default=2)
    opts = args.parse_args()
    setup()
    from django.utils import timezone

    from campaigns.execution.metrics import HostSampler, ServerSampler, target_is_local
    from campaigns.models import Campaign, Dataset, HostSample, Job, Run, Scenario, ServerSample

    target = local_target("sampler")
    conn = mariadb_connection(target.database)
    base = ["sysbench", "oltp_point_select", *conn.argv(), "--tables=1", "--table-size=10000"]
    subprocess.run([*base, "cleanup"], capture_output=True, check=False)
    subprocess.run([*base, "prepare"], capture_output=True, check=True)
    dataset, _ = Dataset.objects.get_or_create(name="sampler 1x10000", defaults={"tables": 1, "table_size": 10000})
    scenario, _ = Scenario.objects.update_or_create(
        name="sampler point select", defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": opts.time})
    campaign, _ = Campaign.objects.get_or_create(name="sampler bench")
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=timezone.now(),
                             finished_at=timezone.now())
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=opts.threads, tables=1,
                             table_size=10000, status=Job.Status.SUCCEEDED)

    load = subprocess.Popen([*base, f"--threads={opts.threads}", f"--time={opts.time}", "run"],
                            stdout=subprocess.DEVNULL)
    started = time.monotonic()
    host = HostSampler(job_id=job.pk, client_index=0, pid=load.pid, started_at=started,
                       server_port=3306 if target_is_local("127.0.0.1") else None)
    server = ServerSampler(job_id=job.pk, conn=conn, started_at=started)
    host.start()
    server.start()
    load.wait()
    elapsed = time.monotonic() - started
    host.stop()
    server.stop()
    for name, sampler, model in (("host", host, HostSample), ("server", server, ServerSample)):
        rows = model.objects.filter(job=job).count()
        print(f"{name} sampler: {sampler.cpu_s * 1000:.1f} ms CPU (reading {sampler._read_cpu_s * 1000:.1f}, writing {sampler._writer.cpu_s * 1000:.1f}) over {elapsed:.1f} s = "
              f"{100 * sampler.cpu_s / elapsed:.3f} % of one core; {sampler.samples} samples, {rows} rows stored")
    subprocess.run([*base, "cleanup"], capture_output=True, check=False)


if __name__ == "__main__":
    main()
