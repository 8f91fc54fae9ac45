"""Celery tasks: thin wrappers that load rows by primary key and call one service."""
from __future__ import annotations

from typing import Any

from celery import shared_task

from campaigns import execution
from campaigns.webhooks import WEBHOOK_BACKOFF_MAX_S, WEBHOOK_BACKOFF_S, WEBHOOK_MAX_RETRIES, WebhookFailed


# A job whose target is unreachable waits (its row says why and when it tries again) and is tried again by
# Celery's own retry, after the back-off its service returned; it is given up by the campaign's target_wait_s,
# not by a count of retries.
@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def job_execute_task(self: Any, job_id: int) -> None:
    retry_in_s = execution.job_execute(job_id=job_id)
    if retry_in_s is not None:
        raise self.retry(countdown=retry_in_s)


@shared_task(acks_late=True, ignore_result=True)
def jobclient_execute_task(client_id: int, attempt: int = 1) -> None:
    execution.jobclient_execute(client_id=client_id, attempt=attempt)


@shared_task(acks_late=True, ignore_result=True)
def job_finalize_task(job_id: int, attempt: int | None = None) -> None:
    execution.job_finalize(job_id=job_id, attempt=attempt)


# A client host's worker found its job spoiled from outside: the server measures it again (rows and seals).
@shared_task(acks_late=True, ignore_result=True)
def job_measure_again_task(job_id: int, attempt: int, cause: str, client_id: int | None = None,
                           send: int | None = None) -> None:
    from campaigns.execution.results import job_measure_again_for_host

    job_measure_again_for_host(job_id=job_id, attempt=attempt, cause=cause, client_id=client_id, send=send)


# A client host's worker closes its own client; moving the run on (its next job, its end, its data dropped) is the
# server's, which holds every target's password.
@shared_task(acks_late=True, ignore_result=True)
def run_advance_task(run_id: int) -> None:
    execution.run_advance(run_id=run_id)


# A client host measures itself on its own queue; while a job is active there it tries again later.
@shared_task(bind=True, ignore_result=True, max_retries=60, soft_time_limit=120, time_limit=180)
def host_self_measure_task(self: Any, hostname: str) -> None:
    if execution.host_self_measure(hostname=hostname) is None:
        raise self.retry(countdown=60)


@shared_task(ignore_result=True)
def hosts_self_measure_due_task() -> list[str]:
    due = execution.hosts_self_measure_due()
    for hostname in due:
        host_self_measure_task.apply_async(args=(hostname,), queue=execution.host_queue(hostname))
    return due


@shared_task(ignore_result=True)
def jobs_reconcile_task() -> dict[str, int]:
    from campaigns.execution.sealed import holds_field_key
    from campaigns.monitoring.confirmation import alarms_orphaned_sweep

    done = execution.jobs_reconcile()
    if not holds_field_key():
        return done  # a client host's worker: regressions are the server's
    # A Redis restart forgets the client hosts' ACL users: each is given back from its stored password hash.
    from campaigns.services.client_access import redis_acl_restore

    redis_acl_restore()
    # Alarms whose confirmation run was deleted are told (or dropped) instead of waiting for ever.
    for run_id, regression_ids in alarms_orphaned_sweep().items():
        webhook_notify_task.apply_async(args=(run_id, regression_ids), queue=execution.server_queue())
    return done


@shared_task(ignore_result=True)
def schedule_fire_task(schedule_id: int) -> None:
    from campaigns import monitoring

    monitoring.schedule_fire(schedule_id=schedule_id)


@shared_task(ignore_result=True)
def run_finished_task(run_id: int) -> None:
    from campaigns import monitoring

    regression_ids = monitoring.run_finished(run_id=run_id)
    if regression_ids:
        webhook_notify_task.apply_async(args=(run_id, regression_ids), queue=execution.server_queue())


# A receiver that fails is retried by Celery with exponential back-off (no sleeping in a worker slot); a
# refused address is not retried. Its arguments are ids, so the URL never reaches the broker or a log line.
@shared_task(bind=True, ignore_result=True, acks_late=False, autoretry_for=(WebhookFailed,),
             max_retries=WEBHOOK_MAX_RETRIES, retry_backoff=WEBHOOK_BACKOFF_S, retry_backoff_max=WEBHOOK_BACKOFF_MAX_S,
             retry_jitter=True, soft_time_limit=30, time_limit=60)
def webhook_notify_task(self: Any, run_id: int, regression_ids: list[int]) -> None:
    from campaigns import monitoring

    monitoring.webhook_notify(run_id=run_id, regression_ids=regression_ids,
                              final_attempt=self.request.retries >= self.max_retries)


@shared_task(bind=True, ignore_result=True, acks_late=False, autoretry_for=(WebhookFailed,),
             max_retries=WEBHOOK_MAX_RETRIES, retry_backoff=WEBHOOK_BACKOFF_S, retry_backoff_max=WEBHOOK_BACKOFF_MAX_S,
             retry_jitter=True, soft_time_limit=30, time_limit=60)
def settings_held_notify_task(self: Any, change_id: int) -> None:
    from campaigns.monitoring.notifications import settings_held_notify

    settings_held_notify(change_id=change_id, first_attempt=self.request.retries == 0,
                         final_attempt=self.request.retries >= self.max_retries)


@shared_task(ignore_result=True)
def seconds_pack_task() -> int:
    from campaigns.seconds import seconds_pack_due

    return seconds_pack_due()


@shared_task(ignore_result=True)
def retention_sweep_task() -> dict[str, int]:
    from campaigns.services.retention import retention_sweep

    return retention_sweep()
