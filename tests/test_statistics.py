"""Regression statistics that hold on a noisy machine: the unit of the test, autocorrelated seconds,
many cells at once, quantised latencies, and the repetitions a measured noise calls for. Pure: no database."""
from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats as sstats

from campaigns.statistics import (
    LATENCY,
    QPS,
    REGRESSION_ALPHA,
    adjust_many,
    batch_means_p,
    cells_judge,
    compare,
    geometric_mean,
    latency_resolution_ms,
    predict_run,
    repetitions_needed,
)


def _ar1(rng: np.random.Generator, n: int, *, phi: float = 0.9, level: float = 10_000.0) -> list[float]:
    """Per-second QPS of one steady run: each second remembers most of the previous one (as sysbench's do)."""
    x = np.empty(n)
    x[0] = rng.normal()
    for i in range(1, n):
        x[i] = phi * x[i - 1] + rng.normal() * math.sqrt(1 - phi * phi)
    return list(level * (1 + 0.03 * x))


def test_the_change_is_the_ratio_of_geometric_means_the_statistic_the_log_t_test_compares():
    base, cur = [1000.0, 1010.0, 990.0], [800.0, 808.0, 792.0]
    diff = compare(base, cur)
    assert diff.change_pct == pytest.approx(-20.0)  # every repetition 20% lower: the geometric means say so exactly
    assert diff.method == "welch-t on log values" and diff.significant
    logs = sstats.ttest_ind([math.log(v) for v in base], [math.log(v) for v in cur], equal_var=False)
    assert diff.p_value == pytest.approx(float(logs.pvalue))
    assert geometric_mean([5.0]) == 5.0 and geometric_mean([2.0, 8.0]) == pytest.approx(4.0)


def test_per_second_samples_of_two_identical_runs_rarely_differ_by_batch_means_unlike_a_rank_test():
    rng = np.random.default_rng(7)
    rank_alarms = batch_alarms = 0
    pairs = 60
    for _ in range(pairs):
        a, b = _ar1(rng, 120), _ar1(rng, 120)
        rank_alarms += sstats.mannwhitneyu(a, b).pvalue < 0.05
        batch_alarms += compare([statistics.fmean(a)], [statistics.fmean(b)], fallback_baseline=a,
                                    fallback_current=b).significant
    # Seconds are not independent: a rank test on them calls most equal pairs different.
    assert rank_alarms / pairs > 0.4
    assert batch_alarms / pairs <= 0.12


def test_batch_means_still_see_a_real_ten_percent_drop():
    rng = np.random.default_rng(3)
    a = _ar1(rng, 120)
    b = [v * 0.9 for v in _ar1(rng, 120)]
    diff = compare([statistics.fmean(a)], [statistics.fmean(b)], fallback_baseline=a, fallback_current=b)
    assert diff.method == "batch means (per-second samples)" and diff.significant
    assert batch_means_p(a, a[:5]) == 1.0  # fewer than two batches: the seconds cannot tell


def test_benjamini_hochberg_keeps_p_values_in_order_and_none_as_none():
    adjusted = adjust_many([0.01, None, 0.04, 0.03])
    assert adjusted[1] is None
    assert adjusted[0] == pytest.approx(0.03) and adjusted[2] == pytest.approx(0.04) and adjusted[3] == pytest.approx(0.04)


def _cell(values_per_run: list[list[float]], now: list[float], lat: float = 2.0) -> tuple[dict, dict]:
    return ({QPS: values_per_run, LATENCY: [[lat] * len(r) for r in values_per_run]}, {QPS: now, LATENCY: [lat] * len(now)})


def test_one_chance_p_among_a_hundred_unchanged_cells_is_not_a_regression_but_a_real_drop_is():
    rng = np.random.default_rng(11)
    baseline, current = {}, {}
    for cell in range(100):
        runs = [list(rng.normal(10_000, 300, 3)) for _ in range(5)]
        now = list(rng.normal(10_000, 300, 3))
        baseline[cell], current[cell] = _cell(runs, now)
    # Cell 0's run came out 9% low by chance: its own test says p < 0.05, the other 99 cells say it is chance.
    baseline[0], current[0] = _cell([[10_000.0] * 3, [10_400.0] * 3, [9_600.0] * 3, [10_200.0] * 3, [9_800.0] * 3],
                                    [9_000.0, 9_050.0, 8_950.0])
    raw = compare([geometric_mean(r) for r in baseline[0][QPS]], [geometric_mean(current[0][QPS])])
    assert raw.p_value is not None and 0.001 < raw.p_value < 0.05
    assert [c for c in cells_judge(baseline=baseline, current=current, threshold_pct=5.0) if c.cell == 0] == []
    # A 30% drop of cell 1 stands out whatever else was tested.
    baseline[1], current[1] = _cell([[10_000.0] * 3, [10_100.0] * 3, [9_900.0] * 3, [10_050.0] * 3, [9_950.0] * 3],
                                    [7_000.0, 7_050.0, 6_950.0])
    (change,) = [c for c in cells_judge(baseline=baseline, current=current, threshold_pct=5.0) if c.cell == 1]
    assert change.worse and change.metric == QPS and change.change_pct == pytest.approx(-30.0, abs=0.5)
    assert change.p_adjusted is not None and change.p_adjusted >= change.p_value
    assert "prediction-interval" in change.method and "Benjamini–Hochberg over" in change.method


def test_a_latency_change_within_one_printed_digit_is_not_a_regression():
    assert latency_resolution_ms(0.07) == pytest.approx(0.01) and latency_resolution_ms(100.0) == pytest.approx(1.816, abs=0.01)
    quantised = compare([0.07, 0.07, 0.07], [0.08, 0.08, 0.08], min_abs_change=latency_resolution_ms(0.07))
    assert quantised.significant is False and quantised.method == "below the measurement's resolution"
    baseline = {"c": {QPS: [[1000.0] * 3], LATENCY: [[0.07, 0.07, 0.07]]}}
    current = {"c": {QPS: [1000.0] * 3, LATENCY: [0.08, 0.08, 0.08]}}
    assert cells_judge(baseline=baseline, current=current, threshold_pct=5.0) == []
    current["c"][LATENCY] = [0.15, 0.15, 0.15]  # a move of many digits still counts
    (change,) = cells_judge(baseline=baseline, current=current, threshold_pct=5.0)
    assert change.metric == LATENCY and change.worse


def test_repetitions_needed_grow_with_the_noise_and_give_up_where_no_number_would_do():
    quiet, noisy = repetitions_needed(2.0), repetitions_needed(8.0)
    assert quiet == 1 and noisy is not None and noisy > 4
    assert repetitions_needed(8.0, change_pct=30.0) < noisy
    assert repetitions_needed(40.0) is None
    # The promise behind the number: with that many repetitions, a 15% drop is caught 9 times in 10.
    rng = np.random.default_rng(5)
    reps, caught, trials = noisy, 0, 400
    for _ in range(trials):
        base = [geometric_mean(list(rng.lognormal(math.log(1000), 0.08, reps))) for _ in range(5)]
        now = geometric_mean(list(rng.lognormal(math.log(850), 0.08, reps)))
        caught += bool(compare(base, [now]).significant)
    assert caught / trials >= 0.85


def test_against_one_pinned_run_the_run_to_run_noise_of_the_history_widens_the_repetition_test():
    pinned, now = [1000.0, 1005.0, 995.0], [920.0, 925.0, 915.0]  # tight repetitions, 8% apart
    assert compare(pinned, now).significant  # repetitions alone: "different"
    # But runs of this campaign differ by 10% from one to the next whatever their repetitions: 8% is that noise.
    widened = compare(pinned, now, run_cv_pct=10.0)
    assert widened.significant is False and "run-to-run noise 10.0%" in widened.method
    assert compare(pinned, [700.0, 705.0, 695.0], run_cv_pct=10.0).significant  # a 30% drop still stands out
    baseline = {"c": {QPS: [pinned], LATENCY: [[2.0] * 3]}}
    current = {"c": {QPS: now, LATENCY: [2.0] * 3}}
    assert cells_judge(baseline=baseline, current=current, threshold_pct=5.0)
    assert cells_judge(baseline=baseline, current=current, threshold_pct=5.0, run_cv_pct=10.0) == []


# ---------------------------------------------------------------- the nightly rule: a run against its history


def _runs(rng: np.random.Generator, level: float, between: float, count: int) -> list[list[float]]:
    """`count` runs of 3 repetitions: each run's level varies by `between` (log sd), each repetition by 3% more."""
    return [list(level * math.exp(rng.normal(0, between)) * rng.lognormal(0, 0.03, 3)) for _ in range(count)]


def test_five_similar_nights_no_longer_make_an_ordinary_night_an_alarm():
    # The last five nights happened to agree within 1%, but this campaign's nights spread by 8%.
    last5 = [[10_000.0] * 3, [10_100.0] * 3, [9_900.0] * 3, [10_050.0] * 3, [9_950.0] * 3]
    spread = [10_000.0 * f for f in (1.08, 0.93, 1.1, 0.9, 1.02, 0.95, 1.07, 0.92, 1.0, 1.05, 0.97, 1.12, 0.89,
                                     1.04, 0.96)] + [geometric_mean(r) or 0.0 for r in last5]
    baseline, current = _cell(last5, [9_150.0, 9_200.0, 9_100.0])  # −8.5%: an ordinary night here
    # The five alone call it a regression (the source of the extra alarms: a prediction interval as narrow as
    # five nights that happened to agree) ...
    (alone,) = cells_judge(baseline={"c": baseline}, current={"c": current}, threshold_pct=5.0)
    assert alone.worse and alone.metric == QPS
    # ... the campaign's last 20 nights say it is within their spread.
    history = {"c": {QPS: spread, LATENCY: [2.0] * len(spread)}}
    assert cells_judge(baseline={"c": baseline}, current={"c": current}, threshold_pct=5.0, history=history) == []
    # A 30% drop stands out of the same history, with the test named.
    _, slowed = _cell(last5, [7_000.0, 7_050.0, 6_950.0])
    (change,) = cells_judge(baseline={"c": baseline}, current={"c": slowed}, threshold_pct=5.0, history=history)
    assert change.worse and change.change_pct == pytest.approx(-30.0, abs=0.5)
    assert "spread of 20 runs" in change.method and f"at {REGRESSION_ALPHA:g}" in change.method


def test_a_pinned_run_is_judged_by_the_history_spread_once_there_is_one():
    pinned, ordinary, slowed = [1000.0, 1005.0, 995.0], [920.0, 925.0, 915.0], [700.0, 705.0, 695.0]
    history = {"c": {QPS: [1000.0, 1100.0, 900.0, 1050.0, 950.0, 1080.0, 920.0], LATENCY: [2.0] * 7}}
    baseline = {"c": {QPS: [pinned], LATENCY: [[2.0] * 3]}}

    def judged(now: list[float]) -> list:
        return cells_judge(baseline=baseline, current={"c": {QPS: now, LATENCY: [2.0] * 3}}, threshold_pct=5.0,
                           history=history)

    assert judged(ordinary) == []  # 8% below a single run, where runs spread by 7%: no alarm
    (change,) = judged(slowed)
    assert change.worse and "prediction interval" in change.method and "1 run(s)" in change.method
    # Without a history (under HISTORY_MIN_RUNS runs), the repetitions are the unit as before: tight repetitions
    # 8% apart are "different".
    assert cells_judge(baseline=baseline, current={"c": {QPS: ordinary, LATENCY: [2.0] * 3}}, threshold_pct=5.0)


def test_predict_run_is_the_prediction_interval_with_the_spread_s_degrees_of_freedom():
    base, spread = [100.0, 104.0, 96.0, 102.0, 98.0], [100.0, 110.0, 90.0, 105.0, 95.0, 108.0, 92.0, 101.0]
    diff = predict_run(base, 85.0, spread=spread)
    logs = [math.log(v) for v in spread]
    t_stat = abs(math.log(85.0) - statistics.fmean(math.log(v) for v in base)) / (
        statistics.stdev(logs) * math.sqrt(1 + 1 / 5))
    assert diff.p_value == pytest.approx(2 * sstats.t.sf(t_stat, len(spread) - 1))
    assert diff.change_pct == pytest.approx((85.0 / (geometric_mean(base) or 1) - 1) * 100)
    # Without a spread, it is the classic interval of the baseline's own runs (compare's).
    assert predict_run(base, 85.0).p_value == pytest.approx(compare(base, [85.0]).p_value)


def test_on_unchanged_runs_at_the_quiet_machine_s_noise_under_one_percent_alarm_and_30_percent_drops_are_caught():
    # The noise bench/regression_quality.py measured on a quiet machine: runs' means spread by 4.5–13% per cell.
    rng = np.random.default_rng(28)
    betweens = [0.022, 0.045, 0.056, 0.068, 0.068, 0.079, 0.102, 0.124]
    runs = {cell: _runs(rng, 10_000.0, b, 160) for cell, b in enumerate(betweens)}
    alarms = trials = caught = slowed_trials = 0
    for night in range(25, 160, 1):
        history = {c: {QPS: [geometric_mean(r) or 0.0 for r in runs[c][night - 20:night]], LATENCY: []}
                   for c in runs}
        baseline = {c: {QPS: runs[c][night - 5:night], LATENCY: []} for c in runs}
        current = {c: {QPS: runs[c][night], LATENCY: []} for c in runs}
        alarms += len({c.cell for c in cells_judge(baseline=baseline, current=current, threshold_pct=5.0,
                                                   history=history)})
        trials += len(runs)
        if night % 5 == 0:  # the same night slowed by 30% in every cell
            slowed = {c: {QPS: [v * 0.7 for v in runs[c][night]], LATENCY: []} for c in runs}
            found = cells_judge(baseline=baseline, current=slowed, threshold_pct=5.0, history=history)
            caught += len({c.cell for c in found if c.worse})
            slowed_trials += len(runs)
    assert alarms / trials <= 0.005, (alarms, trials)
    assert caught / slowed_trials >= 0.9, (caught, slowed_trials)
