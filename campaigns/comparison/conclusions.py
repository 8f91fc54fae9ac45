"""The one line under each table, written from its numbers: who is faster and by how much, where the
difference is within noise, and where a QPS curve peaks."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from campaigns.comparison.formatting import fmt_number
from campaigns.comparison.significance import _significance_clause

# Differences smaller than this (or than twice the cells' own coefficient of variation, when
# repetitions give one) are called noise.
NOISE_PCT = 5.0
# Beyond this many specs a table gets grouped bars per spec instead of one line per product and spec.
MAX_LINE_SPECS = 4


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
                f"row{'s' if len(lead) > 1 else ''}, {leader} ahead by {mean_lead:.1f}% on average"
                + (_significance_clause(table, other) if base == 0 else ""))
    text = f"{leader} is faster than {follower}: {mean_lead:.1f}% more QPS on average"
    if len(lead) > 1:
        low = min(lead, key=lambda item: item[1])
        high = max(lead, key=lambda item: item[1])
        text += (f", from {low[1]:+.1f}% at {_where(low[0], many_specs, many_sizes)} to "
                 f"{high[1]:+.1f}% at {_where(high[0], many_specs, many_sizes)}")
        if within:
            text += f"; within noise (±{NOISE_PCT:.0f}%) in {within} of {len(lead)} rows"
    if base == 0:
        text += _significance_clause(table, other)
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
