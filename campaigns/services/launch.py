"""Launching a campaign and cancelling a run."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from campaigns.execution import transitions
from campaigns.execution.dispatch import followers_start, run_advance
from campaigns.execution.transitions import StateConflict
from campaigns.models import Campaign, Job, Run, Scenario
from campaigns.services.hosttests import host_bounds_check
from campaigns.services.plans import PlannedJob, campaign_expand
from campaigns.services.targets import targets_use_check, workload_targets_check
from campaigns.services.variants import variants_launch_problems
from campaigns.sysbench.ddl import DRIVER_LABELS, DdlError, table_ddl_statements

log = logging.getLogger(__name__)


class TargetForbidden(StateConflict):
    """A launch by a user who may not run benchmarks on one of the campaign's targets (services.targets
    .target_may_use): the API answers 400 on "targets", naming it."""


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


class VariantsRefused(StateConflict):
    """A settings variant a launch will not apply: off the allowlist, or on one of benchapp's own servers (the API
    answers 400, naming the target, the variant and the setting)."""


def variants_launch_check(*, jobs: list[tuple[Any, str, dict[str, str]]]) -> None:
    problems = variants_launch_problems(jobs=jobs)
    if problems:
        raise VariantsRefused("; ".join(problems))


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
    variants_launch_check(jobs=[(p.target, p.variant, p.variant_settings) for p in planned])
    host_bounds_check(planned=planned)
    _targets_allowed(user=user, pairs=[(p.target, p.scenario) for p in planned])

    def jobs(run: Run) -> list[Job]:
        return [Job(run=run, target=p.target, scenario=p.scenario, threads=p.threads, repetition=p.repetition,
                    position=p.position, tables=p.tables, table_size=p.table_size, clients_needed=p.clients,
                    time_s=p.time_s, warmup_s=p.warmup_s, variant=p.variant,
                    variant_settings=p.variant_settings) for p in planned]

    return _run_insert(campaign=campaign, jobs=jobs, user=user, trigger=trigger, idempotency_key=idempotency_key,
                       label=label, after=after)


def run_rerun(*, run: Run, user: Any = None, trigger: str = Run.Trigger.MANUAL,
              scope: str = Run.Rerun.FAILED, idempotency_key: str | None = None) -> Run:
    """A new run of the same campaign made of `run`'s own jobs: its failed and cancelled ones ("Retry failed
    jobs", scope failed) or all of them ("Run again", scope all), with the same targets, scenarios, threads,
    sizes, clients and times as they had, in their order. Linked to `run` (rerun_of), so a comparison of `run`
    takes each retried cell from its latest successful attempt. The same rule as a launch: one active run per
    campaign; the run itself must have finished."""
    if scope not in (Run.Rerun.FAILED, Run.Rerun.ALL):
        raise ValueError(f"unknown rerun scope {scope!r}")
    if idempotency_key:
        existing = Run.objects.filter(campaign_id=run.campaign_id, idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing
    run = Run.objects.select_related("campaign").get(pk=run.pk)
    if not run.is_finished():
        raise StateConflict(f"run #{run.pk} is still {run.status}: wait for it to finish or cancel it")
    if run.trigger == Run.Trigger.IMPORT:
        raise StateConflict(f"run #{run.pk} was imported from logs: there is nothing benchapp can run again")
    source = Job.objects.filter(run=run).order_by("position", "pk")
    if scope == Run.Rerun.FAILED:
        source = source.filter(status__in=[Job.Status.FAILED, Job.Status.CANCELLED])
    originals = list(source.select_related("target", "scenario"))
    if not originals:
        raise StateConflict(f"run #{run.pk} has no failed or cancelled jobs to retry")
    jobs = _copies_checked(originals, user=user)
    what = "retry of the failed jobs of" if scope == Run.Rerun.FAILED else "run again of"
    return _run_insert(campaign=run.campaign, jobs=jobs, user=user, trigger=trigger, idempotency_key=idempotency_key,
                       label=f"{what} run #{run.pk}"[:200], rerun_of=run, rerun=scope)


def run_confirm(*, run: Run, cells: list[tuple[int, int, int, str]]) -> Run:
    """A confirmation run: `run`'s jobs of the cells that alarmed ((target, scenario, threads, variant)), measured again at
    once before anyone is told (campaigns.monitoring.confirmation). Each repetition of every cell, then the next:
    the cells interleave, so that a drift of the machine meanwhile does not fall on one of them. Linked to `run`
    (rerun_of, rerun "confirm", trigger "confirm"), launched once per run (its idempotency key), held to the same
    rules as any launch (one active run per campaign, the targets' owners, the servers' settings)."""
    key = f"confirm-run-{run.pk}"
    existing = Run.objects.filter(campaign_id=run.campaign_id, idempotency_key=key).first()
    if existing is not None:
        return existing
    run = Run.objects.select_related("campaign", "created_by").get(pk=run.pk)
    wanted = set(cells)
    originals = [j for j in Job.objects.filter(run=run).select_related("target", "scenario").order_by("position", "pk")
                 if (j.target_id, j.scenario_id, j.threads, j.variant) in wanted]
    if not originals:
        raise StateConflict(f"run #{run.pk} has no job of the cells to measure again")
    order = {cell: n for n, cell in enumerate(dict.fromkeys((j.target_id, j.scenario_id, j.threads, j.variant)
                                                             for j in originals))}
    originals.sort(key=lambda j: (j.repetition, order[(j.target_id, j.scenario_id, j.threads, j.variant)], j.pk))
    jobs = _copies_checked(originals, user=run.created_by)
    label = f"confirmation of {len(wanted)} alarmed cell{'s' if len(wanted) != 1 else ''} of run #{run.pk}"
    return _run_insert(campaign=run.campaign, jobs=jobs, user=run.created_by, trigger=Run.Trigger.CONFIRM,
                       idempotency_key=key, label=label, rerun_of=run, rerun=Run.Rerun.CONFIRM)


def _copies_checked(originals: list[Job], *, user: Any) -> Callable[[Run], list[Job]]:
    """The jobs of a new run made of earlier jobs (a rerun, a confirmation run), in the order given, once the same
    checks as a launch have passed: their scenarios' DDL, their settings variants on the servers, and whoever runs
    them again held to the targets as a launch is (a run of someone else's target is not theirs to repeat, and a
    target that no longer allows uploaded workloads runs none again)."""
    campaign_ddl_check(planned=[PlannedJob(target=j.target, scenario=j.scenario, threads=j.threads,
                                           repetition=j.repetition, position=j.position, tables=j.tables,
                                           table_size=j.table_size, clients=j.clients_needed, time_s=j.run_time_s(),
                                           warmup_s=j.warmup_time_s()) for j in originals])
    variants_launch_check(jobs=[(j.target, j.variant, dict(j.variant_settings or {})) for j in originals])
    _targets_allowed(user=user, pairs=[(j.target, j.scenario) for j in originals])

    def jobs(new: Run) -> list[Job]:
        return [Job(run=new, target_id=j.target_id, scenario_id=j.scenario_id, threads=j.threads,
                    repetition=j.repetition, position=n, tables=j.tables, table_size=j.table_size,
                    clients_needed=j.clients_needed, time_s=j.time_s, warmup_s=j.warmup_s, variant=j.variant,
                    variant_settings=j.variant_settings, added_for=j.added_for)
                for n, j in enumerate(originals)]

    return jobs


def _targets_allowed(*, user: Any, pairs: list[tuple[Any, Any]]) -> None:
    """TargetForbidden naming the first target `user` may not run benchmarks on, or whose owner does not allow the
    uploaded workload a scenario runs (services.targets)."""
    try:
        targets_use_check(user=user, targets={t.pk: t for t, _ in pairs}.values())
        # (At launch, where code would run: an imported run's campaign names its workload and target too.)
        workload_targets_check(pairs=pairs)
    except ValidationError as exc:
        raise TargetForbidden(" ".join(exc.messages)) from None


def _run_insert(*, campaign: Campaign, jobs: Callable[[Run], list[Job]], user: Any, trigger: str,
                idempotency_key: str | None, label: str, after: Run | None = None, **fields: Any) -> Run:
    """Creates the run and its jobs under the campaign's row lock and sends the first job after commit."""
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
                waits_for=after if waits else None, queue=settings.CELERY_TASK_DEFAULT_QUEUE, **fields,
            )
            transitions.jobs_create(jobs=jobs(run))
            transaction.on_commit(lambda: run_advance(run_id=run.pk))
    except IntegrityError as exc:
        # Only a writer that skipped the row lock gets here (the lock serialises launches): the key's run, if it
        # made one, or the rule that was broken. Any other constraint is no run in progress: said as what it is
        # (a sequence set back behind its table's ids gave "duplicate key ... campaigns_job_pkey").
        constraint = integrity_constraint(exc)
        if idempotency_key and constraint in ("run_unique_idempotency_key", ""):
            existing = Run.objects.filter(campaign=campaign, idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing
        if constraint == "run_one_active_per_campaign":
            raise StateConflict(f"campaign '{campaign.name}' already has a run in progress") from None
        log.error("launching campaign %s: benchapp's database refused the run: %s", campaign.pk, exc)
        raise StateConflict(f"the run of campaign '{campaign.name}' could not be stored: benchapp's database "
                            f"refused it ({constraint or 'a constraint'} was violated), not because of a run in "
                            "progress; the server's log has the details") from None
    return run


def integrity_constraint(exc: IntegrityError) -> str:
    """The name of the constraint an IntegrityError broke ("" when the driver does not say)."""
    diag = getattr(exc.__cause__, "diag", None)
    return str(getattr(diag, "constraint_name", "") or "")


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
