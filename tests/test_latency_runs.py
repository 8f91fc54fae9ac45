"""Real jobs (Celery worker, sysbench, MariaDB) store the whole run's latency distribution and summary."""
from __future__ import annotations

import re

import pytest

from campaigns import services
from campaigns.execution.results import NO_HISTOGRAM_CHECKPOINTS, NO_HISTOGRAM_PERCENTILE_0
from campaigns.models import Job, Scenario, Target
from campaigns.sysbench.parser import histogram_percentile
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _run_one(target: Target, scenario: Scenario, threads: int = 2) -> Job:
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[threads])
    job = services.campaign_launch(campaign=campaign).jobs.get()

    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished()

    wait_for(finished, timeout_s=90, what=f"job {job.pk} to finish")
    assert job.status == Job.Status.SUCCEEDED, job.error
    return job


def _blocks(raw: str, label: str) -> list[str]:
    return re.findall(rf"^\s*{re.escape(label)}:\s+(\S+)", raw, re.M)


def test_a_measured_job_stores_p50_to_p99_9_from_its_histogram(celery_worker_process, target_databases):
    job = _run_one(TargetFactory(), ScenarioFactory(dataset=DatasetFactory(name="tiny-lat", tables=2, table_size=1000)))
    client = job.clients.get()
    assert "--histogram=on" in client.command_line and client.histogram
    result = job.result
    buckets = [(v, int(c)) for v, c in client.histogram]
    assert sum(c for _, c in buckets) == result.events
    values = [result.latency_p50_ms, result.latency_p90_ms, result.latency_p95_ms, result.latency_p99_ms,
              result.latency_p999_ms]
    assert values == [histogram_percentile(buckets, p) for p in (50, 90, 95, 99, 99.9)]
    assert all(v is not None for v in values) and values == sorted(values)
    printed_p95 = float(_blocks(client.raw_output, "95th percentile")[-1])
    assert result.latency_p95_ms == pytest.approx(printed_p95, abs=0.011)
    assert result.latency_percentiles_missing == ""


def test_a_percentile_0_job_runs_and_says_it_has_no_histogram(celery_worker_process, target_databases):
    scenario = ScenarioFactory(percentile=0, dataset=DatasetFactory(name="tiny-lat", tables=2, table_size=1000))
    job = _run_one(TargetFactory(), scenario)
    client = job.clients.get()
    assert "--percentile=0" in client.command_line and "--histogram" not in client.command_line
    assert re.search(r"percentile stats:\s+disabled", client.raw_output)
    result = job.result
    assert result.latency_p50_ms is None and result.latency_p999_ms is None and result.latency_pct_ms is None
    assert result.latency_percentiles_missing == NO_HISTOGRAM_PERCENTILE_0


def test_a_job_with_report_checkpoints_stores_the_whole_run(celery_worker_process, target_databases):
    scenario = ScenarioFactory(time_s=6, options={"report-checkpoints": "2,4"},
                               dataset=DatasetFactory(name="tiny-lat", tables=2, table_size=1000))
    job = _run_one(TargetFactory(), scenario)
    raw = job.clients.get().raw_output
    assert raw.count("Checkpoint report:") == 2
    transactions = [int(v) for v in _blocks(raw, "transactions")]
    total_time_s = float(_blocks(raw, "total time")[-1].rstrip("s"))
    result = job.result
    assert len(transactions) == 3
    assert result.transactions == sum(transactions)
    assert result.duration_s == total_time_s
    assert result.tps == pytest.approx(sum(transactions) / total_time_s, abs=0.01)
    last_block_tps = float(re.findall(r"transactions:\s+\d+\s+\(([\d.]+) per sec", raw)[-1])
    assert result.tps != last_block_tps
    assert result.latency_p95_ms is None and result.latency_percentiles_missing == NO_HISTOGRAM_CHECKPOINTS
