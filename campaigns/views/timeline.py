"""One timeline for a whole run: every job's per-second QPS and latency on the run's own clock, with where each
job started and ended, downsampled (LTTB) so that a six-hour run stays a light answer.

A job's second t (sysbench's `[ t s ]`) sits at the job's start on the run's clock plus t. The job starts when its
first client started sysbench (its measured start), else when the job was started; an imported run's jobs are laid
end to end. Between two jobs the series
carries a gap (None), so a chart breaks its line there instead of drawing across the preparation of the next job.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from campaigns.downsample import downsample
from campaigns.models import Job, Run
from campaigns.seconds import Kind, current_attempts, seconds_exist, seconds_rows

TIMELINE_MAX_POINTS = 1500


def _offset_s(at: datetime | None, origin: datetime) -> float | None:
    return None if at is None else round((at - origin).total_seconds(), 3)


def job_start_s(job: Job, origin: datetime) -> float | None:
    """Where the job's second 0 sits on the run's clock: when its first client started sysbench (its clients
    prefetched, as campaigns.views.runs loads them), else when the job was started; None before either."""
    starts = [c.started_at for c in job.clients.all() if c.started_at is not None]
    return _offset_s(min(starts) if starts else job.started_at, origin)


def run_measured_nothing(run: Run, jobs: list[Job]) -> bool:
    """A finished run none of whose jobs has a result or a second of samples: its timeline would be empty charts.
    The jobs are campaigns.views.runs's, their results selected with them; one query for the samples."""
    if not run.is_finished() or any(getattr(job, "result", None) is not None for job in jobs):
        return False
    return not seconds_exist(job.pk for job in jobs)


def job_label(job: Job) -> str:
    return f"{job.scenario.name} × {job.threads} thread{'s' if job.threads != 1 else ''} on {job.target.name}"


def run_timeline(run: Run, jobs: list[Job], *, max_points: int = TIMELINE_MAX_POINTS) -> dict[str, Any]:
    """The run's jobs on its clock (start_s, end_s: None while it runs) and its per-second QPS and worst-client
    latency across all of them, as [t, value] pairs at most max_points long each. One query (the jobs come with
    their clients prefetched)."""
    origin = run.started_at or run.created_at
    summed: dict[int, dict[float, list[Any]]] = {}
    for row in seconds_rows(Kind.INTERVAL, current_attempts(jobs), fields=("t", "qps", "latency_pct_ms")):
        second = summed.setdefault(row["job_id"], {}).setdefault(row["t"], [0.0, None])
        second[0] += row["qps"]
        if row["latency_pct_ms"] is not None:
            second[1] = row["latency_pct_ms"] if second[1] is None else max(second[1], row["latency_pct_ms"])
    seconds: dict[int, list[tuple[float, float, float | None]]] = {
        job_id: [(t, qps, latency) for t, (qps, latency) in by_t.items()] for job_id, by_t in summed.items()}
    entries: list[dict[str, Any]] = []
    ts: list[float] = []
    qps_values: list[float | None] = []
    latency_values: list[float | None] = []
    laid_end_s = 0.0
    for job in jobs:
        job_seconds = sorted(seconds.get(job.pk, ()))
        if job.imported:
            # An imported log has no clock of its own (its jobs are all stored at one instant): end to end.
            start_s: float | None = laid_end_s
            laid_end_s += (job_seconds[-1][0] if job_seconds else 0.0)
            end_s: float | None = laid_end_s
            laid_end_s += 1
        else:
            start_s = job_start_s(job, origin)
            end_s = _offset_s(job.finished_at, origin) if job.is_finished() else None
        if start_s is None:
            continue
        entries.append({
            "id": job.pk, "number": job.position + 1, "label": job_label(job), "threads": job.threads,
            "status": job.status, "start_s": start_s, "end_s": end_s, "seconds": len(job_seconds),
        })
        if ts and job_seconds:
            # The gap between two jobs: the line breaks here.
            ts.append(start_s)
            qps_values.append(None)
            latency_values.append(None)
        for t, qps, latency in job_seconds:
            ts.append(round(start_s + t, 3))
            qps_values.append(qps)
            latency_values.append(latency)
    entries.sort(key=lambda e: e["start_s"])
    percentiles = {job.scenario.percentile for job in jobs}
    return {
        "run": run.pk, "finished": run.is_finished(), "jobs": entries, "total_points": len(ts),
        "downsampled": len(ts) > max_points, "max_points": max_points,
        "latency_pct": percentiles.pop() if len(percentiles) == 1 else None,
        "qps": downsample(ts, qps_values, max_points=max_points, method="lttb"),
        "latency": downsample(ts, latency_values, max_points=max_points, method="lttb"),
    }
