"""A job's per-query costs from what it stored (campaigns.costs), written on its result when it is judged."""
from __future__ import annotations

import statistics

from campaigns.cache import results_changed
from campaigns.costs import CostInputs, job_costs
from campaigns.models import Job, JobResult, RoundTrip
from campaigns.seconds import Kind, seconds_rows
from campaigns.validity import CLIENT_BUSY_PCT

# The reading connection's own statement: MySQL's Threads_running counts the SHOW STATUS that reads it.
_OWN_RUNNING = {"mysql": 1.0, "pgsql": 0.0}
_RUNNING_GAUGE = {"mysql": "Threads_running", "pgsql": "backends_active"}


def job_cost_inputs(job: Job, result: JobResult) -> CostInputs:
    """What the job's current attempt stored, as campaigns.costs needs it (its first second left out, as the
    verdict leaves it: sysbench's threads are still connecting)."""
    driver = job.target.driver or ""
    gauges = [r["gauges"] for r in seconds_rows(Kind.SERVER, {job.pk: job.attempt}, fields=("t", "gauges"))
              if r["t"] > 1]
    running = [float(g.get(_RUNNING_GAUGE.get(driver, ""), 0)) - _OWN_RUNNING.get(driver, 0.0)
               for g in gauges if isinstance(g, dict) and _RUNNING_GAUGE.get(driver, "") in g]
    host_fields = ("server_cpu_pct", "sysbench_cpu_pct", "client_cpus_busy_pct", "per_core_busy_pct",
                   "cpu_busy_pct", "cpu_steal_pct")
    rows = [(r["client_index"], *(r[n] for n in host_fields))
            for r in seconds_rows(Kind.HOST, {job.pk: job.attempt}, fields=("t", *host_fields)) if r["t"] > 1]
    host_busy = [float(r[5]) - float(r[6] or 0) for r in rows if r[0] == 0 and r[5] is not None]
    server_cpu = [r[1] for r in rows if r[0] == 0 and r[1] is not None]
    by_client: dict[int, list[float]] = {}
    busy: dict[int, list[bool]] = {}
    cores = None
    for index, _server, sysbench, client_busy, per_core, _busy, _steal in rows:
        if sysbench is not None:
            by_client.setdefault(index, []).append(float(sysbench))
        busy.setdefault(index, []).append(float(client_busy or 0) > CLIENT_BUSY_PCT)
        if index == 0 and per_core:
            cores = len(per_core)
    events = result.events or result.transactions
    trips = list(RoundTrip.objects.filter(run_id=job.run_id, target_id=job.target_id)
                 .values_list("median_ms", flat=True))
    return CostInputs(
        driver=driver, threads=job.threads, window=job.server_window or {},
        queries=float(result.queries) if result.queries else None,
        transactions=float(result.transactions) if result.transactions else None,
        latency_avg_ms=result.latency_avg_ms,
        threads_running=max(0.0, statistics.fmean(running)) if running else None,
        server_cpu_pct=statistics.fmean(server_cpu) if server_cpu else None,
        server_cores=cores,
        sysbench_cpu_pct=sum(statistics.fmean(v) for v in by_client.values()) if by_client else None,
        client_busy_share=max((sum(v) / len(v) for v in busy.values() if v), default=None),
        host_busy_pct=statistics.fmean(host_busy) if host_busy else None,
        rtt_ms=statistics.median(trips) if trips else None,
        queries_per_event=result.queries / events if result.queries and events else None,
    )


def job_costs_store(job: Job) -> dict[str, float | None]:
    """Computes the job's costs and writes them on its result ({} when it has none: a failed job)."""
    result = JobResult.objects.filter(job=job).first()
    if result is None or job.target.is_client_host() or job.imported:
        return {}
    costs = job_costs(job_cost_inputs(job, result))
    JobResult.objects.filter(pk=result.pk).update(costs=costs)
    return costs


def jobs_costs_backfill(*, limit: int | None = None) -> int:
    """Stores the costs of measured jobs judged before costs existed (their result's costs empty); returns how many.
    Safe to run again: a job with costs is left alone."""
    pending = (Job.objects.filter(status=Job.Status.SUCCEEDED, imported=False, result__isnull=False,
                                  result__costs={}, target__driver__in=["mysql", "pgsql"])
               .select_related("target").order_by("pk"))
    done = 0
    for job in pending[:limit] if limit else pending.iterator(chunk_size=200):
        job_costs_store(job)
        done += 1
    if done:
        results_changed()  # comparisons carry the costs: cached ones are outdated
    return done
