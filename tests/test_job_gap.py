"""The gap between jobs: the run's next job is readied while the current one measures, and starts only once
that one's sysbench has exited and its snapshot after the run is taken (never two measurements at once)."""
from __future__ import annotations

import pytest

from campaigns import services
from campaigns.models import ClientHost, Job, Run, Scenario
from tests.conftest import record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_next_job_is_claimed_while_one_measures_and_starts_after_its_exit_without_sharing(
        celery_worker_process, make_worker, target_databases):
    # Two free slots besides the one measuring: the next job's coordinator has somewhere to wait.
    make_worker("client-g", concurrency=2)
    wait_for(lambda: ClientHost.objects.online().filter(hostname="client-g").exists(), timeout_s=20,
             what="client-g online")
    scenario = ScenarioFactory(time_s=5, warmup_s=0, cleanup=Scenario.Cleanup.KEEP,
                               dataset=DatasetFactory(name="gap-data", tables=1, table_size=1000))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], threads=[1], repetitions=4)
    run = services.campaign_launch(campaign=campaign)

    def finished() -> bool:
        run.refresh_from_db()
        return run.is_finished()

    wait_for(finished, timeout_s=240, what=f"run {run.pk} to finish")
    assert run.status == Run.Status.SUCCEEDED, run.error
    jobs = list(run.jobs.order_by("position").prefetch_related("clients"))
    assert len(jobs) == 4
    gaps = []
    for previous, job in zip(jobs, jobs[1:], strict=False):
        (before,) = previous.clients.all()
        (client,) = job.clients.all()
        # Readied meanwhile: claimed (target and hosts checked) before the previous sysbench had exited...
        assert job.claimed_at < before.exited_at, (job.pk, job.claimed_at, before.exited_at)
        # ...but started only after it had, and after the previous job's snapshot after its run.
        assert before.exited_at <= previous.measured_at <= client.started_at
        gaps.append((client.started_at - before.exited_at).total_seconds())
    for job in jobs:
        assert job.status == Job.Status.SUCCEEDED, job.error
        codes = [finding["code"] for finding in job.findings]
        assert "shared" not in codes, job.findings  # the next job's early claim is not another measurement
        assert {"before", "after"} <= set(job.server_snapshot), job.server_snapshot
        assert job.cache_hit_ratio is not None
        assert job.wait_reason == ""
    record_measurement("gap between 5 s jobs (one worker of 2 slots + the session's; not a timing assert): "
                       + ", ".join(f"{gap:.3f} s" for gap in gaps))
