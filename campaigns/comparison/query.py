"""The comparison of products as JSON-ready dicts: one SQL query, aggregated in PostgreSQL.

`comparison_build` takes plain ids and returns plain dicts and lists, so the API, the HTML
comparison page and a CSV export can all call it. It is a comparison of succeeded jobs only:

    for each (dataset × scenario): a table whose rows are (spec, threads, table_size, tables) and
    whose columns are products; each cell aggregates the repetitions of that cell (every
    succeeded job with those coordinates) into its value (the geometric mean of the repetitions),
    median, n, mean, stdev, CV, min and max of QPS, TPS, average latency and percentile latency,
    plus Δ% of each product against the first product: the ratio of their values − 1.

The geometric mean is the value because Δ% is a ratio: the ratio of geometric means is the mean
ratio of the repetitions, whichever product is the baseline, and it is what the significance test
compares (Welch's t-test on log values). A cell holding a zero or negative value cannot have one: its
value is then the arithmetic mean (`"statistic": "mean"` says so).

The first product is the baseline: the order of `product_ids` if given, else the order in which
`target_ids` name them, else by product name. Latency Δ% is positive when the product is slower.
The work is one grouped query (percentile_cont for the median) whatever the number of rows.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections
from django.db.models import Aggregate, Avg, Count, F, FloatField, Max, Min, Q, StdDev
from django.db.models.functions import Ln

from campaigns.models import Job, JobResult, Run, Target

METRICS = ("qps", "tps", "latency_avg_ms", "latency_pct_ms")
STATS = ("median", "n", "mean", "stdev", "cv_pct")
# Added after STATS in the CSV, so readers that index its columns by position keep working.
SPREAD_STATS = ("value", "min", "max")


class Median(Aggregate):
    """PostgreSQL's continuous median of a column (NULLs ignored)."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


class Mode(Aggregate):
    """The most common value in the group (PostgreSQL's ordered-set mode())."""

    function = "mode"
    template = "%(function)s() WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def _ids(values: Iterable[int] | None) -> list[int]:
    return [int(v) for v in values or () if v is not None]


def with_retries(run_ids: Sequence[int]) -> list[int]:
    """The runs and, recursively, the runs that retried their failed jobs ("Retry failed jobs"): comparing a run
    takes each cell from its latest successful attempt. One query per generation of retries (none without runs)."""
    found = list(dict.fromkeys(run_ids))
    frontier = found
    while frontier:
        frontier = [r for r in Run.objects.filter(rerun_of_id__in=frontier, rerun=Run.Rerun.FAILED)
                    .values_list("pk", flat=True) if r not in found]
        found.extend(frontier)
    return found


def succeeded_jobs_condition(
    *, prefix: str = "", target_ids: Sequence[int] = (), product_ids: Sequence[int] = (),
    run_ids: Sequence[int] = (), campaign_ids: Sequence[int] = (), scenario_ids: Sequence[int] = (),
    spec_ids: Sequence[int] = (), threads: Sequence[int] = (),
) -> Q:
    """The succeeded jobs a comparison covers, as a condition on Job (or, with prefix "job__", on a row that
    points at one); an empty list sets no condition. comparison_build and the UI's Selection share it."""
    condition = Q(**{f"{prefix}status": Job.Status.SUCCEEDED})
    for ids, lookup in ((target_ids, "target_id__in"), (product_ids, "target__product_id__in"),
                        (with_retries(run_ids), "run_id__in"), (campaign_ids, "run__campaign_id__in"),
                        (scenario_ids, "scenario_id__in"), (spec_ids, "target__spec_id__in"),
                        (threads, "threads__in")):
        if ids:
            condition &= Q(**{f"{prefix}{lookup}": list(ids)})
    return condition


def _round(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def _stats(cell: dict[str, Any], metric: str) -> dict[str, Any]:
    """One metric of one cell: its value (geometric mean, or mean where a value is not positive) and spread."""
    n, mean, stdev = cell[f"{metric}_n"], cell[f"{metric}_mean"], cell[f"{metric}_stdev"]
    cv = None
    if stdev is not None and mean not in (None, 0):
        cv = abs(stdev / mean) * 100
    log_mean = cell[f"{metric}_log_mean"]
    geometric = n > 0 and cell[f"{metric}_positive"] == n and log_mean is not None
    value = math.exp(log_mean) if geometric else mean
    return {"value": _round(value), "statistic": "geometric mean" if geometric or not n else "mean",
            "median": _round(cell[f"{metric}_median"]), "n": n, "mean": _round(mean), "stdev": _round(stdev),
            "cv_pct": _round(cv, 2), "min": _round(cell[f"{metric}_min"]), "max": _round(cell[f"{metric}_max"])}


def delta_pct(value: float | None, base: float | None) -> float | None:
    """Δ% of a cell against its baseline: the ratio of their values − 1, in percent; None without both."""
    if value is None or base is None or base == 0:
        return None
    return _round((value / base - 1) * 100, 2)


def comparison_build(
    *,
    target_ids: Sequence[int] | None = None,
    product_ids: Sequence[int] | None = None,
    run_ids: Sequence[int] | None = None,
    campaign_ids: Sequence[int] | None = None,
    scenario_ids: Sequence[int] | None = None,
    spec_ids: Sequence[int] | None = None,
    threads: Sequence[int] | None = None,
    trusted_only: bool = False,
) -> dict[str, Any]:
    """Compare products over succeeded jobs selected by any combination of the given ids.

    Each cell carries the worst validity verdict of its jobs ("" when none was judged: jobs from before
    verdicts existed); `trusted_only` leaves out the cells whose verdict is suspect or invalid.

    Every argument narrows the selection (None or empty means "no condition"); at least one of
    target_ids, product_ids, run_ids, campaign_ids or scenario_ids is required (ValueError).
    Returns {"filters", "products": [{"id", "name"}], "groups": [{"dataset", "scenario", "rows"}],
    "job_count"}, each row {"spec", "spec_id", "threads", "concurrency", "table_size", "tables",
    "cells"} with one cell per product in "products" order: None where that product has no job,
    else {"product_id", "n", "latency_pct", "<metric>": {value, statistic, median, n, mean, stdev,
    cv_pct, min, max}, "delta_pct": {"<metric>": Δ% vs the first product, None for the first}}.
    """
    target_ids, product_ids, run_ids = _ids(target_ids), _ids(product_ids), _ids(run_ids)
    campaign_ids, scenario_ids, spec_ids, threads = _ids(campaign_ids), _ids(scenario_ids), _ids(spec_ids), _ids(threads)
    if not (target_ids or product_ids or run_ids or campaign_ids or scenario_ids):
        raise ValueError("choose what to compare: targets, products, runs, campaign or scenarios")

    condition = succeeded_jobs_condition(
        prefix="job__", target_ids=target_ids, product_ids=product_ids, run_ids=run_ids,
        campaign_ids=campaign_ids, scenario_ids=scenario_ids, spec_ids=spec_ids, threads=threads,
    )

    # Grouped by integer ids only: sorting 10,000 rows on text keys (names, labels) costs PostgreSQL
    # several times more than on integers. Names come along as per-group aggregates.
    keys = {
        "dataset_id": "job__scenario__dataset_id",
        "scenario_id": "job__scenario_id",
        "spec_id": "job__target__spec_id",
        "threads": "job__threads",
        "table_size": "job__table_size",
        "tables": "job__tables",
        "product_id": "job__target__product_id",
    }
    aggregates: dict[str, Any] = {
        "n": Count("id"), "pct": Mode("latency_pct"),
        "dataset_name": Min("job__scenario__dataset__name"), "scenario_name": Min("job__scenario__name"),
        "test": Min("job__scenario__test"), "spec_label": Min("job__target__spec__label"),
        "spec_cores": Min("job__target__spec__cpu_cores"), "spec_memory": Min("job__target__spec__memory_gb"),
        "product_name": Min("job__target__product__name"),
        "invalid_n": Count("id", filter=Q(job__verdict=Job.Verdict.INVALID)),
        "suspect_n": Count("id", filter=Q(job__verdict=Job.Verdict.SUSPECT)),
        "valid_n": Count("id", filter=Q(job__verdict=Job.Verdict.VALID)),
    }
    for metric in METRICS:
        aggregates[f"{metric}_median"] = Median(metric)
        aggregates[f"{metric}_n"] = Count(metric)
        aggregates[f"{metric}_mean"] = Avg(metric)
        aggregates[f"{metric}_stdev"] = StdDev(metric, sample=True)
        aggregates[f"{metric}_min"] = Min(metric)
        aggregates[f"{metric}_max"] = Max(metric)
        positive = Q(**{f"{metric}__gt": 0})
        aggregates[f"{metric}_positive"] = Count(metric, filter=positive)
        aggregates[f"{metric}_log_mean"] = Avg(Ln(metric), filter=positive)
    names = [*keys, *aggregates]
    grouped = (JobResult.objects.filter(condition).values(**{alias: F(path) for alias, path in keys.items()})
               .annotate(**aggregates).order_by().values_list(*names))
    # Fetched as the driver returns them: Django's per-value converters would cost more than the query.
    sql, params = grouped.query.sql_with_params()
    with connections[grouped.db].cursor() as cursor:
        cursor.execute(sql, params)
        cells = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for cell in cells:
        cell["verdict"] = (Job.Verdict.INVALID if cell["invalid_n"] else Job.Verdict.SUSPECT if cell["suspect_n"]
                           else Job.Verdict.VALID if cell["valid_n"] else "")
    left_out = 0
    if trusted_only:
        kept = [c for c in cells if c["verdict"] not in (Job.Verdict.SUSPECT, Job.Verdict.INVALID)]
        left_out, cells = len(cells) - len(kept), kept

    products = _product_order(cells, product_ids=product_ids, target_ids=target_ids)
    column = {p["id"]: i for i, p in enumerate(products)}
    groups: dict[tuple[int, int], dict[str, Any]] = {}
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for cell in cells:
        group_key = (cell["dataset_id"], cell["scenario_id"])
        group = groups.get(group_key)
        if group is None:
            group = groups[group_key] = {
                "dataset": {"id": cell["dataset_id"], "name": cell["dataset_name"]},
                "scenario": {"id": cell["scenario_id"], "name": cell["scenario_name"], "test": cell["test"]},
                "rows": [],
                "_sort": (cell["dataset_name"], cell["scenario_name"], cell["scenario_id"]),
            }
        row_key = (*group_key, cell["spec_id"], cell["threads"], cell["table_size"], cell["tables"])
        row = rows.get(row_key)
        if row is None:
            row = rows[row_key] = {
                "spec": cell["spec_label"], "spec_id": cell["spec_id"], "threads": cell["threads"],
                "concurrency": cell["threads"], "table_size": cell["table_size"], "tables": cell["tables"],
                "cells": [None] * len(products),
                "_sort": (cell["spec_cores"] or 0, cell["spec_memory"] or 0, cell["spec_label"] or "",
                          cell["threads"], cell["table_size"], cell["tables"]),
            }
            group["rows"].append(row)
        entry: dict[str, Any] = {
            "product_id": cell["product_id"], "n": cell["n"], "latency_pct": cell["pct"],
            "verdict": str(cell["verdict"]),
            "verdicts": {"invalid": cell["invalid_n"], "suspect": cell["suspect_n"], "valid": cell["valid_n"]},
        }
        for metric in METRICS:
            entry[metric] = _stats(cell, metric)
        row["cells"][column[cell["product_id"]]] = entry

    ordered_groups = sorted(groups.values(), key=lambda g: g.pop("_sort"))
    for group in ordered_groups:
        group["rows"].sort(key=lambda r: r["_sort"])
        for row in group["rows"]:
            del row["_sort"]
            base = row["cells"][0]
            for entry in row["cells"]:
                if entry is None:
                    continue
                entry["delta_pct"] = {
                    metric: None if entry is base or base is None
                    else delta_pct(entry[metric]["value"], base[metric]["value"])
                    for metric in METRICS
                }
    return {
        "filters": {"targets": target_ids, "products": product_ids, "runs": run_ids, "campaigns": campaign_ids,
                    "scenarios": scenario_ids, "specs": spec_ids, "threads": threads, "trusted_only": trusted_only},
        "cells_left_out": left_out,
        "products": products,
        "baseline_product": products[0]["id"] if products else None,
        "metrics": list(METRICS),
        "job_count": sum(c["n"] for c in cells),
        "groups": ordered_groups,
    }


def _product_order(cells: list[dict[str, Any]], *, product_ids: list[int], target_ids: list[int]) -> list[dict[str, Any]]:
    names = {c["product_id"]: c["product_name"] for c in cells}
    order: list[int] = []
    if product_ids:
        order = [p for p in dict.fromkeys(product_ids) if p in names]
    elif target_ids:
        target_product = dict(Target.objects.filter(pk__in=target_ids).values_list("pk", "product_id"))
        for t in target_ids:
            p = target_product.get(t)
            if p is not None and p in names and p not in order:  # a chosen target without results in the selection adds no column
                order.append(p)
    order += sorted((p for p in names if p not in order), key=lambda p: (names[p].lower(), p))
    return [{"id": p, "name": names[p]} for p in order]


COMPARISON_CSV_COLUMNS = [
    "dataset", "scenario", "test", "spec", "threads", "table_size", "tables", "product", "n", "latency_pct",
    *[f"{metric}_{stat}" for metric in METRICS for stat in STATS],
    *[f"{metric}_delta_pct" for metric in METRICS],
    "verdict",
    *[f"{metric}_{stat}" for metric in METRICS for stat in SPREAD_STATS],
]


def comparison_rows(comparison: dict[str, Any]) -> Iterable[list[Any]]:
    """The comparison flattened for CSV: one line per (group, row, product) cell with data."""
    products = comparison["products"]
    for group in comparison["groups"]:
        for row in group["rows"]:
            for product, entry in zip(products, row["cells"], strict=True):
                if entry is None:
                    continue
                line = [group["dataset"]["name"], group["scenario"]["name"], group["scenario"]["test"], row["spec"],
                        row["threads"], row["table_size"], row["tables"], product["name"], entry["n"],
                        entry["latency_pct"]]
                line += [entry[metric][stat] for metric in METRICS for stat in STATS]
                line += [entry["delta_pct"][metric] for metric in METRICS]
                line.append(entry.get("verdict", ""))
                line += [entry[metric][stat] for metric in METRICS for stat in SPREAD_STATS]
                yield line
