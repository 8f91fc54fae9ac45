"""Quick compare through Django's test client: the plan before anything is kept, a launch that makes
scenarios named after their shape, a target added inline whose connection is tested before it is saved,
roles, and bad input as field errors."""
from __future__ import annotations

import re

import pytest
from django.db import connection

from campaigns.models import Campaign, Dataset, InstanceSpec, Job, Product, Run, Scenario, Target
from campaigns.services import format_duration, job_estimate_s
from tests.factories import PgTargetFactory, TargetFactory

pytestmark = pytest.mark.django_db


def _text(response) -> str:
    return response.content.decode()


def _post(client, action, **fields):
    """The quick compare form posted by one of its buttons: add_target, plan or launch."""
    data = {"tables": "4", "table_size": "10000", "threads": "1, 4", "time_s": "10", "repetitions": "1",
            "new_driver": "mysql", "new_database": "sbtest"}
    data.update(fields)
    return client.post({"add_target": "/quick/add-target/", "plan": "/quick/plan/", "launch": "/quick/launch/"}[action],
                       data)


def test_the_plan_shows_jobs_and_time_and_keeps_nothing(role_client):
    maria, pg = TargetFactory(name="qc-maria"), PgTargetFactory(name="qc-pg")
    before = (Campaign.objects.count(), Scenario.objects.count(), Dataset.objects.count())
    response = _post(role_client("operator"), action="plan", targets=[maria.pk, pg.pk],
                     tests=["oltp_read_write", "oltp_point_select"], threads="1,4,16", repetitions="2", time_s="5")
    html = _text(response)
    assert response.status_code == 200
    jobs = 2 * 2 * 3 * 2
    assert re.search(r'data-testid="plan-jobs">(\d+)<', html).group(1) == str(jobs)
    # campaign_plan's estimate: each job's time and overhead, plus one prepare of 40,000 rows per target (both
    # tests read the same sbtest tables, so the second test reuses them).
    total = jobs * job_estimate_s(time_s=5, warmup_s=0) + 2 * 40_000 / 100_000
    assert f'data-testid="plan-duration">{format_duration(total)}<' in html
    assert "oltp_read_write · 4 × 10,000" in html and "oltp_point_select · 4 × 10,000" in html
    assert "2 targets × 2 tests × 3 thread counts × 2 repetitions; each job 5 s measured" in html
    assert f">Launch {jobs} jobs</button>" in html
    assert (Campaign.objects.count(), Scenario.objects.count(), Dataset.objects.count()) == before
    # The inline target's fields, left empty, are not a target to add: no error there, and the form stays closed.
    assert "Required to add a target" not in html and '<details id="add-target">' in html
    # What was typed stays.
    assert 'name="threads" value="1, 4, 16"' in html or 'name="threads" value="1,4,16"' in html
    assert re.search(rf'value="{maria.pk}"[^>]*checked', html)


def test_launch_makes_scenarios_named_after_their_shape_and_a_run_with_every_job(role_client):
    maria = TargetFactory(name="qc-maria")
    client = role_client("operator")
    response = _post(client, action="launch", targets=[maria.pk], tests=["oltp_read_write", "oltp_read_only"],
                     threads="1,4,16,64", repetitions="3", time_s="7", name="my first comparison")
    run = Run.objects.get(campaign__name="my first comparison")
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.jobs.count() == 2 * 4 * 3
    assert set(run.jobs.values_list("time_s", flat=True)) == {7}
    names = sorted(run.campaign.scenarios.values_list("name", flat=True))
    assert names == ["oltp_read_only · 4 × 10,000", "oltp_read_write · 4 × 10,000"]
    dataset = Dataset.objects.get(name="4 × 10,000 rows")
    assert (dataset.tables, dataset.table_size) == (4, 10_000)
    assert run.campaign.threads == [1, 4, 16, 64] and run.campaign.created_by.username == "user-operator"

    # A second comparison of the same shape reuses the same scenarios rather than making copies.
    client.get(f"/runs/{run.pk}/")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    _post(client, action="launch", targets=[maria.pk], tests=["oltp_read_write"], threads="2")
    assert Scenario.objects.filter(name__startswith="oltp_read_write · 4 × 10,000").count() == 1
    assert Dataset.objects.filter(tables=4, table_size=10_000).count() == 1


def test_a_scenario_of_the_same_name_but_another_shape_is_not_reused(role_client):
    maria = TargetFactory(name="qc-maria")
    dataset = Dataset.objects.create(name="4 × 10,000 rows", tables=4, table_size=10_000)
    Scenario.objects.create(name="oltp_insert · 4 × 10,000", test="oltp_insert", dataset=dataset,
                            options={"auto-inc": False})
    _post(role_client("operator"), action="launch", targets=[maria.pk], tests=["oltp_insert"], threads="1")
    campaign = Campaign.objects.get(name__startswith="Quick compare")
    scenario = campaign.scenarios.get()
    assert scenario.name == "oltp_insert · 4 × 10,000 #2" and scenario.options == {}


@pytest.mark.parametrize("fields, field, message", [
    ({"threads": "abc"}, "threads", ""),
    ({"threads": "0"}, "threads", "thread counts go from 1"),
    ({"tests": []}, "tests", "Tick at least one sysbench test"),
    ({"targets": []}, "targets", "Tick at least one target"),
    ({"time_s": "0"}, "time_s", ""),
    ({"tests": ["oltp_read_wirte"]}, "tests", "not one of the available choices"),
    ({"targets": ["999999"]}, "targets", ""),
    ({"tables": "-1"}, "tables", ""),
])
def test_bad_input_is_a_field_error_with_what_was_typed_kept(role_client, fields, field, message):
    maria = TargetFactory(name="qc-maria")
    data = {"targets": [maria.pk], "tests": ["oltp_read_write"], "name": "typed name"}
    data.update(fields)
    response = _post(role_client("operator"), "launch", **data)
    html = _text(response)
    assert response.status_code == 200
    error = html.split(f'id="id_{field}_error1"', 1)[1].split("</p>", 1)[0]
    assert message in error
    assert 'value="typed name"' in html
    assert not Run.objects.exists() and not Campaign.objects.exists()


def test_viewers_get_403_and_no_link_operators_see_the_link_on_every_page(role_client):
    assert role_client("viewer").get("/quick/").status_code == 403
    assert role_client("viewer").post("/quick/launch/").status_code == 403
    assert 'href="/quick/"' not in _text(role_client("viewer").get("/runs/"))
    assert 'href="/quick/"' in _text(role_client("operator").get("/runs/"))


def test_each_button_posts_to_its_own_url_and_opening_one_goes_back_to_the_page(role_client):
    client = role_client("operator")
    html = _text(client.get("/quick/"))
    assert '<form method="post" action="/quick/plan/" novalidate id="quick-form">' in html  # no button: the plan
    assert '<button type="submit" formaction="/quick/add-target/" id="add-target-button">' in html
    assert '<button type="submit" id="see-plan" formaction="/quick/plan/#quick-plan">' in html
    assert '<button type="submit" formaction="/quick/launch/" class="primary" id="quick-launch">' in html
    for url in ("/quick/add-target/", "/quick/plan/", "/quick/launch/"):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"] == "/quick/", url
    assert client.post("/quick/", {"targets": [TargetFactory().pk]}).status_code == 405


def test_an_inline_target_with_missing_fields_is_refused_at_its_fields(role_client):
    response = _post(role_client("operator"), action="add_target", new_name="half typed", new_user="root",
                     new_password="typed-secret-1")
    html = _text(response)
    assert "Required to add a target." in html.split('id="id_new_host_error1"', 1)[1].split("</p>", 1)[0]
    assert "Required for a new product" in html.split('id="id_new_product_name_error1"', 1)[1]
    assert 'value="half typed"' in html and "typed-secret-1" not in html
    assert not Target.objects.exists()


def test_an_inline_target_on_benchapps_own_database_is_refused_before_any_connection(role_client):
    own = connection.settings_dict
    response = _post(role_client("operator"), action="add_target", new_name="steal", new_driver="pgsql",
                     new_host="localhost", new_port=str(own["PORT"] or 5432), new_database=own["NAME"],
                     new_user="postgres", new_product_name="PG", new_product_engine="postgresql")
    html = _text(response)
    assert "benchapp" in html.split('id="id_new_host_error1"', 1)[1].split("</p>", 1)[0]
    assert not Target.objects.exists() and not Product.objects.exists()


# ---------------------------------------------------------------- against the local MariaDB


def test_an_inline_mariadb_target_gets_port_3306_is_tested_then_saved_and_ticked(role_client, target_databases):
    client = role_client("operator")
    response = _post(client, action="add_target", new_name="local maria", new_host="127.0.0.1",
                     new_database=target_databases["mysql"], new_user="root", new_product_name="MariaDB here",
                     new_product_engine="mariadb", new_spec_label="this box", new_spec_cpu_cores="2",
                     new_spec_memory_gb="4", tests=["oltp_point_select"], threads="1, 8")
    html = _text(response)
    target = Target.objects.get(name="local maria")
    assert (target.port, target.driver, target.product.name, target.spec.label) == (3306, "mysql", "MariaDB here",
                                                                                    "this box")
    added = html.split('data-testid="target-added"', 1)[1].split("</p>", 1)[0]
    assert "MariaDB" in added and "127.0.0.1:3306" in added
    assert re.search(rf'value="{target.pk}"[^>]*checked', html)
    assert re.search(r'value="oltp_point_select"[^>]*checked', html) and 'value="1, 8"' in html
    assert 'name="new_name"' in html and 'value="local maria"' not in html.split('id="add-target"', 1)[1]


def test_an_unreachable_inline_target_is_not_saved_and_the_typed_fields_stay(role_client, target_databases):
    response = _post(role_client("operator"), action="add_target", new_name="closed port", new_host="127.0.0.1",
                     new_port="1", new_database=target_databases["mysql"], new_user="root",
                     new_password="typed-secret-2", new_product_name="Nowhere", new_product_engine="mysql")
    html = _text(response)
    error = html.split('id="id_new_host_error1"', 1)[1].split("</p>", 1)[0]
    assert "connection test failed" in error and "not saved" in error
    assert 'value="closed port"' in html and 'value="1"' in html and "typed-secret-2" not in html
    assert not Target.objects.exists() and not Product.objects.filter(name="Nowhere").exists()
    assert not InstanceSpec.objects.exists()


def test_adding_a_target_and_launching_in_one_request_runs_on_it(role_client, target_databases):
    response = _post(role_client("operator"), action="launch", new_name="maria at once", new_host="127.0.0.1",
                     new_database=target_databases["mysql"], new_user="root", new_product_name="MariaDB once",
                     new_product_engine="mariadb", tests=["oltp_point_select"], threads="2")
    run = Run.objects.get()
    assert response.status_code == 302
    assert list(Job.objects.filter(run=run).values_list("target__name", "threads")) == [("maria at once", 2)]


# ---------------------------------------------------------------- the dashboard of an empty install


def test_an_empty_install_dashboard_says_what_to_do_first_with_links(role_client):
    html = _text(role_client("operator").get("/"))
    steps = html.split('data-testid="first-steps"', 1)[1].split("</section>", 1)[0]
    assert "Start here" in steps and 'href="/quick/"' in steps and 'href="/seeds/"' in steps
    viewer = _text(role_client("viewer").get("/")).split('data-testid="first-steps"', 1)[1].split("</section>")[0]
    assert 'href="/seeds/"' in viewer and 'href="/quick/"' not in viewer and "operator" in viewer


def test_the_first_steps_go_once_something_was_launched(role_client):
    maria = TargetFactory(name="qc-maria")
    client = role_client("operator")
    _post(client, action="launch", targets=[maria.pk], tests=["oltp_point_select"], threads="1")
    assert Run.objects.count() == 1
    assert 'data-testid="first-steps"' not in _text(client.get("/"))


# ---------------------------------------------------------------- form errors at the field, what was typed kept


def test_a_bad_cron_is_an_error_at_its_field_with_the_typed_values_kept(role_client):
    from campaigns.models import CampaignSchedule
    from tests.factories import CampaignFactory, ScenarioFactory

    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    response = role_client("operator").post(f"/campaigns/{campaign.pk}/schedules/", {
        "label": "my nightly", "cron": "every night", "timezone": "Europe/Paris", "enabled": "on"})
    html = _text(response)
    assert response.status_code == 200  # the form again, as every form page of the UI shows its errors
    form = html.split('class="schedule-form"', 1)[1].split("</form>", 1)[0]
    assert html.count('id="id_cron_error1"') == 1 and 'id="id_cron_error1"' in form
    assert 'value="my nightly"' in form and 'value="every night"' in form and 'value="Europe/Paris"' in form
    assert 'class="messages"' not in html  # not a banner at the top of the page
    assert not CampaignSchedule.objects.exists()


def test_a_bad_time_zone_is_an_error_at_its_field(role_client):
    from tests.factories import CampaignFactory

    campaign = CampaignFactory()
    response = role_client("operator").post(f"/campaigns/{campaign.pk}/schedules/", {
        "cron": "0 2 * * *", "timezone": "Mars/Olympus"})
    html = _text(response)
    assert response.status_code == 200 and 'id="id_timezone_error1"' in html and 'value="0 2 * * *"' in html


def test_a_seed_template_form_refused_shows_its_errors_in_its_row_with_the_typed_values(role_client):
    Campaign.objects.create(name="seed 001 template", is_template=True, template_key="seed-001")
    maria = TargetFactory(name="qc-maria")
    response = role_client("operator").post("/seeds/seed-001/instantiate/", {
        "seed-001-targets": [maria.pk], "seed-001-scale_factor": "2", "seed-001-run_time_s": "17",
        "seed-001-warmup_s": "0", "seed-001-max_threads": "32"})
    html = _text(response)
    assert response.status_code == 200
    row = html.split('id="template-seed-001"', 1)[1].split("</tr>", 1)[0]
    assert "<details open>" in row and 'id="id_seed-001-scale_factor_error1"' in row
    assert 'value="17"' in row and 'value="2"' in row
    assert not Campaign.objects.filter(is_template=False).exists()


# ---------------------------------------------------------------- pickers


def test_the_runs_list_ticks_runs_into_a_comparison(role_client):
    maria = TargetFactory(name="qc-maria")
    client = role_client("operator")
    _post(client, action="launch", targets=[maria.pk], tests=["oltp_point_select"], threads="1")
    run = Run.objects.get()
    html = _text(role_client("viewer").get("/runs/"))
    assert '<form method="get" action="/compare/" id="compare-selected"' in html
    assert re.search(rf'<input type="checkbox" name="runs" value="{run.pk}" form="compare-selected"', html)
    # What the button submits is what the comparison page reads.
    assert role_client("viewer").get(f"/compare/?runs={run.pk}").status_code == 200


def test_every_page_loads_the_picker_module(role_client):
    assert "/static/campaigns/build/picker.js" in _text(role_client("operator").get("/campaigns/new/"))


# ---------------------------------------------------------------- mine only


def test_each_user_can_list_only_the_targets_scenarios_and_datasets_they_made(role_client, target_databases):
    from campaigns.models import Scenario as ScenarioModel

    other = TargetFactory(name="someone else's")
    operator = role_client("operator")
    _post(operator, action="launch", new_name="my maria", new_host="127.0.0.1",
          new_database=target_databases["mysql"], new_user="root", new_product_name="MariaDB mine",
          new_product_engine="mariadb", tests=["oltp_point_select"], threads="1")
    mine = Target.objects.get(name="my maria")
    assert mine.created_by.username == "user-operator" and other.created_by is None
    targets = _text(operator.get("/targets/?mine=true"))
    assert "my maria" in targets and "someone else&#x27;s" not in targets
    assert "someone else&#x27;s" in _text(operator.get("/targets/"))
    # The scenario and dataset quick compare made are the operator's too; nobody else's list shows them as theirs.
    assert "oltp_point_select · 4 × 10,000" in _text(operator.get("/scenarios/?mine=true"))
    assert "4 × 10,000 rows" in _text(operator.get("/datasets/?mine=true"))
    assert "oltp_point_select · 4 × 10,000" not in _text(role_client("admin").get("/scenarios/?mine=true"))
    assert ScenarioModel.objects.get().created_by.username == "user-operator"
    # The page offers the switch, ticked when on.
    assert re.search(r'<input type="checkbox" name="mine" value="true"[^>]*checked', targets)


def test_new_rows_made_in_the_forms_and_the_api_record_their_creator(role_client):
    from rest_framework.test import APIClient

    from campaigns.models import Dataset as DatasetModel
    from tests.helpers.ui import make_user

    operator = role_client("operator")
    operator.post("/datasets/new/", {"name": "form dataset", "tables": "1", "table_size": "100"})
    assert DatasetModel.objects.get(name="form dataset").created_by.username == "user-operator"
    api = APIClient()
    api.force_authenticate(make_user("api-operator", "operator"))
    made = api.post("/api/v1/datasets/", {"name": "api dataset", "tables": 1, "table_size": 100}, format="json")
    assert made.status_code == 201, made.content
    assert DatasetModel.objects.get(name="api dataset").created_by.username == "api-operator"
    listed = api.get("/api/v1/datasets/?mine=true").json()
    names = [row["name"] for row in (listed["results"] if isinstance(listed, dict) else listed)]
    assert names == ["api dataset"]
    # Another operator's "mine" is theirs, not a cached copy of the first answer.
    api.force_authenticate(make_user("api-operator-2", "operator"))
    listed = api.get("/api/v1/datasets/?mine=true").json()
    assert (listed["results"] if isinstance(listed, dict) else listed) == []


def test_target_pickers_mark_the_rows_the_user_made(role_client):
    from tests.helpers.ui import make_user

    mine = TargetFactory(name="mine", created_by=make_user("owner", "operator"))
    theirs = TargetFactory(name="theirs")
    owner = role_client("operator")
    owner.force_login(mine.created_by)
    for url in ("/quick/", "/campaigns/new/"):
        html = _text(owner.get(url))
        assert re.search(rf'value="{mine.pk}"[^>]*data-mine="true"', html), url
        assert re.search(rf'value="{theirs.pk}"[^>]*data-mine="false"', html), url


def test_quick_compare_starts_at_3_repetitions_and_says_what_they_can_tell_before_launch(role_client):
    """One run per cell cannot tell a difference from noise, so the form starts at 3 and says what 3, 5
    and 10 runs can tell at the noise this machine's repeated cells showed."""
    from tests.factories import InstanceSpecFactory, ProductFactory, ScenarioFactory
    from tests.helpers.measured import measure

    client = role_client("operator")
    html = _text(client.get("/quick/"))
    assert re.search(r'name="repetitions" value="3"', html)
    advice = re.search(r'data-testid="repetitions-advice">(.*?)</p>', html, re.S).group(1)
    assert "1 run per cell cannot tell a difference from noise" in advice
    assert "a CV of 10% per run (not measured here yet), 3 runs per cell tell differences of about 32% or more" in advice
    # Measured noise: cells of 900/1100, 950/1050 and 980/1020 QPS: CVs of 14.1%, 7.1% and 2.8%, the median 7.1%.
    spec, scenario = InstanceSpecFactory(), ScenarioFactory()
    measure(product=ProductFactory(), spec=spec, scenario=scenario,
             figures={1: [900.0, 1100.0], 2: [950.0, 1050.0], 4: [980.0, 1020.0]})
    advice = re.search(r'data-testid="repetitions-advice">(.*?)</p>', _text(client.get("/quick/")), re.S).group(1)
    assert "this machine&#x27;s noise (CV 7.1% of one run&#x27;s QPS over 3 repeated cells)" in advice
    plan = _text(_post(client, action="plan", targets=[TargetFactory().pk], tests=["oltp_point_select"]))
    assert 'data-testid="plan-one-repetition"' in plan
