"""Datasets keep their own names (issue "A first comparison in five minutes"): a comparison's headings name the
scenario and the shape its rows were measured on, never the name of a dataset someone else made with that shape,
and a seed's headings show the rows measured, not the document's size."""
from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.utils import timezone

from campaigns.models import Campaign, Job, JobResult, Product, Run, Scenario, Target
from campaigns.services.quick import quick_dataset, quick_scenario
from tests.factories import DatasetFactory, ProductFactory, ScenarioFactory


def _measure(*, product: Product, scenario: Scenario, tables: int, table_size: int,
             figures: dict[int, float]) -> Campaign:
    """A succeeded run of one target: one job per thread count, measured on tables × table_size rows."""
    target = Target.objects.create(name=f"{product.name} {scenario.pk}", product=product, driver="mysql",
                                   host="127.0.0.1", port=3306, database="sbtest", user="root")
    campaign = Campaign.objects.create(name=f"campaign {target.name}", threads=sorted(figures))
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
    for position, (threads, qps) in enumerate(figures.items()):
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads, repetition=1,
                                 position=position, tables=tables, table_size=table_size,
                                 status=Job.Status.SUCCEEDED, phase="done", started_at=now, finished_at=now)
        JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=threads / qps * 1000,
                                 latency_pct=95.0, latency_pct_ms=2 * threads / qps * 1000)
    return campaign


def _headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h[23][^>]*>(.*?)</h[23]>", html, re.S)]


def test_a_quick_scenario_on_someone_elses_dataset_is_headed_by_its_own_name_and_shape(role_client):
    other = get_user_model().objects.create_user("other-user")
    # Someone else made a 4 × 10,000 dataset first and named it after their own study.
    theirs = DatasetFactory(name="overhead 4x10000 (Ann's tuning study)", tables=4, table_size=10_000,
                            created_by=other)
    mine = ScenarioFactory(name="my point select", test="oltp_point_select", dataset=theirs)
    alpha, beta = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    _measure(product=alpha, scenario=mine, tables=4, table_size=10_000, figures={1: 1000.0, 4: 3000.0})
    _measure(product=beta, scenario=mine, tables=4, table_size=10_000, figures={1: 1100.0, 4: 3300.0})
    client = role_client("viewer")
    query = f"products={alpha.pk},{beta.pk}"
    for url in (f"/compare/?{query}", f"/compare/report/?{query}"):
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert any(h.endswith("my point select · 4 × 10,000") for h in _headings(html)), _headings(html)
        assert "Ann" not in html and "overhead 4x10000" not in html


def test_a_quick_compare_scenario_names_its_shape_once(role_client):
    dataset = quick_dataset(tables=2, table_size=1_000)
    scenario = quick_scenario(test="oltp_read_only", dataset=dataset, time_s=5)
    alpha = ProductFactory(name="Alpha DB")
    campaign = _measure(product=alpha, scenario=scenario, tables=2, table_size=1_000, figures={1: 500.0})
    html = role_client("viewer").get(f"/compare/?campaign={campaign.pk}").content.decode()
    assert "oltp_read_only · 2 × 1,000" in _headings(html), _headings(html)
    assert "2 × 1,000 · 2 × 1,000" not in html


def test_a_seed_table_is_headed_by_the_rows_measured_not_the_documents_size(role_client):
    dataset = DatasetFactory(name="seed 003 · 10 × 10,000,000", tables=10, table_size=10_000_000)
    scenario = ScenarioFactory(name="seed 003 · read-only", test="oltp_read_only", dataset=dataset)
    alpha = ProductFactory(name="Alpha DB")
    # A quick run at reduced scale measured 1 table of 10,000 rows at one thread count and 2 at another.
    campaign = _measure(product=alpha, scenario=scenario, tables=1, table_size=10_000, figures={1: 800.0})
    Job.objects.filter(run__campaign=campaign).update(tables=1, table_size=10_000)
    html = role_client("viewer").get(f"/compare/?campaign={campaign.pk}").content.decode()
    headings = _headings(html)
    assert "seed 003 · read-only · 1 × 10,000" in headings, headings
    assert not any("10,000,000" in h for h in headings)
    report = role_client("viewer").get(f"/compare/report/?campaign={campaign.pk}").content.decode()
    assert "4.1 seed 003 · read-only · 1 × 10,000" in _headings(report)
