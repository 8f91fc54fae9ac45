"""A scenario's own table DDL (seed 002's pre-created sharded table): the app creates the tables
with it and sysbench still loads the rows."""
from __future__ import annotations

import os
import subprocess

import pytest

from campaigns import services
from campaigns.execution.datasets import table_ddl_statements
from campaigns.execution.phases import JobFailure
from campaigns.models import Job
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory

# A plain MariaDB equivalent of seed 002's DDM table (its "dbpartition by hash(id)" clause is DDM's own).
PLAIN_DDL = ("CREATE TABLE {table} (id INT UNSIGNED NOT NULL AUTO_INCREMENT, k INT UNSIGNED NOT NULL DEFAULT 0, "
             "c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k)) "
             "COMMENT='created by the scenario DDL'")


def test_the_ddl_names_each_table_and_refuses_a_fixed_name_for_several_tables():
    assert table_ddl_statements(ddl="CREATE TABLE {table} (id INT); ", tables=2, driver="mysql") == [
        "CREATE TABLE sbtest1 (id INT)", "CREATE TABLE sbtest2 (id INT)"]
    with pytest.raises(JobFailure, match="must contain"):
        table_ddl_statements(ddl="CREATE TABLE t (id INT)", tables=2, driver="mysql")


def _comment(database: str, table: str) -> str:
    return subprocess.run(
        ["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e",
         f"SELECT table_comment FROM information_schema.tables WHERE table_schema='{database}' AND table_name='{table}'"],
        check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("test", "options"), [
    ("oltp_point_select", {}),
    ("oltp_legacy/oltp.lua", {"oltp-secondary": False, "oltp-auto-inc": True, "oltp-range-size": 5}),
], ids=["builtin", "legacy-seed-002"])
def test_a_scenario_with_its_own_ddl_prepares_and_runs_on_mariadb(celery_worker_process, target_databases, test,
                                                                  options):
    database = os.environ["BENCHAPP_TEST_TARGET_DB"]
    target = TargetFactory()
    scenario = ScenarioFactory(test=test, options=options, table_ddl=PLAIN_DDL, time_s=2,
                               dataset=DatasetFactory(name=f"ddl-{test}", tables=2, table_size=300))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2])
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished(), timeout_s=60, what="the job to finish")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert _comment(database, "sbtest2") == "created by the scenario DDL"
    assert "tables created with the scenario's DDL" in job.clients.get().prepare_output
    assert job.result.qps > 0
