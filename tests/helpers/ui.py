"""Fixtures of the web UI's tests: users of each role and a history of measured results."""
from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.test import Client
from django.utils import timezone

from campaigns.models import Campaign, Dataset, InstanceSpec, Job, JobResult, Product, Run, Scenario, Target
from tests.helpers import users

PASSWORD = "ui-test-password-1"


def make_user(username: str, role: str | None) -> Any:
    """A user of `role` who logs in on the pages with PASSWORD (tests/helpers/users.py makes it)."""
    return users.make_user(role, username, password=PASSWORD)


def role_logins() -> Callable[[str | None], Client]:
    """What the `role_client` fixture (tests/conftest.py) gives a test: a logged-in test client for a user of the
    given role (None: no role at all), one user per role."""
    made: dict[str | None, Client] = {}

    def login(role: str | None) -> Client:
        if role not in made:
            client = Client()
            client.force_login(make_user(f"user-{role or 'none'}", role))
            made[role] = client
        return made[role]

    return login


@dataclass
class History:
    """Measured results of a campaign: products × specs targets, scenarios, one job per cell."""

    products: list[Product]
    specs: list[InstanceSpec]
    scenarios: list[Scenario]
    targets: list[Target]
    campaign: Campaign
    run: Run
    results: dict[tuple[int, int, int], JobResult] = field(default_factory=dict)  # (target, scenario, threads)


def make_history(*, products: int = 2, specs: int = 2, scenarios: int = 2, threads: tuple[int, ...] = (1, 2, 4),
                 repetitions: int = 1, prefix: str = "h", seed: int = 7) -> History:
    """Succeeded jobs with results for every product × spec × scenario × threads × repetition, in bulk."""
    rng = random.Random(seed)
    product_rows = [Product.objects.create(name=f"{prefix} product {i}", engine=Product.Engine.MARIADB)
                    for i in range(products)]
    spec_rows = [InstanceSpec.objects.create(label=f"{prefix} {2 ** i}-core {8 * 2 ** i} GB", cpu_cores=2 ** i,
                                             memory_gb=8.0 * 2 ** i, price_per_hour=0.25 * 2 ** i if i % 2 == 0 else None)
                 for i in range(specs)]
    dataset = Dataset.objects.create(name=f"{prefix} dataset", tables=4, table_size=10_000)
    scenario_rows = [Scenario.objects.create(name=f"{prefix} scenario {i}", test="oltp_read_write", dataset=dataset,
                                             time_s=60) for i in range(scenarios)]
    targets = [Target.objects.create(name=f"{prefix} target {p.pk}-{s.pk}", product=p, spec=s, driver="mysql",
                                     host="127.0.0.1", port=3306, database="sbtest", user="root")
               for p in product_rows for s in spec_rows]
    campaign = Campaign.objects.create(name=f"{prefix} campaign", threads=list(threads), repetitions=repetitions)
    campaign.targets.set(targets)
    campaign.scenarios.set(scenario_rows)
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    cells = list(itertools.product(targets, scenario_rows, threads, range(1, repetitions + 1)))
    jobs = Job.objects.bulk_create([
        Job(run=run, target=t, scenario=s, threads=n, repetition=r, position=i, tables=4, table_size=10_000,
            status=Job.Status.SUCCEEDED, phase="done", started_at=now, finished_at=now,
            command_line=f"sysbench oltp_read_write --threads={n} --mysql-host=127.0.0.1 run",
            server_snapshot={"before": {"version": "10.11.6-MariaDB", "settings": {"max_connections": "151"},
                                        "status": {}}},
            cache_hit_ratio=0.999)
        for i, (t, s, n, r) in enumerate(cells)
    ])
    history = History(products=product_rows, specs=spec_rows, scenarios=scenario_rows, targets=targets,
                      campaign=campaign, run=run)
    results = []
    for job, (t, _s, n, _r) in zip(jobs, cells, strict=True):
        qps = round(1000.0 * (1 + t.product_id % 3) * min(n, 8) * (1 + rng.random() * 0.01), 2)
        results.append(JobResult(job=job, qps=qps, tps=round(qps / 20, 2), latency_avg_ms=round(n / qps * 1000, 3),
                                 latency_pct=95.0, latency_pct_ms=round(2 * n / qps * 1000, 3)))
    for result, (t, s, n, _r) in zip(JobResult.objects.bulk_create(results), cells, strict=True):
        history.results[(t.pk, s.pk, n)] = result
    return history
