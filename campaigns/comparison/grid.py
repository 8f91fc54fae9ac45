"""A comparison's columns and tables: the measured cells (comparison.aggregate) laid out as groups of rows.

Columns are products, each split by the settings variants its jobs ran under, by target where the product was
measured on two or more targets on one row (two MariaDB servers of one spec are two columns, never pooled), and,
by run, by run; the first column is the baseline. Tables are (dataset × scenario), ordered by their names; rows are (spec, threads, table
size, tables), ordered by the spec's cores and memory, then threads. Every cell is placed by its CellId (its
table's and row's coordinates and its column), which is also how the deltas find each cell's figures.
"""
from __future__ import annotations

import math
from typing import Any, TypedDict

from campaigns.comparison.aggregate import CellFigures, MetricFigures
from campaigns.comparison.costs import CellKey
from campaigns.comparison.rows import (
    Column,
    ComparisonCell,
    ComparisonGroup,
    ComparisonRow,
    Metric,
    MetricStats,
    ScenarioRef,
    comparison_row,
)
from campaigns.comparison.scope import Scope
from campaigns.models import Target

# (dataset, scenario, spec, threads, table size, tables, column index): where a cell sits in the comparison.
CellId = tuple[Any, ...]
Figures = dict[CellId, dict[Metric, MetricFigures]]


class RunOf(TypedDict, total=False):
    """A measured cell's run, when the comparison is by run."""

    run_id: int


def rounded(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def cell_id(group: ComparisonGroup, row: ComparisonRow, column: int) -> CellId:
    return (group["dataset"]["id"], group["scenario"]["id"], row["spec_id"], row["threads"], row["table_size"],
            row["tables"], column)


def columns_of(cells: list[CellFigures], scope: Scope) -> list[Column]:
    """The comparison's columns, the baseline first: the scope's baseline if it names one present, else the first
    product in the order of product_ids, of target_ids, then by name."""
    split = _split_products(cells)
    columns = _target_columns(_variant_columns(_product_order(cells, scope), cells), cells, split, scope)
    if scope.by_run:
        present = {(c.product_id, c.variant, c.run_id, c.target_id if c.product_id in split else None)
                   for c in cells}
        columns = [{**p, "name": f"{p['name']} · run #{r}", "run_id": r}
                   for r in dict.fromkeys(scope.roots.values()) for p in columns
                   if (p["id"], p.get("variant", ""), r, p.get("target_id")) in present]
    if scope.baseline is not None:
        first = next((p for p in columns if (p.get("run_id") if scope.by_run else p["id"]) == scope.baseline), None)
        if first is not None:
            columns = [first, *(p for p in columns if p is not first)]
    return columns


def _split_products(cells: list[CellFigures]) -> set[int]:
    """The products measured on two or more targets on one row (same table, spec, threads, size, variant, run):
    their columns are per target."""
    targets: dict[tuple[Any, ...], set[int]] = {}
    for c in cells:
        key = (c.dataset_id, c.scenario_id, c.spec_id, c.threads, c.table_size, c.tables, c.variant, c.run_id,
               c.product_id)
        targets.setdefault(key, set()).add(c.target_id)
    return {key[-1] for key, found in targets.items() if len(found) > 1}


def _target_columns(columns: list[Column], cells: list[CellFigures], split: set[int], scope: Scope) -> list[Column]:
    """A split product's columns, one per target (in the order target_ids names them, then by name), its target's
    name joining the column's ("MariaDB · db-a")."""
    if not split:
        return columns
    chosen = {t: i for i, t in enumerate(dict.fromkeys(scope.target_ids))}
    names: dict[tuple[int, str], dict[int, str]] = {}
    for c in cells:
        if c.product_id in split:
            names.setdefault((c.product_id, c.variant), {})[c.target_id] = c.target_name
    out: list[Column] = []
    for p in columns:
        found = names.get((p["id"], p.get("variant", "")))
        if found is None:
            out.append(p)
            continue
        for t in sorted(found, key=lambda t: (chosen.get(t, len(chosen)), found[t].lower(), t)):
            out.append({**p, "name": f"{p['name']} · {found[t]}", "target_id": t})
    return out


def _product_order(cells: list[CellFigures], scope: Scope) -> list[Column]:
    names = {c.product_id: c.product_name for c in cells}
    order: list[int] = []
    if scope.product_ids:
        order = [p for p in dict.fromkeys(scope.product_ids) if p in names]
    elif scope.target_ids:
        target_product = dict(Target.objects.filter(pk__in=scope.target_ids).values_list("pk", "product_id"))
        for t in scope.target_ids:
            p = target_product.get(t)
            if p is not None and p in names and p not in order:  # a chosen target without results adds no column
                order.append(p)
    order += sorted((p for p in names if p not in order), key=lambda p: (names[p].lower(), p))
    return [{"id": p, "name": names[p]} for p in order]


def _variant_columns(products: list[Column], cells: list[CellFigures]) -> list[Column]:
    """Each product's columns, one per settings variant its jobs ran under, in the campaign's order of first
    appearance (a variant's name joins the product's: "MariaDB (local) · flush=2"); a product measured without
    variants keeps its one column and its name."""
    variants: dict[int, list[str]] = {}
    for cell in sorted(cells, key=lambda c: (c.variant != "", c.variant.lower())):
        seen = variants.setdefault(cell.product_id, [])
        if cell.variant not in seen:
            seen.append(cell.variant)
    return [{**p, "name": f"{p['name']} · {v}" if v else p["name"], "variant": v}
            for p in products for v in variants.get(p["id"], [""])]


def groups_of(cells: list[CellFigures], columns: list[Column], scope: Scope,
              explained: dict[CellKey, dict[str, Any]]) -> tuple[list[ComparisonGroup], Figures]:
    """The cells as ordered tables of ordered rows, each with its costs and bound from `explained`, and each
    cell's figures by its CellId."""
    column = {(p["id"], p.get("variant", ""), p.get("run_id"), p.get("target_id")): i for i, p in enumerate(columns)}
    split = {p["id"] for p in columns if "target_id" in p}
    groups: dict[tuple[int, int], ComparisonGroup] = {}
    rows: dict[tuple[Any, ...], ComparisonRow] = {}
    group_order: dict[tuple[int, int], tuple[Any, ...]] = {}
    row_order: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    figures: Figures = {}
    for cell in cells:
        group_key = (cell.dataset_id, cell.scenario_id)
        if group_key not in groups:
            scenario: ScenarioRef = {"id": cell.scenario_id, "name": cell.scenario_name, "test": cell.test}
            if cell.size_unit:
                scenario["size_unit"] = cell.size_unit
            if cell.counted_label:
                scenario["counted"] = cell.counted_label
            groups[group_key] = {"dataset": {"id": cell.dataset_id, "name": cell.dataset_name},
                                 "scenario": scenario, "rows": []}
            group_order[group_key] = (cell.dataset_name, cell.scenario_name, cell.scenario_id)
        row_key = (*group_key, cell.spec_id, cell.threads, cell.table_size, cell.tables)
        if row_key not in rows:
            rows[row_key] = comparison_row(spec=cell.spec_label, spec_id=cell.spec_id, threads=cell.threads,
                                           table_size=cell.table_size, tables=cell.tables, width=len(columns))
            row_order[row_key] = (cell.spec_cores or 0, cell.spec_memory or 0, cell.spec_label or "", cell.threads,
                                  cell.table_size, cell.tables)
        i = column[(cell.product_id, cell.variant, cell.run_id if scope.by_run else None,
                    cell.target_id if cell.product_id in split else None)]
        rows[row_key]["cells"][i] = _entry(cell, scope, explained, split=cell.product_id in split)
        figures[(*row_key, i)] = cell.metrics
    for row_key in sorted(rows, key=row_order.__getitem__):
        groups[row_key[:2]]["rows"].append(rows[row_key])
    return [groups[key] for key in sorted(groups, key=group_order.__getitem__)], figures


# A cell lists at most this many of its jobs (a cell of a hundred repetitions lists its first fifty).
CELL_JOBS = 50


def _entry(cell: CellFigures, scope: Scope, explained: dict[CellKey, dict[str, Any]], *, split: bool
           ) -> ComparisonCell:
    run_of: RunOf = {"run_id": cell.run_id} if scope.by_run and cell.run_id is not None else {}
    entry: ComparisonCell = {
        "product_id": cell.product_id, "variant": cell.variant, "n": cell.n, "latency_pct": cell.pct,
        **run_of,
        "verdict": str(cell.verdict),
        "verdicts": {"invalid": cell.invalid_n, "suspect": cell.suspect_n, "valid": cell.valid_n},
        "qps": metric_stats(cell.metrics["qps"]), "tps": metric_stats(cell.metrics["tps"]),
        "latency_avg_ms": metric_stats(cell.metrics["latency_avg_ms"]),
        "latency_pct_ms": metric_stats(cell.metrics["latency_pct_ms"]),
        "time_s": cell.time_s, "clients": cell.clients,
        "errors": {"per_1k_txn": rounded(cell.errors_per_1k, 3), "total": cell.errors_total,
                   **({"expected_pct": cell.expected_errors_pct} if cell.expected_errors_pct is not None else {})},
    }
    if cell.counted_label:
        entry["counted_per_min"] = rounded(cell.counted_per_min)
    # Its jobs (the first CELL_JOBS), whose seconds the cell's side panel charts.
    entry["jobs"] = list(cell.job_ids or [])[:CELL_JOBS]
    if split:
        entry["target_id"] = cell.target_id
    found = explained.get(cell.key(by_run=scope.by_run)) or {"costs": {}, "bound": None}
    entry["costs"], entry["bound"] = found["costs"], found["bound"]
    return entry


def metric_stats(m: MetricFigures) -> MetricStats:
    """One metric of one cell: its value (geometric mean, or mean where a value is not positive) and spread."""
    cv = abs(m.stdev / m.mean) * 100 if m.stdev is not None and m.mean not in (None, 0) else None
    geometric = m.n > 0 and m.positive == m.n and m.log_mean is not None
    value = math.exp(m.log_mean) if geometric and m.log_mean is not None else m.mean
    return {"value": rounded(value), "statistic": "geometric mean" if geometric or not m.n else "mean",
            "median": rounded(m.median), "n": m.n, "mean": rounded(m.mean), "stdev": rounded(m.stdev),
            "cv_pct": rounded(cv, 2), "min": rounded(m.min), "max": rounded(m.max)}
