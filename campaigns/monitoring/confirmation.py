"""Alarms measured again before anyone is told (Campaign.confirm_alarms, on by default).

A finished run's cells are screened at statistics.CONFIRM_SCREEN_ALPHA (run_evaluate). Its threshold alarms (both
regressions and improvements) then wait, "pending", while a confirmation run measures those cells again at once,
each repetition of every cell before the next (services.run_confirm). When it ends, each alarm is judged again on
the fresh measurement against the very baseline it was raised against (statistics.alarms_confirm): it holds when
the cell moved the same way beyond the campaign's threshold at statistics.CONFIRM_ALPHA. Only an alarm that holds is
told by e-mail and webhook; the others stay on the run page as "not confirmed", with what the second measurement
found. An alarm that cannot be measured again (another run of the campaign in progress, a target's owner no longer
allowing it, the confirmation run failing) is told "not measured again" when the single-run rule
(statistics.REGRESSION_ALPHA) alone would have raised it, so that confirming never tells less than not confirming
would have; otherwise it is dropped as not confirmed. Change points are judged over the history and told as before.
"""
from __future__ import annotations

import logging
from collections import defaultdict

from django.db.models import Q

from campaigns.models import Run
from campaigns.models.monitoring import Regression
from campaigns.monitoring.evaluation import (
    Cell,
    history_runs,
    judge_inputs,
    per_second_qps,
    pinned_run_cv,
)
from campaigns.services import run_confirm
from campaigns.services.launch import StateConflict
from campaigns.statistics import REGRESSION_ALPHA, CellChange, alarms_confirm, geometric_mean

log = logging.getLogger(__name__)

C = Regression.Confirmation


def _cell(regression: Regression) -> Cell:
    return regression.target_id, regression.scenario_id, regression.threads, regression.variant


def _told_alone(regression: Regression) -> bool:
    """Whether the single-run rule would have told this alarm without measuring it again."""
    return regression.p_adjusted is None or regression.p_adjusted < REGRESSION_ALPHA


def _unconfirmable(regressions: list[Regression], why: str) -> None:
    """Alarms that could not be measured again: told as such when the single-run rule raises them, else dropped."""
    for regression in regressions:
        state = C.UNCONFIRMED if _told_alone(regression) else C.NOT_CONFIRMED
        note = why if state == C.UNCONFIRMED else f"not measured again ({why}), and weaker than a single run alarms"
        Regression.objects.filter(pk=regression.pk).update(confirmation=state, confirm_note=note[:300])


def alarms_confirm_start(*, run: Run) -> list[Regression]:
    """The run's threshold alarms not yet asked wait for a confirmation run of their cells (launched here); the
    pending ones are returned. Nothing for a campaign that does not confirm, an import or a confirmation run."""
    campaign = run.campaign
    if not campaign.confirm_alarms or run.trigger in (Run.Trigger.IMPORT, Run.Trigger.CONFIRM):
        return []
    asked = list(Regression.objects.filter(run=run, detector=Regression.Detector.THRESHOLD,
                                           confirmation=C.NONE).order_by("pk"))
    if not asked:
        return []
    cells = sorted({_cell(r) for r in asked})
    try:
        confirm = run_confirm(run=run, cells=cells)
    except StateConflict as exc:
        log.warning("run %s: its %d alarm(s) cannot be measured again: %s", run.pk, len(asked), exc)
        _unconfirmable(asked, str(exc))
        return []
    Regression.objects.filter(pk__in=[r.pk for r in asked], confirmation=C.NONE).update(
        confirmation=C.PENDING, confirm_run=confirm)
    log.info("run %s: %d alarm(s) in %d cell(s) measured again by run %s before anyone is told", run.pk, len(asked),
             len(cells), confirm.pk)
    return asked


def _alarm(regression: Regression) -> CellChange:
    return CellChange(_cell(regression), regression.metric, regression.kind == Regression.Kind.REGRESSION,
                      regression.baseline_value, regression.current_value, regression.change_pct, regression.p_value,
                      regression.p_adjusted, regression.method)


def confirmation_judge(*, confirm_run: Run) -> list[Regression]:
    """The alarms a finished confirmation run was measuring, judged on its measurement; returns them as stored."""
    original = confirm_run.rerun_of
    # Its own pending alarms, and any of the original run's threshold alarms that a task lost before marking them
    # pending (the confirmation run had been launched): never left untold.
    stray = Q(run_id=confirm_run.rerun_of_id, detector=Regression.Detector.THRESHOLD, confirmation=C.NONE,
              notified_at__isnull=True)
    pending = list(Regression.objects.filter(Q(confirm_run=confirm_run, confirmation=C.PENDING) | stray)
                   .order_by("pk"))
    Regression.objects.filter(pk__in=[r.pk for r in pending]).update(confirm_run=confirm_run)
    if original is None or not pending:
        return pending
    if confirm_run.status not in (Run.Status.SUCCEEDED, Run.Status.PARTIALLY_SUCCEEDED):
        _unconfirmable(pending, f"the confirmation run #{confirm_run.pk} ended {confirm_run.status}")
        return list(Regression.objects.filter(pk__in=[r.pk for r in pending]))
    campaign = original.campaign
    earlier = history_runs(campaign=campaign, before=original)
    by_baseline: dict[tuple[int, ...], list[Regression]] = defaultdict(list)
    for regression in pending:
        by_baseline[tuple(regression.baseline_run_ids)].append(regression)
    for ids, regressions in by_baseline.items():
        current, baseline, history = judge_inputs(confirm_run.pk, list(ids), earlier)
        run_cv = pinned_run_cv(campaign=campaign, before=original, baseline_ids=list(ids))

        def per_second(cell: Cell, ids: tuple[int, ...] = ids) -> tuple[list[float], list[float]]:
            return per_second_qps(list(ids), cell), per_second_qps([confirm_run.pk], cell)

        held = alarms_confirm(alarms=[_alarm(r) for r in regressions], baseline=baseline, current=current,
                              threshold_pct=campaign.regression_threshold_pct, run_cv_pct=run_cv, history=history,
                              per_second=per_second)
        for regression in regressions:
            cell = _cell(regression)
            change = held[(cell, regression.metric)]
            fresh = geometric_mean(current.get(cell, {}).get(regression.metric, []))
            if change is not None:
                Regression.objects.filter(pk=regression.pk).update(
                    confirmation=C.CONFIRMED, confirm_value=change.current_value,
                    confirm_change_pct=change.change_pct, confirm_p_adjusted=change.p_adjusted)
            elif fresh is None:
                _unconfirmable([regression], f"run #{confirm_run.pk} measured nothing valid in this cell")
            else:
                change_pct = (fresh / regression.baseline_value - 1) * 100 if regression.baseline_value else None
                Regression.objects.filter(pk=regression.pk).update(
                    confirmation=C.NOT_CONFIRMED, confirm_value=fresh, confirm_change_pct=change_pct)
    return list(Regression.objects.filter(pk__in=[r.pk for r in pending]).order_by("pk"))


def alarms_orphaned_sweep() -> dict[int, list[int]]:
    """Alarms still pending whose confirmation run is gone (deleted by hand): told as not measured again where the
    single-run rule raises them, dropped otherwise. Returns, per run, the ids its webhook should hear about (the
    caller enqueues that); one indexed query when there are none (the reconciler calls it every few seconds)."""
    from campaigns.monitoring.notifications import regressions_notify

    orphans = list(Regression.objects.filter(confirmation=C.PENDING, confirm_run__isnull=True)
                   .select_related("run__campaign").order_by("pk"))
    told: dict[int, list[int]] = {}
    for run_id in sorted({r.run_id for r in orphans}):
        _unconfirmable([r for r in orphans if r.run_id == run_id], "its confirmation run was deleted")
        ids = regressions_notify(run=next(r.run for r in orphans if r.run_id == run_id))
        if ids:
            told[run_id] = ids
    return told
