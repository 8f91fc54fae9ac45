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
from typing import Any, Literal, TypedDict

from django.db import connections
from django.db.models import Aggregate, Avg, Count, F, FloatField, Max, Min, Q, StdDev
from django.db.models.functions import Ln

from campaigns.comparison.costs import cell_key, cells_costs, why
from campaigns.comparison.formatting import delta_sentence, delta_short, verdict_of
from campaigns.comparison.rows import (
    METRICS,
    Column,
    Comparison,
    ComparisonCell,
    ComparisonGroup,
    ComparisonRow,
    Metric,
    MetricStats,
    Significance,
    comparison_row,
)
from campaigns.models import Job, JobResult, Run, Target
from campaigns.statistics import ALPHA, adjust_many, geometric_mean_interval, ratio_interval

STATS: tuple[Literal["median", "n", "mean", "stdev", "cv_pct"], ...] = ("median", "n", "mean", "stdev", "cv_pct")
# Added after STATS in the CSV, so readers that index its columns by position keep working.
SPREAD_STATS: tuple[Literal["value", "min", "max"], ...] = ("value", "min", "max")
# What a cell's intervals and significance test read of one metric's repetitions: how many are positive, how many
# there are, and the mean and standard deviation of their logarithms.
Logs = tuple[Any, ...]


class RunOf(TypedDict, total=False):
    """A measured cell's run, when the comparison is by run."""

    run_id: int


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
    return list(retry_roots(run_ids))


def retry_roots(run_ids: Sequence[int]) -> dict[int, int]:
    """Each of the runs and of their retries (recursively), mapped to the run named in run_ids it retries."""
    roots = {r: r for r in dict.fromkeys(run_ids)}
    frontier = list(roots)
    while frontier:
        found = [(r, parent) for r, parent in Run.objects.filter(rerun_of_id__in=frontier, rerun=Run.Rerun.FAILED)
                 .values_list("pk", "rerun_of_id") if r not in roots]
        for r, parent in found:
            roots[r] = roots[parent]
        frontier = [r for r, _ in found]
    return roots


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


def _stats(cell: dict[str, Any], metric: Metric) -> MetricStats:
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
    by_run: bool | None = None,
    baseline: int | None = None,
) -> Comparison:
    """Compare products over succeeded jobs selected by any combination of the given ids.

    Each cell carries the worst validity verdict of its jobs ("" when none was judged: jobs from before
    verdicts existed); `trusted_only` leaves out the cells whose verdict is suspect or invalid.

    by_run (by default: when two or more runs are named) makes each (product, run) a column of its own, so that
    two runs of one target are compared with each other instead of pooled; a run's retries count as that run.
    Each column of "products" then carries its "run_id" and names the run.

    baseline: the product (or, by run, the run) whose column comes first, the one every Δ% is against; None keeps
    the order above.

    Every non-baseline cell carries "delta_ci95_pct" ({metric: [low, high]}: the 95% confidence interval of the
    ratio of geometric means − 1, None with fewer than 2 runs a side) and, for QPS, "significance": Welch's
    t-test on the log values, its p adjusted with Benjamini–Hochberg over every QPS Δ% of the comparison, the
    verdict in the page's words ("significant", "within ±5%", "too few runs to tell", "untested") and a sentence
    that says it with the interval.

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
    if by_run is None:
        by_run = len(set(run_ids)) >= 2
    roots = retry_roots(run_ids) if by_run else {}

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
        # A settings variant is a column of its own beside its product ("MariaDB · flush=2"); "" without one.
        "variant": "job__variant",
    }
    if by_run:
        keys["run_id"] = "job__run_id"
    aggregates: dict[str, Any] = {
        "n": Count("id"), "pct": Mode("latency_pct"),
        "dataset_name": Min("job__scenario__dataset__name"), "scenario_name": Min("job__scenario__name"),
        "test": Min("job__scenario__test"), "spec_label": Min("job__target__spec__label"),
        "spec_cores": Min("job__target__spec__cpu_cores"), "spec_memory": Min("job__target__spec__memory_gb"),
        "product_name": Min("job__target__product__name"),
        "invalid_n": Count("id", filter=Q(job__verdict=Job.Verdict.INVALID)),
        "suspect_n": Count("id", filter=Q(job__verdict=Job.Verdict.SUSPECT)),
        "valid_n": Count("id", filter=Q(job__verdict=Job.Verdict.VALID)),
        # How long its jobs measured and on how many client machines: what a published figure is set beside.
        "time_s": Max("job__time_s"), "clients": Max("job__clients_needed"),
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
        aggregates[f"{metric}_log_sd"] = StdDev(Ln(metric), filter=positive, sample=True)
    names = [*keys, *aggregates]
    grouped = (JobResult.objects.filter(condition).values(**{alias: F(path) for alias, path in keys.items()})
               .annotate(**aggregates).order_by().values_list(*names))
    # Fetched as the driver returns them: Django's per-value converters would cost more than the query.
    sql, params = grouped.query.sql_with_params()
    with connections[grouped.db].cursor() as cursor:
        cursor.execute(sql, params)
        cells = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    if by_run:
        cells = _merge_retries(cells, roots)
    explained = cells_costs(condition, keys, roots=roots, by_run=by_run)
    for cell in cells:
        cell["verdict"] = (Job.Verdict.INVALID if cell["invalid_n"] else Job.Verdict.SUSPECT if cell["suspect_n"]
                           else Job.Verdict.VALID if cell["valid_n"] else "")
    left_out = 0
    if trusted_only:
        kept = [c for c in cells if c["verdict"] not in (Job.Verdict.SUSPECT, Job.Verdict.INVALID)]
        left_out, cells = len(cells) - len(kept), kept

    products = _product_order(cells, product_ids=product_ids, target_ids=target_ids)
    products = _variant_columns(products, cells)
    if by_run:
        present = {(c["product_id"], c["variant"], c["run_id"]) for c in cells}
        products = [{**p, "name": f"{p['name']} · run #{r}", "run_id": r}
                    for r in dict.fromkeys(roots.values()) for p in products if (p["id"], p["variant"], r) in present]
    if baseline is not None:
        first = next((p for p in products if (p.get("run_id") if by_run else p["id"]) == baseline), None)
        if first is not None:
            products = [first, *(p for p in products if p is not first)]
    column = {(p["id"], p["variant"], p.get("run_id")): i for i, p in enumerate(products)}
    groups: dict[tuple[int, int], ComparisonGroup] = {}
    group_order: dict[tuple[int, int], tuple[Any, ...]] = {}
    rows: dict[tuple[Any, ...], ComparisonRow] = {}
    # The order of rows and each cell's sums of logarithms, beside them (by id) rather than in the JSON-ready dicts.
    row_order: dict[int, tuple[Any, ...]] = {}
    logs: dict[int, dict[Metric, Logs]] = {}
    for cell in cells:
        group_key = (cell["dataset_id"], cell["scenario_id"])
        group = groups.get(group_key)
        if group is None:
            group = groups[group_key] = {
                "dataset": {"id": cell["dataset_id"], "name": cell["dataset_name"]},
                "scenario": {"id": cell["scenario_id"], "name": cell["scenario_name"], "test": cell["test"]},
                "rows": [],
            }
            group_order[group_key] = (cell["dataset_name"], cell["scenario_name"], cell["scenario_id"])
        row_key = (*group_key, cell["spec_id"], cell["threads"], cell["table_size"], cell["tables"])
        row = rows.get(row_key)
        if row is None:
            row = rows[row_key] = comparison_row(
                spec=cell["spec_label"], spec_id=cell["spec_id"], threads=cell["threads"],
                table_size=cell["table_size"], tables=cell["tables"], width=len(products))
            row_order[id(row)] = (cell["spec_cores"] or 0, cell["spec_memory"] or 0, cell["spec_label"] or "",
                                  cell["threads"], cell["table_size"], cell["tables"])
            group["rows"].append(row)
        run_of: RunOf = {"run_id": cell["run_id"]} if by_run else {}
        entry: ComparisonCell = {
            "product_id": cell["product_id"], "variant": cell["variant"], "n": cell["n"], "latency_pct": cell["pct"],
            **run_of,
            "verdict": str(cell["verdict"]),
            "verdicts": {"invalid": cell["invalid_n"], "suspect": cell["suspect_n"], "valid": cell["valid_n"]},
            "qps": _stats(cell, "qps"), "tps": _stats(cell, "tps"), "latency_avg_ms": _stats(cell, "latency_avg_ms"),
            "latency_pct_ms": _stats(cell, "latency_pct_ms"),
            "time_s": cell["time_s"], "clients": cell["clients"],
        }
        found = explained.get(cell_key(cell, by_run=by_run)) or {"costs": {}, "bound": None}
        entry["costs"], entry["bound"] = found["costs"], found["bound"]
        logs[id(entry)] = {metric: (cell[f"{metric}_positive"], cell[f"{metric}_n"], cell[f"{metric}_log_mean"],
                                    cell[f"{metric}_log_sd"]) for metric in METRICS}
        row["cells"][column[(cell["product_id"], cell["variant"], cell.get("run_id"))]] = entry

    ordered_groups = [groups[key] for key in sorted(groups, key=group_order.__getitem__)]
    for group in ordered_groups:
        group["rows"].sort(key=lambda r: row_order[id(r)])
        for row in group["rows"]:
            base = row["cells"][0]
            for each in row["cells"]:
                if each is None:
                    continue
                each["delta_pct"] = {
                    metric: None if each is base or base is None
                    else delta_pct(each[metric]["value"], base[metric]["value"])
                    for metric in METRICS
                }
                if each is base or base is None:
                    _interval(each, None, logs[id(each)], None)
                else:
                    _interval(each, base, logs[id(each)], logs[id(base)])
    for group in ordered_groups:
        for row in group["rows"]:
            for each in row["cells"]:
                if each is not None:
                    each["qps_ci95"] = _value_interval(logs[id(each)]["qps"])
    _adjust([sig for g in ordered_groups for r in g["rows"] for c in r["cells"]
             if c is not None and (sig := c.get("significance"))])
    # Why a significant Δ% is what it is, from the per-query costs that differ most (comparison.costs.why).
    column_names = [p["name"] for p in products]
    for group in ordered_groups:
        for row in group["rows"]:
            base = row["cells"][0]
            for i, each in enumerate(row["cells"]):
                sig = each.get("significance") if each is not None else None
                if each is not None and base is not None and sig and sig.get("verdict") == "significant":
                    each["why"] = why(dict(each), dict(base), name=column_names[i], base_name=column_names[0])
    return {
        "filters": {"targets": target_ids, "products": product_ids, "runs": run_ids, "campaigns": campaign_ids,
                    "scenarios": scenario_ids, "specs": spec_ids, "threads": threads, "trusted_only": trusted_only,
                    "by_run": by_run, "baseline": baseline},
        "cells_left_out": left_out,
        "products": products,
        "baseline_product": products[0]["id"] if products else None,
        "metrics": list(METRICS),
        "job_count": sum(c["n"] for c in cells),
        "groups": ordered_groups,
    }


def _merge_retries(cells: list[dict[str, Any]], roots: dict[int, int]) -> list[dict[str, Any]]:
    """Cells grouped by run, a retry's cells counted as its original run's. A retried job's cell exists only in the
    retry (the original's failed job has no result), so a merge of two cells of one root is rare: where it
    happens, the later run's cell stands for the pair."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for cell in sorted(cells, key=lambda c: c["run_id"]):
        cell["run_id"] = roots.get(cell["run_id"], cell["run_id"])
        merged[cell_key(cell, by_run=True)] = cell
    return list(merged.values())


def _interval(entry: ComparisonCell, base: ComparisonCell | None, entry_logs: dict[Metric, Logs],
              base_logs: dict[Metric, Logs] | None) -> None:
    """A cell's Δ% intervals against its baseline and, for QPS, its significance before the correction."""
    if base is None or base_logs is None:
        entry["delta_ci95_pct"] = {metric: None for metric in METRICS}
        entry["significance"] = None
        return
    intervals: dict[str, Any] = {}
    for metric in METRICS:
        interval = _metric_interval(entry_logs[metric], base_logs[metric])
        intervals[metric] = interval
        entry["delta_ci95_pct"] = entry.get("delta_ci95_pct") or {}
        entry["delta_ci95_pct"][metric] = (None if interval is None or interval.low_pct is None
                                           else [_round(interval.low_pct, 2), _round(interval.high_pct, 2)])
    qps = intervals["qps"]
    n_base, n_other = base["qps"]["n"], entry["qps"]["n"]
    mark: Significance = {"verdict": "untested", "p_value": None, "p_adjusted": None, "n_base": n_base,
                            "n_other": n_other, "ci95_pct": entry["delta_ci95_pct"]["qps"], "runs_needed": None,
                            "change_pct": entry["delta_pct"]["qps"]}
    if qps is not None and qps.low_pct is not None:
        mark["runs_needed"] = qps.runs_needed
        if qps.p_value is None:  # no variance on either side: the difference is exact
            mark["verdict"] = verdict_of(significant=qps.change_pct != 0, ci=mark["ci95_pct"])
        else:
            mark["verdict"], mark["p_value"] = "pending", qps.p_value
    entry["significance"] = mark


def _value_interval(logs: Logs) -> list[float | None] | None:
    """A cell's 95% interval of its geometric mean, [low, high], from 2 runs (all positive) up; else None."""
    positive, n, log_mean, log_sd = logs
    if not n or positive != n or log_mean is None:
        return None
    interval = geometric_mean_interval(n=n, log_mean=log_mean, log_sd=log_sd)
    return None if interval is None else [_round(interval[0]), _round(interval[1])]


def _metric_interval(other: Logs, base: Logs) -> Any:
    positive_b, n_b, mean_b, sd_b = base
    positive_o, n_o, mean_o, sd_o = other
    # Logarithms need every run positive on both sides; otherwise the Δ% has no interval.
    if not n_b or not n_o or positive_b != n_b or positive_o != n_o or mean_b is None or mean_o is None:
        return None
    return ratio_interval(n_base=n_b, log_mean_base=mean_b, log_sd_base=sd_b, n_other=n_o, log_mean_other=mean_o,
                          log_sd_other=sd_o)


def _adjust(marks: list[Significance]) -> None:
    """Benjamini–Hochberg over the comparison's tested QPS Δ%, then each mark's words."""
    pending = [m for m in marks if m["verdict"] == "pending"]
    for mark, p_adjusted in zip(pending, adjust_many([m["p_value"] for m in pending]), strict=True):
        mark["p_adjusted"] = p_adjusted
        significant = p_adjusted is not None and p_adjusted < ALPHA
        mark["verdict"] = verdict_of(significant=significant, ci=mark["ci95_pct"])
    for mark in marks:
        mark["tested"] = len(pending)
        mark["text"] = delta_short(mark)
        mark["sentence"] = delta_sentence(mark)


def _product_order(cells: list[dict[str, Any]], *, product_ids: list[int], target_ids: list[int]) -> list[Column]:
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


def _variant_columns(products: list[Column], cells: list[dict[str, Any]]) -> list[Column]:
    """Each product's columns, one per settings variant its jobs ran under, in the campaign's order of first
    appearance (a variant's name joins the product's: "MariaDB (local) · flush=2"); a product measured without
    variants keeps its one column and its name."""
    variants: dict[int, list[str]] = {}
    for cell in sorted(cells, key=lambda c: (c["variant"] != "", c["variant"].lower())):
        seen = variants.setdefault(cell["product_id"], [])
        if cell["variant"] not in seen:
            seen.append(cell["variant"])
    return [{**p, "name": f"{p['name']} · {v}" if v else p["name"], "variant": v}
            for p in products for v in variants.get(p["id"], [""])]


CSV_COSTS = ("rows_read_per_query", "bp_misses_per_1k_queries", "bp_hit_pct", "data_reads_per_txn",
             "data_writes_per_txn", "row_lock_waits_per_s", "threads_running", "server_cpu_ms_per_1k_queries",
             "client_cpu_ms_per_1k_queries", "rtt_ms", "rtt_share_pct")
COMPARISON_CSV_COLUMNS = [
    "dataset", "scenario", "test", "spec", "threads", "table_size", "tables", "product", "n", "latency_pct",
    *[f"{metric}_{stat}" for metric in METRICS for stat in STATS],
    *[f"{metric}_delta_pct" for metric in METRICS],
    "verdict",
    *[f"{metric}_{stat}" for metric in METRICS for stat in SPREAD_STATS],
    # Added later: the QPS Δ%'s interval and significance, and the run of a per-run column.
    "qps_delta_ci95_low_pct", "qps_delta_ci95_high_pct", "n_baseline", "qps_delta_verdict", "qps_delta_p_value",
    "qps_delta_p_adjusted", "qps_delta_runs_needed", "run",
    # What each query cost (medians over the cell's repetitions) and what bounded the cell (comparison.costs).
    *CSV_COSTS, "bound", "bound_evidence",
]


def comparison_rows(comparison: Comparison) -> Iterable[list[Any]]:
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
                sig = entry.get("significance")
                line += ([*(sig["ci95_pct"] or [None, None]), sig["n_base"], sig["verdict"], sig["p_value"],
                          sig["p_adjusted"], sig["runs_needed"]] if sig else [None] * 7)
                line.append(entry.get("run_id"))
                costs = entry.get("costs") or {}
                line += [(costs.get(name) or {}).get("value") for name in CSV_COSTS]
                cell_bound = entry.get("bound") or {}
                line += [cell_bound.get("resource", ""), cell_bound.get("evidence", "")]
                yield line
