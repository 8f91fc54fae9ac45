"""What the pages chart: one cell's runs with the baseline band and the changes found, the cells a picker
offers, the dashboard's recent regressions."""
from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from campaigns.models import Campaign, Job, Run
from campaigns.models.monitoring import Annotation, Regression
from campaigns.monitoring.evaluation import Cell, baseline_runs, cell_values_by_run
from campaigns.statistics import cell_stats, geometric_mean


def _baseline_values(values: dict[int, dict[Cell, dict[str, list[float]]]], ids: list[int], cell: Cell,
                     key: str) -> list[float]:
    """One value per baseline run (the geometric mean of its repetitions), or the single (pinned) run's
    repetitions as they are."""
    if len(ids) == 1:
        return list(values.get(ids[0], {}).get(cell, {}).get(key, []))
    return [m for r in ids if (v := values.get(r)) and v.get(cell) and (m := geometric_mean(v[cell][key])) is not None]


def cell_history(*, campaign: Campaign, target_id: int, scenario_id: int, threads: int, variant: str = "",
                 limit: int = 60) -> dict[str, Any]:
    """One cell's QPS over the last `limit` succeeded runs of the campaign that measured it, with the
    baseline band and the regressions and improvements found in the cell.

    A point is a run: the geometric mean QPS and percentile latency of its repetitions (the statistic
    run_evaluate tests), and whether they are
    noisy (CV above the campaign's noise_cv_pct). The band is what the newest point is judged against
    (the pinned run, or the last N scheduled runs before it, as run_evaluate does): the baseline's geometric
    mean ± the campaign's regression threshold. Four queries whatever the number of runs.
    """
    cell = (target_id, scenario_id, threads, variant)
    measured = Job.objects.filter(run=OuterRef("pk"), target_id=target_id, scenario_id=scenario_id,
                                  threads=threads, variant=variant, status=Job.Status.SUCCEEDED, result__isnull=False)
    runs = list(Run.objects.filter(campaign=campaign, status=Run.Status.SUCCEEDED).filter(Exists(measured))
                .order_by("-created_at", "-id")[:limit])
    runs.reverse()
    base_ids, base_label = baseline_runs(campaign=campaign, before=runs[-1]) if runs else ([], "none")
    values = cell_values_by_run(list({r.pk for r in runs} | set(base_ids)), only=cell)
    changes = list(Regression.objects.filter(campaign=campaign, target_id=target_id, scenario_id=scenario_id,
                                             threads=threads, variant=variant).order_by("run_id", "metric"))
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
    """The cells (target × scenario × threads × settings variant) with at least one succeeded result in the
    campaign's runs, with the names a picker shows, in one query."""
    rows = (Job.objects.filter(run__campaign=campaign, status=Job.Status.SUCCEEDED, result__isnull=False)
            .values("target_id", "target__name", "scenario_id", "scenario__name", "threads", "variant")
            .order_by("target__name", "scenario__name", "threads", "variant", "target_id", "scenario_id").distinct())
    return [{"target_id": r["target_id"], "target": r["target__name"], "scenario_id": r["scenario_id"],
             "scenario": r["scenario__name"], "threads": r["threads"], "variant": r["variant"]} for r in rows]


def recent_regressions(*, days: int = 14) -> Any:
    since = timezone.now() - timedelta(days=days)
    # Not those their second measurement did not uphold (the run page keeps them, marked "not confirmed").
    return (Regression.objects.filter(created_at__gte=since).filter(Q(kind=Regression.Kind.REGRESSION))
            .exclude(confirmation=Regression.Confirmation.NOT_CONFIRMED)
            .select_related("campaign", "target", "scenario", "run"))
