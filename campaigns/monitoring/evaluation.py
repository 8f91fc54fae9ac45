"""After a run: its cells against their baseline (threshold test), change points over the scheduled runs' history,
notes on what changed on the servers, the campaign's noise; a user's acknowledgement of a change and baseline pin."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from campaigns.changepoints import change_points
from campaigns.models import Campaign, Job, Run
from campaigns.models.monitoring import Annotation, Regression
from campaigns.seconds import Kind, seconds_rows
from campaigns.services import annotation_create, campaign_update
from campaigns.statistics import (
    CONFIRM_SCREEN_ALPHA,
    HISTORY_RUNS,
    LATENCY,
    QPS,
    REGRESSION_ALPHA,
    cells_judge,
    geometric_mean,
    repetitions_needed,
    run_noise,
)

Cell = tuple[int, int, int, str]  # target id, scenario id, threads, settings variant ("" without variants)


def cell_values_by_run(run_ids: list[int], *,
                       only: Cell | None = None) -> dict[int, dict[Cell, dict[str, list[float]]]]:
    """Per run, per cell: the QPS and latency-percentile values of its succeeded repetitions
    (of every cell, or of the `only` one). A settings variant is part of the cell: two variants of one target are
    two cells, each judged against its own history, never pooled."""
    out: dict[int, dict[Cell, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: {"qps": [], "lat": []}))
    # An invalid job measured something else than the server (a busy client, a shared target): it is no
    # evidence of a regression either way, so it is left out, of the baseline as of the run (the run page says so).
    jobs = Job.objects.filter(run_id__in=run_ids, status=Job.Status.SUCCEEDED, result__isnull=False).exclude(
        verdict=Job.Verdict.INVALID)
    if only is not None:
        jobs = jobs.filter(target_id=only[0], scenario_id=only[1], threads=only[2], variant=only[3])
    rows = jobs.values_list("run_id", "target_id", "scenario_id", "threads", "variant", "result__qps",
                            "result__latency_pct_ms")
    for run_id, target_id, scenario_id, threads, variant, qps, lat in rows:
        cell = out[run_id][(target_id, scenario_id, threads, variant)]
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
    """The campaign's last `limit` succeeded runs before `before` (the runs campaign_noise measures noise on); never a
    confirmation run (a few cells measured again right after an alarm: not a night of its own)."""
    return list(Run.objects.filter(campaign=campaign, status=Run.Status.SUCCEEDED, created_at__lt=before.created_at)
                .exclude(pk=before.pk).exclude(trigger=Run.Trigger.CONFIRM)
                .order_by("-created_at", "-id").values_list("pk", flat=True)[:limit])


def per_second_qps(run_ids: list[int], cell: Cell) -> list[float]:
    target_id, scenario_id, threads, variant = cell
    jobs = dict(Job.objects.filter(run_id__in=run_ids, target_id=target_id, scenario_id=scenario_id, threads=threads,
                                   variant=variant, status=Job.Status.SUCCEEDED).exclude(verdict=Job.Verdict.INVALID)
                .values_list("pk", "attempt"))
    rows = seconds_rows(Kind.INTERVAL, jobs, fields=("t", "qps"))
    return [r["qps"] for r in rows if r["t"] > 1][:20000]


Values = dict[Cell, dict[str, Any]]


def judge_inputs(run_id: int, ids: list[int], earlier: list[int]) -> tuple[Values, Values, Values]:
    """cells_judge's current (run_id's repetitions per cell and metric), baseline (the repetitions of each of `ids`)
    and history (one geometric mean per run of `earlier` and `ids`: the spread from night to night)."""
    values = cell_values_by_run(list(dict.fromkeys([run_id, *ids, *earlier])))
    keys = {QPS: "qps", LATENCY: "lat"}
    current = {cell: {metric: v[key] for metric, key in keys.items()} for cell, v in values.get(run_id, {}).items()}
    baseline = {cell: {metric: [values[r][cell][key] for r in ids if r in values and cell in values[r]]
                       for metric, key in keys.items()} for cell in current}
    spread_ids = list(dict.fromkeys([*earlier, *ids]))
    history = {cell: {metric: [m for r in spread_ids if r in values and cell in values[r]
                               and (m := geometric_mean(values[r][cell][key])) is not None]
                      for metric, key in keys.items()} for cell in current}
    return current, baseline, history


def screen_alpha(run: Run) -> float:
    """The level a run's cells alarm at: looser where every alarm is measured again before anyone is told
    (statistics.CONFIRM_SCREEN_ALPHA), the single-run rule's otherwise (an import cannot be measured again)."""
    confirms = run.campaign.confirm_alarms and run.trigger not in (Run.Trigger.IMPORT, Run.Trigger.CONFIRM)
    return CONFIRM_SCREEN_ALPHA if confirms else REGRESSION_ALPHA


def run_evaluate(*, run: Run) -> list[Regression]:
    """Compares each cell of a finished run with its baseline (campaigns.statistics.cells_judge: the unit of the
    test, the correction for many cells, the resolution of latencies) and stores regressions/improvements."""
    campaign = run.campaign
    ids, label = baseline_runs(campaign=campaign, before=run)
    if not ids:
        return []
    # How much a run's mean varies from night to night is measured on the campaign's recent runs (the baseline's
    # among them), not on the few baseline runs alone: their spread widens or narrows the prediction interval.
    current, baseline, history = judge_inputs(run.pk, ids, history_runs(campaign=campaign, before=run))

    def per_second(cell: Cell) -> tuple[list[float], list[float]]:
        return per_second_qps(ids, cell), per_second_qps([run.pk], cell)

    run_cv = pinned_run_cv(campaign=campaign, before=run, baseline_ids=ids)
    found: list[Regression] = []
    for change in cells_judge(baseline=baseline, current=current, threshold_pct=campaign.regression_threshold_pct,
                              run_cv_pct=run_cv, per_second=per_second, history=history, alpha=screen_alpha(run)):
        regression, _ = Regression.objects.update_or_create(
            run=run, target_id=change.cell[0], scenario_id=change.cell[1], threads=change.cell[2],
            variant=change.cell[3], metric=Regression.Metric.QPS if change.metric == QPS else Regression.Metric.LATENCY,
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
        # Like with like: the previous job on the target under the same settings variant; the settings a variant
        # sets differ by design, benchapp's own change, not one made outside it.
        previous = (Job.objects.filter(target_id=target_id, run__created_at__lt=run.created_at, variant=job.variant)
                    .exclude(run=run).exclude(server_snapshot={}).order_by("-run__created_at", "-position").first())
        if previous is None:
            continue
        now = (job.server_snapshot or {}).get("before") or {}
        then = (previous.server_snapshot or {}).get("before") or {}
        changes = []
        if now.get("version") and then.get("version") and now["version"] != then["version"]:
            changes.append(f"server version {then['version']} → {now['version']}")
        old, new = then.get("settings") or {}, now.get("settings") or {}
        own = {name.lower() for name in (*(job.variant_settings or {}), *(previous.variant_settings or {}))}
        for name in sorted(set(old) & set(new)):
            if name.lower() in own:
                continue
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
    values = cell_values_by_run(ids)
    known: dict[Cell, list[int]] = defaultdict(list)
    for target_id, scenario_id, threads, variant, at in Regression.objects.filter(
            campaign=campaign, detector=Regression.Detector.CHANGE_POINT, metric=Regression.Metric.QPS,
            run_id__in=ids).values_list("target_id", "scenario_id", "threads", "variant", "run_id"):
        known[(target_id, scenario_id, threads, variant)].append(ids.index(at))
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
                run_id=runs[point.index], target_id=cell[0], scenario_id=cell[1], threads=cell[2], variant=cell[3],
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


def pinned_run_cv(*, campaign: Campaign, before: Run, baseline_ids: list[int]) -> float:
    """Against a pinned run (one baseline run), the campaign's run-to-run noise before `before`, which widens the
    repetition test; 0 against several baseline runs (their own spread is the test's)."""
    if len(baseline_ids) != 1:
        return 0.0
    return campaign_noise(campaign=campaign, before=before)["between_only_pct"] or 0.0


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
    values = cell_values_by_run(ids)
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


def baseline_trust_warning(run: Run) -> str:
    """What a pinned baseline's verdicts leave it worth ("" when every judged job is valid): the regression check
    leaves invalid jobs out, so a run of invalid jobs is a baseline of nothing for those cells."""
    verdicts = run.verdicts()
    if not verdicts.untrusted():
        return ""
    if verdicts.invalid == verdicts.judged():
        return (f"every judged job of run #{run.pk} is invalid ({verdicts.text()}): the regression check leaves "
                "invalid jobs out, so its cells have no baseline until another run is pinned")
    return (f"run #{run.pk} has untrusted jobs ({verdicts.text()}): the regression check leaves its invalid jobs "
            "out, and compares its suspect ones as they are")


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
