"""Each comparison cell's per-query costs and what bounded it (campaigns.costs), over its repetitions.

A cell's cost is the median of its jobs' (the value a sentence quotes), with min, max and n beside it, as its
throughput is given with its spread; the cell's bound is judged on those medians. Jobs judged before costs were
stored (manage.py costs_backfill fills them) count as jobs without that figure.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from django.db.models import F, Q

from campaigns.costs import COST_WORDS, bound
from campaigns.models import JobResult

CellKey = tuple[Any, ...]


def cell_key(cell: dict[str, Any], *, by_run: bool) -> CellKey:
    """A cell's coordinates as comparison_build groups them."""
    key = (cell["dataset_id"], cell["scenario_id"], cell["spec_id"], cell["threads"], cell["table_size"],
           cell["tables"], cell["product_id"], cell["variant"], cell["target_id"])
    return (*key, cell["run_id"]) if by_run else key


def cells_costs(condition: Q, keys: dict[str, str], *, roots: dict[int, int], by_run: bool
                ) -> dict[CellKey, dict[str, Any]]:
    """{cell key: {"costs": {name: {value, min, max, n}}, "bound": {resource, evidence}}} for the selected jobs."""
    names = list(keys)
    rows = (JobResult.objects.filter(condition).values(**{alias: F(path) for alias, path in keys.items()})
            .values_list(*names, "costs", "job__findings"))
    gathered: dict[CellKey, list[tuple[dict[str, Any], bool]]] = defaultdict(list)
    for row in rows.iterator(chunk_size=2000):
        cell = dict(zip(names, row[:-2], strict=True))
        if by_run:
            cell["run_id"] = roots.get(cell["run_id"], cell["run_id"])
        client = any(f.get("code") == "client-bound" for f in (row[-1] or []) if isinstance(f, dict))
        gathered[cell_key(cell, by_run=by_run)].append((row[-2] or {}, client))
    return {key: cell_costs(jobs) for key, jobs in gathered.items()}


def cell_costs(jobs: list[tuple[dict[str, Any], bool]]) -> dict[str, Any]:
    """One cell's costs over its jobs (each job's costs and whether validity called it client-bound)."""
    values: dict[str, list[float]] = defaultdict(list)
    for costs, _client in jobs:
        for name, value in costs.items():
            if isinstance(value, int | float):
                values[name].append(float(value))
    summary = {name: {"value": round(statistics.median(v), 4), "min": round(min(v), 4), "max": round(max(v), 4),
                      "n": len(v)} for name, v in sorted(values.items())}
    medians = {name: s["value"] for name, s in summary.items()}
    client = sum(1 for _costs, c in jobs if c) * 2 > len(jobs)  # most of its repetitions
    return {"costs": summary, "bound": bound(medians, client_findings=client).to_dict() if summary else None}


# A cost that differs by less than this factor between two cells explains nothing.
EXPLAINS_RATIO = 1.25


def why(entry: dict[str, Any], base: dict[str, Any], *, name: str, base_name: str) -> dict[str, Any]:
    """Why a cell's QPS differs from its baseline's: the per-query costs that differ most between them, ranked by
    the size of the difference (the log of their ratio), each with both figures; or, when none differs by
    EXPLAINS_RATIO or more, that nothing measured explains it. {"sentence", "reasons": [{cost, this, baseline,
    ratio}]}."""
    mine, theirs = entry.get("costs") or {}, base.get("costs") or {}
    reasons = []
    for cost, words in COST_WORDS.items():
        a, b = (mine.get(cost) or {}).get("value"), (theirs.get(cost) or {}).get("value")
        if a is None or b is None or a < 0 or b < 0 or a == b:
            continue
        if a == 0 or b == 0:  # some against none: larger than any ratio (JSON has no infinity: ratio None)
            reasons.append({"cost": cost, "words": words, "this": a, "baseline": b, "ratio": None})
            continue
        ratio = a / b
        if max(ratio, 1 / ratio) >= EXPLAINS_RATIO:
            reasons.append({"cost": cost, "words": words, "this": a, "baseline": b, "ratio": round(ratio, 3)})
    reasons.sort(key=lambda r: -math.inf if r["ratio"] is None else -abs(math.log(r["ratio"])))
    if not reasons:
        sentence = (f"Nothing measured explains it: no per-query cost of {name} differs from {base_name}'s by "
                    f"{EXPLAINS_RATIO:g}× or more.")
        return {"sentence": sentence, "reasons": []}
    parts = []
    for r in reasons[:3]:
        if r["ratio"] is None:
            parts.append(f"{_fmt(r['this'])} {r['words']} against none" if r["this"] else
                         f"no {r['words']} against {_fmt(r['baseline'])}")
        else:
            parts.append(f"{r['ratio']:.2g}× the {r['words']} ({_fmt(r['this'])} against {_fmt(r['baseline'])})")
    return {"sentence": f"{name} against {base_name}: " + "; ".join(parts) + ".", "reasons": reasons}


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"


BOUND_WORDS = {"client": "the client host", "server-cpu": "the server's CPU",
               "host-cpu": "the CPU of the host the server shares with sysbench", "io": "I/O (buffer-pool misses)",
               "locks": "row locks", "network": "the network (latency ≈ round trip)",
               "concurrency": "concurrency (the server waited for its clients)",
               "undecided": "no measured resource"}


def table_explanations(rows: list[dict[str, Any]], names: list[str], curves: list[dict[str, Any]]) -> list[str]:
    """A comparison table's explanations in sentences: each column's peak and knee (curves with two points or
    more), what ran out in each column by thread count, and why each significant Δ% is what it is."""
    lines = [c["sentence"] for c in curves if c["points"] > 1]
    for column, name in enumerate(names):
        by_resource: dict[str, list[int]] = defaultdict(list)
        for row in rows:
            cell = row["cells"][column] if column < len(row["cells"]) else None
            found = cell.get("bound") if cell is not None else None
            if found:
                by_resource[found["resource"]].append(int(row["threads"]))
        if by_resource:
            parts = [f"{BOUND_WORDS.get(r, r)} at {_counts(ts)} thread{'s' if sorted(set(ts)) != [1] else ''}"
                     for r, ts in sorted(by_resource.items(), key=lambda item: min(item[1]))]
            lines.append(f"What ran out for {name}: " + "; ".join(parts) + ".")
    # The same reasons at several thread counts are said once, with every count.
    counts: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        for cell in row["cells"]:
            if cell is not None and cell.get("why"):
                counts[cell["why"]["sentence"]].append(int(row["threads"]))
    for sentence, threads in counts.items():
        lines.append(f"At {_counts(threads)} thread{'s' if threads != [1] else ''}: {sentence}")
    return lines


def _counts(threads: list[int]) -> str:
    """1, 2 and 4 (each once, ascending)."""
    words = [f"{t:,}" for t in sorted(set(threads))]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
