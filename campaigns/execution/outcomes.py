"""One WARNING line for each job that fails, is measured again or ends invalid.

A failure used to leave no line of its own (only Celery's "Task … succeeded" and a cleanup warning), so an operator
had to open the run page to learn that a nightly run lost jobs. Each line names the job, its run, its target and
the cause, and carries the request id of the launch that started the run (Run.request_id) rather than the id of
whatever closed the job (a reconciler pass, another host's worker): `grep <id>` across the web and worker logs then
shows the launch and every failure it led to. The causes are the stored ones, which have the target's secrets
redacted already (campaigns.sysbench.command.redact_text).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from benchapp import requestid
from campaigns.counters import histogram_observe
from campaigns.models import Job

log = logging.getLogger("campaigns.jobs")

Event = Literal["failed", "measured again", "ended invalid"]
_CAUSE_MAX = 500


def _invalid_cause(findings: list[dict[str, object]]) -> str:
    """The findings that made the verdict invalid, as one phrase."""
    worst = [f for f in findings if f.get("level") == "invalid"] or findings
    return "; ".join(str(f.get("message") or f.get("code") or "") for f in worst) or "no finding recorded"


def job_outcome_log(*, job_id: int, event: Event, cause: str = "", attempt: int | None = None) -> None:
    """Logs the job's outcome (a WARNING) under its run's request id; `cause` defaults to the job's stored error
    (failed) or its findings (ended invalid), `attempt` to the job's current one (a job measured again is at the
    next one already: its caller names the lost one)."""
    row = (Job.objects.filter(pk=job_id)
           .values("run_id", "target__name", "attempt", "error", "findings", "run__request_id").first())
    if row is None:  # deleted with its run meanwhile: nothing left to tell about
        return
    if not cause:
        cause = _invalid_cause(row["findings"] or []) if event == "ended invalid" else row["error"]
    cause = " ".join((cause or "unknown").split())[:_CAUSE_MAX]  # one line, whatever the cause's text holds
    token = requestid.activate(row["run__request_id"]) if row["run__request_id"] else None
    try:
        log.warning("job %s %s: run %s, target %s, attempt %s: %s", job_id, event, row["run_id"],
                    row["target__name"], attempt or row["attempt"], cause)
    finally:
        if token is not None:
            requestid.deactivate(token)


def job_ended_log(*, job_id: int) -> None:
    """After a job was closed: a WARNING when it failed or ended invalid, nothing when it ended well or was
    cancelled (a user's own doing)."""
    row = Job.objects.filter(pk=job_id).values("status", "verdict").first()
    if row is None:
        return
    if row["status"] == Job.Status.FAILED:
        job_outcome_log(job_id=job_id, event="failed")
    elif row["status"] == Job.Status.SUCCEEDED and row["verdict"] == Job.Verdict.INVALID:
        job_outcome_log(job_id=job_id, event="ended invalid")


# How long a job spent in each phase (benchapp_job_phase_duration_seconds), upper bounds in seconds.
PHASE_BUCKETS_S = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600)


def job_phases(row: Mapping[str, Any]) -> dict[str, float]:
    """The seconds a closed job spent in each phase it went through: queued (until claimed), prepare (claimed to
    its clients sent), dataset_prepare, warmup, run (its clients' wall time) and finalize (measured to closed)."""
    def between(start: str, end: str) -> float | None:
        return (row[end] - row[start]).total_seconds() if row.get(start) and row.get(end) else None

    phases = {"queued": between("queued_at", "claimed_at"), "prepare": between("claimed_at", "started_at"),
              "dataset_prepare": row.get("prepare_wall_s"), "warmup": row.get("warmup_wall_s"),
              "run": row.get("wall_time_s"), "finalize": between("measured_at", "finished_at")}
    return {phase: max(0.0, float(s)) for phase, s in phases.items() if s is not None}


def job_phases_count(*, job_id: int) -> None:
    """After a job was closed: its phases, counted into /metrics' histogram (once: its closer calls this)."""
    row = Job.objects.filter(pk=job_id, imported=False).values(
        "queued_at", "claimed_at", "started_at", "measured_at", "finished_at", "prepare_wall_s", "warmup_wall_s",
        "wall_time_s").first()
    if row is not None:
        histogram_observe("job_phase_seconds", job_phases(row), PHASE_BUCKETS_S, label="phase")
