"""Every failure in the log: a failed job's WARNING line under its launch's request id, django.request
lines with the request id (text and JSON), Python warnings as JSON in JSON mode, a quiet reconciler."""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchapp import requestid
from benchapp.logs import JsonFormatter
from campaigns import execution, roles
from campaigns.models import Job, Run
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import API, client_for, make_user

ROOT = Path(__file__).resolve().parent.parent
PLAIN = logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_failed_job_logs_one_warning_with_its_run_target_cause_and_launch_request_id(celery_worker_process,
                                                                                      target_databases):
    target = TargetFactory(name="denied-target", password="wrong-pw-4242")
    scenario = ScenarioFactory(dataset=DatasetFactory(name="tiny-faillog"))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], target_wait_s=0)
    operator = client_for(make_user(roles.OPERATOR))
    response = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", HTTP_X_REQUEST_ID="launch-rid-4242")
    assert response.status_code == 202, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.request_id == "launch-rid-4242"
    job = run.jobs.get()

    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished()

    wait_for(finished, timeout_s=60, what="the job to fail")
    assert job.status == Job.Status.FAILED and "access denied" in job.error
    pattern = re.compile(rf"WARNING.*\[launch-rid-4242\] job {job.pk} failed: run {run.pk}, "
                         rf"target denied-target, attempt 1: .*access denied")
    wait_for(lambda: pattern.search(celery_worker_process.log_text()), timeout_s=10, what="the failure's log line")
    lines = [line for line in celery_worker_process.log_text().splitlines() if f"job {job.pk} failed" in line]
    assert len(lines) == 1, lines
    assert "wrong-pw-4242" not in celery_worker_process.log_text()


@pytest.mark.integration
def test_the_workers_log_has_no_routine_reconcile_lines(celery_worker_process):
    # The session worker runs beat inside it (-B) with the reconcile entry every 2 s: several passes by now.
    wait_for(lambda: "beat: Starting" in celery_worker_process.log_text(), timeout_s=30, what="beat to start")
    time.sleep(4.5)  # two passes at least, however recently the session's worker started
    text = celery_worker_process.log_text()
    # Neither "received" nor "succeeded". (An error is no routine line: a test that migrates the session's database
    # down and up makes a pass meanwhile fail on a missing column, which is the log's to show.)
    assert not re.search(r"Task campaigns\.tasks\.jobs_reconcile_task\[[^\]]*\] (received|succeeded)", text), text[-2000:]
    assert "Sending due task benchapp-reconcile-jobs" not in text


@pytest.mark.django_db
def test_an_idle_reconcile_pass_logs_nothing(caplog):
    with caplog.at_level(logging.INFO):
        counts = execution.jobs_reconcile()
    assert not any(counts.values())
    assert [r.getMessage() for r in caplog.records if r.name.startswith("campaigns")] == []


@pytest.mark.django_db
def test_a_4xx_line_of_django_request_carries_the_request_id_in_text_and_json(client, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(f"{API}/campaigns/", HTTP_X_REQUEST_ID="rid-4xx-1")  # 401: no credentials
    assert response.status_code == 401
    record = next(r for r in caplog.records if r.name == "django.request")
    assert record.request_id == "rid-4xx-1"
    assert "[rid-4xx-1] Unauthorized: /api/v1/campaigns/" in PLAIN.format(record)
    assert json.loads(JsonFormatter().format(record))["request_id"] == "rid-4xx-1"
    assert requestid.current() == ""  # and nothing of it leaked past the request


@pytest.mark.slow  # a fresh Django process: 1.5 s
def test_a_python_warning_is_a_json_line_in_json_mode():
    code = "import django, warnings; django.setup(); warnings.warn('a warning of the test', RuntimeWarning)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings",
                              "BENCHAPP_LOG_FORMAT": "json"}, check=True)
    assert "a warning of the test" in out.stderr
    line = next(json.loads(text) for text in out.stderr.splitlines() if "a warning of the test" in text)
    assert line["logger"] == "py.warnings" and line["level"] == "WARNING"
    assert "RuntimeWarning" in line["message"]


@pytest.mark.django_db
def test_a_job_measured_again_and_one_ended_invalid_each_log_one_warning_under_the_launchs_request_id(caplog,
                                                                                                      sent_tasks):
    from campaigns.execution.outcomes import job_ended_log
    from campaigns.execution.results import job_measure_again
    from tests.factories import JobFactory, RunFactory

    run = RunFactory(request_id="launch-rid-again", status=Run.Status.RUNNING)
    run.campaign.job_tries = 3
    run.campaign.save()
    lost = JobFactory(run=run, target=TargetFactory(name="again-target"), status=Job.Status.RUNNING,
                      phase=Job.Phase.RUN, attempt=1)
    with caplog.at_level(logging.WARNING, logger="campaigns.jobs"):
        assert job_measure_again(job_id=lost.pk, attempt=1, cause="client host vm-b went silent") == "again"
    records = [r for r in caplog.records if r.name == "campaigns.jobs"]
    assert [r.getMessage() for r in records] == [
        f"job {lost.pk} measured again: run {run.pk}, target again-target, attempt 1: attempt 1 of 3 lost: "
        "client host vm-b went silent"]
    assert records[0].levelno == logging.WARNING and records[0].request_id == "launch-rid-again"
    assert "[launch-rid-again] job" in PLAIN.format(records[0])

    caplog.clear()
    invalid = JobFactory(run=run, target=TargetFactory(name="invalid-target"), status=Job.Status.SUCCEEDED,
                         verdict=Job.Verdict.INVALID, findings=[
                             {"code": "server-disagrees", "level": "invalid", "message": "The server counted\n"
                              "9,000 queries while sysbench sent 10,000 (-10.0 %)"},
                             {"code": "too-short", "level": "info", "message": "short"}])
    fine = JobFactory(run=run, status=Job.Status.SUCCEEDED, verdict=Job.Verdict.VALID)
    with caplog.at_level(logging.WARNING, logger="campaigns.jobs"):
        job_ended_log(job_id=invalid.pk)
        job_ended_log(job_id=fine.pk)  # a good end says nothing
    records = [r for r in caplog.records if r.name == "campaigns.jobs"]
    assert [r.getMessage() for r in records] == [
        f"job {invalid.pk} ended invalid: run {run.pk}, target invalid-target, attempt 1: The server counted "
        "9,000 queries while sysbench sent 10,000 (-10.0 %)"]
    assert records[0].request_id == "launch-rid-again"
    assert json.loads(JsonFormatter().format(records[0]))["request_id"] == "launch-rid-again"
    assert requestid.current() == ""
