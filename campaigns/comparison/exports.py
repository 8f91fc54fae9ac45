"""The comparison as files: CSV lines with their column list, and Markdown tables with the conclusions and,
for the white paper, its environment and method. Every text from a row goes through campaigns.escaping, the
rule of every export (formulas neutralised in CSV; HTML, links, pipes and line breaks escaped in Markdown)."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from campaigns.comparison.formatting import fmt_delta, fmt_ms, fmt_number, fmt_ratio
from campaigns.comparison.html import spread_text
from campaigns.comparison.rows import (
    ComparisonCell,
    ComparisonLayout,
    ComparisonRow,
    ComparisonTable,
    Mark,
    Metric,
    ReportSections,
)
from campaigns.comparison.significance import SIGNIFICANCE_NOTE
from campaigns.escaping import csv_row, markdown_cell, markdown_code_block, markdown_text

# New columns go at the end, so readers that index columns by position keep working.
CSV_COLUMNS = ["dataset", "scenario", "test", "spec", "concurrency", "table_size", "tables", "product", "source",
               "n", "qps", "qps_delta_pct", "tps", "latency_avg_ms", "latency_pct", "latency_pct_ms", "qps_cv_pct",
               "qps_delta_significance", "qps_delta_p_value",
               "published_product", "published_spec", "published_concurrency", "published_qps", "qps_per_core",
               "published_qps_per_core", "ratio_to_published", "ratio_basis", "hardware", "verdict",
               # The cell's spread: qps etc. above are each metric's value, the geometric mean of its
               # repetitions; the median, min, max and standard deviation follow.
               "qps_delta_p_adjusted", "qps_median", "qps_min", "qps_max", "qps_stdev",
               "tps_min", "tps_max", "tps_stdev", "latency_avg_ms_min", "latency_avg_ms_max", "latency_avg_ms_stdev",
               "latency_pct_ms_min", "latency_pct_ms_max", "latency_pct_ms_stdev",
               # The QPS Δ%'s 95% confidence interval (of the ratio of geometric means), n per side, the runs per
               # side that would tell a difference this large, and the verdict in words.
               "qps_delta_ci95_low_pct", "qps_delta_ci95_high_pct", "n_baseline", "qps_delta_runs_needed",
               "qps_delta_sentence", "untrusted_reasons",
               # What differs from the document's run behind the published figure, "; "-separated.
               "published_differences"]


def _beside_csv(table: ComparisonTable, row: ComparisonRow, index: int) -> list[Any]:
    beside = row.get("beside")
    entry = beside["by_column"].get(str(index)) if beside else None
    if beside is None or entry is None:
        return [None] * 9
    chosen = table.get("beside")
    assert chosen is not None  # a row has a published figure beside it only in a table that has one
    return [chosen["product"], beside["published_spec"], beside["published_threads"], beside["published_qps"],
            entry["per_core"], beside["published_per_core"], entry["ratio"], beside["basis"], beside["hardware"]]


def _differences_csv(row: ComparisonRow, index: int) -> str | None:
    beside = row.get("beside")
    if beside is None or str(index) not in beside["by_column"]:
        return None
    return "; ".join(beside.get("differences") or []) or None


def csv_lines(layout: ComparisonLayout) -> Iterable[list[Any]]:
    for table in layout["tables"]:
        for row in table["rows"]:
            marks = [None, *row["marks"]]
            for index, (product, cell) in enumerate(zip(layout["names"], row["cells"], strict=True)):
                if cell is None:
                    continue
                source = "published" if cell.get("published") else "imported" if cell["imported"] else "measured"
                mark = marks[index]
                yield [table["dataset"]["name"], table["scenario"]["name"], table["scenario"]["test"], row["spec"],
                       row["threads"], row["table_size"], row["tables"], product, source, cell["n"], cell["qps"]["value"],
                       cell["delta_pct"]["qps"], cell["tps"]["value"], cell["latency_avg_ms"]["value"],
                       cell["latency_pct"], cell["latency_pct_ms"]["value"], cell["qps"]["cv_pct"],
                       mark["text"] if mark else None, mark["p_value"] if mark else None,
                       *_beside_csv(table, row, index), cell.get("verdict") or None,
                       mark["p_adjusted"] if mark else None, cell["qps"]["median"], cell["qps"]["min"],
                       cell["qps"]["max"], cell["qps"]["stdev"],
                       *(cell[m][stat] for m in ("tps", "latency_avg_ms", "latency_pct_ms")
                         for stat in ("min", "max", "stdev")),
                       *((mark.get("ci95_pct") or [None, None]) if mark else [None, None]),
                       mark.get("n_base") if mark else None, mark.get("runs_needed") if mark else None,
                       mark.get("sentence") or None if mark else None,
                       "; ".join(trust["reasons"] if (trust := cell.get("trust")) else []) or None,
                       _differences_csv(row, index)]


def to_csv(layout: ComparisonLayout) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for line in csv_lines(layout):
        writer.writerow(csv_row("" if v is None else v for v in line))
    return out.getvalue()


def table_header(table: ComparisonTable, names: Sequence[str]) -> list[str]:
    header = ["Specification", "Concurrency", table.get("size_label") or "Table size", "Tables"]
    header += [f"QPS {n}" for n in names]
    header += [f"Δ% {n}" for n in names[1:]]
    for beside in table.get("besides") or []:
        header.append(f"QPS {beside['product']} (published)")
        header += [f"{n} ÷ published" for n in beside["columns"]]
    if table["has_tps"]:
        header += [f"TPS {n}" for n in names]
    if table.get("has_counted"):
        header += [f"{table['scenario'].get('counted', '')}/min {n}" for n in names]
    if table.get("has_errors"):
        header += [f"Errors/1k txn {n}" for n in names]
    if table["has_avg"]:
        header += [f"Avg ms {n}" for n in names]
        header += [f"Avg ms {n} (published)" for n in table.get("published_avg_names") or []]
    if table["has_pct"]:
        header += [f"{table['pct_label']} ms {n}" for n in names]
        header += [f"{table['pct_label']} ms {n} (published)" for n in table.get("published_pct_names") or []]
    return header


def _interval_words(mark: Mark) -> str:
    """A Δ%'s interval in a file, where no hover shows the figure: "too noisy to tell: -100.0% … +139,116.8%"."""
    figure = mark.get("interval_figure") or ""
    if figure and mark["interval"] != figure:
        return f"{mark['interval']}: {figure}"
    return mark["interval"]


def table_lines(table: ComparisonTable, names: Sequence[str]) -> list[list[str]]:
    lines = []
    for row in table["rows"]:
        cells = row["cells"]

        def metric(cell: ComparisonCell | None, name: Metric, fmt: Any = fmt_number) -> str:
            if cell is None:
                return "—"
            text = fmt(cell[name]["value"])
            notes = []
            stats = cell[name]
            spread = (f"; n = {stats['n']}, {spread_text(stats, fmt)}" if stats["n"] > 1 and not cell.get("published")
                      else "")
            if name == "qps" and (cell["imported"] or cell.get("published")):
                notes.append("published" if cell.get("published") else "imported")
            if name == "qps" and cell.get("verdict") in ("suspect", "invalid"):
                trust = cell.get("trust")
                reasons = trust["reasons"] if trust else None
                notes.append(f"{cell['verdict']}: {', '.join(reasons)}" if reasons else cell["verdict"])
            return (f"{text} ({', '.join(notes)})" if notes else text) + spread

        line = [row["spec"] or "—", f"{row['threads']:,}", f"{row['table_size']:,}" if row["table_size"] else "—",
                str(row["tables"] or "—")]
        line += [metric(c, "qps") for c in cells]
        line += [fmt_delta(d) if mark is None or d is None
                 else f"{fmt_delta(d)} ({_interval_words(mark)}), {mark['text']}" if mark.get("interval")
                 else f"{fmt_delta(d)}, {mark['text']}"
                 for d, mark in zip(row["deltas"], row["marks"], strict=True)]
        line += _beside_line(table, row)
        if table["has_tps"]:
            line += [metric(c, "tps") for c in cells]
        if table.get("has_counted"):
            line += [fmt_number(c.get("counted_per_min")) if c is not None and c.get("counted_per_min") is not None
                     else "—" for c in cells]
        if table.get("has_errors"):
            line += [f"{(c.get('errors') or {}).get('per_1k_txn'):.3g}"
                     if c is not None and (c.get("errors") or {}).get("per_1k_txn") is not None else "—" for c in cells]
        entries = row.get("besides") or []
        if table["has_avg"]:
            line += [metric(c, "latency_avg_ms", fmt_ms) for c in cells]
            line += [fmt_ms(entry["published_latency_avg_ms"]) if k < len(entries) and (entry := entries[k]) else "—"
                     for k in table.get("published_avg") or []]
        if table["has_pct"]:
            line += [metric(c, "latency_pct_ms", fmt_ms) for c in cells]
            line += [fmt_ms(entry["published_latency_pct_ms"]) if k < len(entries) and (entry := entries[k]) else "—"
                     for k in table.get("published_pct") or []]
        lines.append(line)
    return lines


def _beside_line(table: ComparisonTable, row: ComparisonRow) -> list[str]:
    """The published columns of one measured row, as the page's one table has them: each published product's
    figure (per core, and the concurrency it was printed at when not the row's), then each measured product's
    ratio to it with n and its 95% interval."""
    line = []
    entries = row.get("besides") or []
    for k, beside in enumerate(table.get("besides") or []):
        entry = entries[k] if k < len(entries) else None
        if entry is None:
            line += ["—"] * (1 + len(beside["column_index"]))
            continue
        notes = []
        if entry["per_core"]:
            notes.append(f"{fmt_number(entry['published_per_core'])} per core")
        if entry["nearest"] or entry.get("scaled"):
            notes.append(f"at {entry['published_threads']:,} threads")
        if not beside["spec_label"]:
            notes.append(entry["published_spec"])
        line.append(fmt_number(entry["published_qps"]) + (f" ({', '.join(notes)})" if notes else ""))
        for index in beside["column_index"]:
            cell = entry["by_column"].get(str(index))
            if cell is None or cell["ratio"] is None:
                line.append("—")
                continue
            ci = cell["ratio_ci95"]
            text = f"{fmt_ratio(cell['ratio'])} {entry['basis']}"
            text += f" ({fmt_ratio(ci[0])} … {fmt_ratio(ci[1])}), n = {cell['n']}" if ci else f", n = {cell['n']}"
            if cell["verdict"]:
                text += f", from {'an' if cell['verdict'] == 'invalid' else 'a'} {cell['verdict']} cell"
            line.append(text)
    return line


def _markdown_row(values: Sequence[Any]) -> str:
    return "| " + " | ".join(markdown_cell(v) for v in values) + " |"


def beside_markdown(table: ComparisonTable) -> list[str]:
    """Under a measured table with published columns: which published table they come from, the hardware on each
    side and the summary of the ratios; or why the chosen published product has nothing for this table."""
    out: list[str] = []
    for beside in table.get("besides") or []:
        out += [f"Beside the published {markdown_text(beside['product'])} ({markdown_text(beside['key'])}):", ""]
        out += [f"- {markdown_text(note)}" for note in beside["notes"]] + [""]
        if beside["summary"]:
            out += [f"**Beside the published figures.** {markdown_text(beside['summary'])}", ""]
    chosen = table.get("beside")
    if not table.get("besides") and chosen and chosen["note"]:
        out += [markdown_text(chosen["note"]), ""]
    return out


def trust_text(layout: ComparisonLayout) -> str:
    """The banner of a comparison with untrusted cells, as one sentence (Markdown export): "13 of 24 jobs invalid:
    the client host's CPU was saturated. The conclusions leave out the 4 cells they make untrusted." """
    trust = layout["trust"]
    if not trust["untrusted"]:
        return ""
    jobs = trust["jobs"]
    counts = []
    if trust["invalid"]:
        counts.append(f"{trust['invalid']} of {jobs} job{'s' if jobs != 1 else ''} invalid")
    if trust["suspect"]:
        counts.append(f"{trust['suspect']}{'' if counts else f' of {jobs} job' + ('s' if jobs != 1 else '')} suspect")
    reasons = "; ".join(r["text"] for r in trust["reasons"])
    text = ", ".join(counts) + (f": {reasons}" if reasons else "") + ". "
    cells = trust["cells"]
    text += (f"The conclusions count the {cells} untrusted cell{'s' if cells != 1 else ''}." if trust["included"]
             else f"The conclusions leave out the {cells} cell{'s' if cells != 1 else ''} they make untrusted.")
    return text


def to_markdown(layout: ComparisonLayout, *, title: str, report: ReportSections | None = None) -> str:
    names = [markdown_text(name) for name in layout["names"]]
    out = [f"# {markdown_text(title)}", ""]
    if names:
        out += [f"Products: {', '.join(names)} (Δ% of each against {names[0]}: the ratio of geometric means − 1). "
                "Each cell is the geometric mean of its repetitions, with n, min–max and the standard deviation "
                "(sd) where there are several.", ""]
    if layout.get("has_marks"):
        out += [SIGNIFICANCE_NOTE, ""]
    banner = trust_text(layout)
    if banner:
        out += [f"> **{markdown_text(banner)}**", ""]
    if report:
        out += ["## Environment", ""]
        for env in report["environment"]:
            out.append(f"- **{markdown_text(env['target'])}** ({markdown_text(env['product'])}, "
                       f"{markdown_text(env['spec'] or 'no spec')}): "
                       f"{markdown_text(env['version'] or 'version unknown')}")
            for name, value in env["settings"]:
                out.append(f"  - {markdown_text(name)} = {markdown_text(value)}")
        for host in report["hosts"]:
            out.append(f"- client host {markdown_text(host['hostname'])}: {host['cores'] or '?'} cores, "
                       f"{host['memory_gb'] or '?'} GB, sysbench {markdown_text(host['sysbench'] or '?')} "
                       f"({host['jobs']} jobs)")
        out += ["", "## Method", ""]
        for method in report["method"]:
            out += [f"**{markdown_text(method['scenario'])}** on {markdown_text(method['product'])} "
                    f"(threads: {method['threads']}):", "", *markdown_code_block(method["command"]), ""]
        out += ["## Results", ""]
    for table in layout["tables"]:
        out += [f"### {markdown_text(table['title'])}", ""]
        header = table_header(table, layout["names"])
        out.append(_markdown_row(header))
        out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for line in table_lines(table, layout["names"]):
            out.append(_markdown_row(line))
        out += ["", f"**Conclusion.** {markdown_text(table['conclusion'])}", ""]
        out += beside_markdown(table)
    if report:
        out += ["## Conclusions", ""] + [f"- {markdown_text(t['scenario']['name'])}: {markdown_text(t['conclusion'])}"
                                         for t in layout["tables"]]
        out.append("")
    return "\n".join(out)
