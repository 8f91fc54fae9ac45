"""What a comparison cell's side panel shows (frontend/src/compare.js): per measured cell, its figures, its per-query
costs beside its row's baseline cell's, what ran out, why its Δ% is what it is, and its jobs, whose seconds the
panel charts on one time axis.

Keyed "<table id>|<spec id>|<threads>|<table size>|<tables>|<column>" as the page's rows carry them (data-spec-id,
data-threads, data-table-size, data-tables) and the column as its index among the row's QPS cells. Only what the
panel needs (about 1 kB a cell).
"""
from __future__ import annotations

from typing import Any

from campaigns.comparison.costs import BOUND_WORDS
from campaigns.comparison.rows import ComparisonCell, ComparisonLayout, ComparisonRow
from campaigns.costs import COST_WORDS
from campaigns.execution.profiles import profiles_merged
from campaigns.models import JobClient

# A cell's jobs the panel charts, and its baseline's: enough to see the repetitions agree, few enough to load fast.
PANEL_JOBS = 6
# A server profile's symbols the panel lists (the most samples first), each cell's merged over its jobs.
PANEL_SYMBOLS = 25

# The panel's cost rows, in the order a reader looks for them, each with its words.
PANEL_COSTS = {
    "bp_misses_per_1k_queries": "Buffer-pool misses per 1,000 queries",
    "bp_hit_pct": "Buffer-pool hit ratio (%)",
    "rows_read_per_query": "Rows read per query",
    "data_reads_per_txn": "Data-file reads per transaction",
    "data_writes_per_txn": "Data-file writes per transaction",
    "row_lock_waits_per_s": "Row-lock waits per second",
    "threads_running": "Threads running (the server's mean)",
    "server_cpu_ms_per_1k_queries": "Server CPU ms per 1,000 queries",
    "client_cpu_ms_per_1k_queries": "Client CPU ms per 1,000 queries",
    "rtt_ms": "Round trip (ms)",
    "rtt_share_pct": "Round trips' share of latency (%)",
}
assert set(COST_WORDS) - set(PANEL_COSTS) <= {"lock_waits_per_txn"}


def _key(table_id: str, row: ComparisonRow, column: int) -> str:
    return "|".join(str(v if v is not None else "") for v in (
        table_id, row.get("spec_id"), row["threads"], row.get("table_size"), row.get("tables"), column))


def _costs(cell: ComparisonCell) -> dict[str, list[float | None]]:
    """{cost: [median, min, max]} of the costs the panel lists."""
    costs = cell.get("costs") or {}
    return {name: [figures.get("value"), figures.get("min"), figures.get("max")]
            for name, figures in costs.items() if name in PANEL_COSTS and figures.get("value") is not None}


def _cell(cell: ComparisonCell, name: str) -> dict[str, Any]:
    significance: dict[str, Any] = dict(cell.get("significance") or {})
    found = cell.get("bound") or None
    why = cell.get("why") or {}
    return {
        "name": name, "qps": cell["qps"]["value"], "n": cell["n"], "ci95": cell.get("qps_ci95"),
        "verdict": cell.get("verdict", ""), "jobs": list(cell.get("jobs") or [])[:PANEL_JOBS],
        "costs": _costs(cell),
        "bound": ({"resource": found["resource"], "words": BOUND_WORDS.get(found["resource"], found["resource"]),
                   "evidence": found.get("evidence", "")} if found else None),
        "why": why.get("sentence", ""), "reasons": [r["cost"] for r in why.get("reasons", [])][:3],
        "delta_pct": (cell.get("delta_pct") or {}).get("qps"), "significance": significance.get("sentence", ""),
    }


def _profiles(layout: ComparisonLayout) -> dict[int, list[dict[str, Any]]]:
    """The server profiles of the layout's cells' jobs (execution.profiles), by job: one query, none without jobs."""
    ids = {job for table in layout.get("tables", []) if not table.get("published") for row in table["rows"]
           for cell in row["cells"] if cell is not None for job in cell.get("jobs") or []}
    out: dict[int, list[dict[str, Any]]] = {}
    if ids:
        for job, profile in JobClient.objects.filter(job_id__in=ids).exclude(profile={}).values_list("job_id",
                                                                                                     "profile"):
            out.setdefault(job, []).append(profile)
    return out


def cell_details(layout: ComparisonLayout) -> dict[str, Any]:
    """{"cells": {key: the cell's panel}, "costs": {cost: words}}: every measured cell of the layout's measured
    tables, each naming its row's baseline cell (its first column) by key ("base": None in that column)."""
    names = [str(n) for n in layout.get("names", [])]
    cells: dict[str, Any] = {}
    profiles = _profiles(layout)
    for table in layout.get("tables", []):
        if table.get("published"):
            continue
        for row in table["rows"]:
            base_key = _key(str(table["id"]), row, 0)
            for column, cell in enumerate(row["cells"]):
                if cell is None or cell.get("published") or cell["qps"].get("value") is None:
                    continue
                entry = _cell(cell, names[column] if column < len(names) else f"column {column + 1}")
                entry["base"] = base_key if column else None  # the baseline cell's key, when it has an entry
                merged = profiles_merged([p for job in cell.get("jobs") or [] for p in profiles.get(job, [])])
                if merged is not None:
                    merged["symbols"] = merged["symbols"][:PANEL_SYMBOLS]
                    entry["profile"] = merged
                cells[_key(str(table["id"]), row, column)] = entry
    return {"cells": cells, "costs": PANEL_COSTS}


# The printed report's costs table: the figures a reader compares first, narrow enough for an A4 page.
REPORT_COSTS = ("bp_misses_per_1k_queries", "rows_read_per_query", "data_reads_per_txn", "row_lock_waits_per_s",
                "server_cpu_ms_per_1k_queries", "client_cpu_ms_per_1k_queries", "rtt_ms")


def report_costs(layout: ComparisonLayout) -> dict[str, Any]:
    """{"columns": [words], "tables": {table id: [{spec, threads, column, costs: [value or None], bound, reasons}]}}:
    the report's section per measured table with costs, each measured cell a line (its bound in words, and which
    costs its Why sentence names)."""
    names = [str(n) for n in layout.get("names", [])]
    tables: dict[str, list[dict[str, Any]]] = {}
    for table in layout.get("tables", []):
        if table.get("published"):
            continue
        lines = []
        for row in table["rows"]:
            for column, cell in enumerate(row["cells"]):
                if cell is None or cell.get("published") or not cell.get("costs"):
                    continue
                costs = cell.get("costs") or {}
                found = cell.get("bound") or None
                reasons = {r["cost"] for r in (cell.get("why") or {}).get("reasons", [])[:3]}
                lines.append({
                    "spec": row.get("spec") or "—", "threads": row["threads"],
                    "column": names[column] if column < len(names) else f"column {column + 1}",
                    "costs": [{"value": (costs.get(name) or {}).get("value"), "reason": name in reasons}
                              for name in REPORT_COSTS],
                    "bound": BOUND_WORDS.get(found["resource"], found["resource"]) if found else "—",
                })
        if lines:
            tables[str(table["id"])] = lines
    return {"columns": [PANEL_COSTS[name] for name in REPORT_COSTS], "tables": tables}
