"""The web UI through Django's test client: access rules, forms, the plan and launch, the run view,
the comparison (cells equal the stored results) and its exports, query counts and bad input."""
from __future__ import annotations

import csv
import io
import re
import time
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from campaigns.models import Campaign, ClientHost, Dataset, Job, JobClient, JobResult, Run, Scenario, Target
from campaigns.services import results_import
from tests.conftest import record_measurement
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.ui import PASSWORD, History, make_history, make_user

pytestmark = pytest.mark.django_db

DATA = Path(__file__).parent / "data"
SEED_003_WRITE_ONLY = """sysbench --db-driver=mysql --mysql-host=XXX --mysql-port=XXX
--mysql-user=XXX --mysql-password=XXX --mysql-db=sbtest --table_size=10000000
--tables=10 --events=0 --time=300  --threads={2~3000} --percentile=95 --report-interval=1 oltp_write_only
run"""


def _text(response) -> str:
    return response.content.decode()


def _cell_values(html: str, table_id: str, metric: str) -> list[float]:
    table = html.split(f'id="table-{table_id}"', 1)[1].split("</table>", 1)[0]
    return [float(v) for v in re.findall(rf'data-metric="{metric}"[^>]*data-value="([^"]+)"', table)]


# ---------------------------------------------------------------- access


def _read_urls(history: History) -> list[str]:
    target, scenario, job = history.targets[0], history.scenarios[0], history.run.jobs.first()
    return [
        "/", "/targets/", f"/targets/{target.pk}/", "/products/", "/specs/", "/datasets/", "/scenarios/",
        f"/scenarios/{scenario.pk}/", "/campaigns/", f"/campaigns/{history.campaign.pk}/", "/runs/",
        f"/runs/{history.run.pk}/", f"/runs/{history.run.pk}/live/", f"/jobs/{job.pk}/", "/compare/",
        f"/compare/?campaign={history.campaign.pk}", f"/compare/report/?campaign={history.campaign.pk}",
        f"/compare/comparison.csv?campaign={history.campaign.pk}",
        f"/compare/comparison.md?campaign={history.campaign.pk}",
    ]


def _edit_urls(history: History) -> list[str]:
    target, scenario = history.targets[0], history.scenarios[0]
    return [
        "/targets/new/", f"/targets/{target.pk}/edit/", "/products/new/", f"/products/{history.products[0].pk}/edit/",
        "/specs/new/", f"/specs/{history.specs[0].pk}/edit/", "/datasets/new/", "/scenarios/new/",
        f"/scenarios/{scenario.pk}/edit/", "/campaigns/new/", f"/campaigns/{history.campaign.pk}/edit/",
    ]


def test_every_page_needs_a_login():
    history = make_history(products=1, specs=1, scenarios=1, threads=(1,))
    client = Client()
    for url in _read_urls(history) + _edit_urls(history):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url


def test_a_viewer_reads_every_page_but_sees_no_edit_buttons_and_cannot_edit(role_client):
    history = make_history(products=1, specs=1, scenarios=1, threads=(1,))
    viewer = role_client("viewer")
    for url in _read_urls(history):
        assert viewer.get(url).status_code == 200, url
    for url in ("/", "/targets/", f"/targets/{history.targets[0].pk}/", "/scenarios/", f"/campaigns/{history.campaign.pk}/",
                f"/runs/{history.run.pk}/"):
        html = _text(viewer.get(url))
        for marker in ("/edit/", "/delete/", "/new/", "Test connection", 'id="launch"', 'id="cancel-run"'):
            assert marker not in html, (url, marker)
    for url in _edit_urls(history):
        assert viewer.get(url).status_code == 403, url
    assert viewer.post("/targets/new/", {"name": "x"}).status_code == 403
    assert viewer.post(f"/campaigns/{history.campaign.pk}/launch/").status_code == 403
    assert viewer.post(f"/targets/{history.targets[0].pk}/check/").status_code == 403
    assert viewer.post(f"/runs/{history.run.pk}/cancel/").status_code == 403
    assert viewer.post(f"/targets/{history.targets[0].pk}/delete/").status_code == 403
    assert Run.objects.count() == 1


def test_an_operator_edits_but_only_an_admin_deletes(role_client):
    history = make_history(products=1, specs=1, scenarios=1, threads=(1,))
    operator, admin = role_client("operator"), role_client("admin")
    for url in _edit_urls(history):
        assert operator.get(url).status_code == 200, url
    html = _text(operator.get("/targets/"))
    assert "/edit/" in html and "/delete/" not in html
    dataset = Dataset.objects.create(name="spare", tables=1, table_size=10)
    assert operator.post(f"/datasets/{dataset.pk}/delete/").status_code == 403
    assert "/delete/" in _text(admin.get("/datasets/"))
    response = admin.post(f"/datasets/{dataset.pk}/delete/")
    assert response.status_code == 302
    assert not Dataset.objects.filter(pk=dataset.pk).exists()


def test_deleting_a_row_still_in_use_says_what_uses_it(role_client):
    history = make_history(products=1, specs=1, scenarios=1, threads=(1,))
    product = history.products[0]
    response = role_client("admin").post(f"/products/{product.pk}/delete/")
    assert response.status_code == 409
    assert "cannot be deleted" in _text(response) and history.targets[0].name in _text(response)


def test_the_user_menu_shows_the_role_and_a_logout():
    user = make_user("menu-user", "operator")
    client = Client()
    assert client.post("/accounts/login/", {"username": "menu-user", "password": PASSWORD}).status_code == 302
    html = _text(client.get("/"))
    assert 'data-testid="role">operator<' in html and "Log out" in html and user.username in html


# ---------------------------------------------------------------- targets, specs, products


def test_target_form_shows_errors_in_place_and_keeps_what_was_typed(role_client):
    product = TargetFactory().product
    response = role_client("operator").post("/targets/new/", {
        "name": "", "product": product.pk, "driver": "mysql", "host": "db.example.internal", "port": "70000",
        "database": "sbtest", "user": "bench", "password": "Typed-Secret-9",
    })
    html = _text(response)
    assert response.status_code == 200
    assert 'id="id_name_error1"' in html and "This field is required." in html
    assert 'id="id_port_error1"' in html
    assert 'value="db.example.internal"' in html and 'value="bench"' in html
    assert "Typed-Secret-9" not in html  # a password is never sent back, not even the one just typed


def test_a_target_password_is_write_only(role_client):
    client = role_client("operator")
    product = TargetFactory().product
    response = client.post("/targets/new/", {
        "name": "secret-target", "product": product.pk, "driver": "mysql", "host": "127.0.0.1", "port": "3306",
        "database": "sbtest", "user": "root", "password": "Very-Secret-77",
    })
    target = Target.objects.get(name="secret-target")
    assert response.status_code == 302 and target.get_password() == "Very-Secret-77"
    for url in (f"/targets/{target.pk}/", f"/targets/{target.pk}/edit/", "/targets/"):
        assert "Very-Secret-77" not in _text(client.get(url)), url
    # Leaving the field blank keeps the stored password (while the endpoint stays); ticking "remove" clears it.
    client.post(f"/targets/{target.pk}/edit/", {
        "name": "secret-target-2", "product": product.pk, "driver": "mysql", "host": "127.0.0.1", "port": "3306",
        "database": "sbtest", "user": "root", "password": "",
    })
    target.refresh_from_db()
    assert target.name == "secret-target-2" and target.get_password() == "Very-Secret-77"
    client.post(f"/targets/{target.pk}/edit/", {
        "name": "secret-target", "product": product.pk, "driver": "mysql", "host": "127.0.0.1", "port": "3306",
        "database": "sbtest", "user": "root", "password": "", "clear_password": "on",
    })
    target.refresh_from_db()
    assert not target.has_password()


def test_test_connection_shows_the_server_version_and_settings(role_client):
    target = TargetFactory(database="mysql")
    html = _text(role_client("operator").post(f"/targets/{target.pk}/check/"))
    assert "Connected" in html and "MariaDB" in html
    assert "innodb_buffer_pool_size" in html


def test_test_connection_shows_the_precise_error(role_client):
    target = TargetFactory(port=1, password="Hidden-Pw-5")
    response = role_client("operator").post(f"/targets/{target.pk}/check/")
    html = _text(response)
    assert response.status_code == 200
    assert "Connection failed" in html and "connection refused to 127.0.0.1:1" in html
    assert "Hidden-Pw-5" not in html


def test_a_spec_with_a_price_and_a_dataset_with_per_spec_sizes_are_saved(role_client):
    client = role_client("operator")
    assert client.post("/specs/new/", {"label": "8-core 32 GB", "cpu_cores": "8", "memory_gb": "32",
                                       "price_per_hour": "1.25", "currency": "USD"}).status_code == 302
    response = client.post("/datasets/new/", {"name": "big", "tables": "10", "table_size": "1000",
                                              "sizes_by_spec": "8-core 32 GB = 300 × 5000000"})
    assert response.status_code == 302
    assert Dataset.objects.get(name="big").sizes_by_spec == {"8-core 32 GB": [300, 5000000]}
    html = _text(client.post("/datasets/new/", {"name": "bad", "tables": "1", "table_size": "1",
                                                "sizes_by_spec": "nonsense"}))
    assert "write &#x27;spec label = tables × rows&#x27;" in html


# ---------------------------------------------------------------- scenarios


def test_a_scenario_form_shows_only_the_tests_options_with_defaults_and_limits(role_client):
    client = role_client("operator")
    html = _text(client.get("/scenarios/new/?test=select_random_points"))
    assert 'name="opt__random_points"' in html and "Default: 10." in html
    assert 'name="opt__number_of_ranges"' not in html and 'name="opt__oltp_point_selects"' not in html
    html = _text(client.get("/scenarios/new/?test=oltp_legacy/oltp.lua"))
    assert 'name="opt__oltp_point_selects"' in html and 'name="opt__point_selects"' not in html
    # Options the scenario's own fields or the campaign set are not offered twice.
    assert 'name="opt__threads"' not in html and 'name="opt__time"' not in html
    assert 'name="opt__oltp_table_size"' not in html


def test_pasting_a_seed_003_command_fills_the_form_and_lists_what_was_dropped(role_client):
    client = role_client("operator")
    response = client.post("/scenarios/new/parse/", {"command": SEED_003_WRITE_ONLY,
                                               "name": "my typed name", "time_s": "60"})
    html = _text(response)
    assert response.status_code == 200
    assert '<option value="oltp_write_only" selected>' in html
    assert 'value="my typed name"' in html  # what the user typed stays
    assert 'name="time_s" value="300"' in html
    assert 'name="percentile" value="95"' in html
    assert 'name="new_dataset_tables" value="10"' in html and 'name="new_dataset_table_size" value="10000000"' in html
    assert "Threads 2, 4, 8" in html and "a campaign sets the thread counts" in html
    report = html.split('id="parse-report"')[1].split("</section>")[0]
    assert "Connection options" in report and "a target holds where to connect" in report
    assert "XXX" not in report and "Placeholders" not in report


def test_a_pasted_command_that_is_not_sysbench_is_an_error_on_the_paste_field(role_client):
    html = _text(role_client("operator").post("/scenarios/new/parse/", {"command": "ls -la /tmp"}))
    assert 'id="id_command_error1"' in html


def test_a_pasted_command_with_a_misspelt_test_says_which_test_was_meant(role_client):
    response = role_client("operator").post("/scenarios/new/parse/", {
        "command": "sysbench oltp_read_wirte --tables=1 run", "name": "typed"})
    html = _text(response)
    assert response.status_code == 200
    error = html.split('id="id_command_error1"', 1)[1].split("</", 1)[0]
    assert "unknown sysbench test &#x27;oltp_read_wirte&#x27;: did you mean oltp_read_write?" in error
    assert "Read a oltp_legacy" not in html and 'value="typed"' in html


def test_a_scenario_is_saved_from_a_preset_with_a_new_dataset(role_client):
    client = role_client("operator")
    html = _text(client.get("/scenarios/new/?preset=s003-read-only"))
    assert '<option value="oltp_read_only" selected>' in html and "skip-trx" in html
    response = client.post("/scenarios/new/", {
        "name": "s003 ro", "test": "oltp_read_only", "dataset": "", "new_dataset_name": "tiny ro",
        "new_dataset_tables": "2", "new_dataset_table_size": "100", "time_s": "3", "warmup_s": "0",
        "report_interval_s": "1", "percentile": "95", "prepare_mode": "auto", "cleanup": "keep",
        "prepare_threads": "2", "preset": "s003-read-only", "opt__skip_trx": "on", "opt__range_size": "",
    })
    assert response.status_code == 302, _text(response)[:2000]
    scenario = Scenario.objects.get(name="s003 ro")
    assert scenario.options == {"skip-trx": True}
    assert (scenario.dataset.name, scenario.dataset.tables, scenario.dataset.table_size) == ("tiny ro", 2, 100)
    assert scenario.preset == "s003-read-only"


def test_a_bad_option_value_is_shown_on_its_field_and_nothing_is_lost(role_client):
    dataset = DatasetFactory()
    response = role_client("operator").post("/scenarios/new/", {
        "name": "bad", "test": "oltp_read_write", "dataset": dataset.pk, "time_s": "10",
        "warmup_s": "0", "report_interval_s": "1", "percentile": "95", "prepare_mode": "auto", "cleanup": "keep",
        "prepare_threads": "2", "opt__range_size": "0", "opt__mysql_storage_engine": "in$nodb",
    })
    html = _text(response)
    assert response.status_code == 200 and not Scenario.objects.filter(name="bad").exists()
    assert 'id="id_opt__range_size_error1"' in html
    assert 'value="in$nodb"' in html


def test_switching_the_test_keeps_what_was_typed(role_client):
    html = _text(role_client("operator").post("/scenarios/new/switch/", {
        "name": "keep me", "test": "oltp_point_select", "time_s": "42"}))
    assert 'value="keep me"' in html and 'name="time_s" value="42"' in html
    assert 'name="opt__range_size"' in html


def test_loading_a_preset_fills_the_form_and_keeps_a_typed_name(role_client):
    html = _text(role_client("operator").post("/scenarios/new/preset/", {
        "name": "typed", "test": "oltp_read_write", "preset": "s003-read-only", "time_s": "42"}))
    assert '<option value="oltp_read_only" selected>' in html and 'value="typed"' in html
    report = html.split('id="parse-report"')[1].split("</section>")[0]
    assert "Preset “" in report and "loaded" in report


def test_each_button_of_the_scenario_page_posts_to_its_own_url_and_a_get_there_goes_back_to_the_page(role_client):
    client = role_client("operator")
    scenario = ScenarioFactory()
    for base in ("/scenarios/new/", f"/scenarios/{scenario.pk}/edit/"):
        html = _text(client.get(base))
        assert f'<form method="post" action="{base}" id="scenario-form"' in html
        for button, element in (("parse", "parse-command"), ("preset", "load-preset"), ("switch", "switch-test")):
            assert re.search(rf'formaction="{base}{button}/"[^>]*id="{element}"', html), (base, button)
            answer = client.get(f"{base}{button}/")
            assert answer.status_code == 302 and answer["Location"] == base
    # Switching the test of a scenario being edited shows that test's options, on the scenario's page.
    html = _text(client.post(f"/scenarios/{scenario.pk}/edit/switch/", {"name": scenario.name,
                                                                        "test": "oltp_point_select"}))
    assert f"Edit scenario “{scenario.name}”" in html and '<option value="oltp_point_select" selected>' in html
    assert client.post("/scenarios/999999/edit/switch/", {"test": "oltp_point_select"}).status_code == 404


def test_an_unknown_test_is_a_field_error(role_client):
    dataset = DatasetFactory()
    response = role_client("operator").post("/scenarios/new/", {
        "name": "x", "test": "no_such_test", "dataset": dataset.pk, "time_s": "10",
        "warmup_s": "0", "report_interval_s": "1", "percentile": "95", "prepare_mode": "auto", "cleanup": "keep",
        "prepare_threads": "2"})
    assert response.status_code == 200 and 'id="id_test_error1"' in _text(response)


# ---------------------------------------------------------------- campaigns and runs


def test_a_campaign_is_built_planned_and_launched(role_client):
    client = role_client("operator")
    target = TargetFactory()
    scenario = ScenarioFactory()
    response = client.post("/campaigns/new/", {
        "name": "ui campaign", "targets": [target.pk], "scenarios": [scenario.pk], "threads": "2~8",
        "repetitions": "1", "clients_min": "1", "scale_factor": "0.5"})
    campaign = Campaign.objects.get(name="ui campaign")
    assert response.status_code == 302 and response["Location"] == f"/campaigns/{campaign.pk}/"
    assert campaign.threads == [2, 4, 8]
    html = _text(client.get(f"/campaigns/{campaign.pk}/"))
    assert 'data-testid="plan-jobs">3<' in html
    assert "oltp_point_select" in html and "--threads=8" in html and 'id="launch"' in html
    response = client.post(f"/campaigns/{campaign.pk}/launch/")
    run = Run.objects.get(campaign=campaign)
    assert response["Location"] == f"/runs/{run.pk}/"
    assert run.jobs.count() == 3
    # A second launch while the first runs is refused with a message, not an error page.
    response = client.post(f"/campaigns/{campaign.pk}/launch/", follow=True)
    assert "already has a run in progress" in _text(response)


def test_the_campaign_form_renders_every_field_it_saves(role_client):
    # A field the form saves but the page leaves out would be cleared by every edit.
    from campaigns.forms import CampaignForm

    TargetFactory()
    ScenarioFactory()
    html = _text(role_client("operator").get("/campaigns/new/"))
    missing = [name for name in CampaignForm().fields if f'name="{name}"' not in html]
    assert not missing
    # An edit of a campaign with a webhook adds the box that removes it.
    campaign = CampaignFactory(webhook_url="https://hooks.example.com/x")
    html = _text(role_client("operator").get(f"/campaigns/{campaign.pk}/edit/"))
    missing = [name for name in CampaignForm(instance=campaign).fields if f'name="{name}"' not in html]
    assert not missing and 'name="clear_webhook"' in html


def test_a_campaign_form_shows_field_errors_and_keeps_the_choices(role_client):
    target = TargetFactory()
    response = role_client("operator").post("/campaigns/new/", {
        "name": "x", "targets": [target.pk], "threads": "2, lots", "repetitions": "0", "clients_min": "1",
        "scale_factor": "2"})
    html = _text(response)
    assert response.status_code == 200
    assert 'id="id_threads_error1"' in html and 'id="id_repetitions_error1"' in html
    assert 'id="id_scale_factor_error1"' in html
    assert f'value="{target.pk}" id="id_targets_0" checked' in html or "checked" in html
    assert 'value="2, lots"' in html


def _running_run() -> tuple[Run, Job]:
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=10)
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2, 4])
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, started_at=now)
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=2, status=Job.Status.RUNNING,
                             phase="run", started_at=now, command_line="sysbench ... run")
    Job.objects.create(run=run, target=target, scenario=scenario, threads=4, position=1)
    JobClient.objects.create(job=job, index=0, host_name="client-a", threads=2, status=JobClient.Status.RUNNING,
                             raw_output="line 1\n[ 1s ] thds: 2 tps: 10.00 qps: 200.00")
    return run, job


def test_the_run_view_shows_the_running_job_live_and_cancels(role_client):
    run, job = _running_run()
    client = role_client("operator")
    html = _text(client.get(f"/runs/{run.pk}/"))
    assert 'id="cancel-run"' in html and 'id="chart-throughput"' in html
    assert f"/api/v1/jobs/{job.pk}/samples/" in html and "thds: 2 tps: 10.00" in html
    assert "campaigns/build/live.js" in html and "campaigns/build/chart.umd.min.js" in html
    state = client.get(f"/runs/{run.pk}/live/").json()
    assert state["running"]["id"] == job.pk and state["run"]["total"] == 2
    assert state["tail"].endswith("qps: 200.00")
    response = client.post(f"/runs/{run.pk}/cancel/")
    assert response.status_code == 302
    assert Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED
    # Cancelling a finished run says so instead of failing.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.CANCELLED)
    assert "Not cancelled" in _text(client.post(f"/runs/{run.pk}/cancel/", follow=True))


def test_a_finished_job_shows_its_summary_and_snapshot_with_the_cache_warning(role_client):
    history = make_history(products=1, specs=1, scenarios=1, threads=(1,))
    job = history.run.jobs.get()
    Job.objects.filter(pk=job.pk).update(cache_hit_ratio=0.91, cache_warning="buffer-pool hit ratio 91.00% is below 99%")
    client = role_client("viewer")
    html = _text(client.get(f"/runs/{history.run.pk}/"))
    assert "91.00%" in html and "below 99%" in html
    html = _text(client.get(f"/jobs/{job.pk}/"))
    assert "10.11.6-MariaDB" in html and "max_connections" in html and "below 99%" in html
    assert 'data-testid="qps">' in html


def test_the_dashboard_shows_progress_eta_and_hosts(role_client):
    run, _ = _running_run()
    ClientHost.objects.create(hostname="client-a", queue="q")
    ClientHost.objects.create(hostname="gone", queue="q", last_heartbeat=timezone.now() - timezone.timedelta(hours=1))
    html = _text(role_client("viewer").get("/"))
    assert f"run #{run.pk}" in html and "0 / 2 jobs" in html and "ETA" in html
    assert "client-a" in html and "online" in html and "offline" in html and "1 of 2 online" in html


# ---------------------------------------------------------------- comparison


def test_comparison_cells_equal_the_stored_results(role_client):
    history = make_history(products=2, specs=2, scenarios=2, threads=(1, 2, 4))
    p0, p1 = history.products
    response = role_client("viewer").get(f"/compare/?products={p0.pk},{p1.pk}")
    html = _text(response)
    assert response.status_code == 200
    assert f"{p0.name} vs {p1.name}" in html
    for scenario in history.scenarios:
        table_id = f"t{scenario.dataset_id}-{scenario.pk}"
        expected_qps, expected_p95 = [], []
        for spec in history.specs:
            for threads in (1, 2, 4):
                for product in (p0, p1):
                    target = next(t for t in history.targets if t.product_id == product.pk and t.spec_id == spec.pk)
                    result = history.results[(target.pk, scenario.pk, threads)]
                    expected_qps.append(result.qps)
                    expected_p95.append(result.latency_pct_ms)
        assert _cell_values(html, table_id, "qps") == pytest.approx(expected_qps)
        assert _cell_values(html, table_id, "latency_pct_ms") == pytest.approx(expected_p95)
    assert html.count('data-testid="conclusion"') == 2
    # make_history's QPS grows with pk % 3; the conclusion always puts the second product against the first, and
    # with one run a cell claims neither "faster" nor "slower".
    assert f"{p1.name} against {p0.name}, untested: " in html
    assert "QPS per core" in html and "p95 latency (ms)" in html


def test_a_conclusion_names_where_a_curve_peaks_and_falls():
    from campaigns.comparison import Selection, comparison_layout

    history = make_history(products=2, specs=1, scenarios=1, threads=(2, 64, 256, 1024, 3000))
    for (target_id, _scenario, threads), result in history.results.items():
        shape = {2: 1000, 64: 20000, 256: 30000, 1024: 26000, 3000: 20000}[threads]
        bonus = 1.2 if Target.objects.get(pk=target_id).product_id == history.products[1].pk else 1.0
        JobResult.objects.filter(pk=result.pk).update(qps=shape * bonus)
    layout = comparison_layout(Selection(products=[p.pk for p in history.products]))
    line = layout["tables"][0]["conclusion"]
    assert (f"{history.products[1].name} against {history.products[0].name}, untested: +20.0% QPS on average "
            "(geometric mean of the 5 rows' ratios)") in line
    assert "peaks at 256 threads, then falls (-33% at 3,000)" in line


def test_imported_results_appear_in_comparisons_labelled_as_such(role_client):
    target = TargetFactory()
    scenario = ScenarioFactory()
    text = (DATA / "sysbench" / "mysql_oltp_point_select.txt").read_text()
    run = results_import(files=[("ps.log", text)], target=target, scenario=scenario)
    html = _text(role_client("viewer").get(f"/compare/?runs={run.pk}"))
    assert 'class="badge imported"' in html and "from sysbench logs or run bundles made outside this benchapp" in html
    result = JobResult.objects.get(job__run=run)
    assert _cell_values(html, f"t{scenario.dataset_id}-{scenario.pk}", "qps") == pytest.approx([result.qps])
    csv_text = _text(role_client("viewer").get(f"/compare/comparison.csv?runs={run.pk}"))
    assert ",imported," in csv_text


def test_published_figures_appear_in_comparisons_labelled_as_such(role_client):
    from campaigns.models import InstanceSpec, Product, PublishedResult

    spec = InstanceSpec.objects.create(label="2-core 16 GB", cpu_cores=2, memory_gb=16)
    a = Product.objects.create(name="TDSQL-C (published)", engine="mysql")
    b = Product.objects.create(name="TencentDB (published)", engine="mysql")
    figures = {(a, 32): 10000.0, (b, 32): 8000.0, (a, 64): 15000.0, (b, 64): 9000.0}
    for (product, threads), qps in figures.items():
        PublishedResult.objects.create(document="001", document_title="TDSQL-C vs TencentDB", table_ref="Table 1",
                                       product=product, spec=spec, dataset_label="full cache", scenario_label="Write",
                                       tables=250, table_size=25000, threads=threads, qps=qps,
                                       correction="printed as 1000 0" if qps == 10000.0 else "")
    client = role_client("viewer")
    html = _text(client.get("/compare/?published=001"))
    assert 'class="badge published"' in html and "published, corrected" in html
    assert "printed in a white paper" in html
    table = html.split('class="comparison fit"', 1)[1].split("</table>", 1)[0]
    assert [float(v) for v in re.findall(r'data-metric="qps"[^>]*data-value="([^"]+)"', table)] == [
        10000.0, 8000.0, 15000.0, 9000.0]
    # The second product against the first, as the table's Δ% (−20.0% and −40.0%).
    assert "TencentDB (published) against TDSQL-C (published), untested: -30.7% QPS on average" in html
    csv_text = _text(client.get("/compare/comparison.csv?published=001"))
    assert csv_text.count(",published,") == 4
    # Measured and published side by side: the published products become further columns.
    history = make_history(products=1, specs=1, scenarios=1, threads=(1,))
    html = _text(client.get(f"/compare/?products={history.products[0].pk}&published=001"))
    assert html.count('data-testid="conclusion"') == 2 and "TencentDB (published)" in html
    assert client.get("/compare/?published=999").status_code == 200


def test_comparison_exports_csv_markdown_and_a_print_ready_report(role_client):
    history = make_history(products=2, specs=1, scenarios=1, threads=(1, 2))
    p0, p1 = history.products
    client = role_client("viewer")
    query = f"products={p0.pk},{p1.pk}"
    response = client.get(f"/compare/comparison.csv?{query}")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(_text(response))))
    assert len(rows) == 4
    stored = {(r.job.target.product.name, r.job.threads): r.qps for r in JobResult.objects.select_related(
        "job__target__product")}
    for row in rows:
        assert float(row["qps"]) == pytest.approx(stored[(row["product"], int(row["concurrency"]))])
    markdown = _text(client.get(f"/compare/comparison.md?{query}"))
    assert markdown.startswith(f"# {p0.name} vs {p1.name}")
    assert "| Specification | Concurrency | Table size | Tables | QPS" in markdown
    assert "## Environment" in markdown and "## Method" in markdown and "**Conclusion.**" in markdown
    report = _text(client.get(f"/compare/report/?{query}"))
    for heading in ("Test environment", "Method", "Results", "Conclusions"):
        assert heading in report
    assert "10.11.6-MariaDB" in report and "sysbench oltp_read_write --threads=2" in report
    assert 'id="print-report"' in report


def test_bad_comparison_input_is_an_error_not_a_crash(role_client):
    client = role_client("viewer")
    for query in ("targets=abc", "targets=1,-2", "runs=99999999999999999999999", "products=", "specs=1"):
        response = client.get(f"/compare/?{query}")
        assert response.status_code == 200, query
    assert "Choose what to compare" in _text(client.get("/compare/?specs=1"))
    assert client.get("/compare/comparison.csv?targets=abc").status_code == 400
    assert client.get("/compare/comparison.md").status_code == 400
    assert "No succeeded job matches" in _text(client.get("/compare/?targets=424242"))


def test_unknown_ids_and_bad_parameters_elsewhere_are_404_or_ignored(role_client):
    client = role_client("admin")
    for url in ("/runs/999999/", "/jobs/999999/", "/targets/999999/", "/campaigns/999999/", "/scenarios/999999/edit/",
                "/runs/999999/live/"):
        assert client.get(url).status_code == 404, url
    assert client.get("/runs/?status=bogus").status_code == 200
    assert client.get("/targets/?page=abc").status_code == 200
    assert client.get("/scenarios/new/?test=bogus&preset=bogus").status_code == 200
    assert client.get("/runs/?created_after=not-a-date").status_code == 200


# ---------------------------------------------------------------- speed and query counts


def _timed_get(client: Client, url: str) -> tuple[float, object]:
    start = time.perf_counter()
    response = client.get(url)
    return (time.perf_counter() - start) * 1000, response


@pytest.mark.parametrize("size", ["small", "large"])
def test_the_dashboard_takes_a_constant_number_of_queries(role_client, django_assert_max_num_queries, size):
    scale = 1 if size == "small" else 8
    for i in range(scale):
        make_history(products=1, specs=2, scenarios=2, threads=(1, 2), prefix=f"d{i}")
        run, _ = _running_run() if i < 3 else (None, None)
    for i in range(3 * scale):
        ClientHost.objects.create(hostname=f"host-{i}", queue="q")
    client = role_client("viewer")
    client.get("/")
    with django_assert_max_num_queries(10):  # 2 of them: the ETA of every run in progress (runs_progress)
        elapsed_ms, response = _timed_get(client, "/")
    assert response.status_code == 200
    # The time is recorded, not asserted (a loaded machine would fail it): bench/ scripts show speed.
    record_measurement(f"ui dashboard ({size}): {elapsed_ms:.0f} ms")


@pytest.mark.parametrize("threads", [(1, 8, 64), (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)])
def test_a_comparison_of_2_products_5_scenarios_11_specs_is_fast_in_constant_queries(
        role_client, django_assert_max_num_queries, threads):
    history = make_history(products=2, specs=11, scenarios=5, threads=threads)
    client = role_client("viewer")
    url = f"/compare/?products={history.products[0].pk},{history.products[1].pk}"
    client.get(url)
    with django_assert_max_num_queries(15):  # 13, one for the cells' per-query costs, one for their server profiles
        elapsed_ms, response = _timed_get(client, url)
    html = _text(response)
    assert html.count('data-testid="conclusion"') == 5
    assert html.count('data-metric="qps" data-product') == 2 * 11 * 5 * len(threads)
    record_measurement(f"ui comparison 2×5×11×{len(threads)} threads ({len(history.results)} jobs): {elapsed_ms:.0f} ms")
    with django_assert_max_num_queries(19):  # 17, one for the cells' per-query costs, one for the job order
        client.get(url.replace("/compare/", "/compare/report/"))
