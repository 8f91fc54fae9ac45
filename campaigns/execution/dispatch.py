"""Sending work: a job to the shared queue, a client to its host's own queue, a finished run to its
follow-up task, and moving a run on to its next job (or to its end). Each host's queue is named in hosts.host_queue.

The Celery tasks are the top layer (they call into this package), so they are reached through the one
lazy import in _tasks(), which the import contract lists as its only exception.
"""
from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import OperationalError

from campaigns.crypto import DecryptionError
from campaigns.execution import transitions
from campaigns.execution.datasets import run_cleanup_data
from campaigns.execution.hosts import host_queue, server_queue
from campaigns.execution.ladder import ladder_extend
from campaigns.execution.sealed import holds_field_key, job_password_seal
from campaigns.models import Job, Run

log = logging.getLogger(__name__)


def _tasks() -> ModuleType:
    from campaigns import tasks

    return tasks


def _send(task_name: str, **options: Any) -> None:
    """Publishes a nudge. With Redis away (restarting), it is logged and left out: the row in PostgreSQL says what
    is due, and the reconciler sends it again after BENCHAPP_REDISPATCH_S. Raising here failed the job that
    happened to stage its successor while Redis restarted ("internal error ... Connection refused")."""
    try:
        getattr(_tasks(), task_name).apply_async(**options)
    except OperationalError as exc:
        log.warning("%s %s not sent, the broker is unreachable (%s): the reconciler sends it again", task_name,
                    options.get("args"), exc)


def settings_held_notify_send(*, change_id: int) -> None:
    """Has the campaign's recipients and webhook told that a change's settings are held (after commit)."""
    transaction.on_commit(lambda: _send("settings_held_notify_task", args=[change_id], queue=server_queue()))


def job_next(*, run_id: int) -> Job | None:
    """The run's next job to send: the first pending one by position, leaving out the jobs on a target that a job
    of the run waits for (their turn comes at that job's next try; meanwhile other targets' jobs go on)."""
    pending = Job.objects.filter(run_id=run_id).pending()
    held = pending.filter(unreachable_since__isnull=False, next_try_at__gt=timezone.now()).values("target_id")
    return pending.exclude(target_id__in=held).order_by("position", "pk").first()


def job_dispatch(*, job: Job) -> None:
    """Sends the job to the shared queue (a nudge: the claim in the database decides who runs it)."""
    Job.objects.filter(pk=job.pk).update(dispatched_at=timezone.now(), dispatch_count=F("dispatch_count") + 1)
    _send("job_execute_task", args=[job.pk], queue=settings.CELERY_TASK_DEFAULT_QUEUE)


# The run's next job is sent this long before the current one's measurement should end: its coordinator checks
# the target and the dataset meanwhile, then waits for that end (turns.measuring_before), so the target idles
# only for the start itself. Not earlier, so that a long job does not keep a second worker slot waiting.
STAGE_LEAD_S = 5.0


def job_stage_next(*, job: Job) -> None:
    """Sends the run's next queued job while `job` measures, timed to reach a worker shortly before it ends.

    A nudge like any other: the claim decides, and run_advance still sends the next job when this one closes
    (a job already claimed then is not sent twice; a duplicate message finds nothing to claim).
    """
    next_job = job_next(run_id=job.run_id)
    if next_job is None or next_job.status != Job.Status.QUEUED:
        return  # a waiting job is the reconciler's to send again
    Job.objects.filter(pk=next_job.pk).update(dispatched_at=timezone.now(), dispatch_count=F("dispatch_count") + 1)
    countdown = max(0.0, job.run_time_s() - STAGE_LEAD_S)
    _send("job_execute_task", args=[next_job.pk], queue=settings.CELERY_TASK_DEFAULT_QUEUE, countdown=countdown)


def job_forward(*, job_id: int, hostname: str) -> None:
    """Sends the job to one client host's own queue: its campaign may run only on chosen hosts, and the worker
    that got it from the shared queue is not one of them. Its target's password goes with it, sealed for that
    host (execution.sealed): the host coordinates the job, and holds no field key."""
    _password_seal(job=Job.objects.select_related("target").get(pk=job_id), hostname=hostname)
    _send("job_execute_task", args=[job_id], queue=host_queue(hostname))


def jobclient_dispatch(*, client_id: int, hostname: str, attempt: int | None = None, job: Job | None = None,
                       password: str | None = None) -> None:
    """Sends a client to its host's queue; a re-send (attempt 2 and on) names its attempt, so that a message of an
    earlier send, picked up late, never runs the share that another host now has.

    The job's target password is sealed for that host first, for its worker's current key (`password` when the
    caller holds it: a coordinator on a client host has only the copy sealed for itself)."""
    if job is None:
        job = Job.objects.select_related("target").get(clients__pk=client_id)
    _password_seal(job=job, hostname=hostname, plain=password)
    args = [client_id] if attempt is None or attempt <= 1 else [client_id, attempt]
    _send("jobclient_execute_task", args=args, queue=host_queue(hostname))


def _password_seal(*, job: Job, hostname: str, plain: str | None = None) -> None:
    """A host test connects to no database: nothing to seal. A password that cannot be read is the job's
    coordinator's to report (its connection fails with the cause), not a reason to keep the message back."""
    if job.target.is_client_host():
        return
    try:
        job_password_seal(job=job, hostname=hostname, plain=plain)
    except DecryptionError as exc:
        log.warning("job %s: its target password was not sealed for %s: %s", job.pk, hostname, exc)


def job_finalize_dispatch(*, job_id: int, attempt: int | None) -> None:
    """A client host's last client has closed: the server closes the job (its figures, verdict, snapshot, cleanup
    and the run's next job read and write rows and passwords the host does not hold)."""
    _send("job_finalize_task", args=[job_id, attempt], queue=settings.CELERY_TASK_DEFAULT_QUEUE)


def job_measure_again_dispatch(*, job_id: int, attempt: int, cause: str, client_id: int | None,
                               send: int | None) -> None:
    """A client host found its job's measurement spoiled from outside (its target gone, sysbench killed by someone
    else): the server measures it again, for the new attempt removes rows and seals the host may not touch."""
    _send("job_measure_again_task", args=[job_id, attempt, cause, client_id, send],
          queue=settings.CELERY_TASK_DEFAULT_QUEUE)


def run_finished_dispatch(run_id: int) -> None:
    _send("run_finished_task", args=[run_id], queue=server_queue())


def run_advance(*, run_id: int) -> None:
    """Dispatches the run's next job, or closes the run when none is left.

    Jobs of one run execute one at a time: two benchmarks on the same target at once would
    measure each other.

    On a client host (which holds only its own jobs' passwords, and may not touch other jobs' rows) it is the
    server's to do: the run's id goes to the shared queue, which only the server's workers consume.
    """
    if not holds_field_key():
        _send("run_advance_task", args=[run_id], queue=settings.CELERY_TASK_DEFAULT_QUEUE)
        return
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_finished():
            return
        if run.status == Run.Status.PENDING:
            if run.waits_for is not None and not run.waits_for.is_finished():
                return
            transitions.run_start(run=run)
        jobs = Job.objects.filter(run=run)
        if jobs.unsettled().exists():
            return
        next_job = job_next(run_id=run.pk)
        if next_job is not None:
            transaction.on_commit(lambda: job_dispatch(job=next_job))
            return
        if jobs.pending().exists():
            return  # jobs waiting for their target: its next try (a Celery retry) sends them
        # Every job is done: an adaptive ladder may add counts around its peaks, knees and latency limits.
        if ladder_extend(run=run):
            added_next = job_next(run_id=run.pk)
            if added_next is not None:
                transaction.on_commit(lambda: job_dispatch(job=added_next))
            return
        keep = run.campaign.keep_data
    # Every job is done. The data goes before the run is marked finished: a run queued behind this
    # one starts then, on the same targets, and must not find its tables dropped under it. Dropping
    # twice (the reconciler may get here too meanwhile) is harmless.
    if not keep:
        run_cleanup_data(run=run)
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_finished():
            return
        if not transitions.run_close(run=run):
            return
        # Regression checks and notifications run as a task of their own: a slow webhook must
        # never hold up the next run.
        transaction.on_commit(lambda: run_finished_dispatch(run.pk))
        transaction.on_commit(lambda: followers_start(run.pk))


def followers_start(run_id: int) -> None:
    """Starts the runs that were queued behind this one (it has just finished)."""
    for follower_id in Run.objects.filter(waits_for_id=run_id, status=Run.Status.PENDING).values_list("pk", flat=True):
        run_advance(run_id=follower_id)
