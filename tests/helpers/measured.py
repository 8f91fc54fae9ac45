"""Measured results without measuring: runs, jobs and their results written straight to the database, for the
comparison, report and trust tests."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.utils import timezone

from campaigns.models import (
    Campaign,
    InstanceSpec,
    IntervalSample,
    Job,
    JobClient,
    JobResult,
    Product,
    Run,
    Scenario,
    Target,
)
from campaigns.seeds.published import load_published
from campaigns.seeds.services import template_load_all
from campaigns.sysbench.parser import parse_output
from tests.factories import (
    CampaignFactory,
    DatasetFactory,
    InstanceSpecFactory,
    ProductFactory,
    ScenarioFactory,
    TargetFactory,
)

SYSBENCH_LOGS = Path(__file__).resolve().parent.parent / "data" / "sysbench"


def measure(*, product: Product, spec: InstanceSpec | None, scenario: Scenario, figures: dict[int, list[float]],
             histograms: list[str] | None = None) -> Target:
    """Succeeded jobs of one target running `scenario`: per thread count one job per QPS figure, each with the
    command line it would have run; each job's one client keeps the histogram sysbench printed in the named captured
    log (tests/data/sysbench), if any."""
    target = Target.objects.create(name=f"{product.name} {spec.label if spec else 'no spec'} {scenario.pk}",
                                   product=product, spec=spec, driver="mysql", host="127.0.0.1", port=3306,
                                   database="sbtest", user="root")
    campaign = Campaign.objects.create(name=f"campaign {target.name}", threads=sorted(figures),
                                       repetitions=max(len(v) for v in figures.values()))
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    position = 0
    for threads, values in figures.items():
        for repetition, qps in enumerate(values, start=1):
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads, repetition=repetition,
                                     position=position, tables=scenario.dataset.tables,
                                     table_size=scenario.dataset.table_size, status=Job.Status.SUCCEEDED,
                                     phase="done", started_at=now, finished_at=now,
                                     command_line=f"sysbench {scenario.test} --threads={threads} run")
            JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=threads / qps * 1000 if qps else None,
                                     latency_pct=95.0, latency_pct_ms=2 * threads / qps * 1000 if qps else None)
            log = histograms[(repetition - 1) % len(histograms)] if histograms else None
            parsed = parse_output((SYSBENCH_LOGS / f"{log}.txt").read_text()) if log else None
            JobClient.objects.create(job=job, index=0, status=JobClient.Status.SUCCEEDED, threads=threads,
                                     histogram=[list(b) for b in parsed.histogram] if parsed and parsed.histogram
                                     else None)
            position += 1
    return target


S001_WRITE = "seed 001 · full cache · write"


CLIENT_BOUND = {"code": "client-bound", "level": "invalid", "figure": "80% of seconds",
                "message": "Client bench-1 was the bottleneck (its CPUs over 90 % busy for 80% of the run)."}


def mariadb_and_postgresql(*, invalid_postgresql: bool = False):
    mariadb, postgresql = ProductFactory(name="MariaDB (local)"), ProductFactory(name="PostgreSQL (local)")
    spec = InstanceSpecFactory(label="2-core 4 GB (local)", cpu_cores=2, memory_gb=4)
    scenario = ScenarioFactory(name="read only", dataset=DatasetFactory(name="trust ds", tables=2, table_size=1000))
    measure(product=mariadb, spec=spec, scenario=scenario,
             figures={1: [1000.0, 1500.0], 4: [3000.0, 3300.0], 16: [4000.0, 4100.0]})
    target = measure(product=postgresql, spec=spec, scenario=scenario,
                      figures={1: [1400.0, 2700.0], 4: [3100.0, 3500.0], 16: [6000.0, 6200.0]})
    if invalid_postgresql:
        Job.objects.filter(target=target).update(verdict="invalid", findings=[CLIENT_BOUND])
    return mariadb, postgresql


REFUSED = "connection refused to 127.0.0.1:3399 (is the server running? check the target's host and port)"


def failed_run(statuses: list[tuple[str, str]], *, run_status: str = Run.Status.FAILED, target=None) -> Run:
    target = target or TargetFactory(name="pg local")
    scenario = ScenarioFactory()
    now = timezone.now()
    run = Run.objects.create(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status=run_status,
                             started_at=now, finished_at=now if run_status in Run.FINISHED else None)
    for position, (status, error) in enumerate(statuses):
        Job.objects.create(run=run, target=target, scenario=scenario, threads=position + 1, position=position,
                           status=status, error=error)
    return run


def add_samples(job: Job, client_index: int, ts: list[float], **values: Callable[[float], float]) -> None:
    IntervalSample.objects.bulk_create([
        IntervalSample(job=job, client_index=client_index, t=t, threads=2,
                       tps=values.get("tps", lambda t: 10.0)(t), qps=values.get("qps", lambda t: 100.0)(t),
                       reads_per_s=70.0, writes_per_s=20.0, other_per_s=10.0,
                       latency_pct_ms=values.get("lat", lambda t: 5.0)(t), errors_per_s=0.0, reconnects_per_s=0.0)
        for t in ts
    ])


def published_comparison() -> str:
    template_load_all()
    load_published()
    tencentdb = Product.objects.get(name="TencentDB for MySQL")
    two_core = InstanceSpec.objects.get(label="2-core 16 GB MEM")
    scenario = Scenario.objects.get(name=S001_WRITE)
    local = InstanceSpecFactory(label="4-core 23 GB (local)", cpu_cores=4, memory_gb=23)
    products = [ProductFactory(name=name) for name in ("MariaDB 10.11 (local)", "MySQL 8.4 (local)",
                                                       "PostgreSQL 16 (local)")]
    for index, product in enumerate(products):
        base = 10_000.0 * (index + 1)
        measure(product=product, spec=local, scenario=scenario,
                 figures={threads: [base * threads ** 0.5, base * threads ** 0.5 * 1.04, base * threads ** 0.5 * 0.97]
                          for threads in (8, 32, 64, 96)})
    ids = ",".join(str(p.pk) for p in products)
    return f"products={ids}&published_product={tencentdb.pk}&published_spec={two_core.pk}"

