"""The adaptive thread ladder of a run: once every job it has is done, the counts around each ladder's peak, knee
and latency limit that are not located yet to within the campaign's resolution become new jobs of the same run
(campaigns.ladder says which counts and why).

Only a launch of a campaign with `adaptive_ladder` grows: a rerun, a confirmation run or an imported run measures
the jobs it was given. run_advance calls ladder_extend under the run's row lock, when no job of the run is pending
or active, so two callers (a closing job and the reconciler) cannot both add the same counts.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from campaigns.execution import transitions
from campaigns.ladder import Point, ladder_next
from campaigns.models import Job, Run
from campaigns.statistics import geometric_mean

log = logging.getLogger(__name__)


def _ladder_key(job: Job) -> tuple[Any, ...]:
    return (job.target_id, job.scenario_id, job.variant, job.tables, job.table_size)


def _points(jobs: list[Job]) -> list[Point]:
    """A ladder's points: per count, the geometric mean QPS of its succeeded repetitions and the mean of their
    percentile latencies. Where some repetitions are invalid and others not, only the others count; where all are
    invalid they still do, as the comparison shows them (marked untrusted): a count tried once is never tried
    again, so leaving it out would leave the ladder blind there."""
    by_threads: dict[int, list[Job]] = defaultdict(list)
    for job in jobs:
        result = getattr(job, "result", None)
        if job.status == Job.Status.SUCCEEDED and result is not None and result.qps:
            by_threads[job.threads].append(job)
    points = []
    for threads, measured in sorted(by_threads.items()):
        trusted = [j for j in measured if j.verdict != Job.Verdict.INVALID] or measured
        qps = geometric_mean([float(j.result.qps or 0) for j in trusted])
        latencies = [j.result.latency_pct_ms for j in trusted if j.result.latency_pct_ms is not None]
        if qps is not None:
            points.append(Point(threads=threads, qps=qps,
                                latency_ms=sum(latencies) / len(latencies) if latencies else None))
    return points


def ladder_extend(*, run: Run) -> list[Job]:
    """Adds the next counts of every ladder of the run as queued jobs (every repetition of each), after the run's
    last position; returns them ([] when the run does not grow, or every ladder is located)."""
    campaign = run.campaign
    if (not campaign.adaptive_ladder or run.rerun_of_id is not None
            or run.trigger in (Run.Trigger.IMPORT, Run.Trigger.CONFIRM)):
        return []
    jobs = list(Job.objects.filter(run=run).select_related("result", "target").order_by("position", "pk"))
    # A run being cancelled (some job cancelled: the run closes once its active jobs have) grows no more.
    if not jobs or any(j.status == Job.Status.CANCELLED for j in jobs):
        return []
    blocked = campaign.job_order == campaign.JobOrder.BLOCKED
    ladders: dict[tuple[Any, ...], list[Job]] = defaultdict(list)
    for job in jobs:
        ladders[_ladder_key(job)].append(job)
    position = max(j.position for j in jobs) + 1
    new: list[tuple[tuple[Any, ...], Job]] = []
    for index, (key, members) in enumerate(ladders.items()):
        added_so_far = len({j.threads for j in members if j.added_for})
        additions = ladder_next(_points(members), resolution_pct=campaign.ladder_resolution_pct,
                                sla_ms=campaign.sla_ms, tried=[j.threads for j in members],
                                added_so_far=added_so_far)
        if not additions:
            continue
        template = members[0]
        repetitions = max(j.repetition for j in members)
        for addition in additions:
            clients = 1 if template.target.is_client_host() else campaign.clients_for(addition.threads)
            for repetition in range(1, repetitions + 1):
                job = Job(run=run, target_id=template.target_id, scenario_id=template.scenario_id,
                          threads=addition.threads, repetition=repetition, tables=template.tables,
                          table_size=template.table_size, clients_needed=clients, time_s=template.time_s,
                          warmup_s=template.warmup_s, variant=template.variant,
                          variant_settings=template.variant_settings, added_for=addition.why)
                # In the campaign's order, as services.plans.campaign_expand puts a launch's: blocked, every job of
                # a ladder before the next one's; interleaved, per scenario and size (each dataset prepared once),
                # count and repetition every ladder in turn, the turn reversed every second repetition.
                turn = index if repetition % 2 else -index
                new.append(((index, addition.threads, repetition) if blocked
                            else (key[1], key[3], key[4], addition.threads, repetition, turn), job))
        log.info("run %s: adaptive ladder adds %s threads on target %s (scenario %s, variant %r)", run.pk,
                 ", ".join(f"{a.threads} ({a.why})" for a in additions), template.target_id, template.scenario_id,
                 template.variant)
    ordered = [job for _, job in sorted(new, key=lambda item: item[0])]
    for offset, job in enumerate(ordered):
        job.position = position + offset
    return transitions.jobs_create(jobs=ordered) if ordered else []
