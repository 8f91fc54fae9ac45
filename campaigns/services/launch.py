"""Launching a campaign and cancelling a run."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from campaigns.execution import transitions
from campaigns.execution.dispatch import followers_start, run_advance
from campaigns.execution.transitions import StateConflict
from campaigns.models import Campaign, Job, Run, Scenario
from campaigns.services.plans import PlannedJob, campaign_expand
from campaigns.sysbench.ddl import DRIVER_LABELS, DdlError, table_ddl_statements


class ScenarioDdlRefused(StateConflict):
    """A scenario's table DDL cannot run on one of the campaign's targets (its driver's dialect, its table count).

    A StateConflict, so that every caller that reports a refused launch reports it; the API answers 400.
    """


def campaign_ddl_check(*, planned: list[PlannedJob]) -> None:
    """Refuses a launch whose scenario DDL would be refused on a target, before any run exists."""
    seen: set[tuple[str, int, int]] = set()
    for p in planned:
        scenario = p.scenario
        key = (p.target.driver, scenario.pk, p.tables)
        if not scenario.table_ddl or scenario.prepare_mode == Scenario.PrepareMode.NEVER or key in seen:
            continue
        seen.add(key)
        try:
            table_ddl_statements(scenario.table_ddl, tables=p.tables, driver=p.target.driver)
        except DdlError as exc:
            raise ScenarioDdlRefused(f"the table DDL of scenario '{scenario.name}' cannot run on target "
                                     f"'{p.target.name}' ({DRIVER_LABELS[p.target.driver]}): {exc}") from None


def campaign_launch(
    *,
    campaign: Campaign,
    user: Any = None,
    trigger: str = Run.Trigger.MANUAL,
    idempotency_key: str | None = None,
    label: str = "",
    after: Run | None = None,
) -> Run:
    """Creates a run with all its jobs and dispatches the first one after commit.

    A campaign has at most one active run: launches of one campaign take its row lock in turn, and a partial
    unique constraint (`run_one_active_per_campaign`) holds the rule in the database whatever the caller.
    The same idempotency key returns the run it created the first time, however many requests race with it.
    With `after`, a run that has not finished yet, the new run stays pending (its jobs queued) and starts when
    that one ends.
    """
    if idempotency_key:  # a retried request, the common case, needs no lock
        existing = Run.objects.filter(campaign=campaign, idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing
    planned = campaign_expand(campaign=campaign)
    if not planned:
        raise StateConflict("the campaign has no jobs: add targets, scenarios and thread counts")
    campaign_ddl_check(planned=planned)
    try:
        with transaction.atomic():
            # Concurrent launches of this campaign queue here; each then sees what the one before it committed.
            Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
            if idempotency_key:
                existing = Run.objects.filter(campaign=campaign, idempotency_key=idempotency_key).first()
                if existing is not None:
                    return existing
            active = Run.objects.filter(campaign=campaign).active().exclude(trigger=Run.Trigger.IMPORT).first()
            if active is not None:
                raise StateConflict(f"campaign '{campaign.name}' already has a run in progress (run #{active.pk})")
            waits = after is not None and not Run.objects.get(pk=after.pk).is_finished()
            run = transitions.run_create(
                waits=waits, campaign=campaign, trigger=trigger, idempotency_key=idempotency_key or None,
                label=label, created_by=user if getattr(user, "is_authenticated", False) else None,
                waits_for=after if waits else None, queue=settings.CELERY_TASK_DEFAULT_QUEUE,
            )
            transitions.jobs_create(jobs=[
                Job(run=run, target=p.target, scenario=p.scenario, threads=p.threads,
                    repetition=p.repetition, position=p.position, tables=p.tables,
                    table_size=p.table_size, clients_needed=p.clients, time_s=p.time_s, warmup_s=p.warmup_s)
                for p in planned
            ])
            transaction.on_commit(lambda: run_advance(run_id=run.pk))
    except IntegrityError:
        # Only a writer that skipped the row lock gets here (the lock serialises launches): the key's run, if it
        # made one, or the rule that was broken.
        if idempotency_key:
            existing = Run.objects.filter(campaign=campaign, idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing
        raise StateConflict(f"campaign '{campaign.name}' already has a run in progress") from None
    return run


def run_cancel(*, run: Run) -> Run:
    """Cancels every unfinished job; running sysbench processes notice within a second.

    Each client polls its job's status every BENCHAPP_CANCEL_POLL_S and then kills its process
    group (SIGTERM, SIGKILL a second later), keeps the samples stored so far, and the job's closer
    still runs the scenario's cleanup. A job already past its measurement (closing) keeps its outcome.
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished():
            raise StateConflict(f"run #{run.pk} is already {locked.status}")
        # Active jobs keep their process until the worker notices (within a poll interval); the
        # worker then records what was measured, runs cleanup and closes the run.
        if not transitions.jobs_cancel(run=locked):
            transitions.run_cancel_now(run=locked)
            transaction.on_commit(lambda: followers_start(run.pk))
    run.refresh_from_db()
    return run
