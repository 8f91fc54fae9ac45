"""The measured cells of a comparison: one grouped query over the scope's results, aggregated in PostgreSQL.

A cell is every succeeded job with the same coordinates (dataset, scenario, spec, threads, table size, tables,
product, settings variant and, by run, run). Its figures per metric are what the grid and the deltas need: count,
mean, sample stdev, median, min and max, and how many repetitions were positive with the mean and stdev of their
logarithms (the geometric mean, its interval and the significance test read those).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connections
from django.db.models import (
    Aggregate,
    Avg,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    Min,
    Q,
    StdDev,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, Ln, NullIf

from campaigns.comparison.costs import CellKey, cell_key
from campaigns.comparison.rows import METRICS, Metric
from campaigns.comparison.scope import Scope
from campaigns.models import Job, JobResult

# Grouped by integer ids only: sorting 10,000 rows on text keys (names, labels) costs PostgreSQL several times more
# than on integers. Names come along as per-group aggregates.
GROUP_KEYS = {
    "dataset_id": "job__scenario__dataset_id",
    "scenario_id": "job__scenario_id",
    "spec_id": "job__target__spec_id",
    "threads": "job__threads",
    "table_size": "job__table_size",
    "tables": "job__tables",
    "product_id": "job__target__product_id",
    # A settings variant is a column of its own beside its product ("MariaDB · flush=2"); "" without one.
    "variant": "job__variant",
    # Two targets of one product on one row are two columns, never pooled (comparison.grid.columns_of).
    "target_id": "job__target_id",
}
FIGURES = ("n", "mean", "stdev", "median", "min", "max", "positive", "log_mean", "log_sd")


def group_keys(*, by_run: bool) -> dict[str, str]:
    """A cell's coordinates: alias → path from JobResult (by run, the run too)."""
    return {**GROUP_KEYS, "run_id": "job__run_id"} if by_run else dict(GROUP_KEYS)


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


class MetricFigures(NamedTuple):
    """One metric over a cell's repetitions, as PostgreSQL aggregated it (None where no repetition has it)."""

    n: int
    mean: float | None
    stdev: float | None
    median: float | None
    min: float | None
    max: float | None
    positive: int  # repetitions above zero: logarithms (and a geometric mean) need all of them
    log_mean: float | None
    log_sd: float | None


@dataclass
class CellFigures:
    """One measured cell: its coordinates, the names that label it, its verdict counts and its figures."""

    dataset_id: int
    scenario_id: int
    spec_id: int | None
    threads: int
    table_size: int
    tables: int
    product_id: int
    variant: str
    target_id: int
    run_id: int | None  # by run: the run named in the scope it stands for
    n: int
    pct: float | None  # the latency percentile most of its jobs reported
    dataset_name: str
    scenario_name: str
    test: str
    spec_label: str | None
    spec_cores: int | None
    spec_memory: float | None
    product_name: str
    target_name: str
    invalid_n: int
    suspect_n: int
    valid_n: int
    time_s: int | None  # its jobs' longest measured time
    clients: int | None  # its jobs' most client machines
    errors_per_1k: float | None  # errors sysbench ignored per 1,000 transactions, mean of the repetitions
    errors_total: int | None
    size_unit: str | None  # a workload's declared size unit ("warehouses"), None for rows
    counted_label: str | None  # a workload's counted calls: their label, else its function's name
    counted_per_min: float | None  # their mean per minute over the repetitions
    expected_errors_pct: float | None  # the errors its workload declares part of it, per 100 transactions
    job_ids: list[int]  # its jobs, ascending (the cell's side panel reads their seconds)
    metrics: dict[Metric, MetricFigures]

    @property
    def verdict(self) -> str:
        """The worst validity verdict of its jobs; "" when none was judged (jobs from before verdicts existed)."""
        return (Job.Verdict.INVALID if self.invalid_n else Job.Verdict.SUSPECT if self.suspect_n
                else Job.Verdict.VALID if self.valid_n else "")

    def key(self, *, by_run: bool) -> CellKey:
        """Its coordinates as comparison.costs keys them."""
        return cell_key(vars(self), by_run=by_run)


def _aggregates() -> dict[str, Any]:
    """What the grouped query computes per cell, named as CellFigures' fields (a metric's as metric_figure)."""
    aggregates: dict[str, Any] = {
        "n": Count("id"), "pct": Mode("latency_pct"),
        "dataset_name": Min("job__scenario__dataset__name"), "scenario_name": Min("job__scenario__name"),
        "test": Min("job__scenario__test"), "spec_label": Min("job__target__spec__label"),
        "spec_cores": Min("job__target__spec__cpu_cores"), "spec_memory": Min("job__target__spec__memory_gb"),
        "product_name": Min("job__target__product__name"), "target_name": Min("job__target__name"),
        "invalid_n": Count("id", filter=Q(job__verdict=Job.Verdict.INVALID)),
        "suspect_n": Count("id", filter=Q(job__verdict=Job.Verdict.SUSPECT)),
        "valid_n": Count("id", filter=Q(job__verdict=Job.Verdict.VALID)),
        "time_s": Max("job__time_s"), "clients": Max("job__clients_needed"),
        # The errors sysbench ignored (deadlocks, a TPC-C's rollbacks), per 1,000 transactions: the mean over the
        # repetitions that counted transactions, and their sum.
        "errors_per_1k": Avg(ExpressionWrapper(F("ignored_errors") * 1000.0 / F("transactions"),
                                               output_field=FloatField()), filter=Q(transactions__gt=0)),
        "errors_total": Sum("ignored_errors"),
        "size_unit": Min(NullIf("job__scenario__workload_version__workload__size_unit", Value(""))),
        "counted_label": Min(NullIf(Coalesce(NullIf("job__scenario__workload_version__workload__counted_label",
                                                    Value("")),
                                             "job__scenario__workload_version__workload__counted_function"),
                                    Value(""))),
        "counted_per_min": Avg("counted_per_min"),
        "expected_errors_pct": Max("job__scenario__workload_version__workload__expected_errors_pct"),
        "job_ids": ArrayAgg("job_id", ordering=("job_id",)),
    }
    for metric in METRICS:
        positive = Q(**{f"{metric}__gt": 0})
        aggregates |= {
            f"{metric}_n": Count(metric), f"{metric}_mean": Avg(metric),
            f"{metric}_stdev": StdDev(metric, sample=True), f"{metric}_median": Median(metric),
            f"{metric}_min": Min(metric), f"{metric}_max": Max(metric),
            f"{metric}_positive": Count(metric, filter=positive),
            f"{metric}_log_mean": Avg(Ln(metric), filter=positive),
            f"{metric}_log_sd": StdDev(Ln(metric), filter=positive, sample=True),
        }
    return aggregates


def _figures(row: dict[str, Any]) -> CellFigures:
    metrics = {metric: MetricFigures(*(row.pop(f"{metric}_{figure}") for figure in FIGURES)) for metric in METRICS}
    row.setdefault("run_id", None)
    # The driver's numeric (bigint × float / bigint) and sum, as the JSON-ready float and int they stand for.
    row["errors_per_1k"] = None if row["errors_per_1k"] is None else float(row["errors_per_1k"])
    row["errors_total"] = None if row["errors_total"] is None else int(row["errors_total"])
    row["counted_per_min"] = None if row["counted_per_min"] is None else float(row["counted_per_min"])
    return CellFigures(**row, metrics=metrics)


def cells_measured(scope: Scope) -> tuple[list[CellFigures], int]:
    """The scope's cells, a retry's counted as its original run's (by run), and how many trusted_only left out."""
    keys = group_keys(by_run=scope.by_run)
    aggregates = _aggregates()
    names = [*keys, *aggregates]
    grouped = (JobResult.objects.filter(scope.condition).values(**{alias: F(path) for alias, path in keys.items()})
               .annotate(**aggregates).order_by().values_list(*names))
    # Fetched as the driver returns them: Django's per-value converters would cost more than the query.
    sql, params = grouped.query.sql_with_params()
    with connections[grouped.db].cursor() as cursor:
        cursor.execute(sql, params)
        cells = [_figures(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]
    if scope.by_run:
        cells = _merge_retries(cells, scope.roots)
    if not scope.trusted_only:
        return cells, 0
    kept = [c for c in cells if c.verdict not in (Job.Verdict.SUSPECT, Job.Verdict.INVALID)]
    return kept, len(cells) - len(kept)


def _merge_retries(cells: list[CellFigures], roots: dict[int, int]) -> list[CellFigures]:
    """Cells grouped by run, a retry's cells counted as its original run's. A retried job's cell exists only in the
    retry (the original's failed job has no result), so a merge of two cells of one root is rare: where it
    happens, the later run's cell stands for the pair."""
    merged: dict[CellKey, CellFigures] = {}
    for cell in sorted(cells, key=lambda c: c.run_id or 0):
        cell.run_id = roots.get(cell.run_id, cell.run_id) if cell.run_id is not None else None
        merged[cell.key(by_run=True)] = cell
    return list(merged.values())
