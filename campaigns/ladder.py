"""The adaptive thread ladder: which thread counts to measure next, so that a ladder's peak, knee and latency limit
are located to within a resolution instead of only between two planned counts.

A ladder is one (target, scenario, variant, size) of a run, its points (threads, QPS, percentile latency) the
geometric means of the repetitions measured at each count. After every planned count is measured:

- **peak**: for the count of the highest QPS, each measured neighbour further from it than the resolution gets a
  count between them (the geometric midpoint, rounded: ladders are spaced by ratios, 1 to 1,000);
- **knee**: the step where scaling first falls under half of ideal (knee_step, which comparison.curves reports) gets a count inside
  it while the step is wider than the resolution;
- **latency limit** (a campaign's `sla_ms`): the step from the last count that keeps it to the first that breaks
  it gets a count inside it, the same way.

Two counts are within the resolution when their gap is at most `resolution_pct` % of the lower one, or one thread.
Every added count lies strictly between two measured ones, so inside the planned range: never more threads than
the campaign asked for (the bounds its launch checked: host memory, connections, the servers' limits still hold),
and at most `max_added` counts per ladder in all, so a noisy curve cannot keep a run going.

Pure functions: the coordinator (campaigns.execution.ladder) gathers the points and makes the jobs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

KNEE_EFFICIENCY = 0.5  # a step that scales under half of ideal ends the scaling (comparison.curves reports it too)
MAX_ADDED = 8  # counts one ladder may gain in all


@dataclass(frozen=True)
class Point:
    threads: int
    qps: float
    latency_ms: float | None = None  # the jobs' percentile latency (p95 unless they measured another)


@dataclass(frozen=True)
class Addition:
    threads: int
    why: str  # "peak", "knee" or "sla"


def within(low: int, high: int, *, resolution_pct: float) -> bool:
    """Whether two thread counts are close enough that nothing between them needs measuring."""
    return high - low <= max(1, math.floor(low * resolution_pct / 100))


def between(low: int, high: int) -> int | None:
    """A count strictly between two, by their geometric mean (rounded, kept strictly inside), or None when none
    lies between them."""
    if high - low < 2:
        return None
    middle = round(math.sqrt(low * high))
    return min(max(middle, low + 1), high - 1)


def knee_step(points: Sequence[Point]) -> tuple[int, int] | None:
    """The first step (t1, t2) whose scaling efficiency (q2/q1 − 1) / (t2/t1 − 1) is under KNEE_EFFICIENCY."""
    for a, b in zip(points, points[1:], strict=False):
        if b.threads > a.threads and a.qps > 0 and (b.qps / a.qps - 1) / (b.threads / a.threads - 1) < KNEE_EFFICIENCY:
            return a.threads, b.threads
    return None


def sla_step(points: Sequence[Point], *, sla_ms: float) -> tuple[int, int] | None:
    """The step from the highest count that keeps the latency limit to the first higher count that breaks it."""
    for a, b in zip(points, points[1:], strict=False):
        if (a.latency_ms is not None and b.latency_ms is not None and a.latency_ms <= sla_ms
                and b.latency_ms > sla_ms):
            return a.threads, b.threads
    return None


def ladder_next(points: Sequence[Point], *, resolution_pct: float, sla_ms: float | None = None,
                tried: Sequence[int] = (), added_so_far: int = 0, max_added: int = MAX_ADDED) -> list[Addition]:
    """The counts to measure next on one ladder (module docstring), ascending; [] when its peak, knee and limit
    are located, or it has had its `max_added` counts. `tried` are counts already measured or tried (a failed job's
    count is not tried again)."""
    ordered = sorted(points, key=lambda p: p.threads)
    if len(ordered) < 2:
        return []
    seen = {p.threads for p in ordered} | set(tried)
    wanted: dict[int, str] = {}

    def add(low: int, high: int, why: str) -> None:
        if within(low, high, resolution_pct=resolution_pct):
            return
        count = between(low, high)
        if count is not None and count not in seen:
            wanted.setdefault(count, why)

    peak = max(range(len(ordered)), key=lambda i: ordered[i].qps)
    for neighbour in (peak - 1, peak + 1):
        if 0 <= neighbour < len(ordered):
            low, high = sorted((ordered[peak].threads, ordered[neighbour].threads))
            add(low, high, "peak")
    step = knee_step(ordered)
    if step is not None:
        add(*step, "knee")
    if sla_ms is not None:
        step = sla_step(ordered, sla_ms=sla_ms)
        if step is not None:
            add(*step, "sla")
    room = max(0, max_added - added_so_far)
    # The peak first, then the knee, then the limit, when there is room for only some.
    rank = {"peak": 0, "knee": 1, "sla": 2}
    chosen = sorted(wanted.items(), key=lambda item: (rank[item[1]], item[0]))[:room]
    return [Addition(threads=t, why=why) for t, why in sorted(chosen)]

