"""A registered target to stored per-second results, through a real Celery worker and sysbench."""
from __future__ import annotations

import os
import re

import pytest

from campaigns import execution, services
from campaigns.models import IntervalSample, Job, JobClient, PreparedDataset, Run, Scenario, Target
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, PgTargetFactory, ScenarioFactory, TargetFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _launch(target: Target, scenario: Scenario, threads: list[int] | None = None) -> Run:
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=threads or [2])
    return services.campaign_launch(campaign=campaign)


def _wait_finished(job: Job, timeout_s: float = 60) -> Job:
    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished()

    wait_for(finished, timeout_s=timeout_s, what=f"job {job.pk} to finish")
    return job


def _printed(raw: str, label: str) -> float:
    """A figure from sysbench's final block, read from the stored raw output."""
    match = re.search(rf"^\s*{label}:\s+(\d+)\s+\(([\d.]+) per sec\.\)", raw, re.M)
    assert match, f"{label} not in output"
    return float(match.group(2))


def _assert_result_matches_output(job: Job) -> None:
    client = job.clients.get()
    raw = client.raw_output
    result = job.result
    assert result.tps == pytest.approx(_printed(raw, "transactions"))
    assert result.qps == pytest.approx(_printed(raw, "queries"))
    avg = float(re.search(r"^\s*avg:\s+([\d.]+)", raw, re.M).group(1))
    pct = float(re.search(r"^\s*95th percentile:\s+([\d.]+)", raw, re.M).group(1))
    assert result.latency_avg_ms == pytest.approx(avg)
    assert result.latency_pct_ms == pytest.approx(pct)
    assert result.latency_pct == 95.0
    printed_intervals = [line for line in raw.splitlines() if line.startswith("[") and "thds:" in line]
    samples = list(job.samples.order_by("t"))
    assert len(samples) == len(printed_intervals) >= 2
    first = re.search(r"tps: ([\d.]+) qps: ([\d.]+)", printed_intervals[0])
    assert samples[0].tps == pytest.approx(float(first.group(1)))
    assert samples[0].qps == pytest.approx(float(first.group(2)))


def test_it_runs_point_select_on_mariadb_and_stores_what_sysbench_printed(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(dataset=DatasetFactory(name="tiny-mysql", tables=2, table_size=1000))
    run = _launch(target, scenario)
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    _assert_result_matches_output(job)
    client = job.clients.get()
    assert client.exit_code == 0
    assert client.sysbench_version.startswith("1.0")
    assert client.host_name == "client-a"
    assert "--mysql-host=127.0.0.1" in job.command_line and "oltp_point_select" in job.command_line
    assert job.server_snapshot["before"]["version"]
    assert PreparedDataset.objects.get(target=target).status == PreparedDataset.Status.READY
    run.refresh_from_db()
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED, timeout_s=10, what="run to finish")


def test_it_runs_point_select_on_postgresql_and_stores_what_sysbench_printed(celery_worker_process, target_databases):
    target = PgTargetFactory()
    scenario = ScenarioFactory(dataset=DatasetFactory(name="tiny-pg", tables=2, table_size=1000))
    run = _launch(target, scenario)
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    _assert_result_matches_output(job)


def test_interval_rows_are_stored_while_the_job_is_still_running(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=6, dataset=DatasetFactory(name="tiny-live", tables=1, table_size=500))
    run = _launch(target, scenario, threads=[1])
    job = run.jobs.get()

    def sample_while_running() -> bool:
        count = IntervalSample.objects.filter(job=job).count()
        return count >= 2 and Job.objects.get(pk=job.pk).status == Job.Status.RUNNING

    wait_for(sample_while_running, timeout_s=45, interval_s=0.1, what="samples during the run")
    _wait_finished(job)
    assert job.status == Job.Status.SUCCEEDED


def test_it_prepares_once_and_reuses_the_dataset_for_the_next_job(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-reuse", tables=1, table_size=300))
    run = _launch(target, scenario, threads=[1, 2])
    jobs = list(run.jobs.order_by("position"))
    for job in jobs:
        _wait_finished(job)
        assert job.status == Job.Status.SUCCEEDED, job.error
    first, second = (JobClient.objects.get(job=j) for j in jobs)
    assert "prepare" in first.prepare_output
    assert second.prepare_output == ""


def _other_rows_snapshot() -> dict[str, list]:
    return {
        "targets": list(Target.objects.order_by("pk").values()),
        "scenarios": list(Scenario.objects.order_by("pk").values()),
        "prepared": list(PreparedDataset.objects.order_by("pk").values()),
    }


@pytest.mark.parametrize(
    ("target_kwargs", "prepare_mode", "expected"),
    [
        ({"password": "wrong-pw-123"}, "auto", "access denied for user 'root'"),
        ({"port": 3307}, "auto", "connection refused to 127.0.0.1:3307"),
        ({"database": os.environ["BENCHAPP_TEST_TARGET_DB"] + "_empty"}, "never",
         "doesn't exist: the dataset is not prepared"),
    ],
    ids=["wrong-password", "closed-port", "run-before-prepare"],
)
def test_it_marks_job_failed_with_an_actionable_cause(celery_worker_process, target_databases, target_kwargs,
                                                     prepare_mode, expected):
    target = TargetFactory(**target_kwargs)
    scenario = ScenarioFactory(prepare_mode=prepare_mode, dataset=DatasetFactory(name="tiny-fail"))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    before = _other_rows_snapshot()
    run = services.campaign_launch(campaign=campaign)
    job = _wait_finished(run.jobs.get(), timeout_s=30)
    assert job.status == Job.Status.FAILED
    assert expected in job.error
    assert "wrong-pw-123" not in job.error
    after = _other_rows_snapshot()
    # A failed attempt may record a failed dataset preparation for its own target, nothing else.
    after["prepared"] = [p for p in after["prepared"] if p["target_id"] != target.pk]
    before["prepared"] = [p for p in before["prepared"] if p["target_id"] != target.pk]
    assert after == before


def test_the_target_password_never_reaches_stored_commands_outputs_or_logs(celery_worker_process, target_databases):
    secret = "S3cret-Pw-4242"
    # PostgreSQL here trusts local connections, so the job succeeds whatever the password is.
    target = PgTargetFactory(password=secret)
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-secret", tables=1, table_size=200))
    run = _launch(target, scenario, threads=[1])
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert "--pgsql-password=***" in job.command_line
    client = job.clients.get()
    stored = " ".join([job.command_line, job.error, str(job.server_snapshot), client.command_line,
                       client.raw_output, client.prepare_output, client.error])
    assert secret not in stored
    assert secret not in Target.objects.filter(pk=target.pk).values_list("password_encrypted", flat=True)[0]
    assert secret not in celery_worker_process.log_text()


def test_a_duplicated_message_runs_the_job_once(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-dup", tables=1, table_size=200))
    run = _launch(target, scenario, threads=[1])
    job = run.jobs.get()
    execution.job_dispatch(job=job)
    execution.job_dispatch(job=job)
    _wait_finished(job)
    assert job.status == Job.Status.SUCCEEDED
    assert JobClient.objects.filter(job=job).count() == 1
