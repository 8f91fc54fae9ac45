"""Trouble that is not the job's own fault.

A target that cannot be reached (refused, reset, timed out, too many connections, read-only after a failover)
pauses the job: it waits, and Celery's retry sends it again with exponential back-off and jitter
(job_wait_for_target); meanwhile the run's jobs on other targets go on (dispatch.job_next). Only after the
campaign's target_wait_s does that target's work fail, with the cause.

A measurement the infrastructure spoiled (its worker, pool child or client host lost, its target restarted
mid-run, sysbench killed by a signal benchapp did not send) is measured again as a new attempt, up to the
campaign's job_tries (results.job_measure_again); the lost attempt's seconds stay stored under their attempt
number.
"""
from __future__ import annotations

import logging
import random
from datetime import timedelta

from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.execution.outcomes import job_outcome_log
from campaigns.execution.results import job_close
from campaigns.models import Job

log = logging.getLogger(__name__)

# The shortest wait before a try, so that a failing target is never hammered.
MIN_DELAY_S = 0.5


def retry_delay_s(waited_s: float) -> float:
    """The wait before the next try of a job whose target has been away for waited_s: as long as it has been away
    (so the waits double: base, base, 2 base, 4 base …), between BENCHAPP_TARGET_RETRY_S and
    BENCHAPP_TARGET_RETRY_MAX_S, with "equal jitter" (half of it random) so that jobs of several runs waiting for
    one server do not all come back at the same moment."""
    delay = min(settings.BENCHAPP_TARGET_RETRY_MAX_S, max(settings.BENCHAPP_TARGET_RETRY_S, waited_s))
    return max(MIN_DELAY_S, delay / 2 + random.uniform(0, delay / 2))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def job_wait_for_target(*, job: Job, cause: str) -> float | None:
    """The job (claimed, preparing) found its target unreachable: it waits, and the seconds until its next try
    are returned for the caller's Celery retry. Once the target has been away for the campaign's target_wait_s
    (0: at once), the job and the run's other pending jobs on that target fail with the cause instead (None)."""
    now = timezone.now()
    limit_s = job.run.campaign.target_wait_s
    # Since when the target has been away: the first of the run's jobs that waits for it says so.
    earlier = (Job.objects.filter(run_id=job.run_id, target_id=job.target_id, unreachable_since__isnull=False)
               .exclude(status__in=Job.FINISHED).aggregate(first=Min("unreachable_since"))["first"])
    since = min(filter(None, [earlier, job.unreachable_since, now]))
    waited_s = (now - since).total_seconds()
    if waited_s >= limit_s:
        error = cause
        if limit_s:
            error = (f"target {job.target.name} unreachable since {timezone.localtime(since):%H:%M:%S} "
                     f"({_clock(waited_s)}; the campaign waits {_clock(limit_s)}): {cause}")
        job_close(job, status=Job.Status.FAILED, error=error)
        others = transitions.jobs_fail_pending(run_id=job.run_id, target_id=job.target_id, cause=error)
        for other in others:
            job_outcome_log(job_id=other, event="failed")
        return None
    delay_s = min(retry_delay_s(waited_s), max(MIN_DELAY_S, limit_s - waited_s))
    if not transitions.job_wait_target(job_id=job.pk, reason=cause, since=since,
                                       next_try_at=now + timedelta(seconds=delay_s)):
        return None  # cancelled meanwhile
    log.warning("job %s waits: target %s unreachable since %s (%s); next try in %.0f s", job.pk, job.target.name,
                since.isoformat(), cause, delay_s)
    return delay_s
