"""Statistics on repeated measurements: cell summaries, noise, and significance of a difference.

Pure functions on lists of floats (no Django), so comparisons, regression checks and the API
all judge "within noise" the same way.
"""
from __future__ import annotations

import math
import statistics as pystats
from dataclasses import asdict, dataclass
from typing import Any

from scipy import stats as sstats

DEFAULT_NOISE_CV_PCT = 5.0
ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class CellStats:
    """Summary of one cell's repeated values (QPS, TPS or a latency)."""

    n: int
    median: float | None
    mean: float | None
    stdev: float | None
    cv_pct: float | None
    ci95_low: float | None
    ci95_high: float | None
    noisy: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cell_stats(values: list[float], *, noise_cv_pct: float = DEFAULT_NOISE_CV_PCT) -> CellStats:
    """Median, mean, standard deviation, coefficient of variation and a 95% CI of the mean
    (Student's t); a cell whose CV exceeds noise_cv_pct is noisy."""
    clean = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(clean)
    if n == 0:
        return CellStats(0, None, None, None, None, None, None, False)
    mean = pystats.fmean(clean)
    median = pystats.median(clean)
    if n == 1:
        return CellStats(1, median, mean, None, None, None, None, False)
    stdev = pystats.stdev(clean)
    cv = abs(stdev / mean) * 100 if mean else None
    half = float(sstats.t.ppf(0.975, n - 1)) * stdev / math.sqrt(n)
    return CellStats(n, median, mean, stdev, cv, mean - half, mean + half,
                     cv is not None and cv > noise_cv_pct)


@dataclass(frozen=True, slots=True)
class Difference:
    """How b differs from a: the change of the medians in percent and whether it is significant.

    significant is None when the data cannot tell (too few values on both sides).
    """

    change_pct: float | None
    significant: bool | None
    p_value: float | None
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def verdict(self) -> str:
        if self.change_pct is None:
            return "no data"
        if self.significant is None:
            return "untested"
        return "significant" if self.significant else "within noise"


def compare(baseline: list[float], current: list[float], *, fallback_baseline: list[float] | None = None,
            fallback_current: list[float] | None = None) -> Difference:
    """Is `current` different from `baseline`?

    - both sides with 2+ values: Welch's t-test;
    - one current value against 2+ baseline values: is it outside the 95% prediction interval of
      the baseline (a new observation from the same distribution would be inside 95% of the time);
    - otherwise, when given, the per-second samples of the runs (fallback_*) with Mann–Whitney U;
    - otherwise untested.
    """
    a = [float(v) for v in baseline if v is not None and math.isfinite(v)]
    b = [float(v) for v in current if v is not None and math.isfinite(v)]
    if not a or not b:
        return Difference(None, None, None, "no data")
    med_a, med_b = pystats.median(a), pystats.median(b)
    change = (med_b - med_a) / med_a * 100 if med_a else None
    if len(a) >= 2 and len(b) >= 2:
        if pystats.stdev(a) == 0 and pystats.stdev(b) == 0:
            return Difference(change, med_a != med_b, None, "welch-t (no variance)")
        result = sstats.ttest_ind(a, b, equal_var=False)
        p = float(result.pvalue)
        return Difference(change, p < ALPHA, p, "welch-t")
    if len(a) >= 2 and len(b) == 1:
        n = len(a)
        mean, sd = pystats.fmean(a), pystats.stdev(a)
        if sd == 0:
            return Difference(change, b[0] != mean, None, "prediction-interval (no variance)")
        t_stat = abs(b[0] - mean) / (sd * math.sqrt(1 + 1 / n))
        p = float(2 * sstats.t.sf(t_stat, n - 1))
        return Difference(change, p < ALPHA, p, "prediction-interval")
    fa = [float(v) for v in (fallback_baseline or []) if v is not None and math.isfinite(v)]
    fb = [float(v) for v in (fallback_current or []) if v is not None and math.isfinite(v)]
    if len(fa) >= 5 and len(fb) >= 5:
        p = float(sstats.mannwhitneyu(fa, fb, alternative="two-sided").pvalue)
        return Difference(change, p < ALPHA, p, "mann-whitney (per-second samples)")
    return Difference(change, None, None, "untested")
