"""The comparison page's data in one call, comparison_layout: per dataset × scenario table its metrics, Δ% and
significance marks, conclusion, chart series, price-performance rows and, on request, the published product
beside it."""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from django.db import connection

from campaigns.cache import cached_value, query_key, results_version
from campaigns.comparison.conclusions import MAX_LINE_SPECS, conclusion
from campaigns.comparison.costs import table_explanations
from campaigns.comparison.curves import comparison_curves
from campaigns.comparison.formatting import pct_label, rows_shape, shape_text, size_heading
from campaigns.comparison.html import price_body_html, table_body_html
from campaigns.comparison.published import (
    beside_rows,
    beside_table,
    by_product,
    merge_published,
    published_groups,
)
from campaigns.comparison.query import comparison_build
from campaigns.comparison.rows import (
    Beside,
    ChartLine,
    ChartPoint,
    Charts,
    Column,
    ComparisonGroup,
    ComparisonLayout,
    ComparisonRow,
    ComparisonTable,
    LatencyMetric,
    Metric,
    PriceCell,
    PriceRow,
    SpecBars,
)
from campaigns.comparison.selection import Selection
from campaigns.comparison.significance import row_marks
from campaigns.comparison.trust import UntrustedCells, untrusted_cells
from campaigns.models import InstanceSpec, JobResult, PublishedResult
from campaigns.seeds.matching import published_key
from campaigns.sysbench.hosttests import HEADLINE_UNITS


def _has(rows: list[ComparisonRow], metric: Metric) -> bool:
    return any(c is not None and c[metric]["value"] is not None for row in rows for c in row["cells"])


def _value(row: ComparisonRow, index: int, metric: Metric) -> float | None:
    """One column's value of a metric on a row; None where the column has no cell or the cell no value."""
    cell = row["cells"][index]
    return None if cell is None else cell[metric]["value"]


def _qps_values(rows: Iterable[ComparisonRow], index: int) -> list[float]:
    """One column's QPS values on these rows, where it has one."""
    return [value for row in rows if (value := _value(row, index, "qps")) is not None]


def _point(row: ComparisonRow, index: int, metric: Metric) -> ChartPoint:
    """One chart point: the cell's value, its min–max as the error bar, n, Δ% against the baseline and, for QPS,
    the Δ% mark's verdict as the table shows it."""
    cell = row["cells"][index]
    assert cell is not None  # a point only where the column has a cell
    stats = cell[metric]
    value = stats["value"]
    assert value is not None  # and only where the cell has a value of this metric
    # An error bar only where there are repetitions: one run (or one printed figure) has no spread to draw.
    repeated = stats["n"] > 1 and not cell.get("published")
    low = stats["min"] if repeated and stats["min"] is not None else None
    high = stats["max"] if repeated and stats["max"] is not None else None
    mark = row["marks"][index - 1] if metric == "qps" and index > 0 and row.get("marks") else None
    trust = cell.get("trust")
    return {"x": row["threads"], "y": value, "yMin": low, "yMax": high, "n": stats["n"],
            "sd": stats["stdev"], "delta": (cell.get("delta_pct") or {}).get(metric),
            "interval": mark["interval"] if mark else None,
            "significance": mark["text"] if mark else None,
            "verdict": cell.get("verdict") if cell.get("verdict") in ("suspect", "invalid") else None,
            "reasons": (trust["reasons"] or None) if trust else None, "url": trust["url"] if trust else None}


def _chart_series(table: ComparisonTable, names: Sequence[str]) -> Charts:
    specs = table["spec_order"]
    lines_qps: list[ChartLine] = []
    lines_latency: list[ChartLine] = []
    latency_metric: LatencyMetric = "latency_pct_ms" if table["has_pct"] else "latency_avg_ms"
    # A table of several sizes (a campaign's sizes per table) draws one line per size: a line through points of
    # different sizes would read as one curve.
    sizes = list(dict.fromkeys((r["tables"], r["table_size"]) for r in table["rows"]))
    unit = table["scenario"].get("size_unit", "")
    if len(specs) <= MAX_LINE_SPECS:
        for index, name in enumerate(names):
            for spec, size in ((spec, size) for spec in specs for size in sizes):
                label = name if len(specs) == 1 else f"{name} — {spec}"
                if len(sizes) > 1 and size[0] and size[1]:
                    label += f" — {shape_text(size[0], size[1], unit or 'rows per table')}"
                rows = [r for r in table["rows"] if r["spec"] == spec and (r["tables"], r["table_size"]) == size
                        and r["cells"][index] is not None]
                qps = [_point(r, index, "qps") for r in rows if _value(r, index, "qps") is not None]
                lat = [_point(r, index, latency_metric) for r in rows if _value(r, index, latency_metric) is not None]
                if qps:
                    lines_qps.append({"label": label, "data": qps})
                if lat:
                    lines_latency.append({"label": label, "data": lat})
    bars: SpecBars | None = None
    if len(specs) > 1:
        bars = {"labels": [s or "—" for s in specs], "datasets": []}
        for index, name in enumerate(names):
            values: list[float | None] = []
            for spec in specs:
                medians = _qps_values((r for r in table["rows"] if r["spec"] == spec), index)
                values.append(max(medians) if medians else None)
            if any(v is not None for v in values):
                bars["datasets"].append({"label": name, "data": values})
    published_qps, published_latency = _published_lines(table, latency_metric)
    threads = sorted({r["threads"] for r in table["rows"]} | {p["x"] for line in published_qps for p in line["data"]})
    repeated = any(p["yMin"] is not None for line in lines_qps + lines_latency for p in line["data"])
    log_y = _far_apart(lines_qps, published_qps)
    return {
        "qps_lines": lines_qps + published_qps, "latency_lines": lines_latency + published_latency,
        "spec_bars": bars,
        "latency_label": f"{table['pct_label']} latency (ms)" if table["has_pct"] else "average latency (ms)",
        # A host test's headline is not queries: its unit (events/s, MiB/s) names the axis and the charts' titles.
        "qps_label": HEADLINE_UNITS.get(table["scenario"]["test"], "QPS"),
        "threads": threads, "baseline": names[0] if names else "",
        "error_bars": "min–max of the repetitions" if repeated else "", "log_y": log_y,
        "caption": _chart_caption(table, repeated=repeated, published=bool(published_qps), log_y=log_y),
    }


def _published_lines(table: ComparisonTable,
                     latency_metric: LatencyMetric) -> tuple[list[ChartLine], list[ChartLine]]:
    """The published products beside a measured table, one line per product and published spec, at the document's
    own thread counts: QPS, and the latency the table shows where the document prints the same one."""
    qps_lines: list[ChartLine] = []
    latency_lines: list[ChartLine] = []
    for beside in table.get("besides") or []:
        for curve in beside["curves"]:
            label = f"{beside['product']} (published{', ' + curve['spec'] if len(beside['curves']) > 1 else ''})"
            qps: list[ChartPoint] = [
                {"x": p["x"], "y": y, "yMin": None, "yMax": None, "n": 1, "correction": p["correction"]}
                for p in curve["points"] if (y := p["qps"]) is not None]
            same_pct = latency_metric == "latency_avg_ms" or all(
                p["latency_pct"] == table["pct"] for p in curve["points"] if p["latency_pct_ms"] is not None)
            latency: list[ChartPoint] = [
                {"x": p["x"], "y": y, "yMin": None, "yMax": None, "n": 1, "correction": p["correction"]}
                for p in curve["points"] if (y := p[latency_metric]) is not None] if same_pct else []
            if qps:
                qps_lines.append({"label": label, "published": True, "spec": curve["spec"], "data": qps})
            if latency:
                latency_lines.append({"label": label, "published": True, "spec": curve["spec"], "data": latency})
    return qps_lines, latency_lines


# Published figures this many times the measured ones (or a tenth of them) put the QPS chart on a log scale, so
# that a quick run on a small machine is not a flat line at the bottom of a cloud instance's curve.
LOG_SCALE_RATIO = 10.0


def _far_apart(measured: list[ChartLine], published: list[ChartLine]) -> bool:
    highs = [max(p["y"] for p in line["data"]) for line in measured if line["data"]]
    others = [max(p["y"] for p in line["data"]) for line in published if line["data"]]
    if not highs or not others or min(highs) <= 0:
        return False
    return max(others) / min(highs) >= LOG_SCALE_RATIO or min(others) / max(highs) <= 1 / LOG_SCALE_RATIO


def _chart_caption(table: ComparisonTable, *, repeated: bool, published: bool, log_y: bool) -> str:
    """What the lines are, under the chart: measured (and its error bars, where it has repetitions) and published."""
    if table["published"]:
        return ("The document's printed figures at their own thread counts (threads on a log scale); one figure "
                "each, so no error bars.")
    parts = ["Solid lines: measured, the geometric mean of the runs" + (
        "; error bars: min–max of the repetitions, where a cell has 2 or more" if repeated else
        "; one run per cell, so no error bars") + "."]
    if published:
        products = ", ".join(b["product"] for b in table["besides"])
        parts.append(f"Dashed lines, triangles: published ({products}), the document's figures at its own thread "
                     "counts on its own hardware; one printed figure each, no error bars.")
    parts.append("Threads on a log scale" + (", QPS too (the published figures are ten times the measured ones "
                                            "or more)." if log_y else "."))
    return " ".join(parts)


def _price_rows(table: ComparisonTable, names: Sequence[str], specs: dict[int, InstanceSpec]) -> list[PriceRow]:
    """Per spec: each product's best QPS, per core and per unit of price where a price is set."""
    rows: list[PriceRow] = []
    for spec_id in dict.fromkeys(r["spec_id"] for r in table["rows"]):
        spec = specs.get(spec_id) if spec_id is not None else None
        cells: list[PriceCell] = []
        for index in range(len(names)):
            medians = _qps_values((r for r in table["rows"] if r["spec_id"] == spec_id), index)
            best = max(medians) if medians else None
            per_core = best / spec.cpu_cores if best is not None and spec and spec.cpu_cores else None
            price = spec.price_per_hour if spec is not None else None
            per_price = best / float(price) if best is not None and price not in (None, Decimal(0)) else None
            cells.append({"best": best, "per_core": per_core, "per_price": per_price})
        rows.append({"spec": spec.label if spec else "—", "cores": spec.cpu_cores if spec else None,
                     "price": spec.price_per_hour if spec else None, "currency": spec.currency if spec else "",
                     "cells": cells})
    return rows


def _besides(table: ComparisonTable, names: Sequence[str], specs: dict[int, InstanceSpec],
             published: Sequence[PublishedResult], selection: Selection) -> list[Beside]:
    """The published products set beside one measured table: the chosen one (with a note where it has no
    figures for the table), else each product of the chosen documents that has figures for it."""
    rows = table["rows"]
    if selection.published_product:
        chosen = by_product(published) or [("The published product", [])]
        product_sets = chosen[:1]
    else:
        product_sets = by_product(published)
    out: list[Beside] = []
    for name, figures in product_sets:
        beside = beside_table(table, names, specs, figures, product_name=name,
                              spec_chosen=bool(selection.published_spec))
        for row in rows:
            if len(row["besides"]) <= len(out):
                row["besides"].append(None)
        if beside["rows"] or selection.published_product:
            out.append(beside)
        else:
            for row in rows:
                row["besides"].pop()
    return out


def _published_latency(table: ComparisonTable) -> None:
    """Which published products go beside the table's latency columns, as the documents print them (average, and
    the percentile where it is the one the table shows): their positions in table["besides"] and names."""
    besides = table.get("besides") or []
    for metric in ("latency_avg_ms", "latency_pct_ms"):
        chosen = []
        for k, beside in enumerate(besides):
            figures = [r for r in beside["rows"] if (r["published_latency_avg_ms"] if metric == "latency_avg_ms"
                                                     else r["published_latency_pct_ms"]) is not None]
            same = metric == "latency_avg_ms" or all(r["published_latency_pct"] == table["pct"] for r in figures)
            has = table["has_avg"] if metric == "latency_avg_ms" else table["has_pct"]
            if figures and same and has:
                chosen.append(k)
        names = [besides[k]["product"] for k in chosen]
        if metric == "latency_avg_ms":
            table["published_avg"], table["published_avg_names"], table["published_avg_n"] = chosen, names, len(chosen)
        else:
            table["published_pct"], table["published_pct_names"], table["published_pct_n"] = chosen, names, len(chosen)


def table_title(dataset: str, scenario: str) -> str:
    """A published table's heading: "<dataset> × <scenario>" as the document labels them, shortened where the
    seed names repeat each other ("seed 001 · full cache" and "seed 001 · full cache · write" → the scenario's
    name alone)."""
    prefix, _, tail = dataset.rpartition(" · ")
    if prefix and tail in scenario:
        return scenario
    if prefix and scenario.startswith(f"{prefix} · "):
        return f"{scenario}, {tail}"
    return f"{dataset} × {scenario}"


def measured_title(scenario: str, shape: str) -> str:
    """A measured table's heading: the scenario's own name and the shape its rows were measured on
    ("read only · 4 × 10,000"). Not the dataset's name: a pasted command or a new scenario reuses whichever
    dataset has its shape, named by whoever made it first, and a seed's dataset names its document's size
    ("10 × 10,000,000") where a quick run measured a scaled one."""
    return f"{scenario} · {shape}" if shape and shape not in scenario else scenario


@dataclass
class _Sources:
    """What a comparison page is made of before its tables: the measured and published columns and groups, the
    counts, the published products that may go beside a measured table, and the documents' tables left out."""

    products: list[Column] = field(default_factory=list)
    groups: list[ComparisonGroup] = field(default_factory=list)
    job_count: int = 0
    cells_left_out: int = 0
    measured_groups: int = 0
    published_beside: list[Any] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _layout_sources(selection: Selection) -> _Sources:
    """The selection's measured groups, with a seed document's tables merged in or named as left out."""
    src = _Sources()
    if selection.measured():
        data = comparison_build(
            target_ids=selection.targets, product_ids=selection.products, run_ids=selection.runs,
            campaign_ids=selection.campaign, scenario_ids=selection.scenarios, spec_ids=selection.specs,
            trusted_only=selection.trusted_only, baseline=selection.baseline[0] if selection.baseline else None,
        )
        src.products, src.groups = data["products"], data["groups"]
        src.job_count, src.cells_left_out = data["job_count"], data["cells_left_out"]
    src.measured_groups = len(src.groups)
    src.published_beside = beside_rows(selection) if src.measured_groups else []
    # Measured tables of a seed's scenarios and the chosen documents' tables they reproduce are one table: the
    # document's products go beside the measured ones, and only the document's other tables follow, named.
    if selection.published:
        document_products, document_groups = published_groups(selection.published, selection.specs)
        keys = [k for k in (published_key(g["scenario"]["name"]) for g in src.groups) if k is not None]
        matched = [any(k.matches(document=g["key"][0], dataset_label=g["key"][1], scenario_label=g["key"][2])
                       for k in keys) for g in document_groups]
        if not selection.published_product and any(matched):
            src.left_out = [table_title(g["dataset"]["name"], g["scenario"]["name"])
                            for g, hit in zip(document_groups, matched, strict=True) if not hit]
        else:
            src.published_beside = src.published_beside if selection.published_product else []
            src.products, src.groups = merge_published(src.products, src.groups, document_products, document_groups)
    return src


def _cells_mark(selection: Selection, src: _Sources) -> tuple[set[Any], dict[str, int], UntrustedCells]:
    """Marks every cell imported or not and with its trust, every row with its deltas and significance marks;
    returns the imported cells' keys, the untrusted cells' counts and the trust reasons."""
    groups, products = src.groups, src.products
    # Which cells hold imported results: one query over the same jobs, keyed like the rows.
    imported = set(
        selection.jobs().filter(result__source=JobResult.Source.IMPORTED)
        .values_list("scenario_id", "target__spec_id", "threads", "table_size", "tables", "target__product_id")
        .distinct()
    ) if src.measured_groups else set()
    untrusted_n = {level: sum(verdicts[level] for g in groups for r in g["rows"] for c in r["cells"]
                              if c is not None and (verdicts := c.get("verdicts")))
                   for level in ("invalid", "suspect")}
    trust: UntrustedCells = (untrusted_cells(selection) if any(untrusted_n.values())
                             else {"reasons": [], "cells": {}})
    for group in groups:
        for row in group["rows"]:
            for cell in row["cells"]:
                if cell is not None:
                    key = (group["scenario"]["id"], row["spec_id"], row["threads"], row["table_size"],
                           row["tables"], cell["product_id"])
                    cell["imported"] = not group.get("published") and key in imported
                    if cell.get("verdict") in ("suspect", "invalid"):
                        cell["trust"] = trust["cells"].get(key)
            row["deltas"] = [
                (other["delta_pct"]["qps"] if (other := row["cells"][i]) is not None and row["cells"][0] is not None
                 else None)
                for i in range(1, len(products))
            ]
            row["marks"] = row_marks(row)
            row["beside"] = None
            row["besides"] = []
    return imported, untrusted_n, trust


def _layout_table(group: ComparisonGroup, *, selection: Selection, src: _Sources, names: list[str],
                  specs: dict[int, Any], sla_ms: float | None) -> ComparisonTable:
    """One table of the page: its rows, conclusion, prices, besides, charts, explanations and pre-rendered body."""
    rows = group["rows"]
    pcts = [c["latency_pct"] for r in rows for c in r["cells"] if c is not None and c["latency_pct"] is not None]
    pct = statistics.mode(pcts) if pcts else None
    table: ComparisonTable = {
        "dataset": group["dataset"], "scenario": group["scenario"], "rows": rows,
        "spec_order": list(dict.fromkeys(r["spec"] for r in rows)),
        "many_sizes": len({(r["tables"], r["table_size"]) for r in rows}) > 1,
        "has_tps": _has(rows, "tps"), "has_avg": _has(rows, "latency_avg_ms"),
        "has_pct": _has(rows, "latency_pct_ms"), "pct": pct, "pct_label": pct_label(pct),
        "has_imported": any(c is not None and c.get("imported") for r in rows for c in r["cells"]),
        "published": bool(group.get("published")),
    }
    table["many_specs"] = len(table["spec_order"]) > 1
    table["conclusion"] = conclusion(table, names, include_untrusted=selection.untrusted)
    table["price_rows"] = _price_rows(table, names, specs)
    table["has_price"] = any(r["price"] is not None for r in table["price_rows"])
    table["price_html"] = price_body_html(table)
    table["id"] = f"t{group['dataset']['id']}-{group['scenario']['id']}"
    unit = group["scenario"].get("size_unit", "")
    table["shape"] = rows_shape(rows, unit)
    table["size_label"] = size_heading(unit)
    measured = [c for r in rows for c in r["cells"] if c is not None and not c.get("published")]
    table["has_counted"] = any(c.get("counted_per_min") is not None for c in measured)
    table["has_errors"] = any((c.get("errors") or {}).get("total") or (c.get("errors") or {}).get("expected_pct")
                              for c in measured)
    table["title"] = (table_title(group["dataset"]["name"], group["scenario"]["name"]) if table["published"]
                      else measured_title(group["scenario"]["name"], table["shape"]))
    table["besides"] = (_besides(table, names, specs, src.published_beside, selection) if not table["published"]
                        else [])
    # The first published product beside the table, or the note saying why none is (the exports' column).
    table["beside"] = table["besides"][0] if table["besides"] else None
    table["besides"] = [b for b in table["besides"] if b["rows"]]
    _published_latency(table)
    table["charts"] = _chart_series(table, names)
    plain_rows = cast(list[dict[str, Any]], rows)
    curved = {"products": src.products, "groups": [{"rows": plain_rows, "scenario": group["scenario"]}]}
    table["explain"] = [] if table["published"] else table_explanations(
        plain_rows, names, comparison_curves(curved, sla_ms=sla_ms))
    table["body_html"] = table_body_html(table, src.products)
    return table


def comparison_layout(selection: Selection) -> ComparisonLayout:
    """The whole comparison page's data: products, one table per dataset × scenario, conclusions, charts."""
    src = _layout_sources(selection)
    products, groups = src.products, src.groups
    names = [p["name"] for p in products]
    sla_ms = selection.latency_limit() if groups else None
    imported, untrusted_n, trust = _cells_mark(selection, src)
    spec_ids = {r["spec_id"] for g in groups for r in g["rows"] if r["spec_id"] is not None}
    specs = InstanceSpec.objects.in_bulk(spec_ids) if spec_ids else {}
    tested = sum(1 for g in groups for r in g["rows"] for m in r.get("marks") or []
                 if m is not None and m["p_value"] is not None)
    tables = [_layout_table(group, selection=selection, src=src, names=names, specs=specs, sla_ms=sla_ms)
              for group in groups]
    return {"products": products, "names": names, "baseline": names[0] if names else None, "tables": tables,
            "job_count": src.job_count, "cells_left_out": src.cells_left_out, "selection": selection,
            "has_imported": bool(imported),
            "has_published": any(t["published"] for t in tables),
            "has_beside": any(t["besides"] for t in tables),
            "published_left_out": src.left_out,
            "has_marks": any(m is not None for t in tables for r in t["rows"] for m in r.get("marks") or []),
            "trust": {"invalid": untrusted_n["invalid"], "suspect": untrusted_n["suspect"],
                      "untrusted": untrusted_n["invalid"] + untrusted_n["suspect"], "jobs": src.job_count,
                      "cells": sum(1 for t in tables for r in t["rows"] for c in r["cells"]
                                   if c is not None and c.get("verdict") in ("suspect", "invalid")),
                      "reasons": trust["reasons"], "included": selection.untrusted},
            "tested_deltas": tested}


# Bumped whenever comparison_layout's output changes shape, so that a deployment never reads an older layout.
LAYOUT_FORMAT = 9


def comparison_layout_cached(selection: Selection) -> ComparisonLayout:
    """comparison_layout, kept in the cache under the results version, as the comparison API keeps its answers
    (campaigns.cache): any new result, closed or judged job, published figure or renamed product, spec, target,
    scenario or dataset changes the version, so a cached layout is always the current one. Not inside a
    transaction: its own uncommitted writes are visible to it but bump the version only once committed."""
    version = None if connection.in_atomic_block else results_version()
    key = query_key("comparison-layout", LAYOUT_FORMAT, repr(selection), version) if version is not None else None
    # The selection (a dataclass, not JSON) is the key's own input: stored without it, put back on the way out.
    stored = cast(ComparisonLayout, cached_value(
        key, lambda: {k: v for k, v in comparison_layout(selection).items() if k != "selection"}))
    return {**stored, "selection": selection}
