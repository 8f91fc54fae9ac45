"""One comparison cell's latency distribution: the histograms of its jobs' sysbench processes (JobClient.histogram)
merged bucket by bucket, and the percentiles read from the merged buckets, as the comparison page shows on demand."""
from __future__ import annotations

from typing import TypedDict

from campaigns.comparison.selection import Selection
from campaigns.models import Job, JobClient, Scenario
from campaigns.sysbench.parser import histogram_percentile, merge_histograms

HISTOGRAM_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


class CellHistogram(TypedDict):
    """What the comparisons API's cell-histogram answers and the comparison page draws."""

    jobs: int
    jobs_with_histogram: int
    events: int
    buckets: list[list[float]]  # [latency_ms, count] in latency order
    percentiles: dict[str, float | None]  # "p50", "p90", "p95", "p99", "p99.9"
    note: str  # why there are no buckets, or fewer jobs' than the cell has; "" otherwise


def _label(pct: float) -> str:
    return f"p{pct:g}"


def cell_histogram(selection: Selection, *, scenario_id: int, spec_id: int | None, threads: int, table_size: int,
                   tables: int, product_id: int, thread_filter: list[int] | None = None,
                   variant: str | None = None, target_id: int | None = None) -> CellHistogram:
    """The merged latency histogram of one cell (the succeeded jobs of `selection` with these keys): its buckets
    [[latency_ms, count], …] in latency order, p50/p90/p95/p99/p99.9 from them, and how many jobs had one.

    Two queries whatever the number of jobs. A cell whose jobs recorded no histogram (a scenario run with
    --percentile=0 turns sysbench's histogram off; an imported log may lack one) has no buckets and a `note`
    saying why, never zeros.
    """
    jobs = selection.jobs().filter(scenario_id=scenario_id, threads=threads, table_size=table_size, tables=tables,
                                   target__product_id=product_id)
    jobs = jobs.filter(target__spec__isnull=True) if spec_id is None else jobs.filter(target__spec_id=spec_id)
    if thread_filter:
        jobs = jobs.filter(threads__in=thread_filter)
    if variant is not None:  # a settings variant's column (campaigns.settings_variants)
        jobs = jobs.filter(variant=variant)
    if target_id is not None:  # one target's column of a product measured on several (comparison.grid)
        jobs = jobs.filter(target_id=target_id)
    if selection.trusted_only:
        jobs = jobs.exclude(verdict__in=(Job.Verdict.SUSPECT, Job.Verdict.INVALID))
    clients = list(JobClient.objects.filter(job__in=jobs).values_list("job_id", "histogram"))
    job_ids = {job_id for job_id, _ in clients}
    with_histogram = {job_id for job_id, histogram in clients if histogram}
    buckets = merge_histograms([[(float(b[0]), int(b[1])) for b in histogram]
                                for _, histogram in clients if histogram])
    total = sum(count for _, count in buckets)
    result: CellHistogram = {
        "jobs": len(job_ids), "jobs_with_histogram": len(with_histogram), "events": total,
        "buckets": [[value, count] for value, count in buckets],
        "percentiles": {_label(p): histogram_percentile(buckets, p) if total else None for p in HISTOGRAM_PERCENTILES},
        "note": "",
    }
    if not job_ids:
        result["note"] = "No succeeded job of this comparison has these keys."
    elif not total:
        percentile = Scenario.objects.filter(pk=scenario_id).values_list("percentile", flat=True).first()
        result["note"] = ("No latency histogram: this scenario runs with --percentile=0, which turns sysbench's "
                          "histogram off." if percentile == 0 else
                          "No latency histogram was recorded for these jobs (an imported log without --histogram, "
                          "or jobs from before histograms were kept).")
    elif len(with_histogram) < len(job_ids):
        result["note"] = (f"Only {len(with_histogram)} of the {len(job_ids)} jobs recorded a histogram: the "
                          "distribution is theirs.")
    return result
