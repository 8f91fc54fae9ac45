"""A run's results as flat cells, their renderings (table, Markdown, CSV, JSON, JUnit XML) and the exit code.

Pure: dicts from the API in, strings and numbers out, so every rendering and the exit-code decision are the same
whichever command (launch --wait, wait, compare) gathered the data.

A cell is what the API's comparison calls one: the succeeded jobs of one run with the same dataset, scenario,
instance spec, thread count, table size and product, aggregated over repetitions. Several runs are laid side by
side by asking the API for each run's comparison (it compares products, and would pool two runs of one target).
"""
from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from benchapp_cli.escaping import csv_cell, markdown_cell, markdown_text

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_RUN_FAILED = 3
EXIT_UNTRUSTED = 4

# Validity verdicts whose figures are not to be believed (the server's comparison leaves them out by default).
UNTRUSTED = ("suspect", "invalid")

RUN_FINISHED = ("succeeded", "partially_succeeded", "failed", "cancelled")
RUN_NOT_SUCCEEDED = ("partially_succeeded", "failed", "cancelled")


@dataclass
class Cell:
    run: int
    dataset: str
    scenario: str
    scenario_id: int
    test: str
    spec: str
    spec_id: int | None
    threads: int
    tables: int
    table_size: int
    product: str
    product_id: int
    n: int
    qps: float | None
    qps_cv_pct: float | None
    tps: float | None
    latency_avg_ms: float | None
    latency_pct: float | None
    latency_pct_ms: float | None
    verdict: str
    delta_qps_pct: float | None = None
    regressions: list[str] = field(default_factory=list)

    def name(self) -> str:
        return f"{self.product} · {self.spec or 'no spec'} · {self.threads} threads · {self.tables}×{self.table_size}"


def cells_of(run_id: int, comparison: dict[str, Any]) -> list[Cell]:
    """The cells of one run's comparison (GET comparisons/?runs=ID), in the API's order."""
    products = comparison.get("products", [])
    cells = []
    for group in comparison.get("groups", []):
        for row in group["rows"]:
            for product, entry in zip(products, row["cells"], strict=True):
                if entry is None:
                    continue
                cells.append(Cell(
                    run=run_id, dataset=group["dataset"]["name"], scenario=group["scenario"]["name"],
                    scenario_id=group["scenario"]["id"], test=group["scenario"].get("test", ""),
                    spec=row.get("spec") or "", spec_id=row.get("spec_id"), threads=row["threads"],
                    tables=row["tables"], table_size=row["table_size"], product=product["name"],
                    product_id=product["id"], n=entry["n"], qps=_value(entry["qps"]),
                    qps_cv_pct=entry["qps"]["cv_pct"], tps=_value(entry["tps"]),
                    latency_avg_ms=_value(entry["latency_avg_ms"]), latency_pct=entry.get("latency_pct"),
                    latency_pct_ms=_value(entry["latency_pct_ms"]), verdict=entry.get("verdict") or "",
                ))
    return cells


def _value(stats: dict[str, Any]) -> Any:
    """A cell's figure as the page shows it: the geometric mean of its repetitions ("value"); servers older than
    that gave the median only."""
    return stats.get("value", stats.get("median"))


def deltas_set(cells: list[Cell]) -> None:
    """Δ% of QPS of each cell against the first cell of its row (same dataset, scenario, spec, threads, size):
    the first run's first product, like the API's comparison against its first product."""
    first: dict[tuple[Any, ...], Cell] = {}
    for cell in cells:
        key = (cell.dataset, cell.scenario_id, cell.spec_id, cell.threads, cell.tables, cell.table_size)
        base = first.setdefault(key, cell)
        if base is not cell and base.qps and cell.qps is not None:
            cell.delta_qps_pct = round((cell.qps - base.qps) / base.qps * 100, 2)


def regression_text(regression: dict[str, Any]) -> str:
    qps = regression.get("metric") == "qps"
    unit = "" if qps else " ms"
    return (f"{'QPS' if qps else 'percentile latency'} {regression['change_pct']:+.1f}% against the baseline "
            f"({regression['baseline_value']:,.1f}{unit} → {regression['current_value']:,.1f}{unit}; "
            f"{regression.get('detector', 'threshold')}: {regression.get('method', '')}"
            f"{_confirmation(regression)})")


def _confirmation(regression: dict[str, Any]) -> str:
    state = regression.get("confirmation") or ""
    if state == "confirmed":
        fresh = regression.get("confirm_change_pct")
        return f"; confirmed by run #{regression.get('confirm_run')}" + (f": {fresh:+.1f}%" if fresh is not None else "")
    if state == "pending":
        return f"; still being measured again by run #{regression.get('confirm_run')}"
    if state == "unconfirmed":
        return f"; not measured again: {regression.get('confirm_note', '')}"
    return ""


def regressions_attach(cells: list[Cell], regressions: list[dict[str, Any]], targets: dict[int, dict[str, Any]]) -> None:
    """Marks each cell with the regressions found on it: same run, scenario and threads, on a target of the cell's
    product and spec (`targets` by id, as the API returns them)."""
    for regression in regressions:
        if regression.get("confirmation") == "not_confirmed":
            continue  # measured again, within noise: the server told nobody, neither does the CLI
        target = targets.get(regression["target"], {})
        for cell in cells:
            if (cell.run == regression["run"] and cell.scenario_id == regression["scenario"]
                    and cell.threads == regression["threads"] and cell.product_id == target.get("product")
                    and cell.spec_id == target.get("spec")):
                cell.regressions.append(regression_text(regression))


# ---------------------------------------------------------------- renderings

COLUMNS = ["run", "dataset", "scenario", "spec", "threads", "tables", "table_size", "product", "n", "qps",
           "qps_cv_pct", "delta_qps_pct", "tps", "latency_avg_ms", "latency_pct", "latency_pct_ms", "verdict",
           "regression"]
TABLE_HEADER = ["run", "scenario", "spec", "threads", "product", "n", "QPS", "CV %", "Δ QPS %", "pct latency ms",
                "verdict", "regression"]


def _number(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _table_row(cell: Cell) -> list[str]:
    pct = f"p{cell.latency_pct:g} " if cell.latency_pct is not None else ""
    delta = "—" if cell.delta_qps_pct is None else f"{cell.delta_qps_pct:+.2f}"
    return [str(cell.run), cell.scenario, cell.spec or "—", str(cell.threads), cell.product, str(cell.n),
            _number(cell.qps), _number(cell.qps_cv_pct, 2), delta, pct + _number(cell.latency_pct_ms, 2),
            cell.verdict or "—", "REGRESSION" if cell.regressions else ""]


def render_table(cells: list[Cell]) -> str:
    if not cells:
        return "no results: the runs have no succeeded job\n"
    rows = [TABLE_HEADER, *(_table_row(c) for c in cells)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(TABLE_HEADER))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def render_markdown(cells: list[Cell]) -> str:
    if not cells:
        return "_No results: the runs have no succeeded job._\n"
    lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "|".join("---" for _ in TABLE_HEADER) + "|"]
    for cell in cells:
        row = _table_row(cell)
        row = [*(markdown_cell(v) for v in row[:-1]), "**regression**" if cell.regressions else ""]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def render_csv(cells: list[Cell]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for cell in cells:
        data = asdict(cell)
        data["regression"] = "; ".join(cell.regressions)
        writer.writerow([csv_cell("" if data[c] is None else data[c]) for c in COLUMNS])
    return out.getvalue()


def render_json(cells: list[Cell], runs: list[dict[str, Any]]) -> str:
    return json.dumps({"runs": [{k: r.get(k) for k in ("id", "campaign", "campaign_name", "status", "label")}
                                for r in runs],
                       "cells": [asdict(c) for c in cells]}, indent=2) + "\n"


def render(cells: list[Cell], runs: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "markdown":
        return render_markdown(cells)
    if fmt == "csv":
        return render_csv(cells)
    if fmt == "json":
        return render_json(cells, runs)
    return render_table(cells)


# ---------------------------------------------------------------- CI outputs and the exit code


def untrusted_cells(cells: Iterable[Cell]) -> list[Cell]:
    """The cells whose validity verdict is suspect or invalid."""
    return [c for c in cells if c.verdict in UNTRUSTED]


def untrusted_line(cells: Iterable[Cell]) -> str:
    """How many cells cannot be trusted, in words: "2 of 4 cells untrusted (1 invalid, 1 suspect)"."""
    cells = list(cells)
    bad = untrusted_cells(cells)
    counts = ", ".join(f"{n} {verdict}" for verdict in ("invalid", "suspect")
                       if (n := sum(c.verdict == verdict for c in bad)))
    return f"{len(bad)} of {len(cells)} cell{'s' if len(cells) != 1 else ''} untrusted ({counts})"


def exit_code(runs: Iterable[dict[str, Any]], cells: list[Cell], *, allow_untrusted: bool) -> int:
    """3 when a run did not succeed (failed, cancelled, partially succeeded, or not finished), else 1 for a
    regression, else 4 when a cell's validity verdict is suspect or invalid (unless allow_untrusted), else 0."""
    if any(r.get("status") != "succeeded" for r in runs):
        return EXIT_RUN_FAILED
    if any(c.regressions for c in cells):
        return EXIT_REGRESSION
    if not allow_untrusted and untrusted_cells(cells):
        return EXIT_UNTRUSTED
    return EXIT_OK


def run_line(run: dict[str, Any]) -> str:
    failed = run.get("jobs_failed", 0) or 0
    cancelled = run.get("jobs_cancelled", 0) or 0
    text = (f"run {run['id']} of {run.get('campaign_name', 'campaign ' + str(run.get('campaign')))}: "
            f"{str(run.get('status', '?')).replace('_', ' ')}, {run.get('jobs_succeeded', 0)}/{run.get('jobs_total', 0)} "
            "jobs succeeded")
    if failed or cancelled:
        text += f" ({failed} failed, {cancelled} cancelled)"
    if run.get("error"):
        text += f": {run['error']}"
    return text


def junit_xml(runs: list[dict[str, Any]], cells: list[Cell], *, allow_untrusted: bool) -> str:
    """One testsuite per run: a testcase for the run's outcome, then one per cell, failed on a regression and on a
    suspect or invalid verdict (skipped instead, with allow_untrusted: its figures prove nothing either way)."""
    suites = ET.Element("testsuites", name="benchapp")
    for run in runs:
        run_cells = [c for c in cells if c.run == run["id"]]
        suite = ET.SubElement(suites, "testsuite", name=f"benchapp run {run['id']} ({run.get('campaign_name', '')})")
        failures = skipped = 0
        outcome = ET.SubElement(suite, "testcase", classname=f"benchapp.run{run['id']}", name="run outcome")
        if run.get("status") != "succeeded":
            failures += 1
            ET.SubElement(outcome, "failure", message=run_line(run), type=str(run.get("status"))).text = run_line(run)
        for cell in run_cells:
            case = ET.SubElement(suite, "testcase", classname=f"benchapp.run{run['id']}.{cell.scenario}",
                                 name=cell.name())
            problems = list(cell.regressions)
            untrusted = cell.verdict in UNTRUSTED
            why = f"the validity verdict of this cell is {cell.verdict}: its figures cannot be trusted"
            if untrusted and not allow_untrusted:
                problems.append(why)
            if problems:
                failures += 1
                ET.SubElement(case, "failure", message=problems[0],
                              type="regression" if cell.regressions else "untrusted").text = "\n".join(problems)
            elif untrusted:
                skipped += 1
                ET.SubElement(case, "skipped", message=why)
            ET.SubElement(case, "system-out").text = (
                f"QPS {_number(cell.qps)} (n={cell.n}, CV {_number(cell.qps_cv_pct, 2)} %), "
                f"latency p{cell.latency_pct or 0:g} {_number(cell.latency_pct_ms, 2)} ms, verdict {cell.verdict or '—'}")
        suite.set("tests", str(1 + len(run_cells)))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
        suite.set("errors", "0")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def summary_markdown(runs: list[dict[str, Any]], cells: list[Cell], *, url: str, code: int) -> str:
    """A pull-request comment: the verdict in one line, each run, the regressions, then the table."""
    regressed = [c for c in cells if c.regressions]
    untrusted = untrusted_cells(cells)
    # "No regression" is said only of cells that can be trusted, and says when some could not.
    calm = ("✅ no regression" if not untrusted else
            "⚠️ no regression among the trusted cells; " + untrusted_line(cells) if len(untrusted) < len(cells)
            else "⚠️ nothing to conclude: " + untrusted_line(cells))
    headline = {EXIT_OK: calm, EXIT_REGRESSION: f"❌ {len(regressed)} cell(s) regressed",
                EXIT_UNTRUSTED: f"❌ {untrusted_line(cells)}", EXIT_RUN_FAILED: "⚠️ the run did not succeed"}[code]
    lines = [f"### benchapp: {headline}", ""]
    for run in runs:
        lines.append(f"- [run {run['id']}]({url}/runs/{run['id']}/): {markdown_text(run_line(run))}")
    if regressed:
        lines += ["", "**Regressions**", ""]
        for cell in regressed:
            for text in cell.regressions:
                lines.append(f"- run {cell.run}, {markdown_text(cell.scenario)}, {markdown_text(cell.name())}: "
                             f"{markdown_text(text)}")
    lines += ["", render_markdown(cells)]
    return "\n".join(lines)
