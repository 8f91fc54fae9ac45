"""Seed white papers: the six campaign templates and the published result tables.

Nothing runs here: templates are instantiated against local endpoints and planned, and the CSV files of
published figures are loaded and checked against the numbers printed in the documents.
"""
from __future__ import annotations

import shutil
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from campaigns.models import Campaign, Dataset, InstanceSpec, Product, PublishedResult, Scenario
from campaigns.seeds.published import DEFAULT_DIRECTORY, PublishedDataError, load_published
from campaigns.seeds.services import template_instantiate, template_load_all
from campaigns.seeds.templates import PAIR_SEPARATOR, S000_MAIN_SPECS, S001_SPECS, S002_SPECS, SYNC_SPEC, TEMPLATES
from campaigns.services import campaign_plan
from tests.factories import InstanceSpecFactory, PgTargetFactory, ProductFactory, TargetFactory

pytestmark = pytest.mark.django_db

KEYS = ["seed-000-part-1", "seed-000-part-2", "seed-001", "seed-002", "seed-003", "seed-004"]
HOUR = 3600
TB = 10**12


def _template(key: str) -> Campaign:
    return Campaign.objects.get(is_template=True, template_key=key)


def _local_targets() -> list:
    """The two local endpoints, on a spec no document tested."""
    spec = InstanceSpecFactory(label="local 2-core 8 GB", cpu_cores=2, memory_gb=8)
    return [TargetFactory(name="local-mariadb", spec=spec), PgTargetFactory(name="local-postgresql", spec=spec)]


def _targets_on(label: str, products: tuple[str, ...]) -> list:
    """One local MariaDB target per product, all on the document spec `label`."""
    spec = InstanceSpec.objects.get(label=label)
    return [TargetFactory(name=f"{product} on {label}", product=ProductFactory(name=f"stand-in for {product}"),
                          spec=spec) for product in products]


# ------------------------------------------------------------------ templates


def test_it_loads_six_templates_and_loading_again_creates_nothing_new():
    first = template_load_all()
    counts = (Campaign.objects.count(), Scenario.objects.count(), Dataset.objects.count(),
              InstanceSpec.objects.count())
    second = template_load_all()

    assert [c.template_key for c in first] == KEYS
    assert [c.pk for c in second] == [c.pk for c in first]
    assert (Campaign.objects.count(), Scenario.objects.count(), Dataset.objects.count(),
            InstanceSpec.objects.count()) == counts
    assert all(c.is_template and c.targets.count() == 0 for c in second)
    assert {key: _template(key).scenarios.count() for key in KEYS} == {
        "seed-000-part-1": 1, "seed-000-part-2": 3, "seed-001": 15, "seed-002": 1, "seed-003": 3, "seed-004": 3}


def test_loading_again_restores_a_template_scenario_edited_elsewhere():
    template_load_all()
    Scenario.objects.filter(name="seed 003 · read-only").update(time_s=5, options={})
    template_load_all()
    scenario = Scenario.objects.get(name="seed 003 · read-only")
    assert scenario.time_s == 300 and scenario.options == {"skip-trx": True}


def test_no_scenario_name_or_spec_label_contains_the_pair_separator():
    for definition in TEMPLATES:
        assert all(PAIR_SEPARATOR not in s.name for s in definition.scenarios)
        assert all(PAIR_SEPARATOR not in label for label in definition.specs)


def test_templates_carry_the_documents_durations_percentiles_and_client_rules():
    template_load_all()
    s000 = _template("seed-000-part-1")
    main = s000.scenarios.get()
    # "--max-time=1800 ... --percentile=99 ... --rand-type=special", 30 min in the parameter table
    assert (main.test, main.time_s, main.percentile, main.options["rand-type"]) == (
        "oltp_legacy/oltp.lua", 1800, 99.0, "special")
    assert main.options["oltp-point-selects"] == 4 and main.options["oltp-index-updates"] == 1
    assert (s000.clients_min, s000.clients_per_threads) == (1, 128)
    # 488 GB: 6 clients × 128 threads on 60 tables × 40 M rows; the tuned run 60 × 10 M.
    assert s000.threads_by_spec["488 GB MEM, 6 TB storage"] == [768]
    assert main.dataset.sizes_by_spec["488 GB MEM, 6 TB storage (tuned)"] == [60, 10_000_000]

    s001 = _template("seed-001")
    assert (s001.clients_min, s001.clients_per_threads) == (2, 1000)
    assert {(s.time_s, s.percentile) for s in s001.scenarios.all()} == {(600, 95.0)}
    single = Dataset.objects.get(name="seed 001 · 1 TB single table")
    assert (single.tables, single.table_size) == (1, 4_000_000_000)
    assert "2,147,483,647" in single.description and "BIGINT" in single.description
    assert Dataset.objects.get(name="seed 001 · big dataset").sizes_by_spec["64-core 256 GB MEM"] == [450, 6_000_000]

    for key in ("seed-000-part-2", "seed-004"):
        scenarios = {s.preset.split("-", 1)[1]: s for s in _template(key).scenarios.all()}
        assert set(scenarios) == {"read", "write-non-index", "hybrid"}
        assert {(s.percentile, s.time_s, s.options["events"]) for s in scenarios.values()} == {
            (99.0, 360_000, 2_000_000_000)}
        assert _template(key).threads == [50, 100, 200, 500, 1000]

    ddm = _template("seed-002").scenarios.get()
    assert "dbpartition by hash(id)" in ddm.table_ddl and ddm.options["skip-create-table"] is True
    assert (ddm.time_s, ddm.options["oltp-range-size"], ddm.options["oltp-secondary"]) == (300, 5, True)

    s003 = _template("seed-003")
    assert {(s.time_s, s.percentile, s.report_interval_s) for s in s003.scenarios.all()} == {(300, 95.0, 1)}
    assert s003.scenarios.get(name="seed 003 · read-only").options["skip-trx"] is True
    assert s003.threads[0] == 2 and s003.threads[-1] == 3000


# Jobs with the two local targets (on a spec no document tested, so every list is the template's default).
LOCAL_JOBS = {"seed-000-part-1": 2, "seed-000-part-2": 30, "seed-001": 30, "seed-002": 2, "seed-003": 72,
              "seed-004": 30}


@pytest.mark.parametrize("key", KEYS)
def test_each_template_instantiates_and_plans_against_the_two_local_targets(key):
    template_load_all()
    targets = _local_targets()
    full = template_instantiate(template=_template(key), targets=targets, scale_factor=1.0)
    small = template_instantiate(template=_template(key), targets=targets, scale_factor=0.0001)

    plan = campaign_plan(campaign=full)
    small_plan = campaign_plan(campaign=small)

    assert not full.is_template and full.template_key == key
    assert plan["job_count"] == small_plan["job_count"] == LOCAL_JOBS[key]
    assert {j["target"] for j in plan["jobs"]} == {"local-mariadb", "local-postgresql"}
    assert all("***" not in c for j in plan["jobs"] for c in j["commands"])  # no password was set
    assert small_plan["estimated_dataset_bytes"] < plan["estimated_dataset_bytes"] / 1000
    assert small_plan["estimated_dataset_bytes"] < 10**9


def test_seed_001_at_scale_1_plans_the_1_tb_table_and_runs_for_hours():
    template_load_all()
    instance = template_instantiate(template=_template("seed-001"), targets=_local_targets(), scale_factor=1.0)

    plan = campaign_plan(campaign=instance)

    single = [j for j in plan["jobs"] if "1 TB single table" in j["scenario"]]
    assert {(j["tables"], j["table_size"]) for j in single} == {(1, 4_000_000_000)}
    assert all("--table-size=4000000000" in j["commands"][0] for j in single)
    assert plan["estimated_dataset_bytes"] >= TB
    assert plan["estimated_duration_s"] >= 10 * HOUR
    # A spec the document did not test: the default thread list, two clients.
    assert {(j["threads"], j["clients"]) for j in plan["jobs"]} == {(64, 2)}


def test_seed_001_instantiated_once_per_spec_plans_exactly_the_published_cells():
    template_load_all()
    load_published()
    planned = Counter()
    for label in S001_SPECS:
        targets = _targets_on(label, ("TencentDB for MySQL", "TDSQL-C for MySQL"))
        instance = template_instantiate(template=_template("seed-001"), targets=targets, scale_factor=1.0,
                                        name=f"seed 001 on {label}")
        for job in campaign_plan(campaign=instance)["jobs"]:
            _, dataset, scenario = job["scenario"].split(" · ")
            assert job["clients"] == (3 if job["threads"] > 1000 else 2)
            planned[(label, dataset, scenario, job["threads"], job["tables"], job["table_size"])] += 1

    published = Counter(
        (r.spec.label, r.dataset_label, r.scenario_label, r.threads, r.tables, r.table_size)
        for r in PublishedResult.objects.filter(document="001").select_related("spec")
    )
    assert sum(planned.values()) == 330
    assert planned == published


def test_seed_000_part_1_with_a_target_per_spec_plans_the_published_rows():
    template_load_all()
    load_published()
    targets = [t for label in S000_MAIN_SPECS for t in _targets_on(label, ("TencentDB for MariaDB",))]
    plan = campaign_plan(campaign=template_instantiate(template=_template("seed-000-part-1"), targets=targets,
                                                       scale_factor=1.0))
    spec_of = {t.name: t.spec.label for t in targets}

    planned = {(spec_of[j["target"]], j["threads"], j["clients"], j["tables"], j["table_size"]) for j in plan["jobs"]}
    published = {(r.spec.label, r.threads, r.clients, r.tables, r.table_size)
                 for r in PublishedResult.objects.filter(document="000", table_ref__startswith="Main")}
    assert plan["job_count"] == 10 and planned == published
    # 10 jobs of 30 min plus loading 2.15 billion rows.
    assert plan["estimated_duration_s"] >= 5 * HOUR


def test_seed_002_with_a_target_per_spec_plans_the_published_concurrency():
    template_load_all()
    load_published()
    targets = [t for label in S002_SPECS for t in _targets_on(label, ("Huawei DDM",))]
    plan = campaign_plan(campaign=template_instantiate(template=_template("seed-002"), targets=targets,
                                                       scale_factor=1.0))
    spec_of = {t.name: t.spec.label for t in targets}

    assert {(spec_of[j["target"]], j["threads"], j["table_size"]) for j in plan["jobs"]} == {
        (r.spec.label, r.threads, r.table_size) for r in PublishedResult.objects.filter(document="002")}


@pytest.mark.parametrize("key, document, products", [
    ("seed-000-part-2", "000", ("TencentDB for MariaDB", "MySQL 5.6 (async)")),
    ("seed-004", "004", ("TDSQL for MySQL", "MySQL 5.7 (semi-sync)")),
])
def test_sync_comparisons_plan_one_job_per_published_row(key, document, products):
    template_load_all()
    load_published()
    targets = _targets_on(SYNC_SPEC, products)
    plan = campaign_plan(campaign=template_instantiate(template=_template(key), targets=targets, scale_factor=1.0))

    published = PublishedResult.objects.filter(document=document, spec__label=SYNC_SPEC)
    assert plan["job_count"] == published.count() == 30
    assert Counter(j["threads"] for j in plan["jobs"]) == Counter(r.threads for r in published)
    # The documents' --max-time=360000: 100 hours a job, as printed.
    assert plan["estimated_duration_s"] >= 30 * 100 * HOUR


def test_targets_on_several_seed_001_specs_run_the_union_of_their_concurrencies():
    template_load_all()
    targets = _targets_on("2-core 16 GB MEM", ("TDSQL-C for MySQL",)) + _targets_on("64-core 256 GB MEM",
                                                                                    ("TDSQL-C for MySQL",))
    instance = template_instantiate(template=_template("seed-001"), targets=targets, scale_factor=0.001)

    # Full cache write: 96 threads on 2-core 16 GB, 1,000 on 64-core 256 GB.
    assert instance.threads_by_scenario["seed 001 · full cache · write"] == [96, 1000]
    assert not any(PAIR_SEPARATOR in key for key in instance.threads_by_scenario)


def test_instantiate_refuses_a_campaign_that_is_not_a_template_and_an_empty_target_list():
    template_load_all()
    instance = template_instantiate(template=_template("seed-003"), targets=_local_targets(), scale_factor=0.01)
    with pytest.raises(ValueError, match="not a template"):
        template_instantiate(template=instance, targets=list(instance.targets.all()), scale_factor=0.01)
    with pytest.raises(ValueError, match="at least one target"):
        template_instantiate(template=_template("seed-003"), targets=[], scale_factor=0.01)


# ------------------------------------------------------------------ published results

PER_DOCUMENT = {"000": 40, "001": 330, "002": 3, "003": 0, "004": 30}
PER_TABLE = {
    ("000", "Main Specification Performance / 5. Test Results"): 10,
    ("000", "Performance Comparison Data for Strong Sync / 1. Read request (READ)"): 10,
    ("000", "Performance Comparison Data for Strong Sync / 2. Write request (UPDATE)"): 10,
    ("000", "Performance Comparison Data for Strong Sync / 3. Hybrid scenario (OLTP test)"): 10,
    **{("001", f"{section} / {scenario}"): 22
       for section, scenarios in {
           "Full Cache Scenario Test Results": (
               "Scenario 1: Write", "Scenario 2: Read (POINT SELECT)", "Scenario 3: Read (RANGE SELECT)",
               "Scenario 4: Read-write (POINT SELECT)", "Scenario 5: Read-write (RANGE SELECT)"),
           "Big Dataset Scenario Test Results": (
               "Scenario 1: Write", "Scenario 2: Read", "Scenario 3: Read", "Scenario 4: Read-write",
               "Scenario 5: Read-write (RANGE SELECT)"),
           "1 TB Single Table Scenario Test Results": (
               "Scenario 1: Write", "Scenario 2: Read", "Scenario 3: Read", "Scenario 4: Read-write",
               "Scenario 5: Read-write (RANGE SELECT)"),
       }.items() for scenario in scenarios},
    ("002", "Table 1-1 Required test data"): 3,
    ("004", "읽기 요청(read) 테스트 결과"): 10,
    ("004", "쓰기 요청(write)테스트 결과"): 10,
    ("004", "하이브리드 시나리오(OLTP) 테스트 결과"): 10,
}


def _cell(document: str, table: str, product: str, spec: str, threads: int) -> PublishedResult:
    return PublishedResult.objects.get(document=document, table_ref__endswith=table, product__name=product,
                                       spec__label=spec, threads=threads)


def test_published_tables_load_whole_and_loading_again_changes_nothing():
    counts = load_published()
    ids = sorted(PublishedResult.objects.values_list("id", flat=True))
    again = load_published()

    assert counts == again == PER_DOCUMENT
    assert sorted(PublishedResult.objects.values_list("id", flat=True)) == ids
    per_table = Counter(PublishedResult.objects.values_list("document", "table_ref"))
    assert dict(per_table) == PER_TABLE
    assert set(Product.objects.filter(published_results__isnull=False).values_list("name", flat=True)) == {
        "TencentDB for MariaDB", "MySQL 5.6 (async)", "TDSQL-C for MySQL", "TencentDB for MySQL", "Huawei DDM",
        "TDSQL for MySQL", "MySQL 5.7 (semi-sync)"}
    spec = InstanceSpec.objects.get(label="2-core 16 GB MEM")
    assert (spec.cpu_cores, spec.memory_gb) == (2, 16)
    # Seed 000 part 1 gives memory and storage only: the core count is a stand-in, and says so.
    mariadb = InstanceSpec.objects.get(label="96 GB MEM, 1.5 TB storage")
    assert (mariadb.cpu_cores, mariadb.memory_gb, mariadb.storage_gb) == (1, 96, 1536)
    assert "no core count" in mariadb.notes
    assert InstanceSpec.objects.get(label=SYNC_SPEC).storage_gb == pytest.approx(1.8 * 1024)


def test_published_cells_match_the_numbers_printed_in_each_document():
    load_published()
    # 000, "5. Test Results": "488 GB (tuned) | 6 TB | 140 GB | 6 | 128 | 245,408 | 47,201"
    tuned = _cell("000", "5. Test Results", "TencentDB for MariaDB", "488 GB MEM, 6 TB storage (tuned)", 768)
    assert (tuned.qps, tuned.tps, tuned.clients, tuned.tables, tuned.table_size) == (245408, 47201, 6, 60, 10_000_000)
    # 000, "2. Write request (UPDATE)": "500 | TencentDB for MariaDB | 70,370 | 7.25 | 15.52"
    write = _cell("000", "(UPDATE)", "TencentDB for MariaDB", SYNC_SPEC, 500)
    assert (write.qps, write.latency_avg_ms, write.latency_pct, write.latency_pct_ms) == (70370, 7.25, 99, 15.52)
    # 001, full cache "Scenario 2: Read (POINT SELECT)": "64-core 256 GB MEM  2000  25000  250  670026  1125180"
    assert _cell("001", "Full Cache Scenario Test Results / Scenario 2: Read (POINT SELECT)", "TDSQL-C for MySQL",
                 "64-core 256 GB MEM", 2000).qps == 1125180
    assert _cell("001", "Full Cache Scenario Test Results / Scenario 2: Read (POINT SELECT)", "TencentDB for MySQL",
                 "64-core 256 GB MEM", 2000).qps == 670026
    # 001, big dataset "Scenario 1: Write": "16-core 128 GB MEM  384  5000000  300  105781  142165"
    big = _cell("001", "Big Dataset Scenario Test Results / Scenario 1: Write", "TencentDB for MySQL",
                "16-core 128 GB MEM", 384)
    assert (big.qps, big.tables, big.table_size, big.dataset_label) == (105781, 300, 5_000_000, "big dataset")
    # 002, "Table 1-1": "1 x 32 vCPUs   64 GB  1000  5627.754  112585.59"
    ddm = _cell("002", "Table 1-1 Required test data", "Huawei DDM", "1 x 32 vCPUs | 64 GB", 1000)
    assert (ddm.tps, ddm.qps, ddm.table_size) == (5627.754, 112585.59, 320_000_000)
    assert (ddm.spec.cpu_cores, ddm.spec.memory_gb) == (32, 64)
    # 004, "쓰기 요청(write)테스트 결과": "| 1000 | 오픈 소스 MySQL | 35447 | 28.2 | 40.47 |"
    semi = _cell("004", "쓰기 요청(write)테스트 결과", "MySQL 5.7 (semi-sync)", SYNC_SPEC, 1000)
    assert (semi.qps, semi.latency_avg_ms, semi.latency_pct_ms) == (35447, 28.2, 40.47)
    # 004, "하이브리드 시나리오(OLTP) 테스트 결과": "| 500 | TDSQL for MySQL | 232543 | 13.58 | 27.81 |"
    assert _cell("004", "하이브리드 시나리오(OLTP) 테스트 결과", "TDSQL for MySQL", SYNC_SPEC, 500).latency_pct_ms == 27.81
    # 003 prints its results as charts only.
    assert not PublishedResult.objects.filter(document="003").exists()


def test_corrected_rows_carry_their_correction_note():
    load_published()
    # 000, "1. Read request (READ)": "1000 / Open-source MySQL / 4127 / 23 / 2.3 6.3"
    read = _cell("000", "1. Read request (READ)", "MySQL 5.6 (async)", SYNC_SPEC, 1000)
    assert read.qps == 412723 and "4127 23" in read.correction and "4127 23" in read.source_row
    # 001, 1 TB "Scenario 2: Read": "32-core 256 GB MEM  1000  40000000000  1  412356  421931"
    single = _cell("001", "1 TB Single Table Scenario Test Results / Scenario 2: Read", "TDSQL-C for MySQL",
                   "32-core 256 GB MEM", 1000)
    assert single.table_size == 4_000_000_000 and single.qps == 421931
    assert "40,000,000,000" in single.correction and "40000000000" in single.source_row
    corrected = PublishedResult.objects.exclude(correction="")
    assert Counter(corrected.values_list("document", flat=True)) == {"000": 2, "001": 18}
    assert not corrected.filter(document="001").exclude(table_size=4_000_000_000).exists()


def test_reloading_updates_changed_cells_and_drops_rows_the_file_no_longer_lists(tmp_path):
    folder = _copy_fixtures(tmp_path)
    load_published(directory=folder)
    others = set(PublishedResult.objects.exclude(document="002").values_list("id", flat=True))
    path = folder / "002_huawei_ddm.csv"
    header, small, medium, _large = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(header + small.replace(",43389.45,", ",43389.5,") + medium, encoding="utf-8")

    counts = load_published(directory=folder)

    assert counts["002"] == 2
    assert _cell("002", "Table 1-1 Required test data", "Huawei DDM", "1 x 8 vCPUs | 16 GB", 512).qps == 43389.5
    assert not PublishedResult.objects.filter(document="002", threads=1000).exists()
    assert set(PublishedResult.objects.exclude(document="002").values_list("id", flat=True)) == others


def _copy_fixtures(tmp_path: Path) -> Path:
    folder = tmp_path / "published"
    shutil.copytree(DEFAULT_DIRECTORY, folder)
    return folder


def test_a_malformed_csv_is_refused_naming_file_line_and_column_and_nothing_is_stored(tmp_path):
    folder = _copy_fixtures(tmp_path)
    path = folder / "002_huawei_ddm.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace(",82362.996,", ",\"82,362.996\",")  # a QPS with a thousands separator
    path.write_text("".join(lines), encoding="utf-8")
    products = Product.objects.count()

    with pytest.raises(PublishedDataError) as refused:
        load_published(directory=folder)

    assert str(refused.value).startswith("002_huawei_ddm.csv, line 3, column 'qps': '82,362.996'")
    assert PublishedResult.objects.count() == 0 and Product.objects.count() == products


def test_a_csv_with_a_missing_cell_or_an_unknown_product_is_refused(tmp_path):
    folder = _copy_fixtures(tmp_path)
    path = folder / "004_tdsql_vs_mysql57_ko.csv"
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace("TDSQL for MySQL,", "TDSQL for MySQL 8,", 1), encoding="utf-8")
    with pytest.raises(PublishedDataError, match=r"004_tdsql_vs_mysql57_ko\.csv, line 3, column 'product'"):
        load_published(directory=folder)

    header, first, *rest = original.splitlines(keepends=True)
    path.write_text(header + first.rsplit(",", 3)[0] + "\n" + "".join(rest), encoding="utf-8")
    with pytest.raises(PublishedDataError, match=r"line 2, column 'latency_pct_ms': missing"):
        load_published(directory=folder)
    assert PublishedResult.objects.count() == 0


def test_load_seed_templates_command_loads_templates_and_published_results():
    out = StringIO()
    call_command("load_seed_templates", stdout=out)
    text = out.getvalue()

    assert "template seed-001:" in text and "document 001: 330 published rows" in text
    assert Campaign.objects.filter(is_template=True).count() == 6
    assert PublishedResult.objects.count() == sum(PER_DOCUMENT.values())


def test_load_published_results_command_reports_a_malformed_file(tmp_path):
    folder = _copy_fixtures(tmp_path)
    (folder / "003_tencentdb_mysql_network.csv").write_text("document,title\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"003_tencentdb_mysql_network\.csv, line 1, column 'document_title'"):
        call_command("load_published_results", directory=str(folder), stdout=StringIO())
