"""Where a run's wall time went, from the timestamps its jobs stored: measured, warm-up, dataset preparation,
and the gaps between jobs. Shared by bench/job_gap.py and bench/quick_run.py.

The gap before job n+1 is the time from job n's last sysbench exit to job n+1's first sysbench start (its warm-up,
or its measured run), counted only when job n+1 found its dataset ready: preparation is reported on its own.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunTiming:
    wall_s: float = 0.0
    measured_s: float = 0.0
    warmup_s: float = 0.0
    prepare_s: float = 0.0
    gaps_s: list[float] = field(default_factory=list)
    jobs: int = 0

    def other_s(self) -> float:
        return self.wall_s - self.measured_s - self.warmup_s - self.prepare_s - sum(self.gaps_s)

    def add(self, other: RunTiming) -> None:
        self.wall_s += other.wall_s
        self.measured_s += other.measured_s
        self.warmup_s += other.warmup_s
        self.prepare_s += other.prepare_s
        self.gaps_s += other.gaps_s
        self.jobs += other.jobs

    def lines(self, indent: str = "  ") -> list[str]:
        wall = self.wall_s or float("nan")

        def part(name: str, seconds: float) -> str:
            return f"{indent}{name:<12} {seconds:8.1f} s  {seconds / wall:6.1%} of wall time"

        out = [f"{indent}{'wall':<12} {self.wall_s:8.1f} s  ({self.jobs} jobs, run start to run end)",
               part("measured", self.measured_s), part("warm-up", self.warmup_s),
               part("preparation", self.prepare_s), part("gaps", sum(self.gaps_s)),
               part("other", self.other_s())]
        if self.gaps_s:
            gaps = sorted(self.gaps_s)
            out.append(f"{indent}gap between jobs (dataset ready): median {statistics.median(gaps):.3f} s, "
                       f"min {gaps[0]:.3f} s, max {gaps[-1]:.3f} s over {len(gaps)} pairs")
        return out


def _first_start(job: Any, clients: list[Any]) -> Any:
    if job.warmup_started_at is not None:
        return job.warmup_started_at
    starts = [c.started_at for c in clients if c.started_at is not None]
    return min(starts) if starts else None


def run_timing(run: Any) -> RunTiming:
    """The run's RunTiming (run: a finished campaigns.models.Run)."""
    jobs = list(run.jobs.order_by("position", "pk").prefetch_related("clients"))
    timing = RunTiming(jobs=len(jobs))
    if run.started_at and run.finished_at:
        timing.wall_s = (run.finished_at - run.started_at).total_seconds()
    previous_exit = None
    for job in jobs:
        clients = list(job.clients.all())
        starts = [c.started_at for c in clients if c.started_at is not None]
        exits = [c.exited_at for c in clients if c.exited_at is not None]
        if starts and exits:
            timing.measured_s += (max(exits) - min(starts)).total_seconds()
        timing.warmup_s += job.warmup_wall_s or 0.0
        timing.prepare_s += job.prepare_wall_s or 0.0
        first = _first_start(job, clients)
        if previous_exit is not None and first is not None and job.prepare_wall_s is None:
            timing.gaps_s.append((first - previous_exit).total_seconds())
        previous_exit = max(exits) if exits else None
    return timing
