"""The shapes a comparison hands from one layer to the next, each defined once: a comparison (query.comparison_build,
the API's JSON) of groups of rows of cells, its columns, and the significance marks the page adds to its rows.

They are TypedDicts, not dataclasses, because they stay plain JSON-ready dicts: the API returns them as they are,
the comparison page's layout is cached as JSON, and the templates read them as `row.cells`; mypy checks their keys.
Keys marked NotRequired are added after a row or cell is made (Δ% once its row is complete, the page's marks by
comparison.layout) or exist for one kind of cell only (a published figure has no verdicts, a measured cell no
correction).

`comparison_row` makes every row, measured (query.py) and published (published.py) alike.
"""
from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

if TYPE_CHECKING:  # selection.py imports query.py, which imports this module
    from campaigns.comparison.selection import Selection

Metric = Literal["qps", "tps", "latency_avg_ms", "latency_pct_ms"]
METRICS: tuple[Metric, ...] = ("qps", "tps", "latency_avg_ms", "latency_pct_ms")
LatencyMetric = Literal["latency_avg_ms", "latency_pct_ms"]


class MetricStats(TypedDict):
    """One metric of one cell over its repetitions: the value (geometric mean, else mean) and its spread."""

    value: float | None
    statistic: str  # "geometric mean", "mean" or "published"
    median: float | None
    n: int
    mean: float | None
    stdev: float | None
    cv_pct: float | None
    min: float | None
    max: float | None


class Verdicts(TypedDict):
    """How many of a cell's jobs were judged invalid, suspect and valid."""

    invalid: int
    suspect: int
    valid: int


class Significance(TypedDict):
    """Whether a cell's QPS Δ% against the baseline is larger than the runs' noise (comparison_build); tested, text
    and sentence are added once every Δ% of the comparison is known (Benjamini–Hochberg)."""

    verdict: str  # formatting.VERDICTS: "significant", "within ±5%", "too few runs to tell", "untested" ("pending" until adjusted)
    p_value: float | None
    p_adjusted: float | None
    n_base: int
    n_other: int
    ci95_pct: list[float | None] | None
    runs_needed: int | None
    change_pct: float | None
    tested: NotRequired[int]
    text: NotRequired[str]
    sentence: NotRequired[str]


class CellTrust(TypedDict):
    """Why an untrusted cell is not to be trusted (comparison.trust): its reasons and a job page to read them on."""

    reasons: list[str]
    url: str
    jobs: int


class ComparisonCell(TypedDict):
    """One product's (or column's) figures on one row: measured over its repetitions, or one published figure."""

    product_id: int
    n: int
    latency_pct: float | None
    qps: MetricStats
    tps: MetricStats
    latency_avg_ms: MetricStats
    latency_pct_ms: MetricStats
    variant: NotRequired[str]  # measured: the settings variant of its jobs ("" without one)
    run_id: NotRequired[int]  # measured by run: the run it stands for
    target_id: NotRequired[int]  # measured, in a column of one target of a product that has several
    verdict: NotRequired[str]  # measured: the worst validity verdict of its jobs ("" when none was judged)
    verdicts: NotRequired[Verdicts]
    published: NotRequired[bool]  # a published figure from a seed document
    correction: NotRequired[str]  # published: how the document's figure was corrected, if it was
    delta_pct: NotRequired[dict[str, float | None]]  # per metric, against the row's first cell
    delta_ci95_pct: NotRequired[dict[str, list[float | None] | None]]
    significance: NotRequired[Significance | None]
    qps_ci95: NotRequired[list[float | None] | None]
    time_s: NotRequired[int | None]  # measured: its jobs' longest measured time
    errors: NotRequired[dict[str, float | int | None]]  # measured: ignored errors per 1,000 transactions, total
    counted_per_min: NotRequired[float | None]  # measured: the workload's counted calls per minute (NewOrders)
    clients: NotRequired[int | None]  # measured: its jobs' most client machines
    costs: NotRequired[dict[str, dict[str, float]]]  # measured: per-query costs, median/min/max/n (comparison.costs)
    bound: NotRequired[dict[str, str] | None]  # measured: what ran out, with its evidence
    why: NotRequired[dict[str, Any]]  # a significant Δ%: the costs that differ most from the baseline's
    jobs: NotRequired[list[int]]  # measured: its jobs' ids (the first comparison.grid.CELL_JOBS)
    imported: NotRequired[bool]  # added by the layout
    trust: NotRequired[CellTrust | None]  # added by the layout to suspect and invalid cells


class Mark(TypedDict):
    """The page's mark of one Δ% cell (comparison.significance.mark_of). A published figure's mark has only the
    first eight keys."""

    verdict: str
    text: str
    p_value: float | None
    p_adjusted: float | None
    n: int
    interval: str
    sentence: str
    title: str
    n_text: NotRequired[str]
    # The interval's two figures, where `interval` says it is too noisy to tell (the hover shows them).
    interval_figure: NotRequired[str]
    ci95_pct: NotRequired[list[float | None] | None]
    runs_needed: NotRequired[int | None]
    change_pct: NotRequired[float | None]
    n_base: NotRequired[int]
    n_other: NotRequired[int]


class BesideCell(TypedDict):
    """One measured column against the published figure beside its row (comparison.published.beside_table)."""

    qps: float | None
    per_core: float | None
    ratio: float | None  # measured ÷ published, per core or raw (the row's basis)
    ratio_ci95: list[float] | None
    n: int
    verdict: str | None  # "suspect" or "invalid" where the measured cell is not to be trusted


class BesideRow(TypedDict):
    """The published figure set beside one measured row: on the nearest published spec, at the nearest thread
    count the document has, with each measured column's ratio to it (by column index, as text: JSON keys)."""

    spec: str | None
    threads: int
    published_spec: str
    published_threads: int
    nearest: bool
    published_qps: float | None
    published_per_core: float | None
    per_core: bool
    basis: str  # "per core" or "raw"
    hardware: str
    correction: str
    cells: list[BesideCell]
    by_column: dict[str, BesideCell]
    published_latency_avg_ms: float | None
    published_latency_pct_ms: float | None
    published_latency_pct: float | None
    # The row's threads are the document's ladder scaled down (published_threads is the point it stands for).
    scaled: NotRequired[bool]
    # What differs from the document's run (comparison.differences), and the kinds that make the two unlike.
    differences: NotRequired[list[str]]
    unlike: NotRequired[list[str]]


class CurvePoint(TypedDict):
    x: int
    qps: float | None
    latency_avg_ms: float | None
    latency_pct_ms: float | None
    latency_pct: float | None
    correction: str


class Curve(TypedDict):
    """A published spec's figures at the document's own thread counts, for the charts."""

    spec: str
    points: list[CurvePoint]


class Beside(TypedDict):
    """One published product set beside a measured table (comparison.published.beside_table): its rows, or the
    note saying why it has none; the matched document's keys where one matched."""

    product: str
    key: str
    rows: list[BesideRow]
    notes: list[str]
    columns: list[str]
    column_index: list[int]
    note: str
    curves: list[Curve]
    spec_label: str
    summary: str
    has_per_core: bool
    has_nearest: bool
    has_scaled: NotRequired[bool]
    table_ref: NotRequired[str]
    # Every difference from the document's runs that its rows name, hardware apart (that is in notes), once each.
    differences: NotRequired[list[str]]
    document: NotRequired[str]
    match: NotRequired[tuple[str, str, str, str]]


class ComparisonRow(TypedDict):
    """One row of a comparison table: its keys and one cell per column (None where the column has no figure).
    deltas, marks, beside and besides are the page's (comparison.layout)."""

    spec: str | None
    spec_id: int | None
    threads: int
    concurrency: int
    table_size: int | None  # a published figure's document may not say
    tables: int | None
    cells: list[ComparisonCell | None]
    deltas: NotRequired[list[float | None]]
    marks: NotRequired[list[Mark | None]]
    beside: NotRequired[BesideRow | None]
    besides: NotRequired[list[BesideRow | None]]


class DatasetRef(TypedDict):
    id: int | str  # a published table's is "p<document>"
    name: str


class ScenarioRef(TypedDict):
    id: int
    name: str
    test: str
    size_unit: NotRequired[str]  # what its dataset's size counts (a workload's "warehouses"); rows when absent
    counted: NotRequired[str]  # what its workload's counted calls are called ("NewOrders"); none when absent


class ComparisonGroup(TypedDict):
    """One table of a comparison: a dataset × scenario and its rows. A published table says so and keeps the
    (document, dataset label, scenario label) it comes from."""

    dataset: DatasetRef
    scenario: ScenarioRef
    rows: list[ComparisonRow]
    published: NotRequired[bool]
    key: NotRequired[tuple[str, str, str]]


class Column(TypedDict):
    """A comparison's column: a product, or a product's settings variant, or (by run) either in one run."""

    id: int
    name: str
    variant: NotRequired[str]
    run_id: NotRequired[int]
    target_id: NotRequired[int]  # a product measured on several targets on one row: one column per target


class ComparisonFilters(TypedDict):
    targets: list[int]
    products: list[int]
    runs: list[int]
    campaigns: list[int]
    scenarios: list[int]
    specs: list[int]
    threads: list[int]
    trusted_only: bool
    by_run: bool
    baseline: int | None


class Comparison(TypedDict):
    """What comparison_build returns and the comparison API sends."""

    filters: ComparisonFilters
    cells_left_out: int
    products: list[Column]
    baseline_product: int | None
    metrics: list[str]
    job_count: int
    groups: list[ComparisonGroup]
    curves: NotRequired[list[dict[str, Any]]]  # the API's: peaks, knees and SLA points (comparison.curves)


class PriceCell(TypedDict):
    best: float | None  # the column's best QPS on this spec
    per_core: float | None
    per_price: float | None


class PriceRow(TypedDict):
    """Per spec of a table: each column's best QPS per core and per unit of price (comparison.layout)."""

    spec: str
    cores: int | None
    price: Decimal | None
    currency: str
    cells: list[PriceCell]


class ChartPoint(TypedDict):
    """One point of a comparison chart (comparison.layout): x the threads, y the cell's value, its error bar (min–max
    where the cell has repetitions) and n. A measured point also carries its Δ% and, for QPS, the Δ% mark's interval
    and verdict, and an untrusted cell's verdict, reasons and job page; a published point its correction."""

    x: int
    y: float
    yMin: float | None
    yMax: float | None
    n: int
    sd: NotRequired[float | None]
    delta: NotRequired[float | None]
    interval: NotRequired[str | None]
    significance: NotRequired[str | None]
    verdict: NotRequired[str | None]
    reasons: NotRequired[list[str] | None]
    url: NotRequired[str | None]
    correction: NotRequired[str]


class ChartLine(TypedDict):
    """One line of a chart: a column on one spec, or (published) a published product on one of its specs."""

    label: str
    data: list[ChartPoint]
    published: NotRequired[bool]
    spec: NotRequired[str]


class SpecBarSet(TypedDict):
    label: str
    data: list[float | None]


class SpecBars(TypedDict):
    """The bar chart of a table over several specs: per spec, each column's best QPS."""

    labels: list[str]
    datasets: list[SpecBarSet]


class Charts(TypedDict):
    """A comparison table's charts (comparison.layout), as the page's compare.js draws them."""

    qps_lines: list[ChartLine]
    latency_lines: list[ChartLine]
    spec_bars: SpecBars | None
    latency_label: str
    qps_label: str  # a host test's unit (events/s, MiB/s), else "QPS"
    threads: list[int]
    baseline: str
    error_bars: str
    log_y: bool
    caption: str


class TablePart(TypedDict):
    """One of the printed report's tables of a comparison table: one metric group (comparison.html.table_parts)."""

    group: str  # "qps", "tps" or "latency"
    label: str
    last: bool
    body_html: str


class TrustReason(TypedDict):
    """One reason in the untrusted-cells banner (comparison.trust): its level, words, how many jobs, a job to read."""

    level: str  # "invalid" or "suspect"
    text: str
    jobs: int
    url: str


class EnvironmentRow(TypedDict):
    """A compared target's server as its latest job saw it (comparison.report)."""

    target: str
    product: str
    spec: str | None
    version: str
    settings: list[tuple[str, str]]


class HostRow(TypedDict):
    """A client host that ran compared jobs: what a shared page shows names it only by its position."""

    hostname: str
    jobs: int
    sysbench: str | None
    cores: int | None
    memory_gb: float | None


class MethodRow(TypedDict):
    """One exact command per scenario and product."""

    scenario: str
    test: str
    target: str
    product: str
    command: str
    imported: bool
    threads: str


class ReportSections(TypedDict):
    """The printed report's environment, client hosts and method (comparison.report, comparison.redaction)."""

    environment: list[EnvironmentRow]
    hosts: list[HostRow]
    method: list[MethodRow]
    order: NotRequired[list[str]]  # per campaign: the order its jobs ran in, and whether it shared on purpose


class ComparisonTable(TypedDict):
    """One table of the comparison page (comparison.layout): a group's rows and what the page, its charts, its
    conclusion and its exports say of them. The keys after `published` are added one by one as the layout works
    them out (the conclusion reads the first ones); header and parts only by the printed report."""

    dataset: DatasetRef
    scenario: ScenarioRef
    rows: list[ComparisonRow]
    spec_order: list[str | None]
    many_sizes: bool
    has_tps: bool
    has_avg: bool
    has_pct: bool
    pct: float | None
    pct_label: str
    has_imported: bool
    published: bool
    has_counted: NotRequired[bool]  # a workload's counted calls per minute (NewOrders) in some cell
    has_errors: NotRequired[bool]  # ignored errors in some cell, or a workload that declares them
    size_label: NotRequired[str]  # the size column's heading: "Table size", or the workload's "Warehouses"
    many_specs: NotRequired[bool]
    conclusion: NotRequired[str]
    price_rows: NotRequired[list[PriceRow]]
    has_price: NotRequired[bool]
    price_html: NotRequired[str]
    id: NotRequired[str]
    shape: NotRequired[str]
    title: NotRequired[str]
    besides: NotRequired[list[Beside]]  # the published products set beside it (published.beside_table)
    beside: NotRequired[Beside | None]
    published_avg: NotRequired[list[int]]  # positions in besides whose average latency goes beside the measured
    published_avg_names: NotRequired[list[str]]
    published_avg_n: NotRequired[int]
    published_pct: NotRequired[list[int]]
    published_pct_names: NotRequired[list[str]]
    published_pct_n: NotRequired[int]
    charts: NotRequired[Charts]
    explain: NotRequired[list[str]]  # peaks and knees, what ran out, why a significant Δ% (comparison.costs)
    body_html: NotRequired[str]
    header: NotRequired[list[str]]
    parts: NotRequired[list[TablePart]]


class LayoutTrust(TypedDict):
    """The untrusted-cells banner above the comparison: job and cell counts and the reasons (comparison.trust)."""

    invalid: int
    suspect: int
    untrusted: int
    jobs: int
    cells: int
    reasons: list[TrustReason]
    included: bool  # whether the conclusions count the untrusted cells


class ComparisonLayout(TypedDict):
    """The whole comparison page's data (comparison.layout.comparison_layout), read by the views, the exports and
    the report. Cached as JSON without its selection, which the cached copy gets back on the way out."""

    products: list[Column]
    names: list[str]
    baseline: str | None
    tables: list[ComparisonTable]
    job_count: int
    cells_left_out: int
    selection: Selection
    has_imported: bool
    has_published: bool
    has_beside: bool
    published_left_out: list[str]
    has_marks: bool
    trust: LayoutTrust
    tested_deltas: int


def comparison_row(*, spec: str | None, spec_id: int | None, threads: int, table_size: int | None,
                   tables: int | None, width: int) -> ComparisonRow:
    """A new row with these keys and `width` empty cells; its concurrency is its threads."""
    return {"spec": spec, "spec_id": spec_id, "threads": threads, "concurrency": threads, "table_size": table_size,
            "tables": tables, "cells": [None] * width}
