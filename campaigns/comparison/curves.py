"""Where each product peaks, where it stops scaling, and what it gives within a latency limit.

Over a comparison group's thread ladder (one spec, one column: a product, its variant or its run), from the cells'
values (geometric means of the repetitions):

- the peak: the thread count of the highest QPS;
- the knee: the last thread count before scaling falls under half of ideal. From t1 to t2 threads, ideal
  scaling multiplies QPS by t2/t1; the step's efficiency is (q2/q1 − 1) / (t2/t1 − 1). The knee is the count
  before the first step whose efficiency is under campaigns.ladder.KNEE_EFFICIENCY (None while every step scales);
- at a latency limit (an SLA such as "p99 ≤ 50 ms", on the percentile the jobs measured): the thread count with
  the highest QPS whose percentile latency keeps to it, and the first count that does not.

Each is a measured thread count: between two of them the curve was not measured, and the sentence says "between".
Where the spec has a price per hour, the peak's and the SLA point's QPS per unit of price come with the 95%
interval of their cell's QPS divided by the same price.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaigns.comparison.formatting import shape_text
from campaigns.ladder import Point, knee_step


def _points(rows: list[dict[str, Any]], column: int) -> list[tuple[int, float, float | None, float | None]]:
    """(threads, qps, percentile latency, its percentile) of one column, by threads, cells with a QPS only."""
    out = []
    for row in rows:
        cell = row["cells"][column] if column < len(row["cells"]) else None
        if cell is None or cell["qps"].get("value") is None:
            continue
        out.append((int(row["threads"]), float(cell["qps"]["value"]), cell["latency_pct_ms"].get("value"),
                    cell.get("latency_pct")))
    return sorted(out)


def _per_price(rows: list[dict[str, Any]], column: int, threads: int | None, price: float | None
               ) -> dict[str, Any] | None:
    """QPS per unit of price per hour at one thread count, with the 95% interval of its cell's QPS (None without a
    price, or where that cell has no interval: one run)."""
    if threads is None or not price:
        return None
    cell = next((r["cells"][column] for r in rows if int(r["threads"]) == threads and column < len(r["cells"])), None)
    if cell is None or cell["qps"].get("value") is None:
        return None
    interval = cell.get("qps_ci95")
    return {"value": round(float(cell["qps"]["value"]) / price, 4),
            "ci95": [None if v is None else round(float(v) / price, 4) for v in interval] if interval else None}


def knee(points: list[tuple[int, float]]) -> int | None:
    """The last thread count before the first step that scales under half of ideal (module docstring): the adaptive
    ladder's rule (campaigns.ladder.knee_step), so that the knee it locates is the one this reports."""
    step = knee_step([Point(threads=t, qps=q) for t, q in points])
    return step[0] if step is not None else None


def curve(points: list[tuple[int, float, float | None, float | None]], *, sla_ms: float | None) -> dict[str, Any]:
    """Peak, knee and the SLA point of one ladder (threads ascending)."""
    if not points:
        return {"points": 0, "peak_threads": None, "peak_qps": None, "peak_is_last": False, "knee_threads": None,
                "sla_threads": None, "sla_qps": None, "sla_broken_at": None, "sla_pct": None}
    peak = max(points, key=lambda p: p[1])
    kept = [p for p in points if sla_ms is not None and p[2] is not None and p[2] <= sla_ms]
    best = max(kept, key=lambda p: p[1]) if kept else None
    broken = next((p[0] for p in points if sla_ms is not None and p[2] is not None and p[2] > sla_ms), None)
    return {
        "points": len(points), "peak_threads": peak[0], "peak_qps": round(peak[1], 2),
        "peak_is_last": peak[0] == points[-1][0] and len(points) > 1,
        "knee_threads": knee([(p[0], p[1]) for p in points]),
        "sla_threads": best[0] if best else None, "sla_qps": round(best[1], 2) if best else None,
        "sla_broken_at": broken, "sla_pct": next((p[3] for p in points if p[3] is not None), None),
    }


def _sentence(name: str, c: dict[str, Any], *, sla_ms: float | None, ladder: list[int]) -> str:
    if not c["points"]:
        return f"{name}: no measured cell."
    if c["points"] == 1:
        return f"{name}: one thread count measured ({c['peak_threads']:,}): no curve to find a peak on."
    text = f"{name} peaks at {c['peak_qps']:,.0f} QPS at {c['peak_threads']:,} threads"
    if c["peak_is_last"]:
        text += " (its highest measured count: the peak may lie beyond it)"
    else:
        i = ladder.index(c["peak_threads"])
        low = ladder[i - 1] if i > 0 else None
        high = ladder[i + 1] if i + 1 < len(ladder) else None
        if low is not None and high is not None:
            text += f" (the true peak lies between {low:,} and {high:,}: no count in between was measured)"
    text += (f"; it stops scaling after {c['knee_threads']:,} threads" if c["knee_threads"] is not None
             else "; it scales over the whole ladder")
    if sla_ms is not None:
        pct = c["sla_pct"]
        limit = f"p{pct:g} ≤ {sla_ms:g} ms" if pct is not None else f"latency ≤ {sla_ms:g} ms"
        if c["sla_threads"] is None:
            text += f"; no measured count keeps {limit}"
        else:
            text += f"; within {limit}: {c['sla_qps']:,.0f} QPS at {c['sla_threads']:,} threads"
            if c["sla_broken_at"] is not None and c["sla_broken_at"] > c["sla_threads"]:
                text += f" (broken at {c['sla_broken_at']:,})"
    return text + "."


def comparison_curves(comparison: Mapping[str, Any], *, sla_ms: float | None = None,
                      prices: Mapping[int, float] | None = None) -> list[dict[str, Any]]:
    """Every group's, spec's and column's curve (module docstring), in the comparison's order; with `prices`
    (price per hour by spec id), QPS per unit of price at the peak and at the SLA point, with their intervals."""
    out: list[dict[str, Any]] = []
    names = [p["name"] for p in comparison.get("products", [])]
    for g, group in enumerate(comparison.get("groups", [])):
        by_spec: dict[Any, list[dict[str, Any]]] = {}
        for row in group["rows"]:
            by_spec.setdefault((row.get("spec_id"), row.get("table_size"), row.get("tables")), []).append(row)
        unit = group.get("scenario", {}).get("size_unit", "")
        many_sizes = len({(size, tables) for _spec, size, tables in by_spec}) > 1
        for (spec_id, size, tables), rows in by_spec.items():
            # Where a table holds several sizes (a campaign's sizes per table), each curve names its own.
            at = f" ({shape_text(tables, size, unit or 'rows per table')})" if many_sizes and size and tables else ""
            for column, name in enumerate(names):
                points = _points(rows, column)
                if not points:
                    continue
                c = curve(points, sla_ms=sla_ms)
                ladder = [p[0] for p in points]
                price = (prices or {}).get(spec_id) if spec_id is not None else None
                c["peak_qps_per_price"] = _per_price(rows, column, c["peak_threads"], price)
                c["sla_qps_per_price"] = _per_price(rows, column, c["sla_threads"], price)
                out.append({"group": g, "spec_id": spec_id, "spec": rows[0].get("spec"), "column": column,
                            **c, "sla_ms": sla_ms,
                            "sentence": _sentence(f"{name}{at}", c, sla_ms=sla_ms, ladder=ladder)})
    return out
