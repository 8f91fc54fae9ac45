"""Each cell against its row's baseline: Δ%, its 95% intervals, the QPS significance test and why it differs.

The last of the comparison's parts (after comparison.grid): it reads each cell's figures by its CellId and writes
into the laid-out cells. Δ% is the ratio of geometric means − 1; its interval and Welch's t-test work on the
logarithms of the repetitions (campaigns.statistics), and the p-values of every QPS Δ% of the comparison are
adjusted together (Benjamini–Hochberg) before any is called significant.
"""
from __future__ import annotations

from campaigns.comparison.aggregate import MetricFigures
from campaigns.comparison.costs import why
from campaigns.comparison.formatting import delta_sentence, delta_short, verdict_of
from campaigns.comparison.grid import Figures, cell_id, rounded
from campaigns.comparison.rows import METRICS, ComparisonCell, ComparisonGroup, Metric, Significance
from campaigns.statistics import ALPHA, RatioInterval, adjust_many, geometric_mean_interval, ratio_interval


def delta_pct(value: float | None, base: float | None) -> float | None:
    """Δ% of a cell against its baseline: the ratio of their values − 1, in percent; None without both."""
    if value is None or base is None or base == 0:
        return None
    return rounded((value / base - 1) * 100, 2)


def deltas_apply(groups: list[ComparisonGroup], figures: Figures, column_names: list[str]) -> None:
    """Every cell's Δ% and intervals against its row's first cell, then the adjusted significance of every QPS
    Δ%, then why each significant one is what it is."""
    marks: list[Significance] = []
    for group in groups:
        for row in group["rows"]:
            base = row["cells"][0]
            base_figures = figures.get(cell_id(group, row, 0))
            for i, each in enumerate(row["cells"]):
                if each is None:
                    continue
                mine = figures[cell_id(group, row, i)]
                each["delta_pct"] = {metric: None if i == 0 or base is None
                                     else delta_pct(each[metric]["value"], base[metric]["value"])
                                     for metric in METRICS}
                if i == 0 or base is None or base_figures is None:
                    each["delta_ci95_pct"], each["significance"] = {metric: None for metric in METRICS}, None
                else:
                    marks.append(_mark(each, base, _interval(each, mine, base_figures)))
                each["qps_ci95"] = _value_interval(mine["qps"])
    _adjust(marks)
    for group in groups:
        for row in group["rows"]:
            base = row["cells"][0]
            for i, each in enumerate(row["cells"]):
                sig = each.get("significance") if each is not None else None
                if each is not None and base is not None and sig and sig.get("verdict") == "significant":
                    each["why"] = why(dict(each), dict(base), name=column_names[i], base_name=column_names[0])


def _interval(entry: ComparisonCell, mine: dict[Metric, MetricFigures], theirs: dict[Metric, MetricFigures]
              ) -> RatioInterval | None:
    """A cell's Δ% intervals against its baseline, per metric ([low, high] in percent, or None); returns the QPS
    one as campaigns.statistics computed it."""
    entry["delta_ci95_pct"] = {}
    intervals: dict[Metric, RatioInterval | None] = {}
    for metric in METRICS:
        interval = intervals[metric] = _metric_interval(mine[metric], theirs[metric])
        entry["delta_ci95_pct"][metric] = (None if interval is None or interval.low_pct is None
                                           else [rounded(interval.low_pct, 2), rounded(interval.high_pct, 2)])
    return intervals["qps"]


def _mark(entry: ComparisonCell, base: ComparisonCell, qps: RatioInterval | None) -> Significance:
    """The QPS Δ%'s significance before the correction ("pending" where a p-value is to be adjusted), from the
    QPS interval."""
    ci = entry["delta_ci95_pct"]["qps"]
    mark: Significance = {"verdict": "untested", "p_value": None, "p_adjusted": None, "n_base": base["qps"]["n"],
                          "n_other": entry["qps"]["n"], "ci95_pct": ci, "runs_needed": None,
                          "change_pct": entry["delta_pct"]["qps"]}
    if qps is not None and qps.low_pct is not None:
        mark["runs_needed"] = qps.runs_needed
        if qps.p_value is None:  # no variance on either side: the difference is exact
            mark["verdict"] = verdict_of(significant=qps.change_pct != 0, ci=ci)
        else:
            mark["verdict"], mark["p_value"] = "pending", qps.p_value
    entry["significance"] = mark
    return mark


def _value_interval(m: MetricFigures) -> list[float | None] | None:
    """A cell's 95% interval of its geometric mean, [low, high], from 2 runs (all positive) up; else None."""
    if not m.n or m.positive != m.n or m.log_mean is None:
        return None
    interval = geometric_mean_interval(n=m.n, log_mean=m.log_mean, log_sd=m.log_sd)
    return None if interval is None else [rounded(interval[0]), rounded(interval[1])]


def _metric_interval(other: MetricFigures, base: MetricFigures) -> RatioInterval | None:
    # Logarithms need every run positive on both sides; otherwise the Δ% has no interval.
    if (not base.n or not other.n or base.positive != base.n or other.positive != other.n or base.log_mean is None
            or other.log_mean is None):
        return None
    return ratio_interval(n_base=base.n, log_mean_base=base.log_mean, log_sd_base=base.log_sd, n_other=other.n,
                          log_mean_other=other.log_mean, log_sd_other=other.log_sd)


def _adjust(marks: list[Significance]) -> None:
    """Benjamini–Hochberg over the comparison's tested QPS Δ%, then each mark's words."""
    pending = [m for m in marks if m["verdict"] == "pending"]
    for mark, p_adjusted in zip(pending, adjust_many([m["p_value"] for m in pending]), strict=True):
        mark["p_adjusted"] = p_adjusted
        significant = p_adjusted is not None and p_adjusted < ALPHA
        mark["verdict"] = verdict_of(significant=significant, ci=mark["ci95_pct"])
    for mark in marks:
        mark["tested"] = len(pending)
        mark["text"] = delta_short(mark)
        mark["sentence"] = delta_sentence(mark)
