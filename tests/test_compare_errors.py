"""The errors sysbench ignored (deadlocks, a TPC-C's rollbacks) stand beside the throughput in the comparison: per
1,000 transactions, the mean of the repetitions, in the API, the page's errors column and the CSV; and the report's
method says how each campaign ordered its jobs and whether it shared servers on purpose."""
from __future__ import annotations

import csv
import io

import pytest

from campaigns.comparison.query import COMPARISON_CSV_COLUMNS, comparison_build
from campaigns.models import JobResult
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import measure
from tests.helpers.users import body_text, client_for, make_user

pytestmark = pytest.mark.django_db


def test_a_cells_ignored_errors_per_1000_transactions_are_in_the_api_the_page_and_the_csv(role_client):
    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=100))
    product = ProductFactory(name="Orders DB")
    target = measure(product=product, spec=InstanceSpecFactory(label="errors spec"), scenario=scenario,
                     figures={4: [1000.0, 1000.0]})
    # 10 and 14 rollbacks in 1,000 transactions: 12 per 1,000 on average; a run without transactions counts none.
    for result, errors in zip(JobResult.objects.filter(job__target=target).order_by("job__repetition"), (10, 14),
                              strict=True):
        JobResult.objects.filter(pk=result.pk).update(ignored_errors=errors, transactions=1000)
    (row,) = comparison_build(product_ids=[product.pk])["groups"][0]["rows"]
    assert row["cells"][0]["errors"] == {"per_1k_txn": 12.0, "total": 24}
    page = role_client("viewer").get(f"/compare/?products={product.pk}").content.decode()
    assert 'data-testid="errors-cell"' in page and "Errors / 1k txn</th>" in page
    assert 'data-value="12.0"' in page.split('data-testid="errors-cell"', 1)[1][:40]
    api = client_for(make_user("viewer", "errors-csv"))
    text = body_text(api.get(f"/api/v1/comparisons/?products={product.pk}&format=csv"))
    (line,) = list(csv.DictReader(io.StringIO(text)))
    assert list(line) == COMPARISON_CSV_COLUMNS and "errors_per_1k_txn" in line and "errors_total" in line
    assert (float(line["errors_per_1k_txn"]), int(line["errors_total"])) == (12.0, 24)


def test_a_cell_without_errors_says_nothing_of_them(role_client):
    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=100))
    product = ProductFactory(name="Clean DB")
    measure(product=product, spec=InstanceSpecFactory(label="clean spec"), scenario=scenario, figures={4: [900.0]})
    page = role_client("viewer").get(f"/compare/?products={product.pk}").content.decode()
    assert 'data-testid="errors-cell"' not in page and "Errors / 1k txn" not in page


def test_the_report_says_in_what_order_each_campaign_ran_its_jobs_and_whether_it_shared(role_client):
    from campaigns.models import Campaign, Run

    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=100))
    product = ProductFactory(name="Ordered DB")
    target = measure(product=product, spec=InstanceSpecFactory(label="order spec"), scenario=scenario,
                     figures={4: [900.0]})
    campaign = Run.objects.filter(jobs__target=target).first().campaign
    report = role_client("viewer").get(f"/compare/report/?products={product.pk}").content.decode()
    assert (f"Campaign {campaign.name}: jobs interleaved: each repetition of a thread count on every target and "
            "variant in turn.") in report
    Campaign.objects.filter(pk=campaign.pk).update(job_order="blocked", share_server=True, name="sharing nightly")
    report = role_client("operator").get(f"/compare/report/?products={product.pk}").content.decode()
    assert "Campaign sharing nightly: jobs blocked: every job of a target (and variant) before the next one" in report
    assert "shares servers and client hosts on purpose" in report
