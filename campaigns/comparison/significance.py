"""Whether each Δ% is larger than the runs' own noise: the repetitions' QPS per cell (one query), Welch's t-test
on them (campaigns.statistics.compare), Benjamini–Hochberg over every Δ% of one comparison, one mark per Δ% column,
and the clause a conclusion quotes, from the same marks."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count

from campaigns.comparison.formatting import fmt_number
from campaigns.comparison.selection import Selection
from campaigns.lazy import LazyModule
from campaigns.statistics import ALPHA, cell_stats
from campaigns.statistics import compare as difference_test

if TYPE_CHECKING:
    from scipy import stats as sstats
else:  # imported on first use (campaigns/lazy.py)
    sstats = LazyModule("scipy.stats")

CellKey = tuple[Any, ...]  # (scenario id, spec id, threads, table size, tables, product id)
SIGNIFICANCE_NOTE = ("Each Δ% says whether the difference is significant: Welch's t-test on the logarithms of the "
                     "repetitions' QPS, its p-values adjusted with Benjamini–Hochberg over every Δ% tested on the "
                     "page, significant when the adjusted p < 0.05. \"not significant (n = 2)\" names the "
                     "repetitions behind it; a cell of 1 run is untested, and says so.")


def repetition_values(selection: Selection, groups: Sequence[dict[str, Any]]) -> dict[CellKey, list[float]]:
    """The QPS of every repetition of the cells measured two or more times, keyed like the rows' cells.

    One grouped query over the same jobs as comparison_build, and none when no cell was repeated: the medians
    it returns cannot say whether a difference is larger than the runs' own spread.
    """
    if not any(c is not None and c["n"] >= 2 for g in groups for r in g["rows"] for c in r["cells"]):
        return {}
    rows = (selection.jobs()
            .values("scenario_id", "target__spec_id", "threads", "table_size", "tables", "target__product_id")
            .annotate(runs=Count("id"), qps_values=ArrayAgg("result__qps")).filter(runs__gte=2).order_by()
            .values_list("scenario_id", "target__spec_id", "threads", "table_size", "tables", "target__product_id",
                         "qps_values"))
    return {tuple(r[:6]): [v for v in r[6] if v is not None] for r in rows}


def _ci_text(values: list[float]) -> str:
    summary = cell_stats(values)
    return f"{fmt_number(summary.ci95_low)}–{fmt_number(summary.ci95_high)}"


def n_text(n_base: int, n_other: int) -> str:
    """"n = 3" when both sides have as many runs, else "n = 3 vs 2" (baseline first)."""
    return f"n = {n_base}" if n_base == n_other else f"n = {n_base} vs {n_other}"


def significance(base: dict[str, Any] | None, other: dict[str, Any] | None, base_values: list[float] | None,
                 other_values: list[float] | None) -> dict[str, Any] | None:
    """Whether one Δ% cell differs from its baseline by more than the runs' own noise, before the correction for
    the many Δ% of the comparison (adjust_marks sets the final verdict of the tested ones).

    Both cells need two or more repetitions: then campaigns.statistics.compare tests them (Welch's t-test on log
    values, the test the regression checks use). A single run, or a published figure, says nothing about noise,
    and the mark says so instead of claiming anything. None where either cell is empty (no Δ%).
    """
    if base is None or other is None:
        return None
    if base.get("published") or other.get("published"):
        return {"verdict": "unknown", "text": "published figure: untested", "p_value": None, "p_adjusted": None,
                "n": 1, "title": "A published figure is a single number: there are no repetitions to test."}
    n_base, n_other = len(base_values or ()), len(other_values or ())
    if base["n"] < 2 or other["n"] < 2 or n_base < 2 or n_other < 2:
        n_base, n_other = min(base["n"], n_base or 1), min(other["n"], n_other or 1)
        return {"verdict": "untested", "text": f"untested ({n_text(n_base, n_other)})", "p_value": None,
                "p_adjusted": None, "n": min(n_base, n_other),
                "title": f"{n_base} vs {n_other} runs: testing a difference needs 2 or more runs of each."}
    assert base_values is not None and other_values is not None
    difference = difference_test(base_values, other_values)
    n = n_text(n_base, n_other)
    mark: dict[str, Any] = {"p_value": difference.p_value, "p_adjusted": None, "n": min(n_base, n_other),
                            "n_text": n, "method": difference.method,
                            "ci": f"95% CI of the mean QPS {_ci_text(base_values)} (baseline) vs "
                                  f"{_ci_text(other_values)}"}
    if difference.significant is None:
        mark.update(verdict="untested", text=f"untested ({n})", title=f"{difference.method}; {mark['ci']}")
        return mark
    if difference.p_value is None:
        # Every run gave the same QPS on each side: no p-value to adjust, the difference is exact.
        verdict = "significant" if difference.significant else "not significant"
        mark.update(verdict=verdict, text=f"{verdict} ({n})",
                    title=f"{verdict}: every run gave the same QPS on each side ({n}); {mark['ci']}")
        return mark
    mark.update(verdict="pending", text="", title="")
    return mark


def adjust_marks(marks: Iterable[dict[str, Any] | None]) -> int:
    """Benjamini–Hochberg over the tested marks of one comparison: each gets its adjusted p, its verdict
    (significant when the adjusted p < 0.05), its text and a title naming both p-values. Returns how many."""
    pending = [m for m in marks if m is not None and m["verdict"] == "pending"]
    if not pending:
        return 0
    adjusted = sstats.false_discovery_control([m["p_value"] for m in pending], method="bh")
    for mark, p_adjusted in zip(pending, adjusted, strict=True):
        mark["p_adjusted"] = float(p_adjusted)
        verdict = "significant" if p_adjusted < ALPHA else "not significant"
        mark["verdict"], mark["text"] = verdict, f"{verdict} ({mark['n_text']})"
        scale = "log QPS" if "log" in mark["method"] else "QPS"
        mark["title"] = (f"{verdict}: Welch's t-test on {scale}, {mark['n_text']}: p = {mark['p_value']:.2g}, "
                         f"adjusted p = {p_adjusted:.2g} (Benjamini–Hochberg over the {len(pending)} Δ% tested "
                         f"here); {mark['ci']}")
    return len(pending)


def _row_marks(group: dict[str, Any], row: dict[str, Any], values: dict[CellKey, list[float]]) -> list[Any]:
    """One significance mark per Δ% column of a row (each product against the first), before adjust_marks."""
    cells = row["cells"]

    def runs(cell: dict[str, Any] | None) -> list[float] | None:
        if cell is None or cell.get("published"):
            return None
        return values.get((group["scenario"]["id"], row["spec_id"], row["threads"], row["table_size"], row["tables"],
                           cell["product_id"]))

    base = cells[0] if cells else None
    return [significance(base, cell, runs(base), runs(cell)) for cell in cells[1:]]


def _n_range(marks: Sequence[dict[str, Any]]) -> str:
    low, high = min(m["n"] for m in marks), max(m["n"] for m in marks)
    return f"n = {low}" if low == high else f"n = {low}–{high}"


def verdict_clause(marks: Sequence[dict[str, Any]]) -> str:
    """How many of a pair's rows differ significantly, in the marks' own words: "significant in 2 of 4 rows,
    not significant in 1 (n = 2), untested in 1 (n = 1)"; "" when no row has a mark."""
    if not marks:
        return ""
    total = len(marks)
    significant = [m for m in marks if m["verdict"] == "significant"]
    not_significant = [m for m in marks if m["verdict"] == "not significant"]
    untested = [m for m in marks if m["verdict"] == "untested"]
    published = [m for m in marks if m["verdict"] == "unknown"]
    rows = f"row{'s' if total > 1 else ''}"
    parts = []
    if significant:
        parts.append(f"significant in {len(significant)} of {total} {rows} ({_n_range(significant)}, adjusted "
                     f"p < 0.05)")
    if not_significant:
        parts.append(f"not significant in {len(not_significant)}{'' if parts else f' of {total} {rows}'} "
                     f"({_n_range(not_significant)})")
    if untested:
        parts.append(f"untested in {len(untested)}{'' if parts else f' of {total} {rows}'} ({_n_range(untested)})")
    if published:
        parts.append(f"untested in {len(published)}{'' if parts else f' of {total} {rows}'} (published figures)")
    return ", ".join(parts)
