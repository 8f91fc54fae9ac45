"""The comparison page with a published product set beside measured seed scenarios, and the
significance of each Δ% cell from the repetitions: the page, the CSV and Markdown exports, the
print report, and their query counts."""
from __future__ import annotations

import csv
import io
import re

import pytest

from campaigns.models import InstanceSpec, Product, PublishedResult, Scenario
from campaigns.seeds.matching import (
    PublishedKey,
    SpecShape,
    hardware_comparison,
    nearest_spec,
    nearest_threads,
    published_cores,
    published_key,
)
from campaigns.seeds.published import DEFAULT_DIRECTORY, load_published, published_read
from campaigns.seeds.services import template_load_all
from campaigns.seeds.templates import TEMPLATES
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import S001_WRITE, measure

S000_MAIN = "seed 000 part 1 · oltp 4 point selects + 1 index update"


def _text(response) -> str:
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def _published_tables() -> set[tuple[str, str, str]]:
    """(document, dataset_label, scenario_label) of every published row, read from the fixture CSV files."""
    tables = set()
    for path in sorted(DEFAULT_DIRECTORY.glob("*.csv")):
        document, rows = published_read(path)
        tables |= {(document, r.dataset_label, r.scenario_label) for r in rows}
    return tables


@pytest.fixture
def seeds(db):
    template_load_all()
    load_published()




# ---------------------------------------------------------------- matching (pure)


def test_every_template_scenario_with_published_rows_maps_to_its_published_table():
    tables = _published_tables()
    matched: set[tuple[str, str, str]] = set()
    for template in TEMPLATES:
        documents_tables = {t for t in tables if t[0] == template.document}
        for scenario in template.scenarios:
            key = published_key(scenario.name)
            assert key is not None and key.document == template.document, scenario.name
            hits = {t for t in documents_tables
                    if key.matches(document=t[0], dataset_label=t[1], scenario_label=t[2])}
            # Seed 003 published charts only; every other document's scenarios each have their table.
            assert bool(hits) == (template.document != "003"), scenario.name
            matched |= hits
    assert matched == tables  # and no published table is left without a scenario


@pytest.mark.parametrize(("name", "expected"), [
    (S001_WRITE, PublishedKey("001", "full cache", "write")),
    ("seed 001 · 1 TB single table · read point select", PublishedKey("001", "1 TB single table", "read point select")),
    ("seed 000 part 2 · read", PublishedKey("000", "10 × 2,180,000", "read")),
    ("seed 004 · hybrid", PublishedKey("004", "10 × 2,180,000", "hybrid")),
    ("seed 003 · read-only", PublishedKey("003", "10 × 10,000,000", "read-only")),
    ("seed 002 · DDM oltp (legacy oltp.lua)", PublishedKey("002", "1 × 320,000,000", "oltp (legacy oltp.lua)")),
    (S000_MAIN, PublishedKey("000", None, "oltp 4 point selects + 1 index update")),
    ("my own oltp_read_write", None),
])
def test_a_scenario_name_gives_the_published_document_dataset_and_scenario(name, expected):
    assert published_key(name) == expected


def test_seed_000_part_1_matches_whichever_dataset_size_a_spec_has():
    key = published_key(S000_MAIN)
    assert key.matches(document="000", dataset_label="76 GB", scenario_label="oltp 4 point selects + 1 index update")
    assert not key.matches(document="000", dataset_label="76 GB", scenario_label="read")


def test_the_nearest_published_concurrency_is_the_same_one_else_the_nearest_by_ratio():
    assert nearest_threads(96, [96, 192]) == 96
    assert nearest_threads(64, [96, 1500]) == 96
    # By ratio, not difference: the midpoint of 500 and 1,000 is their geometric mean, about 707.
    assert nearest_threads(700, [500, 1000]) == 500
    assert nearest_threads(710, [500, 1000]) == 1000
    assert nearest_threads(10, []) is None


def test_the_nearest_published_spec_is_the_same_label_else_the_nearest_cores_then_memory():
    two_16 = SpecShape(1, "2-core 16 GB MEM", 2, 16.0)
    four_16 = SpecShape(2, "4-core 16 GB MEM", 4, 16.0)
    four_32 = SpecShape(3, "4-core 32 GB MEM", 4, 32.0)
    candidates = [two_16, four_16, four_32]
    assert nearest_spec(SpecShape(9, "4-core 32 GB MEM", 8, 8.0), candidates) == four_32
    assert nearest_spec(SpecShape(9, "local", 4, 30.0), candidates) == four_32
    assert nearest_spec(SpecShape(9, "local", 2, 23.0), candidates) == two_16
    assert nearest_spec(None, candidates) == two_16


def test_a_published_spec_without_a_core_count_has_unknown_cores_and_gets_raw_figures_only():
    assert published_cores("4 GB MEM, 200 GB storage", 1) is None
    assert published_cores("1 x 8 vCPUs | 16 GB", 8) == 8
    assert published_cores("1-core 2 GB MEM", 1) == 1
    hardware = hardware_comparison(measured_label="local 4-core", measured_cores=4,
                                   published_label="4 GB MEM, 200 GB storage", published_cores=None)
    assert not hardware.per_core
    assert hardware.note == ("measured on local 4-core · published on 4 GB MEM, 200 GB storage — different hardware, "
                             "raw figures only: the document gives no core count for 4 GB MEM, 200 GB storage")
    assert hardware_comparison(measured_label="2-core 23 GB (local)", measured_cores=2,
                               published_label="2-core 16 GB MEM", published_cores=2).note == (
        "measured on 2-core 23 GB (local) · published on 2-core 16 GB MEM — different hardware, per-core figures "
        "compared")


# ---------------------------------------------------------------- beside a published product, on the page


def _tencentdb_2_core(document: str = "001") -> tuple[Product, InstanceSpec]:
    product = Product.objects.get(name="TencentDB for MySQL")
    spec = InstanceSpec.objects.get(label="2-core 16 GB MEM")
    assert PublishedResult.objects.filter(document=document, product=product, spec=spec).exists()
    return product, spec


def test_a_measured_seed_001_result_sits_beside_the_published_tencentdb_2_core_16_gb(role_client, seeds):
    tencentdb, two_core = _tencentdb_2_core()
    published_96 = PublishedResult.objects.get(document="001", product=tencentdb, spec=two_core,
                                               dataset_label="full cache", scenario_label="write", threads=96).qps
    mariadb = ProductFactory(name="MariaDB 10.11")
    local = InstanceSpecFactory(label="4-core 23 GB (local)", cpu_cores=4, memory_gb=23)
    scenario = Scenario.objects.get(name=S001_WRITE)
    # 96 threads is published for 2-core 16 GB; 64 is not, so the document's nearest (96) stands beside it.
    measure(product=mariadb, spec=local, scenario=scenario, figures={64: [18000.0], 96: [20000.0]})
    client = role_client("viewer")
    query = f"products={mariadb.pk}&published_product={tencentdb.pk}&published_spec={two_core.pk}"
    html = _text(client.get(f"/compare/?{query}"))

    # One table: the measured QPS, the published figure (and per core) and the ratio per core, row by row.
    assert html.count('<table class="comparison') == 1
    table = html.split('<table class="comparison', 1)[1].split("</table>", 1)[0]
    notes = html.split('data-testid="beside-published"', 1)[1].split("</div>", 1)[0]
    assert "Beside the published TencentDB for MySQL" in notes and "seed 001: full cache × write" in notes
    label = ("measured on 4-core 23 GB (local) · published on 2-core 16 GB MEM — different hardware, per-core "
             "figures compared")
    assert label in notes
    assert 'TencentDB for MySQL <span class="badge published">published</span>' in table
    assert "on 2-core 16 GB MEM" in table and "MariaDB 10.11 ÷ published" in table
    assert "20,000" in table and "(5,000 ÷" in table  # measured 20,000 QPS on 4 cores, in the ratio's title
    assert f"{published_96:,.0f}" in table and f"{published_96 / 2:,.0f} per core" in table
    assert f"{(20000 / 4) / (published_96 / 2):.2f}×<br><span class=\"muted small\">per core · n = 1" in table
    # The 64-thread row names the concurrency it stands beside.
    assert "at 96 threads</span>" in table and "the document&#x27;s nearest to 64" in table
    assert f"{(18000 / 4) / (published_96 / 2):.2f}×" in table
    # The sentence sets only like against like: the 64-thread row stands beside a 96-thread figure.
    high = (20000 / 4) / (published_96 / 2)
    summary = re.search(r'data-testid="beside-summary"><strong>Beside the published figures.</strong> (.*?)</p>',
                        html, re.S).group(1)
    assert summary == (f"MariaDB 10.11 reaches {high:.2f}× the published TencentDB for MySQL&#x27;s QPS (per core) "
                       "(on the 1 of 2 rows like the document&#x27;s; the others differ in thread counts), on "
                       "different hardware."), summary
    assert "threads: 64 here, 96 in the document" in notes

    rows = list(csv.DictReader(io.StringIO(_text(client.get(f"/compare/comparison.csv?{query}")))))
    by_threads = {int(r["concurrency"]): r for r in rows}
    assert by_threads[96]["published_product"] == "TencentDB for MySQL"
    assert by_threads[96]["published_spec"] == "2-core 16 GB MEM"
    assert float(by_threads[96]["published_qps"]) == published_96
    assert float(by_threads[96]["qps_per_core"]) == 5000.0
    assert float(by_threads[96]["published_qps_per_core"]) == published_96 / 2
    assert float(by_threads[96]["ratio_to_published"]) == round(5000 / (published_96 / 2), 4)
    assert by_threads[96]["ratio_basis"] == "per core" and by_threads[96]["hardware"] == label
    assert by_threads[64]["published_concurrency"] == "96"

    markdown = _text(client.get(f"/compare/comparison.md?{query}"))
    # Markdown: the same one table, the published columns after the measured ones, then where they come from.
    assert "| QPS TencentDB for MySQL (published) | MariaDB 10.11 ÷ published |" in markdown
    assert (f"| 20,000 | {published_96:,.0f} ({published_96 / 2:,.0f} per core) | "
            f"{5000 / (published_96 / 2):.2f}× per core, n = 1 |") in markdown
    assert f"| {published_96:,.0f} ({published_96 / 2:,.0f} per core, at 96 threads) |" in markdown
    assert "Beside the published TencentDB for MySQL (seed 001: full cache × write):" in markdown
    assert f"- {label}" in markdown

    report = _text(client.get(f"/compare/report/?{query}"))
    assert label in report and "Published figures set beside a measured table" in report
    # The report's QPS table carries the published columns too (no separate table after it).
    qps_part = report.split('id="table-', 1)[1].split("</table>", 1)[0]
    assert "MariaDB 10.11 ÷ published" in qps_part and f"{published_96:,.0f}" in qps_part


def test_without_a_published_spec_the_nearest_one_stands_beside_each_measured_spec(role_client, seeds):
    tencentdb = Product.objects.get(name="TencentDB for MySQL")
    mariadb = ProductFactory(name="MariaDB 10.11")
    scenario = Scenario.objects.get(name=S001_WRITE)
    measure(product=mariadb, spec=InstanceSpecFactory(label="8-core 30 GB (local)", cpu_cores=8, memory_gb=30),
             scenario=scenario, figures={256: [40000.0]})
    html = _text(role_client("viewer").get(f"/compare/?products={mariadb.pk}&published_product={tencentdb.pk}"))
    assert "published on 8-core 32 GB MEM — different hardware, per-core figures compared" in html


def test_cores_unknown_gives_raw_figures_only_and_says_why(role_client, seeds):
    mariadb_published = Product.objects.get(name="TencentDB for MariaDB")
    four_gb = InstanceSpec.objects.get(label="4 GB MEM, 200 GB storage")
    published = PublishedResult.objects.get(document="000", product=mariadb_published, spec=four_gb).qps
    mariadb = ProductFactory(name="MariaDB 10.11")
    scenario = Scenario.objects.get(name=S000_MAIN)
    measure(product=mariadb, spec=InstanceSpecFactory(label="2-core 4 GB (local)", cpu_cores=2, memory_gb=4),
             scenario=scenario, figures={128: [5000.0]})
    client = role_client("viewer")
    query = f"products={mariadb.pk}&published_product={mariadb_published.pk}&published_spec={four_gb.pk}"
    html = _text(client.get(f"/compare/?{query}"))
    notes = html.split('data-testid="beside-published"', 1)[1].split("</div>", 1)[0]
    table = html.split('<table class="comparison', 1)[1].split("</table>", 1)[0]
    assert ("measured on 2-core 4 GB (local) · published on 4 GB MEM, 200 GB storage — different hardware, raw "
            "figures only: the document gives no core count for 4 GB MEM, 200 GB storage") in notes
    assert "per core" not in table
    assert f"{5000 / published:.2f}×<br><span class=\"muted small\">raw · n = 1</span>" in table
    rows = list(csv.DictReader(io.StringIO(_text(client.get(f"/compare/comparison.csv?{query}")))))
    assert rows[0]["ratio_basis"] == "raw" and rows[0]["qps_per_core"] == "" and rows[0]["published_qps_per_core"] == ""


def test_a_target_without_a_spec_is_compared_raw_and_says_it_has_no_spec(role_client, seeds):
    tencentdb, two_core = _tencentdb_2_core()
    mariadb = ProductFactory(name="MariaDB 10.11")
    measure(product=mariadb, spec=None, scenario=Scenario.objects.get(name=S001_WRITE), figures={96: [9000.0]})
    html = _text(role_client("viewer").get(
        f"/compare/?products={mariadb.pk}&published_product={tencentdb.pk}&published_spec={two_core.pk}"))
    assert "raw figures only: the measured target has no spec" in html


def test_a_scenario_of_no_template_or_another_document_says_nothing_matches(role_client, seeds):
    tencentdb, two_core = _tencentdb_2_core()
    mariadb = ProductFactory(name="MariaDB 10.11")
    measure(product=mariadb, spec=two_core, scenario=ScenarioFactory(name="my own point select"), figures={8: [1.0]})
    measure(product=mariadb, spec=two_core, scenario=Scenario.objects.get(name="seed 004 · read"),
             figures={50: [1.0]})
    html = _text(role_client("viewer").get(f"/compare/?products={mariadb.pk}&published_product={tencentdb.pk}"))
    assert "my own point select is not a scenario of a seed template, so no published table matches it" in html
    assert "TencentDB for MySQL has no published figures for seed 004: 10 × 2,180,000 × read." in html


def test_a_published_spec_of_another_product_or_without_a_product_is_refused(role_client, seeds):
    tencentdb = Product.objects.get(name="TencentDB for MySQL")
    ddm_spec = InstanceSpec.objects.get(label="1 x 8 vCPUs | 16 GB")
    mariadb = ProductFactory(name="MariaDB 10.11")
    client = role_client("viewer")
    html = _text(client.get(f"/compare/?products={mariadb.pk}&published_product={tencentdb.pk}"
                            f"&published_spec={ddm_spec.pk}"))
    assert "The product has no published figures on this spec." in html
    assert "Choose the published product first." in _text(
        client.get(f"/compare/?products={mariadb.pk}&published_spec={ddm_spec.pk}"))
    assert "No published figures for this product." in _text(
        client.get(f"/compare/?products={mariadb.pk}&published_product={mariadb.pk}"))
    form = _text(client.get("/compare/"))
    assert 'name="published_product"' in form and '<optgroup label="TencentDB for MySQL — seed 001">' in form


# ---------------------------------------------------------------- significance of each Δ%


def _two_products_with_repetitions() -> tuple[Product, Product, Scenario]:
    a, b = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    spec = InstanceSpecFactory(label="4-core 16 GB (local)", cpu_cores=4, memory_gb=16)
    scenario = ScenarioFactory(name="point select", dataset=DatasetFactory(name="sig dataset"))
    measure(product=a, spec=spec, scenario=scenario, figures={
        8: [1000.0, 1010.0, 990.0], 16: [2000.0, 2040.0, 1960.0], 32: [3000.0]})
    measure(product=b, spec=spec, scenario=scenario, figures={
        8: [1500.0, 1490.0, 1510.0],  # clearly faster
        16: [2020.0, 1990.0, 2030.0],  # within ±2% of Alpha's runs
        32: [3300.0]})  # one run each: nothing can be said
    return a, b, scenario


def _delta_cells(html: str) -> dict[int, str]:
    cells = {}
    for row in re.findall(r'<tr data-spec="[^"]*" data-threads="(\d+)"[^>]*>(.*?)</tr>', html, re.S):
        delta = re.search(r'<td class="num delta[^"]*" data-metric="delta"([^>]*)>(.*?)</td>', row[1], re.S)
        if delta:
            cells[int(row[0])] = delta.group(1) + delta.group(2)
    return cells


def test_each_delta_says_significant_not_significant_or_untested_naming_n(role_client):
    a, b, _scenario = _two_products_with_repetitions()
    client = role_client("viewer")
    query = f"products={a.pk},{b.pk}"
    html = _text(client.get(f"/compare/?{query}"))
    cells = _delta_cells(html)
    assert 'data-significance="significant"' in cells[8] and ">significant (n = 3)</span>" in cells[8]
    # The title gives the raw and the adjusted p-value (2 Δ% tested on the page).
    assert re.search(r"Welch&#x27;s t-test on log QPS, n = 3: p = [0-9.e-]+, adjusted p = [0-9.e-]+ "
                     r"\(Benjamini–Hochberg over the 2 Δ% tested here\)", cells[8])
    assert re.search(r'<span class="ci" data-testid="ci">\+4\d\.\d% … \+5\d\.\d%</span>', cells[8])
    assert 'data-significance="within ±5%"' in cells[16] and ">within ±" in cells[16]
    assert 'data-significance="untested"' in cells[32] and ">untested (n = 1)</span>" in cells[32]
    # The conclusion quotes the same verdicts as the marks, and never "within noise".
    conclusion = re.search(r'data-testid="conclusion">(.*?)</p>', html, re.S).group(1)
    assert ("significant in 1 of 3 rows (n = 3, adjusted p &lt; 0.05), within ±5% in 1 (n = 3), "
            "untested in 1 (n = 1)") in conclusion
    assert "within noise" not in html
    rows = list(csv.DictReader(io.StringIO(_text(client.get(f"/compare/comparison.csv?{query}")))))
    beta = {int(r["concurrency"]): r for r in rows if r["product"] == "Beta DB"}
    assert beta[8]["qps_delta_significance"] == "significant (n = 3)" and float(beta[8]["qps_delta_p_value"]) < 0.05
    assert float(beta[8]["qps_delta_p_adjusted"]) >= float(beta[8]["qps_delta_p_value"])
    assert beta[16]["qps_delta_significance"].startswith("within ±")
    low, high = float(beta[8]["qps_delta_ci95_low_pct"]), float(beta[8]["qps_delta_ci95_high_pct"])
    assert low < float(beta[8]["qps_delta_pct"]) < high and beta[8]["n_baseline"] == "3"
    assert float(beta[16]["qps_delta_p_adjusted"]) > 0.05
    assert beta[32]["qps_delta_significance"] == "untested (n = 1)" and beta[32]["qps_delta_p_value"] == ""
    markdown = _text(client.get(f"/compare/comparison.md?{query}"))
    assert re.search(r"\+50\.0% \(\+4\d\.\d% … \+5\d\.\d%\), significant \(n = 3\)", markdown)
    assert re.search(r"\), within ±\d\.\d% \(n = 3\)", markdown)
    assert "+10.0%, untested (n = 1)" in markdown
    report = _text(client.get(f"/compare/report/?{query}"))
    assert 'data-significance="significant"' in report and "Welch" in report


def test_single_run_comparisons_never_claim_significance(role_client):
    a, b = ProductFactory(name="Gamma DB"), ProductFactory(name="Delta DB")
    spec = InstanceSpecFactory(label="2-core 8 GB (local)", cpu_cores=2, memory_gb=8)
    scenario = ScenarioFactory(name="single-run scenario")
    measure(product=a, spec=spec, scenario=scenario, figures={4: [1000.0]})
    measure(product=b, spec=spec, scenario=scenario, figures={4: [3000.0]})
    html = _text(role_client("viewer").get(f"/compare/?products={a.pk},{b.pk}"))
    assert "untested (n = 1)" in html
    assert 'data-significance="significant"' not in html and 'data-significance="too few runs to tell"' not in html
    assert 'data-significance="within ±5%"' not in html


# ---------------------------------------------------------------- query counts


@pytest.mark.parametrize("threads", [(96,), (8, 16, 32, 64, 96, 128, 192, 256, 512, 1000)])
def test_beside_and_significance_take_a_constant_number_of_queries(role_client, seeds,
                                                                    django_assert_max_num_queries, threads):
    tencentdb = Product.objects.get(name="TencentDB for MySQL")
    products = [ProductFactory(name="MariaDB 10.11"), ProductFactory(name="MySQL 8.0")]
    specs = [InstanceSpecFactory(label=f"{c}-core {4 * c} GB (local)", cpu_cores=c, memory_gb=4.0 * c) for c in (2, 8)]
    scenarios = Scenario.objects.filter(name__startswith="seed 001 · full cache")
    for product in products:
        for spec in specs:
            for scenario in scenarios:
                measure(product=product, spec=spec, scenario=scenario,
                         figures={t: [1000.0 * (1 + product.pk % 2), 1010.0 * (1 + product.pk % 2)] for t in threads})
    client = role_client("viewer")
    query = f"products={products[0].pk},{products[1].pk}&published_product={tencentdb.pk}"
    client.get(f"/compare/?{query}")
    with django_assert_max_num_queries(16):  # 15, and one for the cells' server profiles (panel)
        html = _text(client.get(f"/compare/?{query}"))
    assert html.count('data-testid="beside-published"') == 5
    assert html.count('data-significance="significant"') == 5 * 2 * len(threads)
    for export in ("comparison.csv", "comparison.md", "report/"):
        with django_assert_max_num_queries(21):  # 19, one for the cells' per-query costs, one for the job order
            _text(client.get(f"/compare/{export}?{query}"))
