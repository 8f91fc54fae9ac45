"""Nightly campaigns: firing schedules, baselines, regression detection and notifications."""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from campaigns import execution
from campaigns.changepoints import change_points
from campaigns.crypto import DecryptionError
from campaigns.models import Campaign, IntervalSample, Job, Run
from campaigns.models.monitoring import Annotation, CampaignSchedule, Regression, ScheduleFiring, cron_expand
from campaigns.services import StateConflict, annotation_create, campaign_launch, campaign_update
from campaigns.statistics import (
    HISTORY_RUNS,
    LATENCY,
    QPS,
    cell_stats,
    cells_judge,
    geometric_mean,
    repetitions_needed,
    run_noise,
)
from campaigns.webhooks import WEBHOOK_MAX_RETRIES, WebhookFailed, WebhookRefused, webhook_post

log = logging.getLogger(__name__)

# A schedule never fires twice within this window, whatever beat replays after a restart.
MIN_FIRING_GAP_S = 50.0

Cell = tuple[int, int, int]  # target id, scenario id, threads


# ---------------------------------------------------------------- schedules


def schedule_save(*, schedule: CampaignSchedule) -> CampaignSchedule:
    """Validates and saves a schedule, keeping its Celery beat entry in step; a shorthand (@nightly, …) is stored
    written out."""
    schedule.cron = cron_expand(schedule.cron)
    schedule.full_clean()
    minute, hour, day, month, weekday = schedule.cron.split()
    with transaction.atomic():
        crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=minute, hour=hour, day_of_month=day, month_of_year=month, day_of_week=weekday,
            timezone=schedule.timezone,
        )
        schedule.save()
        name = f"benchapp schedule #{schedule.pk}"
        task = schedule.periodic_task
        if task is None:
            task = PeriodicTask(name=name)
        task.crontab = crontab
        task.task = "campaigns.tasks.schedule_fire_task"
        task.args = json.dumps([schedule.pk])
        task.enabled = schedule.enabled
        task.queue = execution.server_queue()  # it imports numpy: never on a client host's worker
        task.save()
        if schedule.periodic_task_id != task.pk:
            schedule.periodic_task = task
            schedule.save(update_fields=["periodic_task"])
    return schedule


def schedule_delete(*, schedule: CampaignSchedule) -> None:
    with transaction.atomic():
        if schedule.periodic_task_id:
            PeriodicTask.objects.filter(pk=schedule.periodic_task_id).delete()
        schedule.delete()


def schedule_fire(*, schedule_id: int) -> ScheduleFiring | None:
    """Launches the schedule's campaign, or records why it did not (previous run still going)."""
    with transaction.atomic():
        schedule = CampaignSchedule.objects.select_for_update().select_related("campaign").filter(pk=schedule_id).first()
        if schedule is None:
            return None
        now = timezone.now()
        if not schedule.enabled:
            return ScheduleFiring.objects.create(schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                                                 reason="schedule is disabled")
        if schedule.last_fired_at and (now - schedule.last_fired_at).total_seconds() < MIN_FIRING_GAP_S:
            # A replay of a firing just handled (beat restarted, duplicate message): not a new night.
            return None
        schedule.last_fired_at = now
        schedule.save(update_fields=["last_fired_at"])
        active = Run.objects.filter(campaign=schedule.campaign).active().first()
        if active is not None:
            return ScheduleFiring.objects.create(
                schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                reason=f"previous run #{active.pk} is still {active.status}",
            )
        try:
            run = campaign_launch(
                campaign=schedule.campaign, trigger=Run.Trigger.SCHEDULED,
                label=f"scheduled: {schedule.label or schedule.cron}",
                idempotency_key=f"schedule-{schedule.pk}-{now:%Y%m%d%H%M}",
            )
        except StateConflict as exc:
            return ScheduleFiring.objects.create(schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                                                 reason=str(exc))
        return ScheduleFiring.objects.create(schedule=schedule, outcome=ScheduleFiring.Outcome.LAUNCHED, run=run)


# ---------------------------------------------------------------- baselines and regressions


def _cell_values(run_ids: list[int], *, only: Cell | None = None) -> dict[int, dict[Cell, dict[str, list[float]]]]:
    """Per run, per cell: the QPS and latency-percentile values of its succeeded repetitions
    (of every cell, or of the `only` one)."""
    out: dict[int, dict[Cell, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: {"qps": [], "lat": []}))
    # An invalid job measured something else than the server (a busy client, a shared target): it is no
    # evidence of a regression either way, so it is left out, of the baseline as of the run (the run page says so).
    jobs = Job.objects.filter(run_id__in=run_ids, status=Job.Status.SUCCEEDED, result__isnull=False).exclude(
        verdict=Job.Verdict.INVALID)
    if only is not None:
        jobs = jobs.filter(target_id=only[0], scenario_id=only[1], threads=only[2])
    rows = jobs.values_list("run_id", "target_id", "scenario_id", "threads", "result__qps", "result__latency_pct_ms")
    for run_id, target_id, scenario_id, threads, qps, lat in rows:
        cell = out[run_id][(target_id, scenario_id, threads)]
        if qps is not None:
            cell["qps"].append(qps)
        if lat is not None:
            cell["lat"].append(lat)
    return out


def baseline_runs(*, campaign: Campaign, before: Run) -> tuple[list[int], str]:
    """The pinned run, or the last N successful scheduled runs before `before`."""
    if campaign.baseline_run_id and campaign.baseline_run_id != before.pk:
        return [campaign.baseline_run_id], f"pinned run #{campaign.baseline_run_id}"
    ids = list(
        Run.objects.filter(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                           created_at__lt=before.created_at)
        .exclude(pk=before.pk).order_by("-created_at").values_list("pk", flat=True)[: campaign.baseline_last_n]
    )
    label = f"geometric mean of the last {len(ids)} scheduled runs ({', '.join(f'#{i}' for i in ids)})" if ids else "none"
    return ids, label


def history_runs(*, campaign: Campaign, before: Run, limit: int = HISTORY_RUNS) -> list[int]:
    """The campaign's last `limit` succeeded runs before `before` (the runs campaign_noise measures noise on)."""
    return list(Run.objects.filter(campaign=campaign, status=Run.Status.SUCCEEDED, created_at__lt=before.created_at)
                .exclude(pk=before.pk).order_by("-created_at", "-id").values_list("pk", flat=True)[:limit])


def _per_second_qps(run_ids: list[int], cell: Cell) -> list[float]:
    target_id, scenario_id, threads = cell
    return list(
        IntervalSample.objects.filter(job__run_id__in=run_ids, job__target_id=target_id,
                                      job__scenario_id=scenario_id, job__threads=threads,
                                      job__status=Job.Status.SUCCEEDED, t__gt=1, attempt=F("job__attempt"))
        .exclude(job__verdict=Job.Verdict.INVALID)
        .values_list("qps", flat=True)[:20000]
    )


def _baseline_values(values: dict[int, dict[Cell, dict[str, list[float]]]], ids: list[int], cell: Cell,
                     key: str) -> list[float]:
    """One value per baseline run (the geometric mean of its repetitions), or the single (pinned) run's
    repetitions as they are."""
    if len(ids) == 1:
        return list(values.get(ids[0], {}).get(cell, {}).get(key, []))
    return [m for r in ids if (v := values.get(r)) and v.get(cell) and (m := geometric_mean(v[cell][key])) is not None]


def run_evaluate(*, run: Run) -> list[Regression]:
    """Compares each cell of a finished run with its baseline (campaigns.statistics.cells_judge: the unit of the
    test, the correction for many cells, the resolution of latencies) and stores regressions/improvements."""
    campaign = run.campaign
    ids, label = baseline_runs(campaign=campaign, before=run)
    if not ids:
        return []
    # How much a run's mean varies from night to night is measured on the campaign's recent runs (the baseline's
    # among them), not on the few baseline runs alone: their spread widens or narrows the prediction interval.
    earlier = history_runs(campaign=campaign, before=run)
    values = _cell_values(list(dict.fromkeys([run.pk, *ids, *earlier])))
    keys = {QPS: "qps", LATENCY: "lat"}
    current = {cell: {metric: v[key] for metric, key in keys.items()} for cell, v in values.get(run.pk, {}).items()}
    baseline = {cell: {metric: [values[r][cell][key] for r in ids if r in values and cell in values[r]]
                       for metric, key in keys.items()} for cell in current}
    spread_ids = list(dict.fromkeys([*earlier, *ids]))
    history = {cell: {metric: [m for r in spread_ids if r in values and cell in values[r]
                               and (m := geometric_mean(values[r][cell][key])) is not None]
                      for metric, key in keys.items()} for cell in current}

    def per_second(cell: Cell) -> tuple[list[float], list[float]]:
        return _per_second_qps(ids, cell), _per_second_qps([run.pk], cell)

    # Against a pinned run, the run-to-run noise of the campaign's history widens the repetition test.
    run_cv = (campaign_noise(campaign=campaign, before=run)["between_only_pct"] or 0.0) if len(ids) == 1 else 0.0
    found: list[Regression] = []
    for change in cells_judge(baseline=baseline, current=current, threshold_pct=campaign.regression_threshold_pct,
                              run_cv_pct=run_cv, per_second=per_second, history=history):
        regression, _ = Regression.objects.update_or_create(
            run=run, target_id=change.cell[0], scenario_id=change.cell[1], threads=change.cell[2],
            metric=Regression.Metric.QPS if change.metric == QPS else Regression.Metric.LATENCY,
            detector=Regression.Detector.THRESHOLD,
            defaults={
                "campaign": campaign, "kind": Regression.Kind.REGRESSION if change.worse else Regression.Kind.IMPROVEMENT,
                "baseline_value": change.baseline_value, "current_value": change.current_value,
                "change_pct": change.change_pct, "p_value": change.p_value, "p_adjusted": change.p_adjusted,
                "method": change.method[:120], "baseline_run_ids": ids, "baseline_label": label[:200],
            },
        )
        found.append(regression)
    return found


# ---------------------------------------------------------------- annotations


def annotations_auto(*, run: Run) -> list[Annotation]:
    """Notes benchapp records itself after a run: for each target the run measured, the server version and the
    snapshotted settings (the "before" snapshot of the run's first job on it) against the target's previous
    measured job in an earlier run; one auto annotation per target that changed, at the run's start. Idempotent.
    Two queries per target."""
    made = []
    firsts: dict[int, Job] = {}
    for job in (Job.objects.filter(run=run).exclude(server_snapshot={}).select_related("target")
                .order_by("position", "pk")):
        firsts.setdefault(job.target_id, job)
    for target_id, job in firsts.items():
        if Annotation.objects.filter(run=run, target_id=target_id, kind=Annotation.Kind.AUTO).exists():
            continue
        previous = (Job.objects.filter(target_id=target_id, run__created_at__lt=run.created_at)
                    .exclude(run=run).exclude(server_snapshot={}).order_by("-run__created_at", "-position").first())
        if previous is None:
            continue
        now = (job.server_snapshot or {}).get("before") or {}
        then = (previous.server_snapshot or {}).get("before") or {}
        changes = []
        if now.get("version") and then.get("version") and now["version"] != then["version"]:
            changes.append(f"server version {then['version']} → {now['version']}")
        old, new = then.get("settings") or {}, now.get("settings") or {}
        for name in sorted(set(old) & set(new)):
            if old[name] != new[name]:
                changes.append(f"{name} {old[name]} → {new[name]}")
        if changes:
            text = f"{job.target.name}: " + "; ".join(changes)
            made.append(annotation_create(run=run, target=job.target, text=text[:500], kind=Annotation.Kind.AUTO))
    return made


def _near_notes(campaign: Campaign, cell: Cell, runs: list[int], index: int) -> str:
    """The annotations at or near a change point (on its run or the runs within CHANGE_POINT_NEAR of it, or the
    target's notes between those runs' starts; a change point found in noisy data may land a run off): what may
    explain it."""
    window = runs[max(0, index - CHANGE_POINT_NEAR):index + CHANGE_POINT_NEAR + 1]
    times = list(Run.objects.filter(pk__in=window).order_by("created_at").values_list("created_at", flat=True))
    notes = Annotation.objects.filter(Q(run_id__in=window) & (Q(target_id=cell[0]) | Q(target__isnull=True))
                                      | Q(run__isnull=True, target_id=cell[0], at__gte=times[0], at__lte=times[-1]))
    return "; ".join(n.text for n in notes.order_by("at", "pk"))[:2000]


CHANGE_POINT_HISTORY = 60  # scheduled runs of a cell searched for change points
CHANGE_POINT_NEAR = 2  # a change point this close (in runs) to one already stored is the same one


def run_change_points(*, run: Run) -> list[Regression]:
    """After a scheduled run: E-Divisive means over each of its cells' QPS history (the geometric mean of each
    succeeded scheduled run, the last CHANGE_POINT_HISTORY of them) and stores each new change point as a
    Regression (detector change_point) on the run where the new level starts, found_in_run this run. A slow
    slide or a small permanent step that no single night moved beyond the threshold shows here. A change point
    near one already stored for the cell is the same one, found again: not stored twice. Two queries and one
    per new change point."""
    campaign = run.campaign
    ids = list(Run.objects.filter(campaign=campaign, trigger=Run.Trigger.SCHEDULED,
                                  status__in=[Run.Status.SUCCEEDED, Run.Status.PARTIALLY_SUCCEEDED],
                                  created_at__lte=run.created_at)
               .order_by("-created_at", "-id").values_list("pk", flat=True)[:CHANGE_POINT_HISTORY])
    ids.reverse()
    if run.pk not in ids:
        return []
    values = _cell_values(ids)
    known: dict[Cell, list[int]] = defaultdict(list)
    for target_id, scenario_id, threads, at in Regression.objects.filter(
            campaign=campaign, detector=Regression.Detector.CHANGE_POINT, metric=Regression.Metric.QPS,
            run_id__in=ids).values_list("target_id", "scenario_id", "threads", "run_id"):
        known[(target_id, scenario_id, threads)].append(ids.index(at))
    found = []
    for cell in values.get(run.pk, {}):
        runs = [r for r in ids if values.get(r, {}).get(cell, {}).get("qps")]
        series = [geometric_mean(values[r][cell]["qps"]) or 0.0 for r in runs]
        for point in change_points(series, seed=run.pk):
            at = ids.index(runs[point.index])
            if any(abs(at - k) <= CHANGE_POINT_NEAR for k in known[cell]):
                continue
            known[cell].append(at)
            segment = runs[max(0, point.index - CHANGE_POINT_HISTORY):point.index]
            regression, _ = Regression.objects.update_or_create(
                run_id=runs[point.index], target_id=cell[0], scenario_id=cell[1], threads=cell[2],
                metric=Regression.Metric.QPS, detector=Regression.Detector.CHANGE_POINT,
                defaults={
                    "campaign": campaign, "found_in_run": run,
                    "kind": Regression.Kind.REGRESSION if point.after < point.before else Regression.Kind.IMPROVEMENT,
                    "baseline_value": point.before, "current_value": point.after, "change_pct": point.change_pct,
                    "p_value": point.p_value, "p_adjusted": None,
                    "method": f"e-divisive means, permutation test over {len(series)} runs",
                    "baseline_run_ids": segment[-20:],
                    "baseline_label": f"change point: the runs before #{runs[point.index]} against it and after"[:200],
                    "explanation": _near_notes(campaign, cell, runs, point.index),
                },
            )
            found.append(regression)
    return found


NOISE_CHANGES_PCT = (15.0, 30.0)


def campaign_noise(*, campaign: Campaign, last_runs: int = 20, before: Run | None = None) -> dict[str, Any]:
    """How noisy the campaign's measurements are, from its last succeeded runs, and how many repetitions that calls
    for: the repetitions the campaign form recommends.

    cv_within_pct: median over cells and runs of the CV of one repetition's QPS within its run (cells measured
    2+ times); cv_between_pct: median over cells of the CV of the runs' geometric means; between_only_pct: the
    part of the latter that repetitions cannot reduce. recommended: per change size, the repetitions with which
    the regression check (against the last baseline_last_n runs) catches it 9 times in 10; None where no number
    would. Two queries.
    """
    runs = Run.objects.filter(campaign=campaign, status=Run.Status.SUCCEEDED)
    if before is not None:  # the history before a run, the run itself left out
        runs = runs.filter(created_at__lt=before.created_at).exclude(pk=before.pk)
    ids = list(runs.order_by("-created_at", "-id").values_list("pk", flat=True)[:last_runs])
    values = _cell_values(ids)
    noise = run_noise([{cell: v["qps"] for cell, v in cells.items()} for cells in values.values()])
    cv_within, cv_between, between_only = noise.cv_within_pct, noise.cv_between_pct, noise.between_only_pct
    recommended = {}
    if cv_within is not None:
        for change in NOISE_CHANGES_PCT:
            recommended[f"{change:g}"] = repetitions_needed(cv_within, between_cv_pct=between_only or 0.0,
                                                            change_pct=change, baseline_runs=campaign.baseline_last_n)
    return {"runs": len(values), "cv_within_pct": cv_within, "cv_between_pct": cv_between,
            "between_only_pct": between_only, "repetitions": campaign.repetitions, "recommended": recommended,
            "baseline_runs": campaign.baseline_last_n}


def cell_history(*, campaign: Campaign, target_id: int, scenario_id: int, threads: int,
                 limit: int = 60) -> dict[str, Any]:
    """One cell's QPS over the last `limit` succeeded runs of the campaign that measured it, with the
    baseline band and the regressions and improvements found in the cell.

    A point is a run: the geometric mean QPS and percentile latency of its repetitions (the statistic
    run_evaluate tests), and whether they are
    noisy (CV above the campaign's noise_cv_pct). The band is what the newest point is judged against
    (the pinned run, or the last N scheduled runs before it, as run_evaluate does): the baseline's geometric
    mean ± the campaign's regression threshold. Four queries whatever the number of runs.
    """
    cell = (target_id, scenario_id, threads)
    measured = Job.objects.filter(run=OuterRef("pk"), target_id=target_id, scenario_id=scenario_id,
                                  threads=threads, status=Job.Status.SUCCEEDED, result__isnull=False)
    runs = list(Run.objects.filter(campaign=campaign, status=Run.Status.SUCCEEDED).filter(Exists(measured))
                .order_by("-created_at", "-id")[:limit])
    runs.reverse()
    base_ids, base_label = baseline_runs(campaign=campaign, before=runs[-1]) if runs else ([], "none")
    values = _cell_values(list({r.pk for r in runs} | set(base_ids)), only=cell)
    changes = list(Regression.objects.filter(campaign=campaign, target_id=target_id, scenario_id=scenario_id,
                                             threads=threads).order_by("run_id", "metric"))
    kinds: dict[int, set[str]] = defaultdict(set)
    for change in changes:
        kinds[change.run_id].add(change.kind if change.detector == Regression.Detector.THRESHOLD else "change_point")
    points = []
    for run in runs:
        cell_values = values.get(run.pk, {}).get(cell, {})
        qps, lat = cell_values.get("qps", []), cell_values.get("lat", [])
        if not qps:
            continue
        stats = cell_stats(qps, noise_cv_pct=campaign.noise_cv_pct)
        points.append({
            "run_id": run.pk, "label": run.label, "trigger": run.trigger,
            "created_at": run.created_at, "started_at": run.started_at,
            "qps": geometric_mean(qps), "repetitions": stats.n, "cv_pct": stats.cv_pct, "noisy": stats.noisy,
            "latency_pct_ms": geometric_mean(lat),
            "regression": Regression.Kind.REGRESSION in kinds[run.pk],
            "improvement": Regression.Kind.IMPROVEMENT in kinds[run.pk],
            "change_point": "change_point" in kinds[run.pk],
        })
    band = None
    base = _baseline_values(values, base_ids, cell, "qps")
    if base:
        mean = geometric_mean(base)
        assert mean is not None
        threshold = campaign.regression_threshold_pct
        band = {"mean": mean, "low": mean * (1 - threshold / 100), "high": mean * (1 + threshold / 100),
                "threshold_pct": threshold, "run_ids": base_ids, "label": base_label}
    notes = Annotation.objects.filter(Q(run_id__in=[p["run_id"] for p in points])
                                      & (Q(target_id=target_id) | Q(target__isnull=True))
                                      | Q(run__isnull=True, target_id=target_id)).order_by("at", "pk")
    if runs:
        notes = notes.filter(at__gte=min(r.created_at for r in runs) - timedelta(days=1))
    return {
        "points": points, "baseline": band,
        "annotations": [{"id": n.pk, "run_id": n.run_id, "at": n.at, "text": n.text, "kind": n.kind} for n in notes],
        "changes": [{"id": c.pk, "run_id": c.run_id, "kind": c.kind, "metric": c.metric,
                     "baseline_value": c.baseline_value, "current_value": c.current_value,
                     "change_pct": c.change_pct, "p_value": c.p_value, "p_adjusted": c.p_adjusted,
                     "method": c.method, "detector": c.detector, "explanation": c.explanation} for c in changes],
    }


def history_cells(*, campaign: Campaign) -> list[dict[str, Any]]:
    """The cells (target × scenario × threads) with at least one succeeded result in the campaign's runs,
    with the names a picker shows, in one query."""
    rows = (Job.objects.filter(run__campaign=campaign, status=Job.Status.SUCCEEDED, result__isnull=False)
            .values("target_id", "target__name", "scenario_id", "scenario__name", "threads")
            .order_by("target__name", "scenario__name", "threads", "target_id", "scenario_id").distinct())
    return [{"target_id": r["target_id"], "target": r["target__name"], "scenario_id": r["scenario_id"],
             "scenario": r["scenario__name"], "threads": r["threads"]} for r in rows]


# ---------------------------------------------------------------- notifications


def _message(run: Run, regressions: list[Regression]) -> str:
    lines = [f"benchapp: {len(regressions)} change(s) in {run.campaign.name} run #{run.pk}"]
    for r in regressions:
        where = f" (change point at run #{r.run_id})" if r.detector == Regression.Detector.CHANGE_POINT else ""
        if r.explanation:
            where += f" [near: {r.explanation}]"
        lines.append(f"- {r.kind}{where}: {r.target.name} / {r.scenario.name} @ {r.threads} threads: {r.metric} "
                     f"{r.baseline_value:,.1f} → {r.current_value:,.1f} ({r.change_pct:+.1f}%, {r.method}, "
                     f"baseline {r.baseline_label})")
    return "\n".join(lines)


def _changes_payload(run: Run, regressions: list[Regression]) -> dict[str, Any]:
    return {"text": _message(run, regressions), "run_id": run.pk, "campaign": run.campaign.name,
            "changes": [{"kind": r.kind, "detector": r.detector, "run_id": r.run_id, "target": r.target.name, "scenario": r.scenario.name,
                         "threads": r.threads, "metric": r.metric, "baseline": r.baseline_value,
                         "current": r.current_value, "change_pct": r.change_pct} for r in regressions]}


def _notification_error_add(regression_ids: list[int], error: str) -> None:
    for regression in Regression.objects.filter(pk__in=regression_ids).only("pk", "notification_error"):
        text = "; ".join(e for e in (regression.notification_error, error) if e)[:2000]
        Regression.objects.filter(pk=regression.pk).update(notification_error=text)


def regressions_notify(*, run: Run) -> list[int]:
    """E-mails the campaign's recipients about the run's regressions and improvements, and marks them notified.

    Returns the ids of those the campaign's webhook should hear about: posting is the work of a task of its
    own (tasks.webhook_notify_task), with Celery's retries and back-off, never of the task closing a run.
    """
    pending = list(Regression.objects.filter(Q(run=run) | Q(found_in_run=run), notified_at__isnull=True)
                   .select_related("target", "scenario").order_by("pk"))
    if not pending:
        return []
    campaign = run.campaign
    errors = []
    recipients = campaign.recipients()
    if recipients:
        try:
            send_mail(f"benchapp: changes in {campaign.name}", _message(run, pending), None, recipients)
        except Exception as exc:  # a mail server problem must never fail the run
            errors.append(f"e-mail failed: {exc}")
    ids = [r.pk for r in pending]
    Regression.objects.filter(pk__in=ids).update(notified_at=timezone.now(), notification_error="; ".join(errors)[:2000])
    return ids if campaign.has_webhook() else []


def webhook_notify(*, run_id: int, regression_ids: list[int], final_attempt: bool) -> None:
    """Posts a run's changes to its campaign's webhook, once.

    The address is checked where the URL resolves now (BENCHAPP_WEBHOOK_ALLOW_PRIVATE); a refused one is
    recorded on the regressions and not retried. A receiver that fails raises WebhookFailed for the task to
    retry, and on the final attempt its error is recorded instead. Nothing here writes the URL anywhere.
    """
    run = Run.objects.select_related("campaign").filter(pk=run_id).first()
    regressions = list(Regression.objects.filter(Q(run_id=run_id) | Q(found_in_run_id=run_id), pk__in=regression_ids)
                       .select_related("target", "scenario").order_by("pk"))
    if run is None or not regressions or not run.campaign.has_webhook():
        return
    try:
        url = run.campaign.get_webhook_url()
    except DecryptionError:
        _notification_error_add(regression_ids, "webhook: the stored URL cannot be decrypted; set it again")
        return
    try:
        webhook_post(url, _changes_payload(run, regressions), allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
    except WebhookRefused as exc:
        _notification_error_add(regression_ids, f"webhook refused: {exc}")
    except WebhookFailed as exc:
        if not final_attempt:
            raise
        _notification_error_add(regression_ids, f"webhook failed after {WEBHOOK_MAX_RETRIES + 1} attempts: {exc}")


def run_finished(*, run_id: int) -> list[int]:
    """After a run ends: find regressions against the baseline and send e-mails; returns the regressions the
    webhook should hear about (the caller enqueues that)."""
    run = Run.objects.select_related("campaign").filter(pk=run_id).first()
    if run is None:
        return []
    if run.status not in (Run.Status.SUCCEEDED, Run.Status.PARTIALLY_SUCCEEDED, Run.Status.FAILED):
        Run.objects.filter(pk=run.pk, evaluated_at__isnull=True).update(evaluated_at=timezone.now())
        return []
    annotations_auto(run=run)
    run_evaluate(run=run)
    if run.trigger == Run.Trigger.SCHEDULED:
        run_change_points(run=run)
    webhook_ids = regressions_notify(run=run)
    Run.objects.filter(pk=run.pk).update(evaluated_at=timezone.now())
    return webhook_ids


def regression_acknowledge(*, regression: Regression, user: Any, note: str) -> Regression:
    """Marks a regression as looked at, with what was found; acknowledging again replaces the note."""
    note = note.strip()
    if len(note) > 500:
        raise ValueError("a note has at most 500 characters")
    regression.acknowledged_at = timezone.now()
    regression.acknowledged_by = user if getattr(user, "is_authenticated", False) else None
    regression.acknowledgement = note
    regression.save(update_fields=["acknowledged_at", "acknowledged_by", "acknowledgement"])
    return regression


def baseline_pin(*, campaign: Campaign, run: Run | None) -> Campaign:
    """Pins `run` as the campaign's baseline (None unpins: the last scheduled runs are the baseline again)."""
    if run is not None and (run.campaign_id != campaign.pk or run.status not in (
            Run.Status.SUCCEEDED, Run.Status.PARTIALLY_SUCCEEDED)):
        raise ValueError(f"run #{run.pk} cannot be this campaign's baseline: it must be one of its runs that "
                         "succeeded, at least partly")
    try:
        return campaign_update(campaign=campaign, baseline_run=run)
    except ValidationError as exc:
        raise ValueError("; ".join(exc.messages)) from None


def schedule_next_firing(schedule: CampaignSchedule) -> Any:
    """When an enabled schedule fires next, in its own time zone (None when paused): the first minute after now
    that celery's parse of the cron expression allows (day of month and day of week both, as beat checks them).
    """
    if not schedule.enabled:
        return None
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from celery.schedules import crontab

    minute, hour, day_of_month, month, day_of_week = schedule.cron.split()
    rule: Any = crontab(minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month,
                        day_of_week=day_of_week)  # its parsed sets (hour, minute, ...) are untyped
    zone = ZoneInfo(schedule.timezone)
    now = timezone.now().astimezone(zone)
    hours, minutes = sorted(rule.hour), sorted(rule.minute)
    for days in range(0, 366 * 4 + 1):
        day = (now + timedelta(days=days)).date()
        # celery counts days of the week from Sunday = 0; Python from Monday = 0.
        if (day.month not in rule.month_of_year or day.day not in rule.day_of_month
                or (day.weekday() + 1) % 7 not in rule.day_of_week):
            continue
        for h in hours:
            for m in minutes:
                at = datetime(day.year, day.month, day.day, h, m, tzinfo=zone)
                if at > now:
                    return at
    return None


def recent_regressions(*, days: int = 14) -> Any:
    since = timezone.now() - timedelta(days=days)
    return (Regression.objects.filter(created_at__gte=since).filter(Q(kind=Regression.Kind.REGRESSION))
            .select_related("campaign", "target", "scenario", "run"))


# ---------------------------------------------------------------- a run nobody can run (issue #26.5)


def _recipients(campaign: Campaign) -> list[str]:
    """The campaign's e-mail addresses, however they were separated (the API joins them with new lines)."""
    text = campaign.notify_emails.replace(";", ",").replace("\n", ",")
    return [address.strip() for address in text.split(",") if address.strip()]


def runs_no_worker_notify(*, now: Any = None) -> list[int]:
    """Tells each campaign's webhook and e-mail recipients, once per absence, that a run of this installation's
    queue has had no worker alive for longer than the campaign's no_worker_notify_min; forgets the telling when a
    worker is back, so that a later absence is told again. Returns the runs told.

    Called from the beat process (worker_signals: a thread started at beat_init), never as a Celery task: with
    every worker dead, no task runs, and this is exactly when it must. The webhook is posted once, at once, without
    Celery's retries (a failure is logged): the warning itself stays on the run's pages and in its API meanwhile.
    """
    now = now or timezone.now()
    hosts = execution.host_heartbeats()
    told = []
    runs = (Run.objects.exclude(status__in=Run.FINISHED).filter(queue__in=execution.own_queues())
            .select_related("campaign"))
    for run in runs:
        absent = execution.run_no_worker(run=run, hosts=hosts, now=now)
        if absent is None:
            if run.no_worker_notified_at is not None:
                Run.objects.filter(pk=run.pk).update(no_worker_notified_at=None)
            continue
        campaign = run.campaign
        silent_since = absent.since or run.started_at or run.created_at
        if run.no_worker_notified_at is not None or now - silent_since < timedelta(minutes=campaign.no_worker_notify_min):
            continue
        # Claimed first, so that two beats (a second installation's, a restart) never tell twice.
        if not Run.objects.filter(pk=run.pk, no_worker_notified_at__isnull=True).update(no_worker_notified_at=now):
            continue
        told.append(run.pk)
        text = f"benchapp: run #{run.pk} of {campaign.name} is stalled: {absent.message()}."
        recipients = _recipients(campaign)
        if recipients:
            try:
                send_mail(f"benchapp: run #{run.pk} of {campaign.name} has no worker", text, None, recipients)
            except Exception:  # a mail server problem must not stop the webhook or the next run's check
                log.exception("could not e-mail the recipients of campaign %s about run %s", campaign.pk, run.pk)
        if campaign.has_webhook():
            payload = {"text": text, "event": "no_worker", "run_id": run.pk, "campaign": campaign.name,
                       "since": absent.as_dict()["since"]}
            try:
                webhook_post(campaign.get_webhook_url(), payload, allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
            except (WebhookRefused, WebhookFailed, DecryptionError) as exc:
                log.warning("webhook of campaign %s about run %s without a worker: %s", campaign.pk, run.pk, exc)
    return told
