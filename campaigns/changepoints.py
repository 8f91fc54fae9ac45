"""Change points in a cell's history: E-Divisive means (Matteson & James, 2014) with its permutation test.

A threshold check compares one run with the few before it, so it misses a slow slide or a permanent step smaller
than the threshold. E-Divisive looks at the whole series instead: for every split point it measures how far apart
the two sides' distributions are (the energy distance, weighted by the sides' sizes), takes the best split, and
asks a permutation test whether a split that good could come from a series without any change (the same values
shuffled). A significant split is kept and each side is searched again, until no segment holds a significant
one. MongoDB's continuous performance testing runs the same method on its nightly series.

The packages that implement it pin numpy and scipy older than ours, hence this module; pure numpy, no Django.
Series are short (a cell's last runs, up to a few hundred), so the pairwise distance matrix and its prefix sums
make every split's statistic O(1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from campaigns.lazy import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use (campaigns/lazy.py)
    np = LazyModule("numpy")


ALPHA = 0.05
PERMUTATIONS = 199
MIN_SIZE = 3


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """The series changes at `index`: values[index] is the first of the new level. before/after are the
    geometric means of the segments on either side (bounded by the neighbouring change points)."""

    index: int
    p_value: float
    before: float
    after: float

    @property
    def change_pct(self) -> float:
        return (self.after - self.before) / self.before * 100 if self.before else 0.0


def _prefix(matrix: np.ndarray) -> np.ndarray:
    out = np.zeros((matrix.shape[0] + 1, matrix.shape[1] + 1))
    out[1:, 1:] = matrix.cumsum(0).cumsum(1)
    return out


def best_split(values: np.ndarray, *, min_size: int = MIN_SIZE) -> tuple[int, float]:
    """The split point (the first index of the second part) with the largest size-weighted energy distance
    between the two parts, and that statistic; (-1, 0.0) when the series is too short to split."""
    n = len(values)
    if n < 2 * min_size:
        return -1, 0.0
    prefix = _prefix(np.abs(values[:, None] - values[None, :]))
    tau = np.arange(min_size, n - min_size + 1)
    left, right = tau.astype(float), (n - tau).astype(float)
    corner = prefix[tau, tau]  # the left part against itself: every pair twice, as the means below expect
    between = (prefix[tau, n] - corner) / (left * right)
    within_left = corner / (left * (left - 1))
    within_right = (prefix[n, n] - prefix[tau, n] - prefix[n, tau] + corner) / (right * (right - 1))
    q = left * right / n * (2 * between - within_left - within_right)
    best = int(np.argmax(q))
    return int(tau[best]), float(q[best])


def _significance(values: np.ndarray, observed: float, rng: np.random.Generator, permutations: int,
                  min_size: int, alpha: float) -> float:
    """The permutation test's p-value: how often the best split of the shuffled segment is as good. It stops
    once the answer can no longer fall below alpha (most segments of a steady history)."""
    exceed = 0
    give_up = math.ceil(alpha * (permutations + 1))
    shuffled = values.copy()
    for _ in range(permutations):
        rng.shuffle(shuffled)
        if best_split(shuffled, min_size=min_size)[1] >= observed:
            exceed += 1
            if exceed >= give_up:
                return 1.0
    return (exceed + 1) / (permutations + 1)


def _geomean(values: np.ndarray) -> float:
    return float(np.exp(np.log(values).mean())) if len(values) and values.min() > 0 else float(values.mean())


def change_points(series: list[float], *, alpha: float = ALPHA, permutations: int = PERMUTATIONS,
                  min_size: int = MIN_SIZE, seed: int = 0) -> list[ChangePoint]:
    """The significant change points of a series, in order. The values are compared on a log scale, so a step
    of 5% weighs the same at 1,000 and at 100,000 QPS. Seeded: one history always gets one answer."""
    clean = np.asarray([v for v in series if v is not None and math.isfinite(v)], dtype=float)
    if len(clean) != len(series):
        raise ValueError("a series with missing values: drop them first, keeping the runs' order")
    if len(clean) < 2 * min_size:
        return []
    scaled = np.log(clean) if clean.min() > 0 else clean
    rng = np.random.default_rng(seed)
    found: dict[int, float] = {}
    segments = [(0, len(scaled))]
    while segments:
        # The best candidate of every segment; the strongest is tested first, as E-Divisive does.
        candidates = []
        for start, end in segments:
            tau, q = best_split(scaled[start:end], min_size=min_size)
            if tau > 0:
                candidates.append((q, start, end, start + tau))
        if not candidates:
            break
        q, start, end, index = max(candidates)
        p = _significance(scaled[start:end], q, rng, permutations, min_size, alpha)
        if p >= alpha:
            break
        found[index] = p
        segments = [s for s in segments if s != (start, end)] + [(start, index), (index, end)]
    bounds = [0, *sorted(found), len(clean)]
    return [ChangePoint(index=index, p_value=found[index], before=_geomean(clean[bounds[i]:index]),
                        after=_geomean(clean[index:bounds[i + 2]]))
            for i, index in enumerate(bounds[1:-1])]
