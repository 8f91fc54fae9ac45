"""Celery tasks: thin wrappers that load rows by primary key and call one service."""
from __future__ import annotations

from celery import shared_task

from campaigns import execution


@shared_task(acks_late=True, ignore_result=True)
def job_execute_task(job_id: int) -> None:
    execution.job_execute(job_id=job_id)


@shared_task(acks_late=True, ignore_result=True)
def jobclient_execute_task(client_id: int) -> None:
    execution.jobclient_execute(client_id=client_id)


@shared_task(ignore_result=True)
def jobs_reconcile_task() -> dict[str, int]:
    return execution.jobs_reconcile()


@shared_task(ignore_result=True)
def schedule_fire_task(schedule_id: int) -> None:
    from campaigns import monitoring

    monitoring.schedule_fire(schedule_id=schedule_id)


@shared_task(ignore_result=True)
def run_finished_task(run_id: int) -> None:
    from campaigns import monitoring

    monitoring.run_finished(run_id=run_id)
