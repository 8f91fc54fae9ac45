"""A latency limit (an SLA such as "p95 ≤ 3 ms") set on a campaign, or chosen on the comparison page or in the API:
each product's highest throughput that keeps it is reported with its thread count, and where the limit breaks."""
from __future__ import annotations

import pytest

from campaigns import services
from campaigns.models import Campaign, Run
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import measure
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db

# measure() gives each job p95 = 2 × threads / QPS seconds: 2.0, 2.1, 2.3 and 4.0 ms at 1, 2, 4 and 8 threads.
FIGURES = {1: [1000.0], 2: [1900.0], 4: [3500.0], 8: [4000.0]}


def _campaign(sla_ms: float | None) -> Campaign:
    scenario = ScenarioFactory(dataset=DatasetFactory(tables=1, table_size=100))
    target = measure(product=ProductFactory(name="Limit DB"), spec=InstanceSpecFactory(label="sla spec"),
                     scenario=scenario, figures=FIGURES)
    campaign = Run.objects.filter(jobs__target=target).first().campaign
    return services.campaign_update(campaign=campaign, sla_ms=sla_ms)


def test_the_campaigns_limit_is_its_comparisons_and_the_page_can_choose_another(role_client):
    campaign = _campaign(3.0)
    client = role_client("viewer")
    page = client.get(f"/compare/?campaign={campaign.pk}").content.decode()
    assert "within p95 ≤ 3 ms: 3,500 QPS at 4 threads (broken at 8)" in page
    chosen = client.get(f"/compare/?campaign={campaign.pk}&sla_ms=5").content.decode()
    assert "within p95 ≤ 5 ms: 4,000 QPS at 8 threads" in chosen and "broken at" not in chosen
    tight = client.get(f"/compare/?campaign={campaign.pk}&sla_ms=1").content.decode()
    assert "no measured count keeps p95 ≤ 1 ms" in tight


def test_the_api_reports_the_campaigns_limit_by_default_and_a_changed_limit_at_once():
    campaign = _campaign(3.0)
    api = client_for(make_user("operator"))
    (curve,) = api.get(f"{API}/comparisons/?campaign={campaign.pk}").json()["curves"]
    assert (curve["sla_ms"], curve["sla_threads"], curve["sla_qps"], curve["sla_broken_at"]) == (3.0, 4, 3500.0, 8)
    run = Run.objects.filter(campaign=campaign).get()
    assert api.get(f"{API}/comparisons/?runs={run.pk}").json()["curves"][0]["sla_threads"] == 4
    # Changed on the campaign: the cached comparison is outdated, the next answer has the new limit.
    assert api.patch(f"{API}/campaigns/{campaign.pk}/", {"sla_ms": 10}, format="json").status_code == 200
    (curve,) = api.get(f"{API}/comparisons/?campaign={campaign.pk}").json()["curves"]
    assert (curve["sla_ms"], curve["sla_threads"]) == (10.0, 8)
    # Named in the request, it wins over the campaign's.
    assert api.get(f"{API}/comparisons/?campaign={campaign.pk}&sla_ms=2.05").json()["curves"][0]["sla_threads"] == 1


def test_a_comparison_of_several_campaigns_or_none_with_a_limit_reports_no_sla_point(role_client):
    with_limit, without = _campaign(3.0), _campaign(None)
    api = client_for(make_user("viewer", "sla-api-viewer"))
    both = api.get(f"{API}/comparisons/?campaign={with_limit.pk},{without.pk}").json()["curves"]
    assert both and all(c["sla_ms"] is None and c["sla_threads"] is None for c in both)
    page = role_client("viewer").get(f"/compare/?campaign={without.pk}").content.decode()
    assert "within p95" not in page and "peaks at 4,000 QPS at 8 threads" in page


@pytest.mark.parametrize("value", ["0", "-3", "abc", "1e9"])
def test_a_bad_limit_is_refused_naming_the_field_everywhere(role_client, value):
    campaign = _campaign(None)
    page = role_client("viewer").get(f"/compare/?campaign={campaign.pk}&sla_ms={value}")
    assert page.status_code == 200 and "Latency limit (ms)" in page.content.decode()
    assert 'id="id_sla_ms_error' in page.content.decode(), "the error is at the field"
    api = client_for(make_user("operator"))
    answer = api.get(f"{API}/comparisons/?campaign={campaign.pk}&sla_ms={value}")
    assert answer.status_code == 400 and "sla_ms" in answer.json(), answer.content
    if value != "abc":
        saved = api.patch(f"{API}/campaigns/{campaign.pk}/", {"sla_ms": float(value)}, format="json")
        assert saved.status_code == 400 and "sla_ms" in saved.json(), saved.content
        assert Campaign.objects.get(pk=campaign.pk).sla_ms is None, "nothing stored"
