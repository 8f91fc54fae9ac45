"""Downsampling of per-second series for charts: pure functions over lists of floats.

A one-hour job at one report per second is 3,600 points per metric, a day-long soak 86,400; a
chart is a few hundred pixels wide. Two methods are offered:

* min/max buckets (the default): the series is cut into equal runs of points and each run keeps
  its lowest and its highest point, in time order. Every spike and every dip survives, and so do
  the series' global minimum and maximum, which is what a performance engineer looks for first.
* LTTB (largest-triangle-three-buckets, Steinarsson 2013): one point per bucket, the one that
  forms the largest triangle with its neighbours. It keeps the visual shape with fewer points
  but may drop an isolated extreme.

Missing values (None, e.g. a latency percentile sysbench did not print) are never chosen as
extremes but are kept when the series is short enough not to need downsampling.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeGuard

import numpy as np

MAX_POINTS = 1000
METHODS = ("minmax", "lttb")


def _usable(value: float | None) -> TypeGuard[float]:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def minmax_indices(values: Sequence[float | None], max_points: int = MAX_POINTS) -> list[int]:
    """Indices to keep so that at most max_points remain, each bucket keeping its min and max.

    The series is cut into equal runs of ceil(n / (max_points / 2)) points (numpy does the
    scanning: a 1-hour series of nine metrics takes a couple of milliseconds).
    """
    n = len(values)
    if n <= max_points:
        return list(range(n))
    if max_points < 2:
        raise ValueError("min/max downsampling keeps two points per bucket: max_points must be at least 2")
    size = math.ceil(n / (max_points // 2))
    buckets = math.ceil(n / size)
    padded = np.full(buckets * size, np.nan)
    padded[:n] = np.asarray(values, dtype=float)  # None becomes NaN
    grid = padded.reshape(buckets, size)
    missing = np.isnan(grid)
    low = np.where(missing, np.inf, grid).argmin(axis=1)
    high = np.where(missing, -np.inf, grid).argmax(axis=1)
    base = np.arange(buckets) * size
    first = base + np.minimum(low, high)
    second = base + np.maximum(low, high)
    # A bucket of missing values still marks its place in time (its first point); one whose min and
    # max are the same point keeps it once.
    empty = missing.all(axis=1)
    first[empty] = base[empty]
    second[empty | (second == first)] = -1
    pairs = np.stack([first, second], axis=1).ravel()
    return pairs[pairs >= 0].tolist()


def lttb_indices(ts: Sequence[float], values: Sequence[float | None], max_points: int = MAX_POINTS) -> list[int]:
    """Largest-triangle-three-buckets: indices of at most max_points points, first and last included."""
    n = len(values)
    if len(ts) != n:
        raise ValueError("ts and values must have the same length")
    if n <= max_points:
        return list(range(n))
    if max_points < 3:
        raise ValueError("LTTB keeps the first, the last and one point per bucket: max_points must be at least 3")
    ys = [float(v) if _usable(v) else 0.0 for v in values]
    kept = [0]
    every = (n - 2) / (max_points - 2)
    a = 0
    for b in range(max_points - 2):
        start = int(math.floor(b * every)) + 1
        end = int(math.floor((b + 1) * every)) + 1
        next_start = end
        next_end = min(int(math.floor((b + 2) * every)) + 1, n)
        if next_start >= next_end:
            avg_t, avg_y = ts[n - 1], ys[n - 1]
        else:
            span = next_end - next_start
            avg_t = sum(ts[next_start:next_end]) / span
            avg_y = sum(ys[next_start:next_end]) / span
        best, best_area = start, -1.0
        ta, ya = ts[a], ys[a]
        for i in range(start, min(end, n - 1)):
            area = abs((ta - avg_t) * (ys[i] - ya) - (ta - ts[i]) * (avg_y - ya))
            if area > best_area:
                best, best_area = i, area
        kept.append(best)
        a = best
    kept.append(n - 1)
    return kept


def downsample(
    ts: Sequence[float], values: Sequence[float | None], *, max_points: int = MAX_POINTS, method: str = "minmax"
) -> list[tuple[float, float | None]]:
    """(t, value) pairs of one metric, at most max_points of them, in time order."""
    if method == "minmax":
        indices = minmax_indices(values, max_points)
    elif method == "lttb":
        indices = lttb_indices(ts, values, max_points)
    else:
        raise ValueError(f"unknown downsampling method {method!r}; use one of {', '.join(METHODS)}")
    # map() over the sequences' own __getitem__ keeps the per-point work in C: this runs for each
    # metric of every chart.
    return list(zip(map(ts.__getitem__, indices), map(values.__getitem__, indices), strict=True))
