"""The comparison page laid out as the seed white papers do, with conclusions written from the numbers.

It builds on campaigns.api.comparison_query.comparison_build (one grouped query: the median over
repetitions of each cell) and adds, per dataset × scenario table: which metrics were measured, Δ%
columns, one conclusion line, chart series and price-performance; then the exports (CSV, Markdown)
and the white-paper report's environment and method. Everything here is a constant number of
queries, whatever the number of jobs.
"""
from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from django.db.models import Count, Max, Q, QuerySet
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from campaigns.api.comparison_query import comparison_build
from campaigns.models import ClientHost, InstanceSpec, Job, JobClient, JobResult, PublishedResult

# Differences smaller than this (or than twice the cells' own coefficient of variation, when
# repetitions give one) are called noise.
NOISE_PCT = 5.0
# Beyond this many specs a table gets grouped bars per spec instead of one line per product and spec.
MAX_LINE_SPECS = 4


@dataclass
class Selection:
    """What the user chose to compare (ids); empty lists mean "no condition"."""

    targets: list[int] = field(default_factory=list)
    products: list[int] = field(default_factory=list)
    campaign: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    scenarios: list[int] = field(default_factory=list)
    specs: list[int] = field(default_factory=list)
    published: list[str] = field(default_factory=list)  # seed documents whose published figures to show

    def measured(self) -> bool:
        return bool(self.targets or self.products or self.campaign or self.runs or self.scenarios)

    def jobs(self) -> QuerySet[Job]:
        """The succeeded jobs with results that comparison_build aggregates, under the same conditions."""
        condition = Q(status=Job.Status.SUCCEEDED, result__isnull=False)
        for ids, lookup in ((self.targets, "target_id__in"), (self.products, "target__product_id__in"),
                            (self.runs, "run_id__in"), (self.campaign, "run__campaign_id__in"),
                            (self.scenarios, "scenario_id__in"), (self.specs, "target__spec_id__in")):
            if ids:
                condition &= Q(**{lookup: ids})
        return Job.objects.filter(condition)

    def query_string(self) -> str:
        parts = [f"{name}={quote(str(i))}" for name, ids in self.__dict__.items() for i in ids]
        return "&".join(parts)


# ---------------------------------------------------------------- formatting


def is_number(value: object) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and math.isfinite(value)


def fmt_number(value: float | None) -> str:
    """QPS-like figures: whole numbers with separators from 100 up, two decimals below."""
    if not is_number(value):
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def fmt_ms(value: float | None) -> str:
    return f"{value:,.2f}" if is_number(value) else "—"


def fmt_delta(value: float | None) -> str:
    return f"{value:+.1f}%" if is_number(value) else "—"


def pct_label(pct: float | None) -> str:
    if pct is None:
        return "pct"
    return f"p{pct:g}"


# ---------------------------------------------------------------- conclusions


def _where(row: dict[str, Any], many_specs: bool, many_sizes: bool) -> str:
    parts = []
    if many_specs and row["spec"]:
        parts.append(row["spec"])
    parts.append(f"{row['threads']:,} thread{'s' if row['threads'] != 1 else ''}")
    if many_sizes:
        parts.append(f"{row['tables']} × {row['table_size']:,} rows")
    return ", ".join(parts)


def _row_noise(a: dict[str, Any], b: dict[str, Any]) -> float:
    cvs = [c["qps"]["cv_pct"] for c in (a, b) if c["qps"]["n"] >= 2 and c["qps"]["cv_pct"] is not None]
    return max([NOISE_PCT, *(2 * cv for cv in cvs)])


def _pair_clause(table: dict[str, Any], base: int, other: int, names: Sequence[str]) -> str | None:
    """Who is faster between two products, by how much on average and at the extremes."""
    many_specs, many_sizes = table["many_specs"], table["many_sizes"]
    pairs = []
    for row in table["rows"]:
        a, b = row["cells"][base], row["cells"][other]
        if a is None or b is None or not a["qps"]["median"] or not b["qps"]["median"]:
            continue
        pairs.append((row, a["qps"]["median"], b["qps"]["median"], _row_noise(a, b)))
    if not pairs:
        return None
    a_name, b_name = names[base], names[other]
    ratios = [b_q / a_q for _, a_q, b_q, _ in pairs]
    # The geometric mean of the ratios is symmetric: "B is 25% faster" is "A is 20% slower".
    mean_ratio = math.exp(statistics.fmean(math.log(r) for r in ratios))
    leader_is_b = mean_ratio >= 1
    leader, follower = (b_name, a_name) if leader_is_b else (a_name, b_name)
    lead = [(row, (r if leader_is_b else 1 / r) * 100 - 100, noise) for (row, _, _, noise), r in zip(pairs, ratios,
                                                                                                     strict=True)]
    mean_lead = (mean_ratio if leader_is_b else 1 / mean_ratio) * 100 - 100
    within = sum(1 for _, d, noise in lead if abs(d) < noise)
    noise_floor = max(noise for _, _, noise in lead)
    if within == len(lead):
        return (f"{a_name} and {b_name} are within noise of each other (±{noise_floor:.0f}%) in all {len(lead)} "
                f"row{'s' if len(lead) > 1 else ''}, {leader} ahead by {mean_lead:.1f}% on average")
    text = f"{leader} is faster than {follower}: {mean_lead:.1f}% more QPS on average"
    if len(lead) > 1:
        low = min(lead, key=lambda item: item[1])
        high = max(lead, key=lambda item: item[1])
        text += (f", from {low[1]:+.1f}% at {_where(low[0], many_specs, many_sizes)} to "
                 f"{high[1]:+.1f}% at {_where(high[0], many_specs, many_sizes)}")
        if within:
            text += f"; within noise (±{NOISE_PCT:.0f}%) in {within} of {len(lead)} rows"
    return text


def _peak_clauses(table: dict[str, Any], names: Sequence[str]) -> list[str]:
    """Where a product's QPS curve peaks and then falls, per spec, when there are enough points."""
    falls: list[str] = []
    rising = curves = 0
    specs = table["spec_order"]
    if len(specs) > MAX_LINE_SPECS:
        return []
    for index, name in enumerate(names):
        for spec in specs:
            points = [(row["threads"], row["cells"][index]["qps"]["median"]) for row in table["rows"]
                      if row["spec"] == spec and row["cells"][index] is not None
                      and row["cells"][index]["qps"]["median"] is not None]
            if len(points) < 3:
                continue
            curves += 1
            peak_threads, peak = max(points, key=lambda p: p[1])
            last_threads, last = points[-1]
            where = f" on {spec}" if len(specs) > 1 and spec else ""
            if peak_threads != last_threads and peak and last < peak * (1 - NOISE_PCT / 100):
                falls.append(f"{name}'s QPS{where} peaks at {peak_threads:,} threads, then falls "
                             f"({(last - peak) / peak * 100:+.0f}% at {last_threads:,})")
            elif peak_threads == last_threads:
                rising += 1
    if not curves:
        return []
    if not falls and rising == curves:
        return ["every QPS curve still rises at its highest concurrency"]
    if falls and rising:
        falls.append(f"the other {'curve' if rising == 1 else 'curves'} still {'rises' if rising == 1 else 'rise'} "
                     "at the highest concurrency")
    return falls


def conclusion(table: dict[str, Any], names: Sequence[str]) -> str:
    """One line from the numbers: who is faster and by how much, where within noise, where curves peak."""
    present = [i for i in range(len(names)) if any(row["cells"][i] is not None for row in table["rows"])]
    clauses: list[str] = []
    if len(present) == 1:
        only = present[0]
        best = max((row for row in table["rows"] if row["cells"][only] and row["cells"][only]["qps"]["median"]),
                   key=lambda row: row["cells"][only]["qps"]["median"], default=None)
        if best is not None:
            clauses.append(f"Only {names[only]} has results here; its best is "
                           f"{fmt_number(best['cells'][only]['qps']['median'])} QPS at "
                           f"{_where(best, table['many_specs'], table['many_sizes'])}")
    else:
        base = present[0] if present else 0
        for other in present[1:]:
            clause = _pair_clause(table, base, other, names)
            if clause:
                clauses.append(clause)
        if not clauses and present:
            clauses.append("The products were never measured on the same rows, so no difference can be stated")
    clauses += _peak_clauses(table, names)
    if not clauses:
        return "No results."
    return "; ".join(clauses) + "."


# ---------------------------------------------------------------- layout


def _has(rows: list[dict[str, Any]], metric: str) -> bool:
    return any(c is not None and c[metric]["median"] is not None for row in rows for c in row["cells"])


def _chart_series(table: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    specs = table["spec_order"]
    lines_qps, lines_latency = [], []
    latency_metric = "latency_pct_ms" if table["has_pct"] else "latency_avg_ms"
    if len(specs) <= MAX_LINE_SPECS:
        for index, name in enumerate(names):
            for spec in specs:
                label = name if len(specs) == 1 else f"{name} — {spec}"
                rows = [r for r in table["rows"] if r["spec"] == spec and r["cells"][index] is not None]
                qps = [{"x": r["threads"], "y": r["cells"][index]["qps"]["median"]} for r in rows
                       if r["cells"][index]["qps"]["median"] is not None]
                lat = [{"x": r["threads"], "y": r["cells"][index][latency_metric]["median"]} for r in rows
                       if r["cells"][index][latency_metric]["median"] is not None]
                if qps:
                    lines_qps.append({"label": label, "data": qps})
                if lat:
                    lines_latency.append({"label": label, "data": lat})
    bars = None
    if len(specs) > 1:
        bars = {"labels": [s or "—" for s in specs], "datasets": []}
        for index, name in enumerate(names):
            values = []
            for spec in specs:
                medians = [r["cells"][index]["qps"]["median"] for r in table["rows"]
                           if r["spec"] == spec and r["cells"][index] is not None
                           and r["cells"][index]["qps"]["median"] is not None]
                values.append(max(medians) if medians else None)
            if any(v is not None for v in values):
                bars["datasets"].append({"label": name, "data": values})
    threads = sorted({r["threads"] for r in table["rows"]})
    return {
        "qps_lines": lines_qps, "latency_lines": lines_latency, "spec_bars": bars,
        "latency_label": f"{table['pct_label']} latency (ms)" if table["has_pct"] else "average latency (ms)",
        "threads": threads,
    }


def _price_rows(table: dict[str, Any], names: Sequence[str], specs: dict[int, InstanceSpec]) -> list[dict[str, Any]]:
    """Per spec: each product's best QPS, per core and per unit of price where a price is set."""
    rows = []
    for spec_id in dict.fromkeys(r["spec_id"] for r in table["rows"]):
        spec = specs.get(spec_id) if spec_id is not None else None
        cells = []
        for index in range(len(names)):
            medians = [r["cells"][index]["qps"]["median"] for r in table["rows"] if r["spec_id"] == spec_id
                       and r["cells"][index] is not None and r["cells"][index]["qps"]["median"] is not None]
            best = max(medians) if medians else None
            per_core = best / spec.cpu_cores if best is not None and spec and spec.cpu_cores else None
            price = spec.price_per_hour if spec is not None else None
            per_price = best / float(price) if best is not None and price not in (None, Decimal(0)) else None
            cells.append({"best": best, "per_core": per_core, "per_price": per_price})
        rows.append({"spec": spec.label if spec else "—", "cores": spec.cpu_cores if spec else None,
                     "price": spec.price_per_hour if spec else None, "currency": spec.currency if spec else "",
                     "cells": cells})
    return rows


def _stat(value: float | None) -> dict[str, Any]:
    return {"median": value, "n": 0 if value is None else 1, "mean": value, "stdev": None, "cv_pct": None}


def published_groups(documents: Sequence[str], spec_ids: Sequence[int]) -> tuple[list[dict[str, Any]],
                                                                                   list[dict[str, Any]]]:
    """The published figures of seed documents, shaped like comparison_build's groups (one query)."""
    rows = PublishedResult.objects.filter(document__in=documents).select_related("product", "spec")
    if spec_ids:
        rows = rows.filter(spec_id__in=spec_ids)
    products: dict[int, dict[str, Any]] = {}
    raw: list[PublishedResult] = list(rows.order_by("document", "id"))
    for r in raw:
        products.setdefault(r.product_id, {"id": r.product_id, "name": r.product.name})
    column = {pid: i for i, pid in enumerate(products)}
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    table_rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in raw:
        key = (r.document, r.table_ref, r.dataset_label, r.scenario_label)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "dataset": {"id": f"p{r.document}", "name": r.dataset_label or r.table_ref},
                "scenario": {"id": len(groups), "name": r.scenario_label,
                             "test": f"published in seed {r.document}: {r.table_ref}"},
                "rows": [], "published": True,
            }
        row_key = (*key, r.spec_id, r.threads, r.table_size, r.tables)
        row = table_rows.get(row_key)
        if row is None:
            row = table_rows[row_key] = {
                "spec": r.spec.label, "spec_id": r.spec_id, "threads": r.threads, "concurrency": r.threads,
                "table_size": r.table_size, "tables": r.tables, "cells": [None] * len(products),
                "_sort": (r.spec.cpu_cores, r.spec.memory_gb, r.spec.label, r.threads),
            }
            group["rows"].append(row)
        row["cells"][column[r.product_id]] = {
            "product_id": r.product_id, "n": 1, "latency_pct": r.latency_pct, "published": True,
            "correction": r.correction, "qps": _stat(r.qps), "tps": _stat(r.tps),
            "latency_avg_ms": _stat(r.latency_avg_ms), "latency_pct_ms": _stat(r.latency_pct_ms),
        }
    for group in groups.values():
        group["rows"].sort(key=lambda row: row.pop("_sort"))
    return list(products.values()), list(groups.values())


def _merge_published(data: dict[str, Any], products: list[dict[str, Any]], groups: list[dict[str, Any]]) -> None:
    """Adds published products as further columns and published tables after the measured ones."""
    known = {p["id"]: i for i, p in enumerate(data["products"])}
    extra = [p for p in products if p["id"] not in known]
    width = len(data["products"]) + len(extra)
    for group in data["groups"]:
        for row in group["rows"]:
            row["cells"] += [None] * len(extra)
    data["products"] = data["products"] + extra
    order = {p["id"]: i for i, p in enumerate(data["products"])}
    for group in groups:
        for row in group["rows"]:
            cells: list[Any] = [None] * width
            for cell in row["cells"]:
                if cell is not None:
                    cells[order[cell["product_id"]]] = cell
            row["cells"] = cells
            base = cells[0]
            for cell in cells:
                if cell is not None:
                    cell["delta_pct"] = {m: None if cell is base or base is None or not base[m]["median"]
                                         or cell[m]["median"] is None
                                         else round((cell[m]["median"] - base[m]["median"]) / base[m]["median"] * 100, 2)
                                         for m in ("qps", "tps", "latency_avg_ms", "latency_pct_ms")}
    data["groups"] = data["groups"] + groups


def comparison_layout(selection: Selection) -> dict[str, Any]:
    """The whole comparison page's data: products, one table per dataset × scenario, conclusions, charts."""
    if selection.measured():
        data = comparison_build(
            target_ids=selection.targets, product_ids=selection.products, run_ids=selection.runs,
            campaign_ids=selection.campaign, scenario_ids=selection.scenarios, spec_ids=selection.specs,
        )
    else:
        data = {"products": [], "groups": [], "job_count": 0}
    measured_groups = len(data["groups"])
    if selection.published:
        _merge_published(data, *published_groups(selection.published, selection.specs))
    products = data["products"]
    names = [p["name"] for p in products]
    # Which cells hold imported results: one query over the same jobs, keyed like the rows.
    imported = set(
        selection.jobs().filter(result__source=JobResult.Source.IMPORTED)
        .values_list("scenario_id", "target__spec_id", "threads", "table_size", "tables", "target__product_id")
        .distinct()
    ) if measured_groups else set()
    spec_ids = {r["spec_id"] for g in data["groups"] for r in g["rows"] if r["spec_id"] is not None}
    specs = InstanceSpec.objects.in_bulk(spec_ids) if spec_ids else {}
    tables = []
    for group in data["groups"]:
        rows = group["rows"]
        for row in rows:
            for cell in row["cells"]:
                if cell is not None:
                    cell["imported"] = not group.get("published") and (
                        group["scenario"]["id"], row["spec_id"], row["threads"], row["table_size"], row["tables"],
                        cell["product_id"]) in imported
            row["deltas"] = [
                (row["cells"][i]["delta_pct"]["qps"] if row["cells"][i] is not None and row["cells"][0] is not None
                 else None)
                for i in range(1, len(products))
            ]
        pcts = [c["latency_pct"] for r in rows for c in r["cells"] if c is not None and c["latency_pct"] is not None]
        pct = statistics.mode(pcts) if pcts else None
        table = {
            "dataset": group["dataset"], "scenario": group["scenario"], "rows": rows,
            "spec_order": list(dict.fromkeys(r["spec"] for r in rows)),
            "many_sizes": len({(r["tables"], r["table_size"]) for r in rows}) > 1,
            "has_tps": _has(rows, "tps"), "has_avg": _has(rows, "latency_avg_ms"),
            "has_pct": _has(rows, "latency_pct_ms"), "pct": pct, "pct_label": pct_label(pct),
            "has_imported": any(c is not None and c["imported"] for r in rows for c in r["cells"]),
            "published": bool(group.get("published")),
        }
        table["many_specs"] = len(table["spec_order"]) > 1
        table["conclusion"] = conclusion(table, names)
        table["charts"] = _chart_series(table, names)
        table["price_rows"] = _price_rows(table, names, specs)
        table["has_price"] = any(r["price"] is not None for r in table["price_rows"])
        table["id"] = f"t{group['dataset']['id']}-{group['scenario']['id']}"
        table["body_html"] = table_body_html(table, products)
        tables.append(table)
    return {"products": products, "names": names, "baseline": names[0] if names else None, "tables": tables,
            "job_count": data["job_count"], "selection": selection, "has_imported": bool(imported),
            "has_published": any(t["published"] for t in tables)}


# ---------------------------------------------------------------- HTML rows

# A comparison can have thousands of cells; the rows are written here rather than by the template
# engine, which would take most of the page's time budget on them.


def _value_cell(cell: dict[str, Any] | None, metric: str, fmt: Any, product_id: int | None) -> str:
    attrs = f' data-metric="{metric}"'
    if product_id is not None:
        attrs += f' data-product="{product_id}"'
    if cell is None or cell[metric]["median"] is None:
        return f'<td class="num"{attrs}>—</td>'
    stats = cell[metric]
    extra = ""
    if metric == "qps":
        if stats["n"] > 1:
            cv = "" if stats["cv_pct"] is None else f", CV {stats['cv_pct']:.1f}%"
            attrs += f' title="median of {stats["n"]} runs{cv}"'
            extra += f'<sup class="muted">n={stats["n"]}</sup>'
        if cell.get("imported"):
            extra = ' <span class="badge imported" title="from an imported sysbench log">imported</span>' + extra
        if cell.get("published"):
            note = f' title="{escape(cell["correction"])}"' if cell.get("correction") else ""
            mark = "published, corrected" if cell.get("correction") else "published"
            extra = f' <span class="badge published"{note}>{mark}</span>' + extra
    return f'<td class="num"{attrs} data-value="{stats["median"]!r}">{fmt(stats["median"])}{extra}</td>'


def table_body_html(table: dict[str, Any], products: Sequence[dict[str, Any]]) -> SafeString:
    ids = [p["id"] for p in products]
    out = []
    for row in table["rows"]:
        spec = escape(row["spec"] or "—")
        size = f'{row["table_size"]:,}' if row["table_size"] else "—"
        parts = [f'<tr data-spec="{escape(row["spec"] or "")}" data-threads="{row["threads"]}">',
                 f'<th scope="row">{spec}</th><td class="num">{row["threads"]:,}</td>'
                 f'<td class="num">{size}</td><td class="num">{row["tables"] or "—"}</td>']
        cells = row["cells"]
        parts += [_value_cell(c, "qps", fmt_number, pid) for c, pid in zip(cells, ids, strict=True)]
        for d in row["deltas"]:
            css = "" if d is None else " up" if d > 0 else " down" if d < 0 else ""
            parts.append(f'<td class="num delta{css}" data-metric="delta">{fmt_delta(d)}</td>')
        if table["has_tps"]:
            parts += [_value_cell(c, "tps", fmt_number, None) for c in cells]
        if table["has_avg"]:
            parts += [_value_cell(c, "latency_avg_ms", fmt_ms, None) for c in cells]
        if table["has_pct"]:
            parts += [_value_cell(c, "latency_pct_ms", fmt_ms, None) for c in cells]
        parts.append("</tr>")
        out.append("".join(parts))
    return mark_safe("\n".join(out))  # noqa: S308  # every interpolated text above is escaped


# ---------------------------------------------------------------- exports


CSV_COLUMNS = ["dataset", "scenario", "test", "spec", "concurrency", "table_size", "tables", "product", "source",
               "n", "qps", "qps_delta_pct", "tps", "latency_avg_ms", "latency_pct", "latency_pct_ms", "qps_cv_pct"]


def csv_lines(layout: dict[str, Any]) -> Iterable[list[Any]]:
    for table in layout["tables"]:
        for row in table["rows"]:
            for product, cell in zip(layout["names"], row["cells"], strict=True):
                if cell is None:
                    continue
                source = "published" if cell.get("published") else "imported" if cell["imported"] else "measured"
                yield [table["dataset"]["name"], table["scenario"]["name"], table["scenario"]["test"], row["spec"],
                       row["threads"], row["table_size"], row["tables"], product, source, cell["n"], cell["qps"]["median"],
                       cell["delta_pct"]["qps"], cell["tps"]["median"], cell["latency_avg_ms"]["median"],
                       cell["latency_pct"], cell["latency_pct_ms"]["median"], cell["qps"]["cv_pct"]]


def to_csv(layout: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for line in csv_lines(layout):
        writer.writerow(["" if v is None else v for v in line])
    return out.getvalue()


def table_header(table: dict[str, Any], names: Sequence[str]) -> list[str]:
    header = ["Specification", "Concurrency", "Table size", "Tables"]
    header += [f"QPS {n}" for n in names]
    header += [f"Δ% {n}" for n in names[1:]]
    if table["has_tps"]:
        header += [f"TPS {n}" for n in names]
    if table["has_avg"]:
        header += [f"Avg ms {n}" for n in names]
    if table["has_pct"]:
        header += [f"{table['pct_label']} ms {n}" for n in names]
    return header


def table_lines(table: dict[str, Any], names: Sequence[str]) -> list[list[str]]:
    lines = []
    for row in table["rows"]:
        cells = row["cells"]

        def metric(cell: dict[str, Any] | None, name: str, fmt: Any = fmt_number) -> str:
            if cell is None:
                return "—"
            text = fmt(cell[name]["median"])
            if name == "qps" and (cell["imported"] or cell.get("published")):
                return f"{text} ({'published' if cell.get('published') else 'imported'})"
            return text

        line = [row["spec"] or "—", f"{row['threads']:,}", f"{row['table_size']:,}" if row["table_size"] else "—",
                str(row["tables"] or "—")]
        line += [metric(c, "qps") for c in cells]
        line += [fmt_delta(d) for d in row["deltas"]]
        if table["has_tps"]:
            line += [metric(c, "tps") for c in cells]
        if table["has_avg"]:
            line += [metric(c, "latency_avg_ms", fmt_ms) for c in cells]
        if table["has_pct"]:
            line += [metric(c, "latency_pct_ms", fmt_ms) for c in cells]
        lines.append(line)
    return lines


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(layout: dict[str, Any], *, title: str, report: dict[str, Any] | None = None) -> str:
    names = layout["names"]
    out = [f"# {title}", ""]
    if names:
        out += [f"Products: {', '.join(names)} (Δ% against {names[0]}). Medians over repetitions.", ""]
    if report:
        out += ["## Environment", ""]
        for env in report["environment"]:
            out.append(f"- **{_md_escape(env['target'])}** ({_md_escape(env['product'])}, "
                       f"{_md_escape(env['spec'] or 'no spec')}): {_md_escape(env['version'] or 'version unknown')}")
            for name, value in env["settings"]:
                out.append(f"  - {name} = {_md_escape(value)}")
        for host in report["hosts"]:
            out.append(f"- client host {_md_escape(host['hostname'])}: {host['cores'] or '?'} cores, "
                       f"{host['memory_gb'] or '?'} GB, sysbench {host['sysbench'] or '?'} ({host['jobs']} jobs)")
        out += ["", "## Method", ""]
        for method in report["method"]:
            out += [f"**{_md_escape(method['scenario'])}** on {_md_escape(method['product'])} "
                    f"(threads: {method['threads']}):", "", "```", method["command"], "```", ""]
        out += ["## Results", ""]
    for table in layout["tables"]:
        out += [f"### {_md_escape(table['dataset']['name'])} × {_md_escape(table['scenario']['name'])}", ""]
        header = table_header(table, names)
        out.append("| " + " | ".join(_md_escape(h) for h in header) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for line in table_lines(table, names):
            out.append("| " + " | ".join(_md_escape(v) for v in line) + " |")
        out += ["", f"**Conclusion.** {table['conclusion']}", ""]
    if report:
        out += ["## Conclusions", ""] + [f"- {t['scenario']['name']}: {t['conclusion']}" for t in layout["tables"]]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the white paper's environment and method


def report_sections(layout: dict[str, Any]) -> dict[str, Any]:
    """Environment (server versions and settings from the jobs' snapshots, client hosts) and method
    (one exact command per scenario and target) of the compared jobs."""
    if not layout["tables"] or not layout["selection"].measured():
        return {"environment": [], "hosts": [], "method": []}
    jobs = layout["selection"].jobs()
    environment = []
    for row in (jobs.order_by("target_id", "-finished_at").distinct("target_id")
                .values("target__name", "target__product__name", "target__spec__label", "server_snapshot")):
        before = (row["server_snapshot"] or {}).get("before") or {}
        environment.append({
            "target": row["target__name"], "product": row["target__product__name"],
            "spec": row["target__spec__label"], "version": before.get("version", ""),
            "settings": sorted((before.get("settings") or {}).items()),
        })
    threads: dict[str, set[int]] = defaultdict(set)
    for scenario, count in jobs.values_list("scenario__name", "threads").distinct():
        threads[scenario].add(count)
    method = []
    # One command per scenario and product: targets of one product differ only in where they are.
    for row in (jobs.exclude(command_line="").order_by("scenario__name", "target__product__name", "-threads")
                .distinct("scenario__name", "target__product__name")
                .values("scenario__name", "scenario__test", "target__name", "target__product__name", "command_line",
                        "imported")):
        method.append({
            "scenario": row["scenario__name"], "test": row["scenario__test"], "target": row["target__name"],
            "product": row["target__product__name"], "command": row["command_line"], "imported": row["imported"],
            "threads": ", ".join(str(t) for t in sorted(threads[row["scenario__name"]])),
        })
    host_rows = list(JobClient.objects.filter(job__in=jobs).values("host_name")
                     .annotate(jobs=Count("job_id", distinct=True), sysbench=Max("sysbench_version"))
                     .order_by("host_name"))
    known = {h.hostname: h for h in ClientHost.objects.filter(hostname__in=[r["host_name"] for r in host_rows])}
    hosts = []
    for row in host_rows:
        host = known.get(row["host_name"])
        hosts.append({"hostname": row["host_name"], "jobs": row["jobs"], "sysbench": row["sysbench"],
                      "cores": host.cores if host else None, "memory_gb": host.memory_gb if host else None})
    return {"environment": environment, "hosts": hosts, "method": method}
