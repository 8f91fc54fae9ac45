"""A failed sysbench's cause in words (campaigns.sysbench.errors), from what sysbench 1.0.20 printed for real."""
from __future__ import annotations

import subprocess

import MySQLdb
import pytest

from campaigns.sysbench.errors import explain_failure, target_unreachable
from tests.helpers.servers import MariaDBServer


@pytest.mark.slow
def test_a_full_server_is_named_by_its_own_error_not_as_a_refused_connection(own_mariadb: MariaDBServer):
    """A server at max_connections refuses sysbench's threads with error 1040. sysbench prints "unable to connect"
    first: the cause must be the server's reason (it is full, it will take connections again), not "connection
    refused … is the server running", and it counts as a server that is away, not a job's mistake."""
    # A user without SUPER: root may take one connection past max_connections.
    own_mariadb.sql("CREATE DATABASE sbfull; CREATE USER bench@'%' IDENTIFIED BY 'pw'; "
                    "GRANT ALL ON sbfull.* TO bench@'%'; SET GLOBAL max_connections = 10")  # its least
    held = [MySQLdb.connect(host="127.0.0.1", port=own_mariadb.port, user="bench", password="pw") for _ in range(10)]
    try:
        done = subprocess.run(
            ["sysbench", "oltp_point_select", "--db-driver=mysql", "--mysql-host=127.0.0.1",
             f"--mysql-port={own_mariadb.port}", "--mysql-user=bench", "--mysql-password=pw", "--mysql-db=sbfull", "--threads=2",
             "--tables=1", "--table-size=10", "--time=1", "run"],
            capture_output=True, text=True, timeout=60)
    finally:
        for conn in held:
            conn.close()
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "error 1040" in output, output
    cause = explain_failure(output, done.returncode)
    assert cause.startswith("the server is full: too many connections (error 1040"), cause
    assert "connection refused" not in cause
    assert target_unreachable(output)


def test_a_full_postgresql_server_is_named_too():
    output = ("FATAL: Connection to database failed: connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  "
              "sorry, too many clients already\n")
    assert explain_failure(output, 1).startswith("the server is full: too many clients (SQLSTATE 53300")
    assert target_unreachable(output)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_job_on_a_full_server_waits_for_free_connections_and_succeeds_once_they_are_released(
        celery_worker_process, own_mariadb: MariaDBServer):
    """Another application holds the server's connections: the job waits as for a server that is away, with the
    server's own figures as its cause, spends no attempt, and measures once the connections are released."""
    from campaigns import services
    from campaigns.models import Job, Run
    from tests.conftest import wait_for
    from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory

    own_mariadb.sql("CREATE DATABASE sbfull; CREATE USER bench@'%' IDENTIFIED BY 'pw'; "
                    "GRANT ALL ON sbfull.* TO bench@'%'; SET GLOBAL max_connections = 10")
    target = TargetFactory(port=own_mariadb.port, database="sbfull", user="bench", password="pw")
    scenario = ScenarioFactory(name="full", time_s=2, dataset=DatasetFactory(name="full 1x100", tables=1,
                                                                             table_size=100))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2], target_wait_s=600)
    held = [MySQLdb.connect(host="127.0.0.1", port=own_mariadb.port, user="bench", password="pw")
            for _ in range(8)]
    try:
        run = services.campaign_launch(campaign=campaign)
        job = run.jobs.get()

        def waits() -> bool:
            job.refresh_from_db()
            return job.status == Job.Status.WAITING and "the server is full" in job.wait_reason

        wait_for(waits, timeout_s=90, what="the job to wait for free connections")
        assert "connections are in use by others, and the job needs 4" in job.wait_reason, job.wait_reason
    finally:
        for conn in held:
            conn.close()
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=180, what="the run to finish")
    job.refresh_from_db()
    assert (job.status, job.attempt) == (Job.Status.SUCCEEDED, 1), (job.status, job.attempt, job.error)
