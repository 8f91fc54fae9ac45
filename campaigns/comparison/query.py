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
The work is one grouped query (percentile_cont for the median) whatever the number of rows, in four parts with
typed hand-overs: scope (what is covered) → aggregate (the grouped query: CellFigures) → grid (columns, tables,
rows; each cell's figures by its CellId) → deltas (Δ%, intervals, significance, why).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from campaigns.comparison.aggregate import cells_measured, group_keys
from campaigns.comparison.costs import cells_costs
from campaigns.comparison.deltas import deltas_apply
from campaigns.comparison.grid import columns_of, groups_of
from campaigns.comparison.rows import METRICS, Comparison
from campaigns.comparison.scope import scope_of

STATS: tuple[Literal["median", "n", "mean", "stdev", "cv_pct"], ...] = ("median", "n", "mean", "stdev", "cv_pct")
# Added after STATS in the CSV, so readers that index its columns by position keep working.
SPREAD_STATS: tuple[Literal["value", "min", "max"], ...] = ("value", "min", "max")


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
    scope = scope_of(target_ids=target_ids, product_ids=product_ids, run_ids=run_ids, campaign_ids=campaign_ids,
                     scenario_ids=scenario_ids, spec_ids=spec_ids, threads=threads, trusted_only=trusted_only,
                     by_run=by_run, baseline=baseline)
    cells, left_out = cells_measured(scope)
    explained = cells_costs(scope.condition, group_keys(by_run=scope.by_run), roots=scope.roots, by_run=scope.by_run)
    columns = columns_of(cells, scope)
    groups, figures = groups_of(cells, columns, scope, explained)
    deltas_apply(groups, figures, [p["name"] for p in columns])
    return {
        "filters": {"targets": scope.target_ids, "products": scope.product_ids, "runs": scope.run_ids,
                    "campaigns": scope.campaign_ids, "scenarios": scope.scenario_ids, "specs": scope.spec_ids,
                    "threads": scope.threads, "trusted_only": trusted_only, "by_run": scope.by_run,
                    "baseline": baseline},
        "cells_left_out": left_out,
        "products": columns,
        "baseline_product": columns[0]["id"] if columns else None,
        "metrics": list(METRICS),
        "job_count": sum(c.n for c in cells),
        "groups": groups,
    }


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
    # Errors sysbench ignored: per 1,000 transactions (mean of the repetitions) and in all.
    "errors_per_1k_txn", "errors_total",
    # A workload's own dataset unit (warehouses; empty for rows) and its counted calls per minute (NewOrders).
    "size_unit", "counted", "counted_per_min",
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
                errors = entry.get("errors") or {}
                line += [errors.get("per_1k_txn"), errors.get("total")]
                line += [group["scenario"].get("size_unit", ""), group["scenario"].get("counted", ""),
                         entry.get("counted_per_min")]
                yield line
