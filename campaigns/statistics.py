"""Statistics on repeated measurements: cell summaries, noise, and significance of a difference.

Pure functions on lists of floats (no Django), so comparisons, regression checks and the API
all judge "within noise" the same way.
"""
from __future__ import annotations

import math
import statistics as pystats
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from campaigns.lazy import LazyModule

if TYPE_CHECKING:
    import numpy as np
    from scipy import stats as sstats
else:  # imported on first use (campaigns/lazy.py)
    np = LazyModule("numpy")
    sstats = LazyModule("scipy.stats")


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
    """How b differs from a: the change of the geometric means in percent and whether it is significant.

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


def _finite(values: list[float] | None) -> list[float]:
    return [float(v) for v in (values or []) if v is not None and math.isfinite(v)]


def geometric_mean(values: list[float]) -> float | None:
    """The geometric mean of positive values (the statistic a Δ% between repeated cells compares); the
    arithmetic mean when any value is zero or negative, where logarithms do not exist."""
    clean = _finite(values)
    if not clean:
        return None
    if min(clean) == max(clean):
        return clean[0]  # exactly, without a round trip through logarithms
    if min(clean) <= 0:
        return pystats.fmean(clean)
    return math.exp(pystats.fmean(math.log(v) for v in clean))


def _log_scale(a: list[float], b: list[float]) -> bool:
    return min(a) > 0 and min(b) > 0


def compare(baseline: list[float], current: list[float], *, fallback_baseline: list[float] | None = None,
            fallback_current: list[float] | None = None, min_abs_change: float = 0.0,
            run_cv_pct: float = 0.0) -> Difference:
    """Is `current` different from `baseline`? Each value is one repetition (or one run); Δ% is the ratio of the
    two sides' geometric means, the statistic the test compares (a t-test on log values compares exactly that).

    - both sides with 2+ values: Welch's t-test on the log values;
    - one current value against 2+ baseline values: is it outside the 95% prediction interval of the baseline
      (log scale: a new observation from the same distribution is inside 95% of the time);
    - otherwise, when given, the per-second samples of the two sides (fallback_*), by Welch's t-test on their
      batch means: seconds are autocorrelated, so a test on single seconds (a rank test, as before) claims far
      more certainty than they hold; batches longer than the series' memory are close to independent;
    - otherwise untested.

    min_abs_change: a difference no larger than this, in the values' own unit, is never significant (a
    latency percentile read from a histogram cannot move by less than one bucket or one printed digit).
    run_cv_pct: when both sides are the repetitions of one run each, what varies from run to run whatever the
    repetitions (measured on the campaign's history): each side's mean carries it once more, so the test's
    variance gains 2 × run_cv² and two runs of an unchanged system are not called different for it.
    """
    a, b = _finite(baseline), _finite(current)
    if not a or not b:
        return Difference(None, None, None, "no data")
    mean_a, mean_b = geometric_mean(a), geometric_mean(b)
    assert mean_a is not None and mean_b is not None
    change = (mean_b - mean_a) / mean_a * 100 if mean_a else None
    if abs(mean_b - mean_a) <= min_abs_change:
        return Difference(change, False, None, "below the measurement's resolution")
    logs = _log_scale(a, b)
    la = [math.log(v) for v in a] if logs else a
    lb = [math.log(v) for v in b] if logs else b
    scale = "log " if logs else ""
    if len(la) >= 2 and len(lb) >= 2:
        if pystats.stdev(la) == 0 and pystats.stdev(lb) == 0:
            return Difference(change, mean_a != mean_b, None, f"welch-t on {scale}values (no variance)")
        if run_cv_pct > 0 and logs:
            va, vb = pystats.variance(la) / len(la), pystats.variance(lb) / len(lb)
            known = 2 * math.log1p(run_cv_pct / 100) ** 2
            # Welch–Satterthwaite degrees of freedom, the run-to-run part counted as known (it is measured on the
            # campaign's many earlier runs, not on these few repetitions).
            estimated = va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1)
            df = (va + vb + known) ** 2 / estimated if estimated > 0 else 1e6
            spread = math.sqrt(va + vb + known)
            t_stat = abs(pystats.fmean(lb) - pystats.fmean(la)) / spread
            p = float(2 * sstats.t.sf(t_stat, max(1.0, df)))
            return Difference(change, p < ALPHA, p, f"welch-t on log values + run-to-run noise {run_cv_pct:.1f}%")
        p = float(sstats.ttest_ind(la, lb, equal_var=False).pvalue)
        return Difference(change, p < ALPHA, p, f"welch-t on {scale}values")
    if len(la) >= 2 and len(lb) == 1:
        n = len(la)
        mean, sd = pystats.fmean(la), pystats.stdev(la)
        if sd == 0:
            return Difference(change, lb[0] != mean, None, "prediction-interval (no variance)")
        t_stat = abs(lb[0] - mean) / (sd * math.sqrt(1 + 1 / n))
        p = float(2 * sstats.t.sf(t_stat, n - 1))
        return Difference(change, p < ALPHA, p, f"prediction-interval on {scale}values")
    fa, fb = _finite(fallback_baseline), _finite(fallback_current)
    if len(fa) >= FALLBACK_MIN_SECONDS and len(fb) >= FALLBACK_MIN_SECONDS and pystats.fmean(fa) > 0:
        p = batch_means_p(fa, fb)
        return Difference(change, p < ALPHA, p, "batch means (per-second samples)")
    return Difference(change, None, None, "untested")


FALLBACK_MIN_SECONDS = 10


def block_length(values: list[float]) -> int:
    """How many seconds a series remembers: the first lag at which the series' autocorrelation falls
    below 0.1 (so a block holds what one second remembers of the previous ones), at least n^(1/3) and at most
    n / 4."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    floor = max(1, round(n ** (1 / 3)))
    centred = x - x.mean()
    var = float(centred @ centred)
    lag = floor
    if var > 0:
        for k in range(1, n // 4 + 1):
            if float(centred[:-k] @ centred[k:]) / var < 0.1:
                lag = max(floor, k)
                break
        else:
            lag = max(floor, n // 4)
    return max(1, min(lag, max(1, n // 4)))


def batch_means(values: list[float], length: int) -> list[float]:
    """The means of consecutive non-overlapping batches of `length` seconds (a remainder shorter than a batch is
    dropped)."""
    return [pystats.fmean(values[i:i + length]) for i in range(0, len(values) - length + 1, length)]


def batch_means_p(baseline: list[float], current: list[float]) -> float:
    """Two-sided p-value of "the means of two autocorrelated series differ": Welch's t-test on batch means.

    Each batch is twice as long as either series' memory (block_length), so batch means are close to independent
    and the test's degrees of freedom are the few independent pieces the seconds really hold. A block bootstrap
    of the same series was tried first: with 60–300 seconds it called 12–32% of identical pairs different (the
    resampled blocks cannot show the variance between blocks that are not there); batch means kept it at 5–10%.
    Fewer than two batches on a side: 1.0 (the seconds cannot tell)."""
    length = 2 * max(block_length(baseline), block_length(current))
    a, b = batch_means(baseline, length), batch_means(current, length)
    if len(a) < 2 or len(b) < 2:
        return 1.0
    if pystats.stdev(a) == 0 and pystats.stdev(b) == 0:
        return 0.0 if pystats.fmean(a) != pystats.fmean(b) else 1.0
    return float(sstats.ttest_ind(a, b, equal_var=False).pvalue)


def adjust_many(p_values: list[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values for many cells tested at once (None stays None): with hundreds of
    cells per run, a raw p < 0.05 would flag about one in twenty unchanged cells."""
    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = list(p_values)
    if present:
        adjusted = sstats.false_discovery_control([float(p_values[i]) for i in present])  # type: ignore[arg-type]
        for i, p in zip(present, adjusted, strict=True):
            out[i] = float(p)
    return out


# sysbench 1.0's latency histogram: 1024 buckets spread logarithmically over 0.001 ms – 100 s, and percentiles
# printed with two decimals. A percentile cannot move by less than one bucket or one printed digit.
HISTOGRAM_BUCKET_RATIO = (100_000 / 0.001) ** (1 / 1024) - 1
PRINTED_RESOLUTION_MS = 0.01


def latency_resolution_ms(value_ms: float) -> float:
    """The smallest change of a latency percentile near value_ms that the measurement can show."""
    return max(PRINTED_RESOLUTION_MS, abs(value_ms) * HISTOGRAM_BUCKET_RATIO)


@dataclass(frozen=True, slots=True)
class RunNoise:
    """How much a campaign's measurements vary, in % (None where the runs cannot tell): one repetition within its
    run (median over cells and runs), a run's mean from run to run (median over cells), and the part of the latter
    that repetitions cannot reduce (√(between² − within² / repetitions))."""

    cv_within_pct: float | None
    cv_between_pct: float | None
    between_only_pct: float | None


def run_noise(runs: list[dict[Any, list[float]]]) -> RunNoise:
    """The noise of a series of runs, each given as its cells' repetition values."""
    within, reps_seen = [], []
    per_cell: dict[Any, list[float]] = {}
    for cells in runs:
        for cell, values in cells.items():
            if len(values) >= 2 and (mean := pystats.fmean(values)) > 0:
                within.append(pystats.stdev(values) / mean * 100)
                reps_seen.append(len(values))
            if (m := geometric_mean(values)) is not None:
                per_cell.setdefault(cell, []).append(m)
    between = [pystats.stdev(m) / pystats.fmean(m) * 100 for m in per_cell.values()
               if len(m) >= 2 and pystats.fmean(m) > 0]
    cv_within = pystats.median(within) if within else None
    cv_between = pystats.median(between) if between else None
    between_only = None
    if cv_between is not None:
        reps = pystats.median(reps_seen) if reps_seen else 1
        between_only = math.sqrt(max(0.0, cv_between ** 2 - (cv_within or 0.0) ** 2 / reps))
    return RunNoise(cv_within, cv_between, between_only)


def repetitions_needed(cv_pct: float | None, *, between_cv_pct: float = 0.0, change_pct: float = 15.0,
                       baseline_runs: int = 5, power: float = 0.9, limit: int = 50) -> int | None:
    """How many repetitions per cell let the run-level check (the run's geometric mean against the 95% prediction
    interval of the last `baseline_runs` runs' means) catch a change of change_pct with probability `power`.

    cv_pct: the coefficient of variation of one repetition within a run; between_cv_pct: what varies from run to
    run whatever the repetitions (a re-prepared dataset, the machine's other load). A run mean's spread is
    √(between² + within² / repetitions); the interval's width grows with the t quantile of a small baseline, so
    the change must exceed (t·√(1 + 1/N) + z_power) times that spread. None when even `limit` repetitions would
    not do (the between-run part alone is too large: more baseline runs or longer jobs are the remedy).
    """
    if cv_pct is None or cv_pct <= 0:
        return 1
    n = max(2, baseline_runs)
    t = float(sstats.t.ppf(1 - ALPHA / 2, n - 1))
    z = float(sstats.norm.ppf(power))
    effect = abs(math.log1p(-change_pct / 100)) if change_pct < 100 else math.log1p(change_pct / 100)
    allowed = (effect / (t * math.sqrt(1 + 1 / n) + z)) ** 2 - (between_cv_pct / 100) ** 2
    if allowed <= 0:
        return None
    needed = math.ceil((cv_pct / 100) ** 2 / allowed)
    return max(1, needed) if needed <= limit else None


@dataclass(frozen=True, slots=True)
class RatioInterval:
    """How one side differs from a baseline: the ratio of their geometric means − 1 (change_pct), its 95%
    confidence interval (Welch's interval on the log values, the same test as `compare`), the two-sided p-value
    and how many runs per side would tell a difference this large (runs_needed, 80% power; None when the change
    is nil or would take more than RUNS_NEEDED_LIMIT runs). Interval and p are None when a side has one run."""

    change_pct: float
    low_pct: float | None
    high_pct: float | None
    p_value: float | None
    n_base: int
    n_other: int
    runs_needed: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


RUNS_NEEDED_LIMIT = 1000


def runs_to_tell(change_pct: float, log_sd: float, *, power: float = 0.8) -> int | None:
    """Runs per side for a two-sided Welch test at α = 0.05 to find a change of change_pct with the given power,
    when one run's log value spreads by log_sd (the normal approximation, plus one run for the t quantile)."""
    effect = abs(math.log1p(change_pct / 100)) if change_pct > -100 else math.inf
    if effect == 0 or not math.isfinite(effect):
        return None
    z = float(sstats.norm.ppf(1 - ALPHA / 2) + sstats.norm.ppf(power))
    needed = math.ceil(2 * (z * log_sd / effect) ** 2) + 1
    return max(2, needed) if needed <= RUNS_NEEDED_LIMIT else None


def change_to_tell(runs: int, log_sd: float, *, power: float = 0.8) -> float | None:
    """The smallest change (in percent, upwards) that `runs` runs per side tell with the given power at α = 0.05,
    when one run's log value spreads by log_sd: runs_to_tell the other way round. None for a single run."""
    if runs < 2:
        return None
    z = float(sstats.norm.ppf(1 - ALPHA / 2) + sstats.norm.ppf(power))
    return math.expm1(z * log_sd * math.sqrt(2 / (runs - 1))) * 100


def geometric_mean_interval(*, n: int, log_mean: float, log_sd: float | None,
                            confidence: float = 0.95) -> tuple[float, float] | None:
    """The confidence interval of a geometric mean from its runs' number, mean and sample standard deviation of
    the log values (Student's t on the logs, back-transformed); None for fewer than 2 runs."""
    if n < 2 or log_sd is None:
        return None
    half = float(sstats.t.ppf(1 - (1 - confidence) / 2, n - 1)) * log_sd / math.sqrt(n)
    return math.exp(log_mean - half), math.exp(log_mean + half)


def ratio_interval(*, n_base: int, log_mean_base: float, log_sd_base: float | None, n_other: int,
                   log_mean_other: float, log_sd_other: float | None, confidence: float = 0.95) -> RatioInterval:
    """The change of `other` against `base` from each side's number of runs, mean and sample standard deviation of
    the log values (what one grouped SQL query returns), with Welch's confidence interval and p-value."""
    diff = log_mean_other - log_mean_base
    change = math.expm1(diff) * 100
    if n_base < 2 or n_other < 2 or log_sd_base is None or log_sd_other is None:
        return RatioInterval(change, None, None, None, n_base, n_other, None)
    va, vb = log_sd_base ** 2 / n_base, log_sd_other ** 2 / n_other
    pooled_sd = math.sqrt((log_sd_base ** 2 + log_sd_other ** 2) / 2)
    needed = runs_to_tell(change, pooled_sd)
    if va + vb == 0:
        # Every run gave the same value on each side: the difference is exact.
        return RatioInterval(change, change, change, None, n_base, n_other, None)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (n_base - 1) + vb ** 2 / (n_other - 1))
    t = float(sstats.t.ppf(1 - (1 - confidence) / 2, df))
    p = float(2 * sstats.t.sf(abs(diff) / se, df))
    return RatioInterval(change, math.expm1(diff - t * se) * 100, math.expm1(diff + t * se) * 100, p, n_base,
                         n_other, needed)


def smallest_change_caught(cv_pct: float, *, between_cv_pct: float = 0.0, repetitions: int = 1,
                           baseline_runs: int = 5, limit_pct: int = 200) -> int | None:
    """The smallest whole-percent slowdown the run-level check catches 9 times in 10 with this many repetitions
    (repetitions_needed the other way round); None when not even limit_pct would be."""
    for change in range(1, limit_pct + 1):
        needed = repetitions_needed(cv_pct, between_cv_pct=between_cv_pct, change_pct=min(change, 99),
                                    baseline_runs=baseline_runs, limit=max(1, repetitions))
        if needed is not None and needed <= repetitions:
            return change
    return None


# ---------------------------------------------------------------- judging a run's cells against their baseline

QPS = "qps"
LATENCY = "latency_pct_ms"


# The nightly check's family-wise error rate per run. Benjamini–Hochberg at 0.05 over a run's 16 tests (8 cells × QPS
# and latency) let about one unchanged run in twenty alarm, 0.5–0.8 % of its cells, where the goal is 1 % with the upper
# end of its 95 % interval; at 0.02 it is 0.1–0.3 %. The spread measured on the campaign's history (HISTORY_RUNS)
# narrows the prediction interval enough that 30 % slowdowns are still caught (docs/statistics.md).
REGRESSION_ALPHA = 0.02
# How many earlier runs measure how much a run's mean varies from night to night (as campaign_noise reads them).
HISTORY_RUNS = 20
# A pinned comparison uses the history's spread once it holds this many runs of the cell (else the repetitions').
HISTORY_MIN_RUNS = 3


@dataclass(frozen=True, slots=True)
class CellChange:
    """One cell and metric of a run that moved beyond the threshold, significantly after the correction for
    the many cells tested at once. worse: throughput fell or latency rose."""

    cell: Any
    metric: str
    worse: bool
    baseline_value: float
    current_value: float
    change_pct: float
    p_value: float | None
    p_adjusted: float | None
    method: str


def predict_run(baseline: list[float], current: float, *, spread: list[float] | None = None,
                min_abs_change: float = 0.0) -> Difference:
    """Is a run's mean `current` outside what its baseline runs' means predict? The prediction interval's p-value
    (significant below 0.05 here; cells_judge decides at REGRESSION_ALPHA after adjusting a run's p-values together).

    baseline: one value per baseline run (the last N, or the single pinned run); spread: the run means whose
    variation measures how much one run differs from the next (the campaign's recent history, the baseline's runs
    among them); without it, the baseline's own. On log values: t = (log current − mean of log baseline) /
    (sd of log spread · √(1 + 1/N)), with len(spread) − 1 degrees of freedom. A spread of 20 runs instead of 5
    shrinks the t quantile (2.09 instead of 2.78 at 95 %) and no longer lets five similar nights make a
    prediction interval narrower than the nights really are.
    """
    base, spread_values = _finite(baseline), _finite(spread if spread is not None else baseline)
    if not base or not math.isfinite(current):
        return Difference(None, None, None, "no data")
    base_mean = geometric_mean(base)
    assert base_mean is not None
    change = (current - base_mean) / base_mean * 100 if base_mean else None
    if abs(current - base_mean) <= min_abs_change:
        return Difference(change, False, None, "below the measurement's resolution")
    logs = min(base) > 0 and min(spread_values) > 0 and current > 0
    scale = "log " if logs else ""
    lb = [math.log(v) for v in base] if logs else base
    ls = [math.log(v) for v in spread_values] if logs else spread_values
    now = math.log(current) if logs else current
    method = (f"prediction interval on {scale}values of {len(base)} run(s), spread of {len(ls)} runs"
              if spread is not None else f"prediction-interval on {scale}values")
    if len(ls) < 2:
        return Difference(change, None, None, "untested")
    sd = pystats.stdev(ls)
    if sd == 0:
        return Difference(change, now != pystats.fmean(lb), None, f"{method} (no variance)")
    t_stat = abs(now - pystats.fmean(lb)) / (sd * math.sqrt(1 + 1 / len(lb)))
    p = float(2 * sstats.t.sf(t_stat, len(ls) - 1))
    return Difference(change, p < ALPHA, p, method)


def cells_judge(*, baseline: dict[Any, dict[str, list[list[float]]]], current: dict[Any, dict[str, list[float]]],
                threshold_pct: float, run_cv_pct: float = 0.0,
                per_second: Callable[[Any], tuple[list[float], list[float]]] | None = None,
                history: dict[Any, dict[str, list[float]]] | None = None,
                alpha: float = REGRESSION_ALPHA) -> list[CellChange]:
    """The cells of a run whose QPS or latency changed against their baseline.

    baseline: per cell and metric, the repetitions of each baseline run; current: per cell and metric, the run's
    repetitions; history: per cell and metric, one value per recent run of the campaign (the geometric mean of its
    repetitions; up to HISTORY_RUNS runs before this one, the baseline's among them). A run is the unit of the
    test, as what differs from night to night (a re-prepared dataset, the machine's other load) is noise:
    - against several runs, the run's mean is tested against their prediction interval (predict_run), its width
      measured on the history when it holds more runs than the baseline;
    - against one (pinned) run, the same, once the history holds HISTORY_MIN_RUNS runs of the cell; before that,
      each repetition is a value: Welch's t-test on the repetitions of the two runs, its variance widened by the
      run-to-run noise run_cv_pct (compare()), and with a single value on either side per_second(cell) gives the
      two sides' per-second QPS, tested by their batch means.
    Every p-value of the run is then adjusted together (Benjamini–Hochberg); a change counts when its adjusted p
    is below `alpha` (REGRESSION_ALPHA: one false alarm in about fifty unchanged runs), it exceeds threshold_pct,
    and for latency it exceeds the histogram's resolution.
    """
    tests: list[tuple[Any, str, Difference, list[float], list[float]]] = []
    for cell, metrics in current.items():
        for metric in (QPS, LATENCY):
            runs = [r for r in baseline.get(cell, {}).get(metric, []) if _finite(r)]
            now = _finite(metrics.get(metric, []))
            if not runs or not now:
                continue
            means = [m for r in runs if (m := geometric_mean(r)) is not None]
            now_mean = geometric_mean(now)
            assert now_mean is not None
            base_mean = geometric_mean(means)
            resolution = latency_resolution_ms(base_mean) if metric == LATENCY and base_mean is not None else 0.0
            spread = _finite((history or {}).get(cell, {}).get(metric, []))
            if len(runs) >= 2 or len(spread) >= HISTORY_MIN_RUNS:
                use_history = len(spread) > len(means)
                diff = predict_run(means, now_mean, spread=spread if use_history else None,
                                   min_abs_change=resolution)
                tests.append((cell, metric, diff, means, [now_mean]))
                continue
            base, cur = _finite(runs[0]), now
            fallback: dict[str, list[float]] = {}
            if metric == QPS and per_second is not None and (len(base) < 2 or len(cur) < 2):
                fallback_baseline, fallback_current = per_second(cell)
                fallback = {"fallback_baseline": fallback_baseline, "fallback_current": fallback_current}
            tests.append((cell, metric, compare(base, cur, min_abs_change=resolution, run_cv_pct=run_cv_pct,
                                                **fallback), base, cur))
    adjusted = adjust_many([diff.p_value for _, _, diff, _, _ in tests])
    found = []
    for (cell, metric, diff, base, cur), p_adjusted in zip(tests, adjusted, strict=True):
        significant = diff.significant if p_adjusted is None else p_adjusted < alpha
        if diff.change_pct is None or not significant or abs(diff.change_pct) <= threshold_pct:
            continue
        base_value, cur_value = geometric_mean(base), geometric_mean(cur)
        assert base_value is not None and cur_value is not None
        worse = diff.change_pct < 0 if metric == QPS else diff.change_pct > 0
        method = (diff.method if p_adjusted is None else
                  f"{diff.method}, Benjamini–Hochberg over {len(tests)} tests at {alpha:g}")
        found.append(CellChange(cell, metric, worse, base_value, cur_value, diff.change_pct, diff.p_value,
                                p_adjusted, method))
    return found


# ---------------------------------------------------------------- confirming an alarm on a fresh measurement

# A campaign that confirms its alarms (Campaign.confirm_alarms) screens its cells at CONFIRM_SCREEN_ALPHA, measures the
# cells that alarmed again at once, and tells anyone only of those whose fresh measurement moves the same way beyond
# the threshold at CONFIRM_ALPHA (adjusted over the alarms confirmed together). The two measurements are independent,
# so an unchanged cell passes both about CONFIRM_SCREEN_ALPHA × CONFIRM_ALPHA of the time, while a cell that really
# moved passes each with the power of its test: bench/regression_quality.py measures both rates (docs/statistics.md).
CONFIRM_SCREEN_ALPHA = 0.1
CONFIRM_ALPHA = 0.1


def alarms_confirm(*, alarms: list[CellChange], baseline: dict[Any, dict[str, list[list[float]]]],
                   current: dict[Any, dict[str, list[float]]], threshold_pct: float, run_cv_pct: float = 0.0,
                   history: dict[Any, dict[str, list[float]]] | None = None,
                   per_second: Callable[[Any], tuple[list[float], list[float]]] | None = None,
                   alpha: float = CONFIRM_ALPHA) -> dict[tuple[Any, str], CellChange | None]:
    """For each alarm (cell, metric), the fresh measurement's change when it holds, None when it does not.

    current: the fresh run's repetitions of the alarmed cells; baseline and history as cells_judge takes them (the
    same baseline the alarm was raised against). Only the alarmed metric of each cell is tested, and only a change
    the same way as the alarm (worse again, or better again) holds it."""
    asked = {(a.cell, a.metric): a for a in alarms}
    fresh = {cell: {metric: values for metric, values in metrics.items() if (cell, metric) in asked}
             for cell, metrics in current.items() if any((cell, m) in asked for m in metrics)}
    found = {(c.cell, c.metric): c for c in cells_judge(
        baseline=baseline, current=fresh, threshold_pct=threshold_pct, run_cv_pct=run_cv_pct, per_second=per_second,
        history=history, alpha=alpha)}
    return {key: (change if (change := found.get(key)) is not None and change.worse == alarm.worse else None)
            for key, alarm in asked.items()}
