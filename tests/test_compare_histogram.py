"""A comparison cell's latency histogram: GET /api/v1/comparisons/cell-histogram/ merges the cell's
jobs' sysbench histograms, reads the percentiles from the merged buckets, says so where there are none, and answers
bad input with a 400 naming the field."""
from __future__ import annotations

from campaigns.models import InstanceSpec, Product, Scenario
from campaigns.sysbench.parser import histogram_percentile, merge_histograms, parse_output
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import SYSBENCH_LOGS, measure


def _histogram_cell() -> tuple[Product, Scenario, InstanceSpec, Scenario]:
    product = ProductFactory(name="Histogram DB")
    spec = InstanceSpecFactory(label="2-core 4 GB (local)", cpu_cores=2, memory_gb=4)
    scenario = ScenarioFactory(name="histogram scenario", dataset=DatasetFactory(name="hist ds", tables=2,
                                                                                   table_size=1000))
    no_percentile = ScenarioFactory(name="percentile 0 scenario", percentile=0.0,
                                    dataset=DatasetFactory(name="p0 ds", tables=2, table_size=1000))
    measure(product=product, spec=spec, scenario=scenario, figures={4: [900.0, 950.0]},
             histograms=["mysql_oltp_read_only_histogram", "pgsql_oltp_read_only_histogram"])
    measure(product=product, spec=spec, scenario=no_percentile, figures={4: [17000.0]},
             histograms=["mysql_oltp_point_select_percentile_0"])
    return product, scenario, spec, no_percentile


def test_a_cells_latency_histogram_merges_its_jobs_histograms(role_client, django_assert_max_num_queries):
    product, scenario, spec, no_percentile = _histogram_cell()
    client = role_client("viewer")
    keys = f"products={product.pk}&spec={spec.pk}&concurrency=4&table_size=1000&tables=2&product={product.pk}"
    client.get(f"/api/v1/comparisons/cell-histogram/?{keys}&scenario={scenario.pk}")
    # The session and the role, then one query for every client of the cell's jobs, whatever their number.
    with django_assert_max_num_queries(4):
        response = client.get(f"/api/v1/comparisons/cell-histogram/?{keys}&scenario={scenario.pk}")
    assert response.status_code == 200
    body = response.json()
    logs = [parse_output((SYSBENCH_LOGS / f"{n}_oltp_read_only_histogram.txt").read_text()).histogram
            for n in ("mysql", "pgsql")]
    merged = merge_histograms(logs)
    assert body["jobs"] == 2 and body["jobs_with_histogram"] == 2 and body["note"] == ""
    assert body["events"] == sum(c for _, c in logs[0]) + sum(c for _, c in logs[1])
    assert [tuple(b) for b in body["buckets"]] == merged
    assert body["percentiles"] == {f"p{p:g}": histogram_percentile(merged, p) for p in (50, 90, 95, 99, 99.9)}
    assert body["percentiles"]["p50"] < body["percentiles"]["p99"]
    # A scenario run with --percentile=0 has no histogram: the answer says so instead of zeros.
    empty = client.get(f"/api/v1/comparisons/cell-histogram/?{keys}&scenario={no_percentile.pk}").json()
    assert empty["jobs"] == 1 and empty["buckets"] == [] and empty["events"] == 0
    assert set(empty["percentiles"].values()) == {None} and "--percentile=0" in empty["note"]


def test_a_cell_histogram_needs_a_viewer_and_names_the_bad_field(role_client):
    product, scenario, spec, _ = _histogram_cell()
    url = "/api/v1/comparisons/cell-histogram/"
    good = f"products={product.pk}&scenario={scenario.pk}&spec={spec.pk}&concurrency=4&table_size=1000&tables=2"
    assert role_client(None).get(f"{url}?{good}&product={product.pk}").status_code == 403
    client = role_client("viewer")
    for query, field in ((f"{good}&product=abc", "product"), (f"{good}&product=0", "product"),
                         (good.replace("concurrency=4", "concurrency=x") + f"&product={product.pk}", "concurrency"),
                         (good.replace(f"spec={spec.pk}", "spec=big") + f"&product={product.pk}", "spec"),
                         (good, "product")):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400 and field in response.json(), (query, response.content)
    none = client.get(f"{url}?{good.replace(f'products={product.pk}', '')}&product={product.pk}")
    assert none.status_code == 400 and "choose what to compare" in none.content.decode()
