"""Why a run or a job failed, as the banner at the top of their pages says it: the causes grouped by
target, each with its jobs, "Edit target" and "Test connection"; and the retry button's counts, failed and
cancelled told apart. Read from the jobs the page has already loaded: no query of its own."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from campaigns.models import Job, Run

CAUSES_SHOWN = 4


def _cause(error: str) -> str:
    """A job's error as the banner groups it: its first line (a traceback's or a log's rest is on the job page)."""
    return (error.strip().splitlines() or ["no cause recorded"])[0][:300]


def run_failure(run: Run, jobs: Sequence[Job]) -> dict[str, Any] | None:
    """The run page's banner: {"failed", "cancelled", "total", "causes": [{"text", "jobs", "first_job", "target"}],
    "run_error"}; None when nothing failed and nothing was cancelled."""
    failed = [j for j in jobs if j.status == Job.Status.FAILED]
    cancelled = [j for j in jobs if j.status == Job.Status.CANCELLED]
    if not failed and not cancelled and not run.error:
        return None
    causes: dict[tuple[int, str], dict[str, Any]] = {}
    for job in failed:
        key = (job.target_id, _cause(job.error))
        entry = causes.setdefault(key, {"text": key[1], "jobs": 0, "first_job": job.pk, "target": job.target})
        entry["jobs"] += 1
    ordered = sorted(causes.values(), key=lambda c: -c["jobs"])
    return {"failed": len(failed), "cancelled": len(cancelled), "total": len(jobs), "causes": ordered[:CAUSES_SHOWN],
            "more_causes": max(0, len(ordered) - CAUSES_SHOWN), "run_error": run.error,
            "status": run.status}


def job_failure(job: Job) -> dict[str, Any] | None:
    """The job page's banner: its cause and target; None unless the job failed."""
    if job.status != Job.Status.FAILED:
        return None
    return {"failed": 1, "cancelled": 0, "total": 1, "status": job.status, "run_error": "", "more_causes": 0,
            "causes": [{"text": _cause(job.error), "jobs": 1, "first_job": job.pk, "target": job.target,
                        "detail": job.error.strip()}]}


def retry_label(jobs: Sequence[Job]) -> str:
    """The retry button's words: "Retry 2 failed jobs", "Retry 3 cancelled jobs", "Retry 2 failed and 3 cancelled
    jobs"; "" when there is nothing to retry."""
    failed = sum(1 for j in jobs if j.status == Job.Status.FAILED)
    cancelled = sum(1 for j in jobs if j.status == Job.Status.CANCELLED)
    parts = [f"{n} {what}" for n, what in ((failed, "failed"), (cancelled, "cancelled")) if n]
    if not parts:
        return ""
    return f"Retry {' and '.join(parts)} job{'s' if failed + cancelled != 1 else ''}"
