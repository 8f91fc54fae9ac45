"""Retention of what grows without bound and serves nobody once old: expired login sessions and
django-axes' access records.

Sessions past their expiry are never used again (Django's clearsessions does the same). axes keeps a row per login
(AccessLog), per failed login (AccessFailureLog) and per address or username still counting failures
(AccessAttempt): the first two are kept BENCHAPP_ACCESS_LOG_KEEP_DAYS (90) for an audit, the last until its
failures are older than the cool-off as well (a lockout still counting is never cut short). Beat runs the sweep
daily (retention_sweep_task); `manage.py retention_sweep --dry-run` says what it would delete.

Per-second samples are kept for ever, packed (campaigns.seconds); a job closed more than BENCHAPP_SECONDS_KEEP_DAYS
(90) ago keeps them at BENCHAPP_SECONDS_COARSE_S (10) seconds a point, the curve at a lower resolution, while its
result (the summary, the steady figures and percentiles every comparison reads) stays as it was.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.conf import settings
from django.contrib.sessions.models import Session
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.counters import counter_add
from campaigns.seconds import seconds_coarsen_due


def _old(now: datetime) -> dict[str, QuerySet]:
    keep = timedelta(days=settings.BENCHAPP_ACCESS_LOG_KEEP_DAYS)
    attempts_keep = max(keep, timedelta(hours=settings.AXES_COOLOFF_TIME))
    return {
        "sessions": Session.objects.filter(expire_date__lt=now),
        "access_logs": AccessLog.objects.filter(attempt_time__lt=now - keep),
        "access_failures": AccessFailureLog.objects.filter(attempt_time__lt=now - keep),
        "access_attempts": AccessAttempt.objects.filter(attempt_time__lt=now - attempts_keep),
    }


def retention_sweep(*, dry_run: bool = False, now: datetime | None = None) -> dict[str, int]:
    """Deletes (or, dry_run, counts) what is past its keeping; returns how many rows of each kind, and the attempts
    whose old seconds were made coarse ("coarse_attempts") with the bytes that freed ("coarse_bytes_freed")."""
    now = now or timezone.now()
    rows = _old(now)
    if dry_run:
        coarse = seconds_coarsen_due(now=now, dry_run=True, limit=10**9)
        return {**{kind: query.count() for kind, query in rows.items()}, "coarse_attempts": coarse["attempts"]}
    deleted = {kind: query.delete()[1].get(query.model._meta.label, 0) for kind, query in rows.items()}
    for kind, n in deleted.items():
        counter_add("retention_deleted", n, kind=kind)
    coarse = {"attempts": 0, "bytes_before": 0, "bytes_after": 0}
    while True:  # in batches, each its own transactions, until none is due
        batch = seconds_coarsen_due(now=now)
        for key in coarse:
            coarse[key] += batch[key]
        if batch["attempts"] == 0:
            break
    freed = coarse["bytes_before"] - coarse["bytes_after"]
    counter_add("retention_deleted", coarse["attempts"], kind="coarse_attempts")
    counter_add("retention_bytes_freed", freed)
    return {**deleted, "coarse_attempts": coarse["attempts"], "coarse_bytes_freed": freed}
