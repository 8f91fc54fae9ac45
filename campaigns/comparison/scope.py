"""What a comparison covers: the ids it was given, checked once, and the succeeded jobs they stand for.

A Scope is the first of the comparison's four parts (scope → aggregate → grid → deltas, composed by
query.comparison_build): every later part reads its ids, its runs' retries and its one condition on Job from here.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Q

from campaigns.models import Job, Run


@dataclass(frozen=True)
class Scope:
    """The comparison's filters as plain id lists (empty: no condition) and what they imply."""

    target_ids: list[int]
    product_ids: list[int]
    run_ids: list[int]
    campaign_ids: list[int]
    scenario_ids: list[int]
    spec_ids: list[int]
    threads: list[int]
    trusted_only: bool
    by_run: bool  # each (column, run) a column of its own; a run's retries count as that run
    baseline: int | None  # the product (or, by run, the run) whose column comes first
    roots: dict[int, int]  # by run: each run and retry → the run named in run_ids it stands for; else {}
    condition: Q  # the succeeded jobs covered, as a condition on a row that points at a Job ("job__…")


def _ids(values: Iterable[int] | None) -> list[int]:
    return [int(v) for v in values or () if v is not None]


def scope_of(
    *, target_ids: Sequence[int] | None = None, product_ids: Sequence[int] | None = None,
    run_ids: Sequence[int] | None = None, campaign_ids: Sequence[int] | None = None,
    scenario_ids: Sequence[int] | None = None, spec_ids: Sequence[int] | None = None,
    threads: Sequence[int] | None = None, trusted_only: bool = False, by_run: bool | None = None,
    baseline: int | None = None,
) -> Scope:
    """The comparison's scope; ValueError when none of targets, products, runs, campaigns or scenarios is named.
    by_run defaults to "two or more runs are named"."""
    targets, products, runs = _ids(target_ids), _ids(product_ids), _ids(run_ids)
    campaigns, scenarios = _ids(campaign_ids), _ids(scenario_ids)
    if not (targets or products or runs or campaigns or scenarios):
        raise ValueError("choose what to compare: targets, products, runs, campaign or scenarios")
    per_run = len(set(runs)) >= 2 if by_run is None else by_run
    specs, thread_counts = _ids(spec_ids), _ids(threads)
    condition = succeeded_jobs_condition(
        prefix="job__", target_ids=targets, product_ids=products, run_ids=runs, campaign_ids=campaigns,
        scenario_ids=scenarios, spec_ids=specs, threads=thread_counts,
    )
    return Scope(target_ids=targets, product_ids=products, run_ids=runs, campaign_ids=campaigns,
                 scenario_ids=scenarios, spec_ids=specs, threads=thread_counts, trusted_only=trusted_only,
                 by_run=per_run, baseline=baseline, roots=retry_roots(runs) if per_run else {},
                 condition=condition)


def with_retries(run_ids: Sequence[int]) -> list[int]:
    """The runs and, recursively, the runs that retried their failed jobs ("Retry failed jobs"): comparing a run
    takes each cell from its latest successful attempt. One query per generation of retries (none without runs)."""
    return list(retry_roots(run_ids))


def retry_roots(run_ids: Sequence[int]) -> dict[int, int]:
    """Each of the runs and of their retries (recursively), mapped to the run named in run_ids it retries."""
    roots = {r: r for r in dict.fromkeys(run_ids)}
    frontier = list(roots)
    while frontier:
        found = [(r, parent) for r, parent in Run.objects.filter(rerun_of_id__in=frontier, rerun=Run.Rerun.FAILED)
                 .values_list("pk", "rerun_of_id") if r not in roots]
        for r, parent in found:
            roots[r] = roots[parent]
        frontier = [r for r, _ in found]
    return roots


def succeeded_jobs_condition(
    *, prefix: str = "", target_ids: Sequence[int] = (), product_ids: Sequence[int] = (),
    run_ids: Sequence[int] = (), campaign_ids: Sequence[int] = (), scenario_ids: Sequence[int] = (),
    spec_ids: Sequence[int] = (), threads: Sequence[int] = (),
) -> Q:
    """The succeeded jobs a comparison covers, as a condition on Job (or, with prefix "job__", on a row that
    points at one); an empty list sets no condition. comparison_build and the UI's Selection share it."""
    condition = Q(**{f"{prefix}status": Job.Status.SUCCEEDED})
    for ids, lookup in ((target_ids, "target_id__in"), (product_ids, "target__product_id__in"),
                        (with_retries(run_ids), "run_id__in"), (campaign_ids, "run__campaign_id__in"),
                        (scenario_ids, "scenario_id__in"), (spec_ids, "target__spec_id__in"),
                        (threads, "threads__in")):
        if ids:
            condition &= Q(**{f"{prefix}{lookup}": list(ids)})
    return condition
