"""End to end: where sysbench connects comes from the target, never from a scenario.

An attacker's MySQL server (tests/helpers/fake_servers.py: it switches the client to mysql_clear_password and keeps every
byte) listens on a port of its own. A bundle whose scenario points sysbench at it is refused at the import; a
scenario row forged straight in the database reaches a real worker and fails its job, with the cause, before
sysbench starts: the attacker's server never sees a connection.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaigns import roles, services
from campaigns.models import Job, Run, Scenario, Target
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.fake_servers import FakeMysql, fake_server
from tests.helpers.users import client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

_LOG = (Path(__file__).parent / "data" / "sysbench" / "mysql_oltp_point_select.txt").read_text()
SECRET = "Victim-Pw-0427"


def test_a_bundle_pointing_a_scenario_at_another_server_is_refused():
    victim = make_user(roles.OPERATOR, username="victim")
    target = TargetFactory(name="victim db", created_by=victim)
    target.set_password(SECRET)
    target.save()
    run = services.results_import(files=[("a.log", _LOG)], target=target, scenario=ScenarioFactory())
    viewer = client_for(make_user(roles.VIEWER, username="viewer"))
    bundle = json.loads(viewer.get(f"/api/v1/runs/{run.pk}/export/").content)
    with fake_server(FakeMysql) as server:
        bundle["scenarios"][0]["options"] = {"mysql-host": "127.0.0.1", "mysql-port": str(server.port)}
        bundle["campaign"]["name"] = "stolen"
        runs_before = Run.objects.count()
        response = client_for(make_user(roles.OPERATOR, username="attacker")).post(
            "/api/v1/runs/import-bundle/", bundle, format="json")
        assert response.status_code == 400
        assert "scenarios[0].options: mysql-host: a connection option" in response.json()["bundle"][0]
        assert Run.objects.count() == runs_before and not Target.objects.filter(name__startswith="victim db (").exists()
        assert server.connections == 0 and server.received() == b""


def test_a_scenario_row_forged_in_the_database_fails_its_job_before_anything_connects(celery_worker_process,
                                                                                    target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-forged", tables=1, table_size=200))
    with fake_server(FakeMysql) as server:
        # Past every form, serializer and import: straight into the row.
        Scenario.objects.filter(pk=scenario.pk).update(
            options={"mysql-host": "127.0.0.1", "mysql-port": str(server.port), "point-selects": 1})
        run = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]))
        job = run.jobs.get()

        def finished() -> bool:
            job.refresh_from_db()
            return job.is_finished()

        wait_for(finished, timeout_s=90, what=f"job {job.pk} to finish")
        assert server.connections == 0 and server.received() == b""
    assert job.status == Job.Status.FAILED
    assert "the scenario's options are refused, nothing was run" in job.error
    assert "mysql-host: a connection option" in job.error, job.error
    assert not job.clients.exists()  # sysbench never started
    assert f"--mysql-port={server.port}" not in job.command_line
