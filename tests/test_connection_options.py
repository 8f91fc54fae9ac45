"""Where sysbench connects, and as whom, comes from the target, never from a scenario's options.

Every connection option of the catalogue is refused by the API, dropped (with a warning) by the paste parser,
refused by the argv builder on the worker, and no scenario of the seeds or presets has one.
"""
from __future__ import annotations

import pytest

from campaigns import roles
from campaigns.models import Scenario
from campaigns.seeds.services import template_load_all
from campaigns.sysbench.catalogue import CONNECTION_OPTIONS, OptionError, validate_options
from campaigns.sysbench.cmdline import parse_command
from campaigns.sysbench.command import Connection, argv_check_connection, build_argv
from campaigns.sysbench.presets import PRESETS
from tests.factories import DatasetFactory
from tests.helpers.users import client_for, make_user

_VALUES = {"bool": True, "int": 1, "choice": "mysql"}
CONN = Connection(driver="mysql", host="db1", port=3306, database="sbtest", user="sb")


def test_the_catalogue_counts_tls_and_dry_run_among_the_connection_options():
    assert {"db-driver", "mysql-host", "mysql-port", "mysql-socket", "mysql-user", "mysql-password", "mysql-db",
            "mysql-ssl", "mysql-ssl-cipher", "mysql-dry-run", "pgsql-host", "pgsql-port", "pgsql-user",
            "pgsql-password", "pgsql-db"} == set(CONNECTION_OPTIONS)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(CONNECTION_OPTIONS))
def test_the_api_refuses_each_connection_option_naming_the_field(name):
    api = client_for(make_user(roles.OPERATOR))
    value = _VALUES.get(CONNECTION_OPTIONS[name].type, "x")
    response = api.post("/api/v1/scenarios/", {"name": f"s {name}", "test": "oltp_point_select",
                                               "dataset": DatasetFactory().pk, "options": {name: value}},
                        format="json")
    assert response.status_code == 400, response.content
    assert "a connection option" in str(response.json()["options"])
    assert not Scenario.objects.filter(name=f"s {name}").exists()


@pytest.mark.parametrize("name", sorted(CONNECTION_OPTIONS))
def test_the_paste_parser_never_maps_a_connection_option_into_a_scenario(name):
    value = "on" if CONNECTION_OPTIONS[name].type == "bool" else "1"
    parsed = parse_command(f"sysbench oltp_point_select --{name}={value} --point-selects=3 run")
    assert name not in parsed.options and parsed.options == {"point-selects": 3}


@pytest.mark.parametrize("name", sorted(CONNECTION_OPTIONS))
def test_the_argv_builder_refuses_a_stored_connection_option(name):
    with pytest.raises(OptionError, match="a connection option"):
        build_argv(sysbench="sysbench", test="oltp_point_select", command="run", connection=CONN, tables=1,
                   table_size=10, options={name.replace("-", "_").upper(): "1"})


def test_a_built_command_carries_the_targets_connection_once_and_nothing_else():
    argv = build_argv(sysbench="sysbench", test="oltp_point_select", command="run", connection=CONN, tables=1,
                      table_size=10, options={"point-selects": 2})
    argv_check_connection(argv, CONN)
    with pytest.raises(OptionError):
        argv_check_connection([*argv[:-1], "--mysql-host=evil", "run"], CONN)


@pytest.mark.django_db
def test_every_seed_and_preset_scenario_passes():
    for preset in PRESETS.values():
        validate_options(preset.test, preset.options)
    template_load_all()
    for scenario in Scenario.objects.all():
        assert not set(scenario.options) & set(CONNECTION_OPTIONS), scenario.name
        scenario.full_clean()


@pytest.mark.django_db
def test_the_admin_refuses_a_connection_option_and_saves_campaigns_through_the_service():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from campaigns.models import Campaign
    from tests.factories import TargetFactory

    superuser = get_user_model().objects.create_superuser("root-admin", password="pw-12345678")
    admin_site = Client()
    admin_site.force_login(superuser)
    dataset = DatasetFactory()
    fields = {"name": "admin scenario", "test": "oltp_point_select", "dataset": dataset.pk, "time_s": 10,
              "warmup_s": 0, "report_interval_s": 1, "percentile": 95, "prepare_mode": "auto",
              "cleanup": "after_run", "prepare_threads": 4, "options": '{"mysql-host": "127.0.0.1"}'}
    refused = admin_site.post("/admin/campaigns/scenario/add/", fields)
    assert refused.status_code == 200 and "options" in refused.context["adminform"].form.errors
    assert not Scenario.objects.filter(name="admin scenario").exists()
    saved = admin_site.post("/admin/campaigns/scenario/add/", {**fields, "options": '{"point-selects": 2}'})
    assert saved.status_code == 302
    scenario = Scenario.objects.get(name="admin scenario")
    assert scenario.options == {"point-selects": 2} and scenario.created_by == superuser
    target = TargetFactory()
    added = admin_site.post("/admin/campaigns/campaign/add/", {
        "name": "admin campaign", "targets": [target.pk], "scenarios": [scenario.pk], "threads": "1,2",
        "threads_by_spec": "{}", "threads_by_scenario": "{}", "repetitions": 1, "clients_min": 1,
        "scale_factor": 1.0, "regression_threshold_pct": 5, "noise_cv_pct": 5, "baseline_last_n": 5,
        "client_tries": 2, "client_hosts": "", "no_worker_notify_min": 10, "job_tries": 3, "target_wait_s": 1800,
        "job_order": "interleaved", "quiet_s": 3, "ladder_resolution_pct": 25})
    assert added.status_code == 302, added.context["adminform"].form.errors if added.context else added
    campaign = Campaign.objects.get(name="admin campaign")
    assert list(campaign.targets.all()) == [target] and list(campaign.scenarios.all()) == [scenario]
    assert campaign.threads == [1, 2]


@pytest.mark.django_db
def test_a_forged_scenario_row_shows_its_cause_in_the_plan_instead_of_a_command():
    from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

    scenario = ScenarioFactory()
    Scenario.objects.filter(pk=scenario.pk).update(options={"mysql-host": "127.0.0.1"})
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], threads=[1])
    response = client_for(make_user(roles.OPERATOR)).post(f"/api/v1/campaigns/{campaign.pk}/plan/", {},
                                                          format="json")
    assert response.status_code == 200
    (job,) = response.json()["jobs"]
    assert job["commands"] == [] and "mysql-host: a connection option" in job["command_error"]
