"""The "done when" of TPC-C as its authors mean it, through the API only: a TPC-C-shaped workload of our own
(tests/data/workloads/tpcc_like: four files, --scale in warehouses, five tables per warehouse set, about 1 % of its
new orders rolled back by design and counted through sb_counter_inc, a `check` command) declares its shape, its
counted function, its expected errors and its check; a campaign sweeps 1 and 2 warehouses. The comparison has a
warehouses dimension, an errors column and NewOrders per minute; no job is suspect for its rollbacks; the check runs
after each job and passes, and a check that finds the data broken makes its job suspect."""
from __future__ import annotations

from pathlib import Path

import MySQLdb
import pytest
from django.test import Client as PageClient

from campaigns import roles
from campaigns.execution.phases import job_connection
from campaigns.execution.workload_check import job_check
from campaigns.models import Job, Run, WorkloadVersion
from campaigns.validity import Evidence, judge
from tests.conftest import MYSQL_DB, wait_for
from tests.factories import DatasetFactory, ProductFactory, TargetFactory
from tests.helpers.users import API, client_for, make_user

TPCC_LIKE = Path(__file__).resolve().parent / "data" / "workloads" / "tpcc_like"


def tpcc_like_files() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(TPCC_LIKE.glob("*.lua"))}


def test_a_failed_check_makes_a_job_suspect_and_one_that_could_not_run_says_so():
    def check_findings(outcome: str) -> list[tuple[str, str]]:
        findings, _ = judge(Evidence(check_command="check", check_outcome=outcome))
        return [(f.code, f.level) for f in findings if f.code.startswith("check")]

    assert check_findings("failed") == [("check-failed", "suspect")]
    assert check_findings("not_run") == [("check-not-run", "info")]
    assert check_findings("passed") == [] and check_findings("") == []


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_tpcc_shaped_workload_at_1_and_2_warehouses_reads_as_tpcc(celery_worker_process, target_databases):
    operator = make_user(roles.OPERATOR, "tpcc-like")
    api = client_for(operator)
    uploaded = api.post(f"{API}/workloads/", {
        "name": "tpcc-like", "entry": "tpcc_like.lua", "files": tpcc_like_files(), "expected_errors_pct": 1.0,
        "size_option": "scale", "size_unit": "warehouses", "counted_function": "new_order",
        "counted_label": "NewOrders", "check_command": "check"}, format="json")
    assert uploaded.status_code == 201, uploaded.content
    version = WorkloadVersion.objects.get(pk=uploaded.json()["id"])
    assert {o["name"] for o in uploaded.json()["options"]} >= {"scale", "tables", "customers"}
    # A scenario whose options contradict its dataset's warehouses is refused naming both.
    dataset = DatasetFactory(name="tpcc-like set", tables=1, table_size=1)
    refused = api.post(f"{API}/scenarios/", {"name": "tpcc-like at 3", "workload_version": version.pk,
                                             "dataset": dataset.pk, "options": {"scale": 3}}, format="json")
    assert refused.status_code == 400 and "scale=3 contradicts the dataset 'tpcc-like set' (1 table × 1 warehouses)" \
        in str(refused.json()), refused.content
    made = api.post(f"{API}/scenarios/", {
        "name": "tpcc-like", "workload_version": version.pk, "dataset": dataset.pk, "options": {"customers": 5},
        "time_s": 4, "warmup_s": 1, "cleanup": "keep"}, format="json")
    assert made.status_code == 201, made.content
    target = TargetFactory(name="tpcc-like-maria", product=ProductFactory(name="MariaDB tpcc-like"),
                           workloads_allowed=True)
    approved = client_for(make_user(roles.ADMIN, "tpcc-like-admin")).post(
        f"{API}/workload-versions/{version.pk}/approve/")
    assert approved.status_code == 200, approved.content
    created = api.post(f"{API}/campaigns/", {
        "name": "tpcc-like sweep", "targets": [target.pk], "scenarios": [made.json()["id"]], "threads": [2],
        "table_sizes": [1, 2], "quiet_s": 0, "remeasure_spoiled": False, "confirm_alarms": False}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["table_sizes"] == [1, 2]
    launched = api.post(f"{API}/campaigns/{created.json()['id']}/launch/")
    assert launched.status_code in (200, 201, 202), launched.content
    run = Run.objects.get(pk=launched.json()["id"])
    wait_for(lambda: all(j.is_finished() for j in run.jobs.all()), timeout_s=240, what="both jobs to finish")
    jobs = list(run.jobs.select_related("result").order_by("table_size"))
    assert [j.table_size for j in jobs] == [1, 2]
    for job in jobs:
        assert job.status == Job.Status.SUCCEEDED, job.error
        client = job.clients.get()
        # The size went to the workload's own option; the counting wrapper ran beside the entry script.
        assert f"--scale={job.table_size}" in client.command_line and "--table-size" not in client.command_line
        assert f"/{version.content_hash}/__benchapp_count_new_order.lua" in client.command_line
        result = job.result
        assert result.counted and result.counted > 0 and result.ignored_errors and result.ignored_errors > 0
        assert result.counted_per_min == pytest.approx(result.counted * 60 / result.duration_s)
        # NewOrders are a share of the mix (about 45 %), never more than every transaction.
        assert 0.25 * result.transactions < result.counted < 0.7 * result.transactions
        # Its rollbacks are within the declared rate: counted and shown, never what makes the job suspect.
        codes = {f["code"] for f in job.findings}
        assert "errors" not in codes and "errors-expected" in codes, job.findings
        assert job.check_outcome == Job.CheckOutcome.PASSED, job.check_output
        assert f"check passed: {10 * job.table_size} districts consistent" in job.check_output
        assert f"--scale={job.table_size}" in job.check_output and " check" in job.check_output
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=60, what="the run to end")

    compared = api.get(f"{API}/comparisons/?runs={run.pk}").json()
    (group,) = compared["groups"]
    assert group["scenario"]["size_unit"] == "warehouses" and group["scenario"]["counted"] == "NewOrders"
    assert [row["table_size"] for row in group["rows"]] == [1, 2]
    for row in group["rows"]:
        (cell,) = row["cells"]
        assert cell["counted_per_min"] > 0 and cell["errors"]["per_1k_txn"] > 0
        assert cell["errors"]["expected_pct"] == 1.0
    page = PageClient()
    page.force_login(operator)
    html = page.get(f"/compare/?runs={run.pk}").content.decode()
    assert "Warehouses</th>" in html and "NewOrders per minute</th>" in html and "Errors / 1k txn</th>" in html
    assert "tpcc-like · 1 × 1, 1 × 2 warehouses" in html
    job_page = page.get(f"/jobs/{jobs[1].pk}/").content.decode()
    assert "Dataset</dt><dd>1 × 2 warehouses" in job_page, job_page.split("Dataset</dt>")[1][:80]
    assert 'data-testid="check-outcome"' in job_page
    assert "NewOrders per minute" in job_page and "check passed" in job_page
    api_job = api.get(f"{API}/jobs/{jobs[1].pk}/").json()
    assert api_job["check_outcome"] == "passed" and api_job["result"]["counted"] == jobs[1].result.counted

    # Data the check finds broken (the tables were kept): its outcome is "failed", with what it found.
    db = MySQLdb.connect(host="127.0.0.1", user="root", passwd="", db=MYSQL_DB)
    try:
        db.cursor().execute("UPDATE district1 SET d_next_o_id = d_next_o_id + 5 WHERE d_w_id = 1 AND d_id = 3")
        db.commit()
        broken = job_check(Job.objects.select_related("scenario__workload_version__workload", "target")
                           .get(pk=jobs[1].pk), job_connection(jobs[1]))
    finally:
        for name in ("history1", "orders1", "customer1", "district1", "warehouse1"):
            db.cursor().execute(f"DROP TABLE IF EXISTS {name}")
        db.close()
    assert broken["check_outcome"] == Job.CheckOutcome.FAILED, broken
    assert "check FAILED: district1 w_id=1 d_id=3" in broken["check_output"]
