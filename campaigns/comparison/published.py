"""Published figures from the seed documents: as extra columns and tables shaped like the measured ones, and
one published product set beside each measured table, per core where the hardware allows, with its ratios."""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, TypedDict

from campaigns.comparison.deltas import delta_pct
from campaigns.comparison.differences import Side, differences, unlike_words
from campaigns.comparison.formatting import fmt_ratio, is_number
from campaigns.comparison.rows import (
    METRICS,
    Beside,
    BesideCell,
    BesideRow,
    Column,
    ComparisonCell,
    ComparisonGroup,
    ComparisonRow,
    ComparisonTable,
    Curve,
    CurvePoint,
    MetricStats,
    comparison_row,
)
from campaigns.comparison.selection import Selection
from campaigns.models import InstanceSpec, PublishedResult
from campaigns.seeds.matching import (
    PublishedKey,
    SpecShape,
    hardware_comparison,
    nearest_spec,
    nearest_threads,
    published_cores,
    published_key,
)
from campaigns.seeds.templates import TEMPLATES, TemplateDef


def _stat(value: float | None) -> MetricStats:
    return {"value": value, "statistic": "published", "median": value, "n": 0 if value is None else 1,
            "mean": value, "stdev": None, "cv_pct": None, "min": value, "max": value}


def published_groups(documents: Sequence[str], spec_ids: Sequence[int]) -> tuple[list[Column], list[ComparisonGroup]]:
    """The published figures of seed documents, shaped like comparison_build's groups (one query)."""
    rows = PublishedResult.objects.filter(document__in=documents)
    if spec_ids:
        rows = rows.filter(spec_id__in=spec_ids)
    products: dict[int, Column] = {}
    # Plain values, not model rows: a document has a thousand figures and building their instances was most of
    # the page's time.
    raw = list(rows.order_by("document", "id").values(
        "document", "table_ref", "dataset_label", "scenario_label", "spec_id", "threads", "table_size", "tables",
        "product_id", "product__name", "spec__label", "spec__cpu_cores", "spec__memory_gb", "latency_pct",
        "correction", "qps", "tps", "latency_avg_ms", "latency_pct_ms"))
    for r in raw:
        products.setdefault(r["product_id"], {"id": r["product_id"], "name": r["product__name"]})
    column = {pid: i for i, pid in enumerate(products)}
    groups: dict[tuple[str, str, str, str], ComparisonGroup] = {}
    table_rows: dict[tuple[Any, ...], ComparisonRow] = {}
    # Each row's place (spec's size, then threads), by its key: kept out of the JSON-ready rows.
    row_order: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    group_rows: dict[tuple[str, str, str, str], list[tuple[Any, ...]]] = {}
    for r in raw:
        key = (r["document"], r["table_ref"], r["dataset_label"], r["scenario_label"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "dataset": {"id": f"p{r['document']}", "name": r["dataset_label"] or r["table_ref"]},
                "scenario": {"id": len(groups), "name": r["scenario_label"],
                             "test": f"published in seed {r['document']}: {r['table_ref']}"},
                "rows": [], "published": True, "key": (r["document"], r["dataset_label"], r["scenario_label"]),
            }
        row_key = (*key, r["spec_id"], r["threads"], r["table_size"], r["tables"])
        row = table_rows.get(row_key)
        if row is None:
            row = table_rows[row_key] = comparison_row(
                spec=r["spec__label"], spec_id=r["spec_id"], threads=r["threads"], table_size=r["table_size"],
                tables=r["tables"], width=len(products))
            row_order[row_key] = (r["spec__cpu_cores"], r["spec__memory_gb"], r["spec__label"], r["threads"])
            group_rows.setdefault(key, []).append(row_key)
        row["cells"][column[r["product_id"]]] = {
            "product_id": r["product_id"], "n": 1, "latency_pct": r["latency_pct"], "published": True,
            "correction": r["correction"], "qps": _stat(r["qps"]), "tps": _stat(r["tps"]),
            "latency_avg_ms": _stat(r["latency_avg_ms"]), "latency_pct_ms": _stat(r["latency_pct_ms"]),
        }
    for key, group in groups.items():
        group["rows"] = [table_rows[row_key] for row_key in sorted(group_rows[key], key=row_order.__getitem__)]
    return list(products.values()), list(groups.values())


def merge_published(measured_products: list[Column], measured_groups: list[ComparisonGroup], products: list[Column],
                    groups: list[ComparisonGroup]) -> tuple[list[Column], list[ComparisonGroup]]:
    """The columns and tables of a comparison with published products added as further columns (each measured row
    gets an empty cell for them) and published tables after the measured ones, Δ% against their first column."""
    known = {p["id"]: i for i, p in enumerate(measured_products)}
    extra = [p for p in products if p["id"] not in known]
    width = len(measured_products) + len(extra)
    for group in measured_groups:
        for row in group["rows"]:
            row["cells"] += [None] * len(extra)
    columns = measured_products + extra
    order = {p["id"]: i for i, p in enumerate(columns)}
    for group in groups:
        for row in group["rows"]:
            cells: list[ComparisonCell | None] = [None] * width
            for cell in row["cells"]:
                if cell is not None:
                    cells[order[cell["product_id"]]] = cell
            row["cells"] = cells
            base = cells[0]
            for cell in cells:
                if cell is not None:
                    cell["delta_pct"] = {m: None if cell is base or base is None
                                         else delta_pct(cell[m]["value"], base[m]["value"])
                                         for m in METRICS}
    return columns, measured_groups + groups


# ---------------------------------------------------------------- published products beside the measured tables


def beside_rows(selection: Selection) -> list[PublishedResult]:
    """The published figures to set beside measured tables (one query; none when not asked): the chosen
    published product's (on the chosen spec, if any), else every product's of the chosen seed documents."""
    if selection.published_product:
        rows = PublishedResult.objects.filter(product_id=selection.published_product[0])
        if selection.published_spec:
            rows = rows.filter(spec_id=selection.published_spec[0])
    elif selection.published:
        rows = PublishedResult.objects.filter(document__in=selection.published)
    else:
        return []
    return list(rows.select_related("product", "spec").order_by("document", "id"))


def by_product(published: Sequence[PublishedResult]) -> list[tuple[str, list[PublishedResult]]]:
    """The figures per published product, in the order the documents print them (their rows' order)."""
    out: dict[int, tuple[str, list[PublishedResult]]] = {}
    for r in published:
        out.setdefault(r.product_id, (r.product.name, []))[1].append(r)
    return list(out.values())


def _spec_shape(spec: InstanceSpec | None) -> SpecShape | None:
    if spec is None:
        return None
    return SpecShape(spec.pk, spec.label, spec.cpu_cores, spec.memory_gb)


def _per_core(qps: float | None, cores: int | None) -> float | None:
    return qps / cores if is_number(qps) and cores else None


def _ratio(value: float | None, reference: float | None) -> float | None:
    return value / reference if is_number(value) and is_number(reference) and reference else None


def _ratio_interval(ratio: float | None, cell: ComparisonCell | None) -> list[float] | None:
    """The ratio's 95% interval from the measured cell's interval of its geometric mean (the published figure is
    one printed number, without spread); None for a single run."""
    interval = cell.get("qps_ci95") if cell is not None else None
    value = cell["qps"]["value"] if cell is not None else None
    if ratio is None or not interval or not is_number(value) or not value or cell is None or cell["qps"]["n"] < 2:
        return None
    if interval[0] is None or interval[1] is None:  # an interval too wide to write down
        return None
    return [round(ratio * interval[0] / value, 4), round(ratio * interval[1] / value, 4)]


def _curve(shape: SpecShape, figures: dict[int, PublishedResult]) -> Curve:
    """A published spec's figures at their own thread counts, for the charts."""
    points: list[CurvePoint] = []
    for threads in sorted(figures):
        r = figures[threads]
        points.append({"x": threads, "qps": r.qps, "latency_avg_ms": r.latency_avg_ms,
                       "latency_pct_ms": r.latency_pct_ms, "latency_pct": r.latency_pct,
                       "correction": r.correction})
    return {"spec": shape.label, "points": points}


def scaled_ladder(measured: Sequence[int], published: Sequence[int]) -> dict[int, int]:
    """Measured thread count → the document's, where the measured ladder is the document's scaled down whole to
    fit a small server (campaigns.seeds.services.threads_fitted: 50 … 1,000 → 3, 6, 13, 32, 64): each point
    stands beside the document's point it stands for, not the nearest one (all of them 50). {} otherwise."""
    ours, theirs = sorted(set(measured)), sorted(set(published))
    if len(ours) < 2 or len(ours) != len(theirs) or ours == theirs or not theirs[-1]:
        return {}
    factor = ours[-1] / theirs[-1]
    if sorted({max(1, round(t * factor)) for t in theirs}) != ours:
        return {}
    return dict(zip(ours, theirs, strict=True))


def _document_run(key: PublishedKey) -> tuple[TemplateDef | None, float | None]:
    """The template that reproduces a published table, and the document's duration for it (None if no template
    says)."""
    for template in TEMPLATES:
        for scenario in template.scenarios:
            if published_key(scenario.name) == key:
                return template, float(scenario.time_s)
    return None, None


def _document_clients(template: TemplateDef | None, threads: int) -> int | None:
    """The client machines the document used at `threads` (its template's rule, as Campaign.clients_for)."""
    if template is None:
        return None
    if not template.clients_per_threads:
        return template.clients_min
    per = template.clients_per_threads
    return template.clients_min + max(0, math.ceil((threads - per) / per))


def _measured_side(row: ComparisonRow, columns: Sequence[int], memory_gb: float | None) -> Side:
    cells = [c for i in columns if (c := row["cells"][i]) is not None]
    times = [t for c in cells if (t := c.get("time_s"))]
    clients = [n for c in cells if (n := c.get("clients"))]
    hits = [float(h) for c in cells if (h := ((c.get("costs") or {}).get("bp_hit_pct") or {}).get("value")) is not None]
    return Side(tables=row["tables"], table_size=row["table_size"], threads=row["threads"],
                clients=max(clients) if clients else None, time_s=float(max(times)) if times else None,
                memory_gb=memory_gb, hit_pct=min(hits) if hits else None)


def _measured_columns(table: ComparisonTable) -> tuple[list[int], dict[int | None, list[int]]]:
    """The table's measured products' column indexes (columns merged in by `published=` are not measured), and the
    thread counts measured per spec."""
    columns = [i for i in range(len(table["rows"][0]["cells"]) if table["rows"] else 0) if any(
        (cell := row["cells"][i]) is not None and not cell.get("published") for row in table["rows"])]
    measured_threads: dict[int | None, list[int]] = defaultdict(list)
    for row in table["rows"]:
        if any(row["cells"][i] is not None for i in columns):
            measured_threads[row["spec_id"]].append(row["threads"])
    return columns, measured_threads


def _published_figures(matching: Sequence[PublishedResult],
                       beside: Beside) -> tuple[dict[int, dict[int, PublishedResult]], dict[int, SpecShape]]:
    """The matching published figures per spec and concurrency (the first of each), each spec's shape, and the
    document and table they come from, noted on the beside."""
    figures: dict[int, dict[int, PublishedResult]] = defaultdict(dict)
    shapes: dict[int, SpecShape] = {}
    for r in matching:
        figures[r.spec_id].setdefault(r.threads, r)
        shapes.setdefault(r.spec_id, SpecShape(r.spec_id, r.spec.label, r.spec.cpu_cores, r.spec.memory_gb))
    first = matching[0]
    beside["table_ref"], beside["document"] = first.table_ref, first.document
    beside["match"] = (first.document, first.table_ref, first.dataset_label, first.scenario_label)
    return figures, shapes


def beside_table(table: ComparisonTable, names: Sequence[str], specs: dict[int, InstanceSpec],
                 published: Sequence[PublishedResult], *, product_name: str, spec_chosen: bool) -> Beside:
    """A measured table's rows set beside the matching published table of one published product.

    Per row: the published figure on the spec nearest the measured one (or the chosen spec) at the same
    concurrency, else the nearest the document has; per core where both core counts are known; and the ratio of
    each measured product to it, with its 95% interval where the measured cell has repetitions. `curves` are the
    published specs' figures at their own concurrency, for the charts. `note` says why nothing is shown where
    nothing matches.
    """
    scenario = table["scenario"]["name"]
    key: PublishedKey | None = published_key(scenario)
    beside: Beside = {"product": product_name, "key": key.describe() if key else "", "rows": [],
                              "notes": [], "columns": [], "column_index": [], "note": "", "curves": [],
                              "spec_label": "", "summary": "", "has_per_core": False, "has_nearest": False}
    if key is None:
        beside["note"] = (f"{scenario} is not a scenario of a seed template, so no published table matches it; "
                          f"{product_name}'s figures are not shown here.")
        return beside
    matching = [r for r in published if key.matches(document=r.document, dataset_label=r.dataset_label,
                                                    scenario_label=r.scenario_label)]
    if not matching:
        on = f" on {published[0].spec.label}" if spec_chosen and published else ""
        beside["note"] = f"{product_name} has no published figures{on} for {key.describe()}."
        return beside
    figures, shapes = _published_figures(matching, beside)
    columns, measured_threads = _measured_columns(table)
    beside["columns"] = [names[i] for i in columns]
    beside["column_index"] = columns
    notes: dict[str, None] = {}
    used: dict[int, SpecShape] = {}
    document_template, document_time_s = _document_run(key)
    ladders: dict[tuple[int | None, int], dict[int, int]] = {}
    for row in table["rows"]:
        if not any(row["cells"][i] is not None for i in columns):
            continue
        measured_spec = specs.get(row["spec_id"]) if row["spec_id"] is not None else None
        shape = nearest_spec(_spec_shape(measured_spec), list(shapes.values()))
        assert shape is not None  # `matching` is not empty
        used[shape.id] = shape
        ladder_key = (row["spec_id"], shape.id)
        if ladder_key not in ladders:
            ladders[ladder_key] = scaled_ladder(measured_threads[row["spec_id"]], list(figures[shape.id]))
        scaled = ladders[ladder_key].get(row["threads"])
        threads = scaled if scaled is not None else nearest_threads(row["threads"], figures[shape.id])
        assert threads is not None  # every published shape has figures
        entry = _beside_row(row, columns, shape=shape, figure=figures[shape.id][threads], threads=threads,
                            scaled=scaled, measured_spec=measured_spec,
                            document=(document_template, document_time_s))
        notes[entry["hardware"]] = None
        row.setdefault("besides", []).append(entry)
        if row.get("beside") is None:
            row["beside"] = entry
        beside["rows"].append(entry)
    return _beside_finish(beside, curves=[_curve(shape, figures[shape.id]) for shape in used.values()],
                          used=list(used.values()), notes=list(notes))


def _beside_finish(beside: Beside, *, curves: list[Any], used: list[SpecShape], notes: list[str]) -> Beside:
    """The table-wide parts of a beside: its curves, spec label, notes, differences, flags and summary."""
    beside["curves"] = curves
    beside["spec_label"] = used[0].label if len(used) == 1 else ""
    beside["notes"] = notes
    beside["differences"] = list(dict.fromkeys(item for r in beside["rows"] for item in r.get("differences") or []
                                               if item not in notes))
    beside["has_per_core"] = any(r["per_core"] for r in beside["rows"])
    beside["has_nearest"] = any(r["nearest"] for r in beside["rows"])
    beside["has_scaled"] = any(r.get("scaled") for r in beside["rows"])
    beside["summary"] = _beside_summary(beside)
    return beside


def _beside_row(row: Any, columns: list[int], *, shape: SpecShape, figure: PublishedResult, threads: int,
                scaled: int | None, measured_spec: InstanceSpec | None, document: tuple[Any, float | None]) -> BesideRow:
    """One measured row beside its published figure: per column the measured QPS, per core where both core counts
    are known, and the ratio with its interval; and what differs between the two runs (comparison.differences)."""
    cores = published_cores(shape.label, shape.cpu_cores)
    measured_cores = measured_spec.cpu_cores if measured_spec is not None else None
    hardware = hardware_comparison(measured_label=row["spec"], measured_cores=measured_cores,
                                   published_label=shape.label, published_cores=cores)
    published_per_core = _per_core(figure.qps, cores) if hardware.per_core else None
    # Keyed by the column's index as text: the layout is cached as JSON, whose keys are strings.
    by_column: dict[str, BesideCell] = {}
    for i in columns:
        cell = row["cells"][i]
        qps = cell["qps"]["value"] if cell is not None else None
        per_core = _per_core(qps, measured_cores) if hardware.per_core else None
        ratio = _ratio(per_core, published_per_core) if hardware.per_core else _ratio(qps, figure.qps)
        ratio = None if ratio is None else round(ratio, 4)
        by_column[str(i)] = {"qps": qps, "per_core": None if per_core is None else round(per_core, 2),
                             "ratio": ratio, "ratio_ci95": _ratio_interval(ratio, cell),
                             "n": cell["qps"]["n"] if cell is not None else 0,
                             "verdict": cell.get("verdict") if cell is not None
                             and cell.get("verdict") in ("suspect", "invalid") else None}
    entry: BesideRow = {
        "spec": row["spec"], "threads": row["threads"], "published_spec": shape.label,
        "published_threads": threads, "nearest": threads != row["threads"] and scaled is None,
        "scaled": scaled is not None and threads != row["threads"],
        "published_qps": figure.qps, "published_per_core": published_per_core, "per_core": hardware.per_core,
        "basis": "per core" if hardware.per_core else "raw", "hardware": hardware.note,
        "correction": figure.correction, "cells": [by_column[str(i)] for i in columns], "by_column": by_column,
        "published_latency_avg_ms": figure.latency_avg_ms, "published_latency_pct_ms": figure.latency_pct_ms,
        "published_latency_pct": figure.latency_pct,
    }
    template, time_s = document
    found = differences(
        measured=_measured_side(row, columns, measured_spec.memory_gb if measured_spec is not None else None),
        published=Side(tables=figure.tables, table_size=figure.table_size, threads=threads,
                       clients=_document_clients(template, threads), time_s=time_s, memory_gb=shape.memory_gb),
        hardware=hardware.note)
    entry["differences"], entry["unlike"] = list(found.items), list(found.unlike)
    return entry


def _beside_summary(beside: Beside) -> str:
    """Each measured product's ratio to the published figures, on average (geometric mean) and at the extremes, from
    the rows that are like with like (comparison.differences); where none is, why no ratio is worth a sentence."""
    clauses = []
    for index, name in enumerate(beside["columns"]):
        every = [(ratio, row) for row in beside["rows"] if (ratio := row["cells"][index]["ratio"])]
        ratios = [(ratio, row) for ratio, row in every if not row.get("unlike")]
        unlike = {kind for _, row in every for kind in row.get("unlike") or []}
        if every and not ratios:
            clauses.append(f"{name}'s figures are not set against the published {beside['product']}'s: this run "
                           f"differs from the document's in {unlike_words(unlike)} (each row says how), so a ratio "
                           "would compare unlike runs")
            continue
        if not ratios:
            continue
        bases = {row["basis"] for _, row in ratios}
        basis = "per core" if bases == {"per core"} else "raw" if bases == {"raw"} else "per core or raw"
        mean = math.exp(statistics.fmean(math.log(r) for r, _ in ratios))
        text = f"{name} reaches {fmt_ratio(mean)} the published {beside['product']}'s QPS ({basis})"
        if len(ratios) > 1:
            low, high = min(ratios, key=lambda item: item[0]), max(ratios, key=lambda item: item[0])
            text += (f" on average, from {fmt_ratio(low[0])} at {low[1]['threads']:,} threads to "
                     f"{fmt_ratio(high[0])} at {high[1]['threads']:,}")
        if len(ratios) < len(every):
            text += (f" (on the {len(ratios)} of {len(every)} rows like the document's; the others differ in "
                     f"{unlike_words(unlike)})")
        clauses.append(text + ", on different hardware")
    return ("; ".join(clauses) + ".") if clauses else ""


# ---------------------------------------------------------------- links to the published comparison


def template_keys(template_key: str) -> list[PublishedKey]:
    """The published tables a template's scenarios (and so a campaign made from it, which keeps its key)
    reproduce; [] for a campaign of no template."""
    template = next((t for t in TEMPLATES if t.key == template_key), None) if template_key else None
    if template is None:
        return []
    return [k for k in (published_key(s.name) for s in template.scenarios) if k is not None]


def table_keys(tables: Sequence[ComparisonTable]) -> list[PublishedKey]:
    """The published tables the measured tables of a comparison reproduce."""
    return [k for k in (published_key(t["scenario"]["name"]) for t in tables if not t.get("published"))
            if k is not None]


PublishedTableRow = tuple[str, str, str, int, str]


def published_tables() -> list[PublishedTableRow]:
    """Every published row's (document, dataset label, scenario label, product id, product name), in the
    documents' order: what the links below match keys against (one query)."""
    return list(PublishedResult.objects.order_by("document", "id").values_list(
        "document", "dataset_label", "scenario_label", "product_id", "product__name"))


class PublishedProductLink(TypedDict):
    name: str
    query: str  # the comparison's query with this product's published figures beside it


class PublishedLink(TypedDict):
    """A seed document's published figures that a comparison can set beside its tables (published_links)."""

    document: str
    all: str  # the query with every product the document has figures for
    products: list[PublishedProductLink]


def published_links(keys: Sequence[PublishedKey], query: str,
                    rows: Sequence[PublishedTableRow] | None = None) -> list[PublishedLink]:
    """Per seed document of `keys`: a link setting each of its products that has figures for those tables beside
    the measured tables of `query` (a comparison page's query), and one setting all of them, the document's own
    table shape. `rows` (published_tables()) when the caller has them already."""
    if not keys:
        return []
    products: dict[str, dict[int, str]] = defaultdict(dict)
    for document, dataset_label, scenario_label, product_id, name in (
            published_tables() if rows is None else rows):
        if any(k.matches(document=document, dataset_label=dataset_label, scenario_label=scenario_label)
               for k in keys):
            products[document].setdefault(product_id, name)
    out: list[PublishedLink] = []
    for document in dict.fromkeys(k.document for k in keys):
        if not products.get(document):
            continue
        out.append({"document": document, "all": f"{query}&published={document}",
                    "products": [{"name": name, "query": f"{query}&published_product={pid}"}
                                 for pid, name in products[document].items()]})
    return out
