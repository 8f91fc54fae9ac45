"""Two targets of one product on one row are two columns, never pooled: two MariaDB servers of the same spec
measured at 200 and 80 TPS are compared with each other (Δ%, significance), not averaged into one cell of n = 4.
A product measured on one target per spec keeps its one column."""
from __future__ import annotations

import pytest
from django.utils import timezone

from campaigns.comparison.query import comparison_build
from campaigns.models import Campaign, Job, JobClient, JobResult, Run, Scenario, Target
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def _measured(target: Target, scenario: Scenario, figures: dict[int, list[float]]) -> Run:
    campaign = Campaign.objects.create(name=f"campaign {target.name}", threads=sorted(figures), repetitions=2)
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    for threads, values in figures.items():
        for repetition, qps in enumerate(values, start=1):
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads, repetition=repetition,
                                     tables=1, table_size=100, status=Job.Status.SUCCEEDED, phase="done",
                                     started_at=now, finished_at=now, position=repetition)
            JobClient.objects.create(job=job, index=0, host_name="h", status=JobClient.Status.SUCCEEDED)
            JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=1.0, latency_pct=95.0,
                                     latency_pct_ms=2.0)
    return run


def _two_servers() -> tuple[Target, Target, Scenario]:
    product, spec = ProductFactory(name="MariaDB"), InstanceSpecFactory(label="4 cores")
    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=100))
    fast = TargetFactory(name="db-fast", product=product, spec=spec, host="10.0.0.1")
    slow = TargetFactory(name="db-slow", product=product, spec=spec, host="10.0.0.2")
    _measured(fast, scenario, {8: [4000.0, 4100.0]})
    _measured(slow, scenario, {8: [1600.0, 1650.0]})
    return fast, slow, scenario


def test_two_targets_of_one_product_and_spec_are_two_columns_in_the_order_chosen():
    fast, slow, scenario = _two_servers()
    comparison = comparison_build(target_ids=[slow.pk, fast.pk])
    assert [(c["name"], c.get("target_id")) for c in comparison["products"]] == [
        ("MariaDB · db-slow", slow.pk), ("MariaDB · db-fast", fast.pk)]
    ((row,),) = [g["rows"] for g in comparison["groups"]]
    base, other = row["cells"]
    assert (base["n"], base["target_id"], other["n"], other["target_id"]) == (2, slow.pk, 2, fast.pk)
    assert other["delta_pct"]["qps"] == pytest.approx((other["qps"]["value"] / base["qps"]["value"] - 1) * 100,
                                                       abs=0.01)
    assert other["delta_pct"]["qps"] > 140 and other["significance"]["verdict"] != "untested"
    # By product they stay apart too, in name order.
    by_product = comparison_build(scenario_ids=[scenario.pk])
    assert [c["name"] for c in by_product["products"]] == ["MariaDB · db-fast", "MariaDB · db-slow"]


def test_a_product_with_one_target_per_spec_keeps_one_column():
    product = ProductFactory(name="TDSQL-C")
    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=100))
    for cores in (2, 4):
        target = TargetFactory(name=f"tdsql {cores}c", product=product,
                               spec=InstanceSpecFactory(label=f"{cores} cores", cpu_cores=cores))
        _measured(target, scenario, {8: [1000.0 * cores, 1010.0 * cores]})
    comparison = comparison_build(product_ids=[product.pk])
    assert [(c["name"], c.get("target_id")) for c in comparison["products"]] == [("TDSQL-C", None)]
    assert [len(g["rows"]) for g in comparison["groups"]] == [2]
    assert all("target_id" not in r["cells"][0] for r in comparison["groups"][0]["rows"])


def test_the_page_and_the_histogram_name_each_targets_column(role_client):
    fast, slow, scenario = _two_servers()
    page = role_client("viewer").get(f"/compare/?targets={fast.pk},{slow.pk}").content.decode()
    assert "MariaDB · db-fast" in page and "MariaDB · db-slow" in page
    assert f'data-target="{fast.pk}"' in page and f'data-target="{slow.pk}"' in page
    api = client_for(make_user("viewer", "targets-histogram"))
    row = {"scenario": scenario.pk, "spec": fast.spec_id, "concurrency": 8, "table_size": 100, "tables": 1,
           "product": fast.product_id}
    both = api.get("/api/v1/comparisons/cell-histogram/", {"targets": f"{fast.pk},{slow.pk}", **row}).json()
    one = api.get("/api/v1/comparisons/cell-histogram/", {"targets": f"{fast.pk},{slow.pk}", "target": slow.pk,
                                                          **row}).json()
    assert (both["jobs"], one["jobs"]) == (4, 2)
