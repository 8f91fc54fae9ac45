"""Whether each Δ% is larger than the runs' own noise: the repetitions' QPS per cell (one query), Welch's t-test
on them, one mark per Δ% column, and the clause a conclusion quotes."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count

from campaigns.comparison.formatting import fmt_number
from campaigns.comparison.selection import Selection
from campaigns.statistics import cell_stats
from campaigns.statistics import compare as difference_test

CellKey = tuple[Any, ...]  # (scenario id, spec id, threads, table size, tables, product id)
ONE_RUN = "1 run: significance unknown"
SIGNIFICANCE_NOTE = ("Each Δ% says whether the difference is significant or within noise (Welch's t-test on the "
                     "repetitions' QPS, p < 0.05); a cell of 1 run cannot tell, and says so.")


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


def significance(base: dict[str, Any] | None, other: dict[str, Any] | None, base_values: list[float] | None,
                 other_values: list[float] | None) -> dict[str, Any] | None:
    """Whether one Δ% cell differs from its baseline by more than the runs' own noise.

    Both cells need two or more repetitions: then campaigns.statistics.compare tests them (Welch's t-test, the
    test the regression checks use). A single run, or a published figure, says nothing about noise, and the
    mark says so instead of claiming anything. None where either cell is empty (no Δ%).
    """
    if base is None or other is None:
        return None
    if base.get("published") or other.get("published"):
        return {"verdict": "unknown", "text": "published figure: significance unknown", "p_value": None,
                "title": "A published figure is a single number: there are no repetitions to test."}
    if base["n"] < 2 or other["n"] < 2 or len(base_values or ()) < 2 or len(other_values or ()) < 2:
        return {"verdict": "unknown", "text": ONE_RUN, "p_value": None,
                "title": f"{base['n']} vs {other['n']} runs: testing a difference needs 2 or more runs of each."}
    assert base_values is not None and other_values is not None
    difference = difference_test(base_values, other_values)
    verdict = difference.verdict()
    if verdict not in ("significant", "within noise"):
        return {"verdict": "unknown", "text": f"significance unknown ({verdict})", "p_value": None,
                "title": difference.method}
    runs = f"{len(base_values)} vs {len(other_values)} runs"
    if difference.p_value is None:
        test = f"every run gave the same QPS on each side ({runs})"
    else:
        test = f"Welch's t-test on {runs}: p = {difference.p_value:.2g}"
    title = (f"{verdict}: {test}; 95% CI of the mean QPS {_ci_text(base_values)} (baseline) vs "
             f"{_ci_text(other_values)}")
    return {"verdict": verdict, "text": verdict, "p_value": difference.p_value, "title": title}


def _row_marks(group: dict[str, Any], row: dict[str, Any], values: dict[CellKey, list[float]]) -> list[Any]:
    """One significance mark per Δ% column of a row (each product against the first)."""
    cells = row["cells"]

    def runs(cell: dict[str, Any] | None) -> list[float] | None:
        if cell is None or cell.get("published"):
            return None
        return values.get((group["scenario"]["id"], row["spec_id"], row["threads"], row["table_size"], row["tables"],
                           cell["product_id"]))

    base = cells[0] if cells else None
    return [significance(base, cell, runs(base), runs(cell)) for cell in cells[1:]]


def _significance_clause(table: dict[str, Any], other: int) -> str:
    """How many of a pair's rows differ significantly, where repetitions let that be tested."""
    marks = [row["marks"][other - 1] for row in table["rows"] if row["marks"][other - 1] is not None]
    tested = [m for m in marks if m["verdict"] != "unknown"]
    if not tested:
        return ""
    significant = sum(1 for m in tested if m["verdict"] == "significant")
    return (f"; the difference is significant in {significant} of {len(tested)} repeated "
            f"row{'s' if len(tested) > 1 else ''} (Welch's t-test, p < 0.05)")
