"""A job's stored seconds of one attempt, whether still rows or already packed (campaigns.seconds): beat packs an
earlier attempt within a minute of its end, so a test that reads them must not care which store holds them."""
from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from campaigns.execution.jobcosts import job_cost_inputs
from campaigns.execution.metrics import job_metrics
from campaigns.execution.verdict import job_evidence
from campaigns.models import HostSample, IntervalSample, Job, JobClient, JobResult, ServerSample
from campaigns.seconds import Kind, seconds_rows
from campaigns.services.bundles import run_export
from campaigns.views.timeline import run_measured_nothing, run_timeline


def stored_seconds(job: Job, attempt: int, *, client_index: int | None = None) -> list[dict[str, Any]]:
    """sysbench's seconds of that attempt (every client's, or one's), ordered by client and t."""
    rows = seconds_rows(Kind.INTERVAL, {job.pk: attempt})
    return [r for r in rows if client_index is None or r["client_index"] == client_index]


def job_with_seconds(run, target, scenario, *, position: int, attempt: int = 2, status: str = Job.Status.SUCCEEDED,
                     finished_ago_s: float = 3600) -> Job:
    """A closed job with two clients, its result, and 20 seconds of every kind for each of its attempts."""
    finished = timezone.now() - timedelta(seconds=finished_ago_s)
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=4, position=position,
                             status=status, phase="done" if status in Job.FINISHED else "run", attempt=attempt,
                             started_at=finished - timedelta(seconds=30),
                             finished_at=finished if status in Job.FINISHED else None, time_s=20)
    for index in (0, 1):
        JobClient.objects.create(job=job, index=index, host_name=f"bench-{index}", threads=2, attempt=attempt,
                                 status=JobClient.Status.SUCCEEDED)
    JobResult.objects.create(job=job, qps=2000.0, tps=100.0, queries=40_000, transactions=2000, events=2000,
                             latency_avg_ms=2.0)
    rnd = random.Random(position)
    for a in range(1, attempt + 1):
        for index in (0, 1):
            IntervalSample.objects.bulk_create([IntervalSample(
                job=job, client_index=index, attempt=a, t=float(t), threads=2, tps=round(rnd.uniform(40, 60), 2),
                qps=round(rnd.uniform(900, 1100), 2), reads_per_s=round(rnd.uniform(600, 700), 2), writes_per_s=200.0,
                other_per_s=100.0, latency_pct_ms=None if t == 5 else round(rnd.uniform(1, 4), 2),
                errors_per_s=0.0, reconnects_per_s=0.0) for t in range(1, 21)])
            HostSample.objects.bulk_create([HostSample(
                job=job, client_index=index, attempt=a, t=t, cpu_user_pct=round(rnd.uniform(5, 50), 2),
                cpu_system_pct=3.5, cpu_iowait_pct=0.0, cpu_steal_pct=round(rnd.uniform(0, 2), 2),
                cpu_busy_pct=round(rnd.uniform(10, 60), 2), per_core_busy_pct=[round(rnd.uniform(0, 99), 2)] * 4,
                client_cpus_busy_pct=40.25, sysbench_cpu_pct=None if t == 3 else 80.5, load_1m=1.25,
                context_switches_per_s=float(rnd.randint(1000, 9000)), net_bytes_in_per_s=123456789.0,
                net_bytes_out_per_s=1234.0, net_packets_in_per_s=10.0, net_packets_out_per_s=11.0,
                memory_used_pct=51.0, server_cpu_pct=120.0, others_cpu_pct=2.0,
                top_other_name="" if t % 2 else "python", top_other_cpu_pct=1.0) for t in range(1, 21)])
        ServerSample.objects.bulk_create([ServerSample(
            job=job, attempt=a, t=t, rates={"Questions": 2000 + t, **({"Innodb_buffer_pool_reads": 3} if t > 2 else {})},
            gauges={"Threads_running": 5, "Innodb_buffer_pool_pages_dirty": 10 * t}) for t in range(1, 21)])
    return job


def every_reading(job: Job, api: Client) -> dict:
    """What every reader of a job's seconds answers: verdict evidence, costs, metrics, run timeline, the API's
    samples, series and metrics, the bundle."""
    job.refresh_from_db()
    evidence = job_evidence(job)
    jobs = list(Job.objects.filter(run=job.run).prefetch_related("clients").order_by("position"))
    timeline = run_timeline(job.run, jobs)
    answers = {name: api.get(f"/api/v1/jobs/{job.pk}/{name}/{query}").json()
               for name, query in (("samples", "?limit=1000"), ("series", "?full=true"), ("metrics", ""))}
    bundle = run_export(run=job.run)
    for item in bundle["jobs"]:  # rows keep their figures, not their order of insertion
        for key in ("samples", "host_samples", "server_samples"):
            item[key] = sorted(item[key], key=lambda r: (r["attempt"], r.get("client_index", 0), r["t"]))
    bundle.pop("exported_at")
    return {"evidence": evidence, "costs": job_cost_inputs(job, job.result), "metrics": job_metrics(job),
            "timeline": timeline, "api": answers, "bundle": bundle,
            "nothing": run_measured_nothing(job.run, jobs)}
