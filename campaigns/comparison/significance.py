"""Whether each Δ% is larger than the runs' own noise, as the page marks it: one mark per Δ% column from the
significance comparison_build computed (Welch's t-test on log QPS, Benjamini–Hochberg over the comparison, the 95%
interval of the ratio of geometric means), and the clause a conclusion quotes, from the same marks."""
from __future__ import annotations

from collections.abc import Sequence

from campaigns.comparison.formatting import (
    EQUAL_WITHIN_PCT,
    VERDICT_TOO_FEW_RUNS,
    VERDICT_WITHIN,
    interval_figure,
    interval_text,
)
from campaigns.comparison.rows import ComparisonCell, ComparisonRow, Mark

SIGNIFICANCE_NOTE = ("Each QPS Δ% comes with its 95% confidence interval (of the ratio of geometric means) and says "
                     "whether the difference is significant: Welch's t-test on the logarithms of the repetitions' "
                     "QPS, its p-values adjusted with Benjamini–Hochberg over every Δ% tested on the page, "
                     "significant when the adjusted p < 0.05. \"too few runs to tell (n = 2)\" names the "
                     "repetitions behind it; a cell of 1 run is untested, and says so.")


def n_text(n_base: int, n_other: int) -> str:
    """"n = 3" when both sides have as many runs, else "n = 3 vs 2" (baseline first)."""
    return f"n = {n_base}" if n_base == n_other else f"n = {n_base} vs {n_other}"


PUBLISHED_MARK: Mark = {"verdict": "unknown", "text": "published figure: untested", "p_value": None, "p_adjusted": None,
                  "n": 1, "interval": "", "sentence": "",
                  "title": "A published figure is a single number: there are no repetitions to test."}


def mark_of(base: ComparisonCell | None, cell: ComparisonCell | None) -> Mark | None:
    """The page's mark of one Δ% cell, from the significance comparison_build computed for it (the same numbers as
    the API's): its verdict, a short text, the interval, the sentence and a title with the p-values. None where
    either cell is empty (no Δ%)."""
    if base is None or cell is None:
        return None
    if base.get("published") or cell.get("published"):
        return PUBLISHED_MARK.copy()
    sig = cell.get("significance")
    if not sig:
        return None
    n = n_text(sig["n_base"], sig["n_other"])
    title = sig["sentence"]
    if sig["p_value"] is not None:
        title += (f". Welch's t-test on log QPS, {n}: p = {sig['p_value']:.2g}, adjusted p = {sig['p_adjusted']:.2g} "
                  f"(Benjamini–Hochberg over the {sig['tested']} Δ% tested here)")
    return {"verdict": sig["verdict"], "text": sig["text"], "p_value": sig["p_value"], "p_adjusted": sig["p_adjusted"],
            "n": min(sig["n_base"], sig["n_other"]), "n_text": n, "interval": interval_text(sig["ci95_pct"]),
            "interval_figure": interval_figure(sig["ci95_pct"]),
            "ci95_pct": sig["ci95_pct"], "sentence": sig["sentence"], "runs_needed": sig["runs_needed"],
            "change_pct": sig["change_pct"], "n_base": sig["n_base"], "n_other": sig["n_other"], "title": title}


def row_marks(row: ComparisonRow) -> list[Mark | None]:
    """One significance mark per Δ% column of a row (each product against the first)."""
    cells = row["cells"]
    base = cells[0] if cells else None
    return [mark_of(base, cell) for cell in cells[1:]]


def _n_range(marks: Sequence[Mark]) -> str:
    low, high = min(m["n"] for m in marks), max(m["n"] for m in marks)
    return f"n = {low}" if low == high else f"n = {low}–{high}"


def verdict_clause(marks: Sequence[Mark]) -> str:
    """How many of a pair's rows differ significantly, in the marks' own words: "significant in 2 of 4 rows,
    too few runs to tell in 1 (n = 2), untested in 1 (n = 1)"; "" when no row has a mark."""
    if not marks:
        return ""
    total = len(marks)
    significant = [m for m in marks if m["verdict"] == "significant"]
    within = [m for m in marks if m["verdict"] == VERDICT_WITHIN]
    not_significant = [m for m in marks if m["verdict"] == VERDICT_TOO_FEW_RUNS]
    untested = [m for m in marks if m["verdict"] == "untested"]
    published = [m for m in marks if m["verdict"] == "unknown"]
    rows = f"row{'s' if total > 1 else ''}"
    parts = []
    if significant:
        parts.append(f"significant in {len(significant)} of {total} {rows} ({_n_range(significant)}, adjusted "
                     f"p < 0.05)")
    if not_significant:
        parts.append(f"too few runs to tell in {len(not_significant)}{'' if parts else f' of {total} {rows}'} "
                     f"({_n_range(not_significant)})")
    if within:
        parts.append(f"within ±{EQUAL_WITHIN_PCT:g}% in {len(within)}{'' if parts else f' of {total} {rows}'} "
                     f"({_n_range(within)})")
    if untested:
        parts.append(f"untested in {len(untested)}{'' if parts else f' of {total} {rows}'} ({_n_range(untested)})")
    if published:
        parts.append(f"untested in {len(published)}{'' if parts else f' of {total} {rows}'} (published figures)")
    return ", ".join(parts)
