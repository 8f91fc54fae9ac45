"""Campaigns made from seed templates, with results: what the seed comparison tests measure against the published
figures without running sysbench."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from campaigns.models import Campaign, Job, JobResult, Run
from campaigns.seeds.services import template_instantiate
from campaigns.services.plans import campaign_expand
from tests.factories import InstanceSpecFactory, ProductFactory, TargetFactory


def measured_instance(template: Campaign, target: Any, *, repetitions: int = 2,
                       invalid_threads: int | None = None) -> tuple[Campaign, Run]:
    """A campaign made from `template` through the service the /seeds/ page calls (plain DDL, thread ceiling 64,
    reduced scale), with a succeeded run whose every planned job has a result: `repetitions` runs per cell
    (QPS 1,000 × √threads + 10 × the repetition; the latency percentile the scenario's), the cells at `invalid_threads` judged invalid."""
    campaign = template_instantiate(template=template, targets=[target], scale_factor=0.001, run_time_s=4,
                                    warmup_s=1, max_threads=64, plain_ddl=True, table_rows_min=10_000,
                                    table_rows_max=1_000_000)
    campaign.repetitions = repetitions
    campaign.save(update_fields=["repetitions"])
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    for p in campaign_expand(campaign=campaign):
        invalid = p.threads == invalid_threads
        job = Job.objects.create(run=run, target=p.target, scenario=p.scenario, threads=p.threads,
                                 repetition=p.repetition, position=p.position, tables=p.tables,
                                 table_size=p.table_size, status=Job.Status.SUCCEEDED, phase="done", started_at=now,
                                 finished_at=now, command_line=f"sysbench {p.scenario.test} run",
                                 verdict=Job.Verdict.INVALID if invalid else Job.Verdict.VALID)
        qps = 1000.0 * p.threads ** 0.5 + 10 * p.repetition
        JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=p.threads / qps * 1000,
                                 latency_pct=p.scenario.percentile, latency_pct_ms=2 * p.threads / qps * 1000)
    return campaign, run


def local_target(name: str = "local MariaDB") -> Any:
    """A MySQL-protocol target of a product of its own, on a 2-core spec no seed document names."""
    return TargetFactory(name=name, product=ProductFactory(name=f"{name} product"),
                         spec=InstanceSpecFactory(label=f"{name} 2-core 8 GB", cpu_cores=2, memory_gb=8))
