"""Downsampling of per-second series for charts: pure functions over lists of floats.

A one-hour job at one report per second is 3,600 points per metric, a day-long soak 86,400; a
chart is a few hundred pixels wide. Two methods are offered:

* min/max buckets (the default): the series is cut into equal runs of points and each run keeps
  its lowest and its highest point, in time order. Every spike and every dip survives, and so do
  the series' global minimum and maximum, which is what a performance engineer looks for first.
* LTTB (largest-triangle-three-buckets, Steinarsson 2013): one point per bucket, the one that
  forms the largest triangle with its neighbours. It keeps the visual shape with fewer points
  but may drop an isolated extreme.

Missing values (None or NaN, e.g. a latency percentile sysbench did not print, a second a sampler
missed) are missing, never zero: neither method chooses one as an extreme or computes with it, and a
gap stays a gap. Every bucket that holds a missing point keeps one (its first), in time order beside
the bucket's chosen points, so a chart breaks its line there instead of drawing across the hole or
down to zero; the number of buckets shrinks as needed to stay within max_points.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeGuard

from campaigns.lazy import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use (campaigns/lazy.py)
    np = LazyModule("numpy")


MAX_POINTS = 1000
METHODS = ("minmax", "lttb")


def _usable(value: float | None) -> TypeGuard[float]:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def minmax_indices(values: Sequence[float | None], max_points: int = MAX_POINTS) -> list[int]:
    """Indices to keep so that at most max_points remain, each bucket keeping its min and max.

    The series is cut into equal runs of points (numpy does the scanning: a 1-hour series of nine
    metrics takes a couple of milliseconds). A bucket with missing points also keeps its first
    missing one, so that the gap shows.
    """
    n = len(values)
    if n <= max_points:
        return list(range(n))
    if max_points < 2:
        raise ValueError("min/max downsampling keeps two points per bucket: max_points must be at least 2")
    series = np.asarray(values, dtype=float)  # None becomes NaN
    kept = _minmax_pass(series, math.ceil(n / (max_points // 2)))
    if len(kept) <= max_points:
        return kept
    # Gap markers took the room of some extremes: fewer, longer buckets. Only a bucket holding a gap's
    # start or end keeps a marker beside its min and max (3 points), so with g gaps there are at most
    # 2 * buckets + 2 * g points, and never more than 3 per bucket: this second pass fits.
    missing = np.isnan(series)
    gaps = int(missing[0]) + int(np.count_nonzero(missing[1:] & ~missing[:-1]))
    buckets = max(1, max_points // 3, (max_points - 2 * gaps) // 2)
    return _minmax_pass(series, math.ceil(n / buckets))


def _minmax_pass(series: np.ndarray, size: int) -> list[int]:
    n = len(series)
    buckets = math.ceil(n / size)
    padded = np.full(buckets * size, np.nan)
    padded[:n] = series
    grid = padded.reshape(buckets, size)
    missing = np.isnan(grid)
    # The padding after the last point is not a gap in the series.
    missing_real = missing.copy()
    missing_real.ravel()[n:] = False
    low = np.where(missing, np.inf, grid).argmin(axis=1)
    high = np.where(missing, -np.inf, grid).argmax(axis=1)
    base = np.arange(buckets) * size
    empty = missing.all(axis=1)
    has_gap = missing_real.any(axis=1)
    gap = np.where(has_gap, base + missing_real.argmax(axis=1), -1)
    low_i = np.where(empty, -1, base + low)
    high_i = np.where(empty | (high == low), -1, base + high)
    triples = np.sort(np.stack([gap, low_i, high_i], axis=1), axis=1).ravel()
    return triples[triples >= 0].tolist()


def lttb_indices(ts: Sequence[float], values: Sequence[float | None], max_points: int = MAX_POINTS) -> list[int]:
    """Largest-triangle-three-buckets: indices of at most max_points points, first and last included.

    Triangles are formed with usable points only: a missing point is never a bucket's choice nor part
    of the next bucket's average. A bucket with missing points keeps its first one as a gap marker.
    """
    n = len(values)
    if len(ts) != n:
        raise ValueError("ts and values must have the same length")
    if n <= max_points:
        return list(range(n))
    if max_points < 3:
        raise ValueError("LTTB keeps the first, the last and one point per bucket: max_points must be at least 3")
    ys: list[float | None] = [float(v) if _usable(v) else None for v in values]
    gaps = sum(1 for i, y in enumerate(ys) if y is None and (i == 0 or ys[i - 1] is not None))
    if not gaps:
        return _lttb_plain(ts, [y for y in ys if y is not None], max_points)
    kept = _lttb_pass(ts, ys, max_points - 2)
    if len(kept) <= max_points:
        return kept
    # Gap markers took the room of some buckets: fewer, longer buckets. Only a bucket holding a gap's
    # start or end keeps a marker beside its point, so with g gaps there are at most buckets + 2 + 2 * g
    # points, and never more than 2 per bucket (+ 2 ends): this second pass fits.
    return _lttb_pass(ts, ys, max(1, (max_points - 2) // 2, max_points - 2 - 2 * gaps))


def _lttb_plain(ts: Sequence[float], ys: list[float], max_points: int) -> list[int]:
    """Steinarsson's LTTB as published, for a series without gaps (the common case: 3x faster)."""
    n = len(ys)
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


def _lttb_pass(ts: Sequence[float], ys: list[float | None], buckets: int) -> list[int]:
    n = len(ys)
    kept = [0]
    every = (n - 2) / buckets
    # The last usable point kept so far is the triangle's first corner (a gap has no height).
    a = 0 if ys[0] is not None else None
    for b in range(buckets):
        start = int(math.floor(b * every)) + 1
        end = min(int(math.floor((b + 1) * every)) + 1, n - 1)
        next_start = end
        next_end = min(int(math.floor((b + 2) * every)) + 1, n)
        nxt: list[tuple[float, float]] = [(ts[i], y) for i in range(next_start, next_end) if (y := ys[i]) is not None]
        if not nxt:
            # The next bucket is all gap (or the series' end): aim at the next usable point after it.
            after = next((i for i in range(next_end, n) if ys[i] is not None), None)
            if after is None:
                after = next((i for i in range(next_start - 1, -1, -1) if ys[i] is not None), None)
            if after is not None:
                nxt = [(ts[after], float(ys[after] or 0.0))]
        gap = next((i for i in range(start, end) if ys[i] is None), None)
        best = None
        if nxt:
            avg_t = sum(t for t, _ in nxt) / len(nxt)
            avg_y = sum(y for _, y in nxt) / len(nxt)
            corner = ys[a] if a is not None else None
            ta, ya = (ts[a], corner) if a is not None and corner is not None else (avg_t, avg_y)
            best_area = -1.0
            for i in range(start, end):
                y = ys[i]
                if y is None:
                    continue
                area = abs((ta - avg_t) * (y - ya) - (ta - ts[i]) * (avg_y - ya))
                if area > best_area:
                    best, best_area = i, area
        picks = sorted(i for i in (gap, best) if i is not None)
        if not picks:
            picks = [start] if start < end else []
        kept.extend(picks)
        if best is not None:
            a = best
    kept.append(n - 1)
    return sorted(set(kept))


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
