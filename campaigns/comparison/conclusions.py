"""The one line under each table, written from its numbers: how each product compares with the first (the table's
Δ% direction), on average and at the extremes, with the verdicts of the table's significance marks, and where a
QPS curve peaks."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from campaigns.comparison.formatting import (
    TOO_NOISY,
    VERDICT_TOO_FEW_RUNS,
    VERDICT_WITHIN,
    fmt_number,
    sentence_for_text,
)
from campaigns.comparison.rows import ComparisonCell, ComparisonRow, ComparisonTable, Mark
from campaigns.comparison.significance import verdict_clause

# A QPS curve "falls" after its peak only when its last point is this much lower (a smaller dip is noise).
NOISE_PCT = 5.0
# Beyond this many specs a table gets grouped bars per spec instead of one line per product and spec.
MAX_LINE_SPECS = 4


def _where(row: ComparisonRow, many_specs: bool, many_sizes: bool, unit: str = "") -> str:
    parts = []
    if many_specs and row["spec"]:
        parts.append(row["spec"])
    parts.append(f"{row['threads']:,} thread{'s' if row['threads'] != 1 else ''}")
    if many_sizes:
        parts.append(f"{row['tables']} × {row['table_size']:,} {unit or 'rows'}")
    return ", ".join(parts)


UNTRUSTED = ("suspect", "invalid")


def untrusted(cell: ComparisonCell | None) -> bool:
    """Whether a cell holds a job whose validity findings say not to trust it."""
    return cell is not None and cell.get("verdict") in UNTRUSTED


def _extreme(item: tuple[ComparisonRow, float, Mark | None], many_specs: bool, many_sizes: bool,
             unit: str = "") -> str:
    row, ratio, mark = item
    ci = "" if not mark or not mark.get("interval") else (
        f" ({TOO_NOISY})" if mark["interval"] == TOO_NOISY else f" (95% CI {mark['interval']})")
    return f"{(ratio - 1) * 100:+.1f}%{ci} at {_where(row, many_specs, many_sizes, unit)}"


def _pairs(table: ComparisonTable, base: int, other: int, *,
           include_untrusted: bool) -> tuple[list[tuple[ComparisonRow, float, Mark | None]], int]:
    """The rows where both cells have a positive QPS, as (row, other's QPS / base's, the row's mark against the
    base), and how many were left out for a suspect or invalid cell (none with include_untrusted)."""
    pairs: list[tuple[ComparisonRow, float, Mark | None]] = []
    left_out = 0
    for row in table["rows"]:
        a, b = row["cells"][base], row["cells"][other]
        if a is None or b is None or not a["qps"]["value"] or not b["qps"]["value"]:
            continue
        if a["qps"]["value"] < 0 or b["qps"]["value"] < 0:
            continue
        if not include_untrusted and (untrusted(a) or untrusted(b)):
            left_out += 1
            continue
        mark = row["marks"][other - 1] if base == 0 and row.get("marks") else None
        pairs.append((row, b["qps"]["value"] / a["qps"]["value"], mark))
    return pairs, left_out


def _pair_clause(table: ComparisonTable, base: int, other: int, names: Sequence[str], *,
                 include_untrusted: bool = False) -> str | None:
    """How the other product compares with the base one, in the table's direction (other against base): the
    geometric mean of the rows' QPS ratios − 1, the range of the rows' Δ% with their 95% intervals, and the rows'
    significance verdicts (the table's marks, so the sentence never contradicts them). Rows where either cell is
    suspect or invalid are left out unless include_untrusted, and the sentence says how many."""
    many_specs, many_sizes = table["many_specs"], table["many_sizes"]
    unit = table["scenario"].get("size_unit", "")
    pairs, left_out = _pairs(table, base, other, include_untrusted=include_untrusted)
    a_name, b_name = names[base], names[other]
    out_text = (f"{left_out} row{'s' if left_out > 1 else ''} with suspect or invalid cells left out"
                if left_out else "")
    if not pairs:
        if not left_out:
            return None
        return (f"No row has trusted results of both {b_name} and {a_name} ({out_text}): include untrusted cells "
                "to see their difference, knowing their figures may measure something else")
    # The geometric mean of the ratios is symmetric: "B is 25% faster than A" is "A is 20% slower than B".
    mean_pct = (math.exp(statistics.fmean(math.log(r) for _, r, _ in pairs)) - 1) * 100
    marks = [m for _, _, m in pairs if m is not None]
    significant = any(m["verdict"] == "significant" for m in marks)
    if len(pairs) == 1:
        mark = pairs[0][2]
        if mark and mark.get("sentence"):
            where = _where(pairs[0][0], many_specs, many_sizes, unit)
            lead = (f"{b_name} is {'faster' if mean_pct >= 0 else 'slower'} than {a_name}"
                    if mark["verdict"] == "significant" else f"{b_name} against {a_name}")
            text = f"{lead} at {where}: {sentence_for_text(mark)}"
        else:
            text = f"{b_name} against {a_name}: {mean_pct:+.1f}% QPS"
    else:
        average = f"{mean_pct:+.1f}% QPS on average (geometric mean of the {len(pairs)} rows' ratios)"
        if significant:
            text = f"{b_name} is {'faster' if mean_pct >= 0 else 'slower'} than {a_name}: {average}"
        elif any(m["verdict"] in (VERDICT_TOO_FEW_RUNS, VERDICT_WITHIN) for m in marks):
            text = f"Too few runs to tell {b_name} from {a_name}: {b_name} {average}"
        else:
            text = f"{b_name} against {a_name}, untested: {average}"
        low = min(pairs, key=lambda item: item[1])
        high = max(pairs, key=lambda item: item[1])
        text += (f", from {_extreme(low, many_specs, many_sizes, unit)} to {_extreme(high, many_specs, many_sizes, unit)}")
        clause = verdict_clause(marks)
        if clause:
            text += f"; {clause}"
    if out_text:
        text += f" ({out_text})"
    # Untrusted cells counted in (include_untrusted): the sentence itself says so, not only the banner above it.
    counted = sum(1 for row, _, _ in pairs if untrusted(row["cells"][base]) or untrusted(row["cells"][other]))
    if counted == len(pairs):
        text = f"From suspect or invalid cells only, whose figures may measure something else: {text}"
    elif counted:
        text += f" ({counted} of {len(pairs)} rows from suspect or invalid cells)"
    return text


def _peak_clauses(table: ComparisonTable, names: Sequence[str], *, include_untrusted: bool = False) -> list[str]:
    """Where a product's QPS curve peaks and then falls, per spec, when there are enough trusted points (untrusted
    ones too if include_untrusted)."""
    falls: list[str] = []
    rising = curves = 0
    specs = table["spec_order"]
    if len(specs) > MAX_LINE_SPECS:
        return []
    for index, name in enumerate(names):
        for spec in specs:
            points = [(row["threads"], value) for row in table["rows"]
                      if row["spec"] == spec and (cell := row["cells"][index]) is not None
                      and (include_untrusted or not untrusted(cell))
                      and (value := cell["qps"]["value"]) is not None]
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


def conclusion(table: ComparisonTable, names: Sequence[str], *, include_untrusted: bool = False) -> str:
    """One line from the numbers: who is faster and by how much, where within noise, where curves peak; from the
    trusted cells unless include_untrusted."""
    present = [i for i in range(len(names)) if any(row["cells"][i] is not None for row in table["rows"])]
    clauses: list[str] = []
    if len(present) == 1:
        only = present[0]
        # The cells' own statistic (the geometric mean of the repetitions, as the table shows it), from the cells
        # the banner counts: untrusted ones only when the reader included them.
        best = max(((row, cell) for row in table["rows"] if (cell := row["cells"][only]) and cell["qps"]["value"]
                    and (include_untrusted or not untrusted(cell))),
                   key=lambda pair: pair[1]["qps"]["value"] or 0.0, default=None)
        if best is not None:
            clauses.append(f"Only {names[only]} has results here; its best is "
                           f"{fmt_number(best[1]['qps']['value'])} QPS at "
                           f"{_where(best[0], table['many_specs'], table['many_sizes'], table['scenario'].get('size_unit', ''))}")
        elif any(row["cells"][only] for row in table["rows"]):
            clauses.append(f"Only {names[only]} has results here, and none is trusted: include untrusted cells to "
                           "see them, knowing their figures may measure something else")
    else:
        base = present[0] if present else 0
        for other in present[1:]:
            clause = _pair_clause(table, base, other, names, include_untrusted=include_untrusted)
            if clause:
                clauses.append(clause)
        if not clauses and present:
            clauses.append("The products were never measured on the same rows, so no difference can be stated")
    clauses += _peak_clauses(table, names, include_untrusted=include_untrusted)
    if not clauses:
        return "No results."
    return "; ".join(clauses) + "."
