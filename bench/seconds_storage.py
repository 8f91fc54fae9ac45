"""How many bytes does a second of a job cost, as rows and once packed? Goal: at most 300 bytes per job-second for one
client with its host and server samples, indexes included, and the job's pages and API answering as fast as before.

Runs a real campaign (its own Celery worker and queue, the development database): oltp_read_only on the local
MariaDB and PostgreSQL, --threads ladder, one client, --time seconds each. Then, on the same jobs:
  before: each row's own size (pg_column_size of the row, plus its 4-byte line pointer) in IntervalSample, HostSample
          and ServerSample, plus its entry in every index of its table (its key, header and line pointer, in leaves
          90 % full);
  after:  the same for the PackedSeconds rows campaigns.seconds makes of them (the row, its blob, which PostgreSQL
          keeps out of line in TOAST chunks of about 2 kB, each a row of its own with a header and an index entry).
Per job-second = bytes / seconds sysbench reported. Also times, before and after, the job's samples, series and
metrics answers (cache cleared each time, median of --reads) and says whether they are the same.

Usage: .venv/bin/python bench/seconds_storage.py [--time 30] [--threads 1,4,16] [--reads 5]
"""
from __future__ import annotations

import argparse
import math
import statistics
import time

from _local import local_scenario, local_target, local_worker, queue_setup, superuser_client

TOAST_CHUNK = 1996          # bytes of data per TOAST row (8 kB pages, four rows to a page)
TOAST_ROW_OVERHEAD = 24 + 4 + 8 + 4 + 20  # its header, line pointer, chunk id and number, length, and index entry


def _row_bytes(table: str, job_ids: list[int]) -> tuple[int, int]:
    """(bytes of those jobs' rows with their share of the table's indexes, rows)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), coalesce(sum(pg_column_size(t.*) + 4), 0) FROM {table} t "  # noqa: S608
                       "WHERE job_id = ANY(%s)", [job_ids])
        rows, own = cursor.fetchone()
        # Each index entry: its key columns, the 8-byte index tuple header, aligned to 8, a 4-byte line pointer,
        # in B-tree leaves 90 % full. (A share of the indexes' pages would charge a small table for its empty pages.)
        cursor.execute("SELECT array_agg(a.attname::text) FROM pg_index i JOIN pg_attribute a ON a.attrelid = "
                       "i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass GROUP BY i.indexrelid",
                       [table])
        indexes = 0
        for (columns,) in cursor.fetchall():
            key = " + ".join(f"pg_column_size({c})" for c in columns)
            cursor.execute(f"SELECT coalesce(sum((ceil((8 + {key}) / 8.0) * 8 + 4) / 0.9), 0) FROM {table} "  # noqa: S608
                           "WHERE job_id = ANY(%s)", [job_ids])
            indexes += cursor.fetchone()[0]
    return int(own + indexes), int(rows)


def _packed_bytes(job_ids: list[int]) -> tuple[int, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(p.*) + 4, pg_column_size(p.data) FROM campaigns_packedseconds p "
                       "WHERE job_id = ANY(%s)", [job_ids])
        found = cursor.fetchall()
    inline, _ = _row_bytes("campaigns_packedseconds", job_ids)
    toast = sum(size + math.ceil(size / TOAST_CHUNK) * TOAST_ROW_OVERHEAD for _, size in found if size > 2000)
    return inline + toast, len(found)


def _answers(client, job_ids: list[int], reads: int) -> tuple[dict, dict[str, float]]:
    from django.core.cache import cache

    answers, times = {}, {}
    for name, query in (("samples", "?limit=100000"), ("series", "?full=true"), ("series", ""), ("metrics", "")):
        spent = []
        for _ in range(reads):
            cache.clear()
            began = time.perf_counter()
            got = [client.get(f"/api/v1/jobs/{job_id}/{name}/{query}").json() for job_id in job_ids]
            spent.append((time.perf_counter() - began) / len(job_ids) * 1000)
        answers[name + query] = got
        times[name + query] = statistics.median(spent)
    # The run page's timeline: every job of the run, summed per second.
    from campaigns.models import Job
    from campaigns.views.timeline import run_timeline

    jobs = list(Job.objects.filter(pk__in=job_ids).prefetch_related("clients"))
    spent = []
    for _ in range(reads):
        began = time.perf_counter()
        timeline = run_timeline(jobs[0].run, jobs)
        spent.append((time.perf_counter() - began) * 1000 / len(job_ids))
    answers["run timeline"], times["run timeline"] = [timeline], statistics.median(spent)
    return answers, times


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--time", type=int, default=30)
    args.add_argument("--threads", default="1,4,16")
    args.add_argument("--reads", type=int, default=5)
    opts = args.parse_args()
    queue, host = queue_setup("seconds-storage")
    from campaigns import services
    from campaigns.models import Campaign, Job, Run
    from campaigns.seconds import attempt_pack
    from tests.helpers.waiting import wait_for

    targets = [local_target("seconds storage"), local_target("seconds storage", driver="pgsql")]
    scenario = local_scenario("seconds storage", test="oltp_read_only", time_s=opts.time)
    client = superuser_client("seconds storage")
    threads = [int(t) for t in opts.threads.split(",")]
    campaign, _ = Campaign.objects.update_or_create(name=f"seconds storage bench {queue}",
                                                    defaults={"threads": threads, "repetitions": 1})
    campaign.targets.set(targets)
    campaign.scenarios.set([scenario])
    with local_worker(queue=queue, hostname=host, concurrency=1):
        run = services.campaign_launch(campaign=campaign)
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=len(threads) * 2 * (opts.time + 120),
                 what="the campaign to finish")
    jobs = list(Job.objects.filter(run=run, status=Job.Status.SUCCEEDED))
    job_ids = [j.pk for j in jobs]
    print(f"run #{run.pk}: {len(jobs)} succeeded jobs of {run.jobs.count()} (oltp_read_only, threads {threads}, "
          f"{opts.time} s, one client; MariaDB and PostgreSQL on this machine)")
    before_answers, before_times = _answers(client, job_ids, opts.reads)
    sizes = {}
    seconds = 0
    for table in ("campaigns_intervalsample", "campaigns_hostsample", "campaigns_serversample"):
        sizes[table], rows = _row_bytes(table, job_ids)
        if table == "campaigns_intervalsample":
            seconds = rows
    before = sum(sizes.values())
    for job in jobs:
        for attempt in range(1, job.attempt + 1):
            attempt_pack(job_id=job.pk, attempt=attempt)
    after, packings = _packed_bytes(job_ids)
    after_answers, after_times = _answers(client, job_ids, opts.reads)
    print(f"job-seconds: {seconds}")
    print("before (rows): " + ", ".join(f"{t.removeprefix('campaigns_')} {b / seconds:.0f} B" for t, b in sizes.items())
          + f"; total {before / seconds:.0f} bytes per job-second")
    print(f"after (packed): {packings} packings, {after / seconds:.0f} bytes per job-second "
          f"({before / after:.1f}× smaller; goal ≤ 300)")
    for key in before_times:
        print(f"read {key:<24} per job: {before_times[key]:7.1f} ms as rows, {after_times[key]:7.1f} ms packed")
    for key in before_answers:
        exact = before_answers[key] == after_answers[key]
        worst = _largest_difference(before_answers[key], after_answers[key])
        print(f"answers of {key:<24}: " + ("the same" if exact else f"differ by at most {worst:.4g}"
                                           + (" (kept to 0.01)" if worst <= 0.005 + 1e-9 else " — MORE than 0.01")))


def _largest_difference(a: object, b: object) -> float:
    """The largest difference between two numbers at the same place of two JSON answers (inf if shapes differ)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return math.inf
        return max((_largest_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max((_largest_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(float(a) - float(b))
    return 0.0 if a == b else math.inf


if __name__ == "__main__":
    main()
