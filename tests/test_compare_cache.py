"""The comparison page's layout is cached under the results version (comparison_layout_cached): a result saved
after a first view is in the very next one, and the cached layout is the one served in between."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns.models import Job, JobResult
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import measure

pytestmark = pytest.mark.django_db(transaction=True)


def _qps(html: str, product_id: int) -> str:
    return re.search(rf'data-metric="qps" data-product="{product_id}"[^>]*data-value="([^"]+)"', html).group(1)


def test_a_cached_comparison_is_served_until_a_new_result_outdates_it(role_client):
    alpha, beta = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    spec = InstanceSpecFactory(label="cache spec", cpu_cores=2, memory_gb=4)
    scenario = ScenarioFactory(name="cache scenario", dataset=DatasetFactory(name="cache ds", tables=1, table_size=100))
    measure(product=alpha, spec=spec, scenario=scenario, figures={4: [1000.0]})
    measure(product=beta, spec=spec, scenario=scenario, figures={4: [2000.0]})
    client = role_client("viewer")
    url = f"/compare/?products={alpha.pk},{beta.pk}"
    first = client.get(url).content.decode()
    assert _qps(first, beta.pk) == "2000.0"
    with CaptureQueriesContext(connection) as cached:
        again = client.get(url).content.decode()
    assert _qps(again, beta.pk) == "2000.0"
    assert not any("campaigns_jobresult" in q["sql"] for q in cached.captured_queries)  # served from the cache
    # Beta measured again, at 8000 QPS this time: the next view has the geometric mean of 2000 and 8000.
    job = Job.objects.get(target__product=beta)
    again = Job.objects.create(run=job.run, target=job.target, scenario=scenario, threads=4, repetition=2, position=1,
                               tables=1, table_size=100, status=Job.Status.SUCCEEDED, phase="done",
                               started_at=job.started_at, finished_at=job.finished_at)
    JobResult.objects.create(job=again, qps=8000.0, tps=400.0, latency_avg_ms=0.5, latency_pct=95.0,
                             latency_pct_ms=1.0)
    assert _qps(client.get(url).content.decode(), beta.pk) == "4000.0"
