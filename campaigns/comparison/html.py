"""The table rows of the comparison page as HTML, measured and beside-published, escaped here."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.template.defaultfilters import floatformat
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from campaigns.comparison.formatting import fmt_delta, fmt_ms, fmt_number, fmt_ratio, is_number
from campaigns.comparison.rows import (
    Beside,
    BesideRow,
    Column,
    ComparisonCell,
    ComparisonLayout,
    ComparisonRow,
    ComparisonTable,
    LatencyMetric,
    Metric,
    MetricStats,
    TablePart,
)

# A comparison can have thousands of cells; the rows are written here rather than by the template
# engine, which would take most of the page's time budget on them.


def spread_text(stats: MetricStats, fmt: Any) -> str:
    """A repeated cell's spread as the table and the Markdown export write it: "min–max · sd x"; "" for one run."""
    if stats["n"] < 2 or stats["min"] is None:
        return ""
    cv = "" if stats.get("cv_pct") is None else f" · CV {stats['cv_pct']:.1f}%"
    return f"{fmt(stats['min'])}–{fmt(stats['max'])} · sd {fmt(stats['stdev'])}{cv}"


def untrusted_title(cell: ComparisonCell) -> str:
    """Why a suspect or invalid cell is not to be trusted, for its badge's tooltip."""
    verdict, counts, trust = cell["verdict"], cell.get("verdicts"), cell.get("trust")
    reasons = "; ".join((trust["reasons"] if trust else None) or ["see the job's findings"])
    return (f"{counts.get(verdict, 0) if counts else 0} of {cell['n']} job{'s' if cell['n'] != 1 else ''} {verdict}: {reasons}. "
            "Click for the findings.")


def spread_title(stats: MetricStats, fmt: Any) -> str:
    """What a repeated cell's value is, spelled out for its tooltip."""
    what = "geometric mean" if stats.get("statistic") == "geometric mean" else "mean"
    cv = "" if stats["cv_pct"] is None else f", CV {stats['cv_pct']:.1f}%"
    return (f"{what} of {stats['n']} runs: min {fmt(stats['min'])}, max {fmt(stats['max'])}, "
            f"standard deviation {fmt(stats['stdev'])}{cv}, median {fmt(stats['median'])}")


def _value_cell(cell: ComparisonCell | None, metric: Metric, fmt: Any, product_id: int | None) -> str:
    # An empty cell says only which column group it is in (for the column switch): nothing opens from it.
    if cell is None or cell[metric]["value"] is None:
        return f'<td class="num" data-metric="{metric}">—</td>'
    attrs = f' data-metric="{metric}"'
    if product_id is not None:
        attrs += f' data-product="{product_id}"'
        if cell.get("variant"):  # a settings variant's column: its histogram is of that variant's jobs
            attrs += f' data-variant="{escape(cell["variant"])}"'
        if cell.get("target_id"):  # one target's column of a product measured on several
            attrs += f' data-target="{cell["target_id"]}"'
    stats = cell[metric]
    extra = ""
    if stats["n"] > 1 and not cell.get("published"):
        attrs += (f' data-n="{stats["n"]}" title="{escape(spread_title(stats, fmt))}"')
        # n beside the value, the spread on a line of its own (app.css): the column chooser hides each on its own.
        extra += (f'<sup class="muted n">n={stats["n"]}</sup>'
                  f'<span class="muted small spread">{escape(spread_text(stats, fmt))}</span>')
    if metric == "qps":
        if cell.get("imported"):
            extra = ' <span class="badge imported" title="from an imported sysbench log or run bundle">imported</span>' + extra
        if cell.get("published"):
            note = f' title="{escape(cell["correction"])}"' if cell.get("correction") else ""
            mark = "published, corrected" if cell.get("correction") else "published"
            extra = f' <span class="badge published"{note}>{mark}</span>' + extra
        verdict = cell.get("verdict")
        if verdict in ("suspect", "invalid"):
            why = escape(untrusted_title(cell))
            trust = cell.get("trust")
            url = trust["url"] if trust else None
            badge = (f'<a class="badge verdict-{verdict}" href="{escape(url)}" title="{why}">{verdict}</a>' if url
                     else f'<span class="badge verdict-{verdict}" title="{why}">{verdict}</span>')
            extra = f" {badge}" + extra
            reasons = trust["reasons"] if trust else None
            if reasons:
                extra += f'<span class="small why">{escape("; ".join(reasons))}</span>'
        if not cell.get("published"):  # a published figure has no job to judge
            attrs += f' data-verdict="{escape(verdict or "")}"'
    if cell.get("verdict") in ("suspect", "invalid") and not cell.get("published"):
        attrs += ' data-untrusted="1"'
    return f'<td class="num"{attrs} data-value="{stats["value"]!r}">{fmt(stats["value"])}{extra}</td>'


# The column groups a comparison table has, in order; a printed report sets each group in a table of its own
# (with the row's key columns again) so that a wide table breaks across pages instead of losing columns.
METRIC_GROUPS = ("qps", "tps", "latency")


def table_body_html(table: ComparisonTable, products: Sequence[Column],
                    groups: Sequence[str] = METRIC_GROUPS) -> SafeString:
    """The rows. A phone shows each cell's column heading beside it: tables.js labels the cells from the head, as
    written here they carry only what the page's scripts and styles use."""
    ids = [p["id"] for p in products]
    out = []
    for row in table["rows"]:
        spec = escape(row["spec"] or "—")
        size = f'{row["table_size"]:,}' if row["table_size"] else "—"
        # The keys of the row's cells, for the latency histogram a click on a measured cell opens (compare.js).
        keys = ("" if table["published"] else
                f' data-scenario-id="{table["scenario"]["id"]}" data-spec-id="{row["spec_id"] or ""}"'
                f' data-table-size="{row["table_size"] or ""}" data-tables="{row["tables"] or ""}"')
        parts = [f'<tr data-spec="{escape(row["spec"] or "")}" data-threads="{row["threads"]}"{keys}>',
                 f'<th scope="row">{spec}</th><td class="num">{row["threads"]:,}</td>'
                 f'<td class="num" data-metric="table_size">{size}</td>'
                 f'<td class="num" data-metric="tables">{row["tables"] or "—"}</td>']
        cells = row["cells"]
        if "qps" in groups:
            parts += [_value_cell(c, "qps", fmt_number, pid) for c, pid in zip(cells, ids, strict=True)]
            base = cells[0] if cells else None
            for d, mark, cell in zip(row["deltas"], row["marks"], cells[1:], strict=True):
                css = "" if d is None else " up" if d > 0 else " down" if d < 0 else ""
                doubt = ""
                if d is not None and (_untrusted(base) or _untrusted(cell)):
                    css += " untrusted"
                    doubt = '<span class="small why">from untrusted cells</span>'
                if mark is None or d is None:
                    parts.append(f'<td class="num delta{css}" data-metric="delta">{fmt_delta(d)}{doubt}</td>')
                    continue
                figure = mark.get("interval_figure") or ""
                noisy = bool(mark.get("interval")) and figure and mark["interval"] != figure
                hover = f' title="95% CI {escape(figure)}" data-too-noisy' if noisy else ""
                interval = (f'<span class="ci" data-testid="ci"{hover}>{escape(mark["interval"])}</span>'
                            if mark.get("interval") else "")
                parts.append(f'<td class="num delta{css}" data-metric="delta" '
                             f'data-significance="{mark["verdict"]}" title="{escape(mark["title"])}">'
                             f'{fmt_delta(d)}{interval}'
                             f'<span class="muted small verdict-text">{escape(mark["text"])}</span>{doubt}</td>')
            if table.get("besides"):
                parts.append(beside_cells_html(row, table["besides"]))
        if table["has_tps"] and "tps" in groups:
            parts += [_value_cell(c, "tps", fmt_number, None) for c in cells]
        if table.get("has_counted") and "tps" in groups:
            parts += [_counted_cell(c) for c in cells]
        if table.get("has_errors") and "tps" in groups:
            parts += [_errors_cell(c) for c in cells]
        if table["has_avg"] and "latency" in groups:
            parts += [_value_cell(c, "latency_avg_ms", fmt_ms, pid) for c, pid in zip(cells, ids, strict=True)]
            parts += _published_latency_cells(row, table.get("published_avg") or [], "latency_avg_ms")
        if table["has_pct"] and "latency" in groups:
            parts += [_value_cell(c, "latency_pct_ms", fmt_ms, pid) for c, pid in zip(cells, ids, strict=True)]
            parts += _published_latency_cells(row, table.get("published_pct") or [], "latency_pct_ms")
        parts.append("</tr>")
        out.append("".join(parts))
    return mark_safe("\n".join(out))  # noqa: S308  # every interpolated text above is escaped


def _counted_cell(cell: ComparisonCell | None) -> str:
    """A workload's counted calls per minute (sysbench-tpcc's NewOrders), the mean of the repetitions."""
    value = cell.get("counted_per_min") if cell is not None else None
    if value is None:
        return '<td class="num" data-metric="counted">—</td>'
    return f'<td class="num" data-metric="counted" data-value="{value!r}">{fmt_number(value)}</td>'


def _errors_cell(cell: ComparisonCell | None) -> str:
    """Errors sysbench ignored per 1,000 transactions (deadlocks, a TPC-C's rollbacks), and the workload's own
    expected rate beside them where it declares one."""
    errors = (cell.get("errors") or {}) if cell is not None else {}
    per_1k = errors.get("per_1k_txn")
    if per_1k is None:
        return '<td class="num" data-metric="errors">—</td>'
    figure = f"{per_1k:,.0f}" if per_1k >= 100 else f"{per_1k:.3g}"
    expected = errors.get("expected_pct")
    note = (f'<br><span class="muted small">expected {float(expected) * 10:.3g}</span>' if expected is not None
            else "")
    return (f'<td class="num" data-metric="errors" data-testid="errors-cell" data-value="{per_1k!r}" '
            f'title="errors sysbench ignored, mean per 1,000 transactions; total {errors.get("total") or 0:,}">'
            f'{figure}{note}</td>')


def _untrusted(cell: ComparisonCell | None) -> bool:
    return cell is not None and cell.get("verdict") in ("suspect", "invalid")


def _published_cell(entry: BesideRow | None, beside: Beside) -> str:
    """The published figure beside a measured row: its QPS (and per core), the concurrency it was printed at where
    that is not the row's, and its spec where the header cannot name one for the whole table."""
    if entry is None or not is_number(entry["published_qps"]):
        return '<td class="num" data-metric="published">—</td>'
    lines = []
    if entry["per_core"]:
        lines.append(f'{fmt_number(entry["published_per_core"])} per core')
    if entry["nearest"]:
        lines.append(f'at {entry["published_threads"]:,} threads')
    if entry.get("scaled"):
        lines.append(f'its {entry["published_threads"]:,} threads, scaled')
    if not beside["spec_label"]:
        lines.append(escape(entry["published_spec"]))
    correction = (f' <span class="badge published" title="{escape(entry["correction"])}">corrected</span>'
                  if entry["correction"] else "")
    small = "".join(f'<br><span class="muted small">{line}</span>' for line in lines)
    title = entry["hardware"] + (f'; printed at {entry["published_threads"]:,} threads, the document\'s nearest to '
                                 f'{entry["threads"]:,}' if entry["nearest"] else "")
    if entry.get("scaled"):
        title += (f'; printed at {entry["published_threads"]:,} threads: this run scaled the document\'s thread '
                  f'ladder down whole, and its {entry["threads"]:,} stands for the document\'s '
                  f'{entry["published_threads"]:,}')
    # What differs from the document's run, on the cell itself: the kinds in a word each, the whole
    # sentences in the hover and on paper below the table.
    found = entry.get("differences") or []
    unlike = entry.get("unlike") or []
    differs = (f'<br><span class="small why" data-testid="differs">differs: {escape(", ".join(unlike))}</span>'
               if unlike else "")
    title += "".join(f"; {item}" for item in found if item != entry["hardware"])
    return (f'<td class="num published-figure" data-metric="published" data-value="{entry["published_qps"]!r}" '
            f'data-published-threads="{entry["published_threads"]}" data-differences="{escape(" | ".join(found))}" '
            f'title="{escape(title)}">{fmt_number(entry["published_qps"])}{correction}{small}{differs}</td>')


def _ratio_cell(entry: BesideRow | None, index: int) -> str:
    """A measured product's ratio to the published figure (per core or raw) with n, its 95% interval where the
    measured cell has repetitions, and a word where the measured cell is not to be trusted."""
    cell = entry["by_column"].get(str(index)) if entry is not None else None
    if entry is None or cell is None or cell["ratio"] is None:
        return '<td class="num" data-metric="published" data-ratio="">—</td>'
    ci = cell["ratio_ci95"]
    title = f'measured ÷ published, {entry["basis"]}'
    if entry["per_core"] and is_number(cell["per_core"]):
        title += f' ({fmt_number(cell["per_core"])} ÷ {fmt_number(entry["published_per_core"])} QPS per core)'
    title += (f'; 95% interval {fmt_ratio(ci[0])} … {fmt_ratio(ci[1])} from the measured cell\'s {cell["n"]} runs'
              if ci else f'; {cell["n"]} run{"s" if cell["n"] != 1 else ""}, no interval') + f'; {entry["hardware"]}'
    interval = (f'<span class="ci" data-testid="ratio-ci">{fmt_ratio(ci[0])} … {fmt_ratio(ci[1])}</span>'
                if ci else "")
    article = "an" if cell["verdict"] == "invalid" else "a"
    doubt = (f'<span class="small why">from {article} {cell["verdict"]} cell</span>' if cell["verdict"] else "")
    if entry.get("unlike"):
        title += "; unlike runs: " + "; ".join(entry.get("differences") or [])
        doubt += '<span class="small why" data-testid="unlike">unlike runs: not a finding</span>'

    css = " untrusted" if cell["verdict"] else ""
    return (f'<td class="num ratio{css}" data-metric="published" data-ratio="{cell["ratio"]!r}" '
            f'title="{escape(title)}">{fmt_ratio(cell["ratio"])}<br>'
            f'<span class="muted small">{escape(entry["basis"])} · n = {cell["n"]}</span>{interval}{doubt}</td>')


def _published_latency_cells(row: ComparisonRow, positions: Sequence[int], metric: LatencyMetric) -> list[str]:
    """The published latency beside a measured row's, for the published products the table shows it for."""
    entries = row.get("besides") or []
    out = []
    for k in positions:
        entry = entries[k] if k < len(entries) else None
        value = (None if entry is None else entry["published_latency_avg_ms"] if metric == "latency_avg_ms"
                 else entry["published_latency_pct_ms"])
        if not is_number(value):
            out.append(f'<td class="num" data-metric="{metric}">—</td>')
            continue
        at = (f'<br><span class="muted small">at {entry["published_threads"]:,} threads</span>'
              if entry is not None and (entry["nearest"] or entry.get("scaled")) else "")
        out.append(f'<td class="num published-latency" data-metric="{metric}" data-value="{value!r}">'
                   f'{fmt_ms(value)}{at}</td>')
    return out


def beside_cells_html(row: ComparisonRow, besides: Sequence[Beside]) -> str:
    """The published columns of one measured row: per published product its figure, then each measured
    product's ratio to it (columns as _compare_table.html heads them)."""
    parts = []
    entries = row.get("besides") or []
    for k, beside in enumerate(besides):
        entry = entries[k] if k < len(entries) else None
        parts.append(_published_cell(entry, beside))
        parts += [_ratio_cell(entry, index) for index in beside["column_index"]]
    return "".join(parts)


def table_parts(table: ComparisonTable, products: Sequence[Column]) -> list[TablePart]:
    """The printed report's tables of one comparison table: one per metric group it has (QPS and Δ%, TPS,
    latency), each with the row's key columns, so that no page has to cut a wide table's last columns."""
    groups = [("qps", "QPS and Δ%")]
    if table["has_tps"]:
        groups.append(("tps", "TPS"))
    if table["has_avg"] or table["has_pct"]:
        groups.append(("latency", "latency"))
    return [{"group": group, "label": label, "last": index == len(groups) - 1,
             "body_html": table_body_html(table, products, groups=(group,))}
            for index, (group, label) in enumerate(groups)]


def price_body_html(table: ComparisonTable) -> SafeString:
    """The price-performance rows (columns as _price_table.html heads them)."""
    out = []
    for row in table["price_rows"]:
        price = ("—" if row["price"] is None
                 else f'{floatformat(row["price"], "-4")} {escape(row["currency"])}')
        cores = "—" if row["cores"] is None else row["cores"]
        parts = [f'<tr><th scope="row">{escape(row["spec"])}</th><td class="num">{cores}</td>'
                 f'<td class="num">{price}</td>']
        for cell in row["cells"]:
            parts.append(f'<td class="num">{fmt_number(cell["per_core"])}</td>')
            if table["has_price"]:
                parts.append(f'<td class="num">{fmt_number(cell["per_price"])}</td>')
        parts.append("</tr>")
        out.append("".join(parts))
    return mark_safe("\n".join(out))  # noqa: S308  # every interpolated text above is escaped or a number


def column_choices(layout: ComparisonLayout) -> list[dict[str, str]]:
    """What the column chooser above a comparison's tables may show or hide (tables.js, remembered in the browser):
    the key columns after the first two, each metric's column group the tables have, and the details inside the
    cells. Each choice's key is the data-metric its cells carry (the details: the class of their spans)."""
    tables = [t for t in layout.get("tables", []) if not t.get("published")] or layout.get("tables", [])
    if not tables:
        return []
    several = len(layout.get("names", [])) > 1
    pct = sorted({t["pct_label"] for t in tables if t["has_pct"]})
    sizes = sorted({t.get("size_label") or "Table size" for t in tables})
    choices = [("table_size", " / ".join(sizes), "column"), ("tables", "Tables", "column"), ("qps", "QPS", "column")]
    if several:
        choices.append(("delta", "Δ% QPS", "column"))
    if any(t["has_tps"] for t in tables):
        choices.append(("tps", "TPS", "column"))
    counted = sorted({t["scenario"].get("counted", "") for t in tables if t.get("has_counted")} - {""})
    if counted:
        choices.append(("counted", f"{' / '.join(counted)} per minute", "column"))
    if any(t.get("has_errors") for t in tables):
        choices.append(("errors", "Errors / 1k txn", "column"))
    if any(t["has_avg"] for t in tables):
        choices.append(("latency_avg_ms", "Avg latency", "column"))
    if pct:
        choices.append(("latency_pct_ms", f"{' / '.join(pct)} latency", "column"))
    choices += [("n", "n", "detail"), ("spread", "min–max, sd, CV", "detail")]
    if several:
        choices.append(("ci", "Δ% interval", "detail"))
    return [{"key": key, "label": label, "kind": kind} for key, label, kind in choices]
