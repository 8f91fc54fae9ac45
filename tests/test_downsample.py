"""Downsampled series keep missing points missing: never a peak, never a zero, always a visible gap."""
from __future__ import annotations

import math

import pytest

from campaigns.downsample import METHODS, downsample

N = 5000


def gappy_series() -> tuple[list[float], list[float | None], list[tuple[int, int]]]:
    """A flat-ish series around 1,000 with gaps of several lengths (a sampler that missed seconds)."""
    ts = [float(t) for t in range(1, N + 1)]
    values: list[float | None] = [1000.0 + 50.0 * math.sin(i / 40) for i in range(N)]
    gaps = [(100, 101), (1500, 1800), (2500, 2503), (4990, 5000)]  # half-open index ranges
    for start, end in gaps:
        for i in range(start, end):
            values[i] = None
    values[3333] = 4000.0  # one real spike
    return ts, values, gaps


@pytest.mark.parametrize("method", METHODS)
def test_a_gap_is_never_drawn_as_zero_nor_chosen_as_an_extreme(method: str) -> None:
    ts, values, _ = gappy_series()
    out = downsample(ts, values, max_points=500, method=method)
    assert len(out) <= 500
    assert [t for t, _ in out] == sorted(t for t, _ in out)
    by_t = dict(zip(ts, values, strict=True))
    # Every kept point carries its own value: a None stays None, a number stays that number.
    assert all(v == by_t[t] for t, v in out)
    numbers = [v for _, v in out if v is not None]
    assert min(numbers) > 900.0  # no 0.0 anywhere: the gaps did not become dips
    assert max(numbers) == 4000.0  # the real spike survives


@pytest.mark.parametrize("method", METHODS)
def test_every_gap_stays_a_gap_in_the_downsampled_series(method: str) -> None:
    ts, values, gaps = gappy_series()
    out = downsample(ts, values, max_points=500, method=method)
    for start, end in gaps:
        inside = [v for t, v in out if ts[start] <= t < ts[end - 1] + 1]
        assert None in inside, (method, start, end)


@pytest.mark.parametrize("method", METHODS)
def test_a_series_that_is_mostly_gaps_keeps_the_budget(method: str) -> None:
    ts = [float(t) for t in range(N)]
    values: list[float | None] = [None if i % 2 else float(i) for i in range(N)]
    out = downsample(ts, values, max_points=500, method=method)
    assert 100 < len(out) <= 500
    assert any(v is None for _, v in out) and all(v is None or v == t for t, v in out)


@pytest.mark.parametrize("method", METHODS)
def test_a_series_without_gaps_keeps_no_none(method: str) -> None:
    ts = [float(t) for t in range(N)]
    values: list[float | None] = [float(i % 100) for i in range(N)]
    out = downsample(ts, values, max_points=1000, method=method)
    assert all(v is not None for _, v in out)
    if method == "lttb":
        assert len(out) == 1000 and out[0][0] == 0.0 and out[-1][0] == N - 1


@pytest.mark.parametrize("method", METHODS)
def test_a_gap_never_takes_the_place_of_the_real_dip_beside_it(method: str) -> None:
    ts = [float(t) for t in range(N)]
    values: list[float | None] = [1000.0 + (i % 3) for i in range(N)]
    values[2000], values[2001] = 900.0, None  # a real dip, then one missed second
    out = dict(downsample(ts, values, max_points=500, method=method))
    assert out.get(2000.0) == 900.0
    assert 2001.0 in out and out[2001.0] is None
