"""Repairs what a lost worker or a lost broker message left behind."""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from campaigns.execution import dispatch, results, transitions
from campaigns.execution.hosts import client_doing, host_mark_offline, own_queues, stale_clients, worker_lost_cause
from campaigns.execution.outcomes import job_ended_log
from campaigns.execution.resend import jobclient_lose
from campaigns.execution.results import job_finalize
from campaigns.execution.variants import settings_changes_sweep
from campaigns.models import ClientHost, Job, JobClient, Run

log = logging.getLogger(__name__)

WAITING_RETRY_S = 5.0


def jobs_reconcile(*, stale_after_s: float | None = None, redispatch_after_s: float | None = None) -> dict[str, int]:
    """Repairs the runs of this process's queue; safe to run anywhere, any time.

    - A job preparing without a heartbeat, or a started client without one, lost its worker: it
      fails as "client lost" (its host goes offline) and the run goes on with its next job.
    - A running job that nobody is closing (its closer died, or its coordinator died before the
      clients started) is closed here.
    - A client whose task message was never picked up is sent again while its host is online, and
      given up when its host is offline or its job has stopped.
    - A running run with no active job gets its next queued job sent again once the last message
      is older than redispatch_after_s: Redis may have lost it (restart, flush). The atomic claims
      make duplicates harmless, so no job runs twice.

    Runs sent on another queue (another installation, or a test with a broker of its own) are left to
    that queue's reconciler: see Run.queue.
    """
    stale_after_s = settings.BENCHAPP_STALE_S if stale_after_s is None else stale_after_s
    redispatch_after_s = settings.BENCHAPP_REDISPATCH_S if redispatch_after_s is None else redispatch_after_s
    now = timezone.now()
    limit_stale = now - timedelta(seconds=stale_after_s)
    limit_redispatch = now - timedelta(seconds=redispatch_after_s)
    queues = own_queues()
    jobs = Job.objects.filter(run__queue__in=queues)
    runs = Run.objects.filter(queue__in=queues)
    lost = _coordinators_lost(jobs, stale_s=stale_after_s, limit=limit_stale)
    lost += _clients_lost(stale_s=stale_after_s, limit=limit_stale)
    gone, redispatched = _clients_never_started(queues, limit=limit_redispatch, now=now)
    lost += gone
    gone, closed = _jobs_unclosed(jobs, limit=limit_stale)
    lost += gone
    _runs_pending_start(runs)
    redispatched += _runs_next_job_resend(runs, limit=limit_redispatch, now=now)
    # Settings a variant changed whose job ended without putting them back (cancelled, its worker lost).
    restored = settings_changes_sweep(now=now)
    counts = {"lost": lost, "closed": closed, "redispatched": redispatched, "settings_restored": restored}
    if any(counts.values()):  # a pass that found nothing to repair says nothing (Celery's lines of it are muted)
        log.info("reconcile: %s", ", ".join(f"{name} {n}" for name, n in counts.items() if n))
    return counts


def _coordinators_lost(jobs: QuerySet[Job], *, stale_s: float, limit: datetime) -> int:
    """A coordinator that died while preparing leaves a job whose own heartbeat stopped: it is measured again, or
    fails, and its host goes offline. How many."""
    lost = 0
    for job in jobs.filter(status=Job.Status.PREPARING, heartbeat_at__lt=limit):
        cause = worker_lost_cause(job.claimed_by, stale_s=stale_s, doing="while preparing",
                                  last_beat=job.heartbeat_at)
        measured = results.job_measure_again(job_id=job.pk, attempt=job.attempt, cause=cause,
                                              heartbeat_before=limit)
        if measured == "again":
            lost += 1
            host_mark_offline(hostname=job.claimed_by, heartbeat_before=limit)
            continue
        if measured == "no try left":
            cause = results.no_try_left(cause, attempt=job.attempt, tries=job.run.campaign.job_tries)
        if transitions.job_lose_coordinator(job_id=job.pk, heartbeat_before=limit, cause=cause):
            job_ended_log(job_id=job.pk)
            lost += 1
            host_mark_offline(hostname=job.claimed_by, heartbeat_before=limit)
            dispatch.run_advance(run_id=job.run_id)
    return lost


def _clients_lost(*, stale_s: float, limit: datetime) -> int:
    """A started client whose worker died stops beating; the job fails with that cause. How many."""
    lost = 0
    for client in stale_clients(heartbeat_before=limit):
        cause = worker_lost_cause(client.host_name, stale_s=stale_s, doing=client_doing(client),
                                  last_beat=client.heartbeat_at)
        if jobclient_lose(client=client, heartbeat_before=limit, cause=cause):
            lost += 1
            # The attempt it belonged to, closed when it failed; one measured again is left to its new start.
            job_finalize(job_id=client.job_id, attempt=client.job.attempt)
    return lost


def _clients_never_started(queues: tuple[str, str], *, limit: datetime, now: datetime) -> tuple[int, int]:
    """A client that was never picked up: its message may be gone, or its host may be. Sent again while its host
    is online, given up when its host is offline or its job has stopped. (How many lost, how many sent again.)"""
    lost = redispatched = 0
    for client in JobClient.objects.filter(
        status=JobClient.Status.PENDING, heartbeat_at__lt=limit, job__run__queue__in=queues,
    ).select_related("job"):
        host = ClientHost.objects.filter(hostname=client.host_name).first()
        if client.job.status != Job.Status.RUNNING:
            if transitions.client_close(client_id=client.pk, status=JobClient.Status.CANCELLED,
                                        error="never started: the job had stopped"):
                job_finalize(job_id=client.job_id, attempt=client.job.attempt)
        elif host is None or not host.is_online():
            cause = f"client lost: host {client.host_name} went offline before starting its client"
            if jobclient_lose(client=client, heartbeat_before=limit, cause=cause):
                lost += 1
                job_finalize(job_id=client.job_id, attempt=client.job.attempt)
        elif JobClient.objects.filter(pk=client.pk, status=JobClient.Status.PENDING).update(heartbeat_at=now):
            dispatch.jobclient_dispatch(client_id=client.pk, hostname=client.host_name, attempt=client.attempt)
            redispatched += 1
    return lost, redispatched


def _jobs_unclosed(jobs: QuerySet[Job], *, limit: datetime) -> tuple[int, int]:
    """A job past its start with no client left running and no live closer: closed here. That covers a job whose
    lost client a busy worker declared (resend.clients_sweep_lost) and a closer that died mid-way ("finalizing"
    without heartbeat), which is started over: closing is idempotent. (How many lost, how many closed.)"""
    lost = closed = 0
    for job in jobs.filter(
        status__in=(Job.Status.RUNNING, Job.Status.FAILED, Job.Status.CANCELLED),
        phase__in=(Job.Phase.RUN, Job.Phase.FINALIZING), heartbeat_at__lt=limit,
    ).exclude(clients__status__in=transitions.CLIENT_ACTIVE):
        if job.phase == Job.Phase.FINALIZING and not transitions.job_finalizing_restart(
                job_id=job.pk, heartbeat_before=limit):
            continue
        if not job.clients.exists():
            cause = (f"worker lost: {job.claimed_by or 'its coordinator'} stopped before starting the clients")
            if results.job_measure_again(job_id=job.pk, attempt=job.attempt, cause=cause) == "again":
                lost += 1
                continue
            transitions.job_fail(job_id=job.pk, cause=cause, attempt=job.attempt)
        closed += int(job_finalize(job_id=job.pk, attempt=job.attempt))
    return lost, closed


def _runs_pending_start(runs: QuerySet[Run]) -> None:
    """A pending run whose predecessor finished (or was deleted) while nobody started it: a lost message."""
    for run_id in runs.filter(
        Q(waits_for__isnull=True) | Q(waits_for__in=Run.objects.finished()), status=Run.Status.PENDING,
    ).values_list("pk", flat=True):
        dispatch.run_advance(run_id=run_id)


def _runs_next_job_resend(runs: QuerySet[Run], *, limit: datetime, now: datetime) -> int:
    """A running run with no active job gets its next queued job sent again once the last message is older than
    `limit`: Redis may have lost it (restart, flush). The atomic claims make duplicates harmless. How many sent."""
    redispatched = 0
    for run in runs.filter(status=Run.Status.RUNNING):
        run_jobs = Job.objects.filter(run=run)
        if run_jobs.unsettled().exists():
            continue
        next_job = dispatch.job_next(run_id=run.pk)
        if next_job is None:
            if not run_jobs.pending().exists():
                dispatch.run_advance(run_id=run.pk)
            continue  # else every pending job waits for its target's next try
        # A job waiting for its target is sent by its Celery retry at next_try_at; from here only when that
        # message is overdue (lost with a worker or with Redis).
        last_sent = next_job.dispatched_at or run.started_at
        if next_job.next_try_at is not None:
            last_sent = max(filter(None, [last_sent, next_job.next_try_at]))
        waiting_retry = next_job.status == Job.Status.WAITING and next_job.next_try_at is None and (
            next_job.dispatched_at is None or next_job.dispatched_at < now - timedelta(seconds=WAITING_RETRY_S))
        # A job never sent counts from its run's start: the launch sends it just after its commit, and
        # sending it from here in that moment would put a second message on the queue for nothing.
        if waiting_retry or last_sent is None or last_sent < limit:
            dispatch.job_dispatch(job=next_job)
            redispatched += 1
    return redispatched
