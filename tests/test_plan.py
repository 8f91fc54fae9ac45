"""Planning a campaign before launching it, and launching it exactly once."""
from __future__ import annotations

import pytest

from campaigns import services
from campaigns.models import Run
from tests.factories import CampaignFactory, DatasetFactory, InstanceSpecFactory, ScenarioFactory, TargetFactory

pytestmark = pytest.mark.django_db


def test_the_plan_lists_jobs_in_order_with_exact_commands_per_client_and_no_password():
    target = TargetFactory(password="Plan-Secret-1")
    scenario = ScenarioFactory(time_s=300, dataset=DatasetFactory(name="ten", tables=10, table_size=10_000_000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[64, 2500], repetitions=2,
                               clients_min=2, clients_per_threads=1000)
    plan = services.campaign_plan(campaign=campaign)
    assert plan["job_count"] == 4
    assert [(j["threads"], j["repetition"]) for j in plan["jobs"]] == [(64, 1), (64, 2), (2500, 1), (2500, 2)]
    big = plan["jobs"][2]
    assert big["clients"] == 4  # 2 clients, one more per 1,000 threads beyond 1,000
    assert big["threads_per_client"] == [625, 625, 625, 625]
    assert len(big["commands"]) == 4
    assert all("--threads=625" in c and "--mysql-password=***" in c for c in big["commands"])
    assert "Plan-Secret-1" not in str(plan)
    # Prepared once: only the first job on the target loads the 100 M rows.
    assert plan["jobs"][0]["prepare_command"] and not plan["jobs"][1]["prepare_command"]
    assert plan["estimated_dataset_bytes"] == 10 * 10_000_000 * services.BYTES_PER_ROW


def test_a_campaign_that_would_take_thirty_hours_says_so_before_it_starts():
    specs = [InstanceSpecFactory() for _ in range(3)]
    targets = [TargetFactory(spec=spec) for spec in specs]
    scenarios = [ScenarioFactory(time_s=1800) for _ in range(5)]
    campaign = CampaignFactory(targets=targets, scenarios=scenarios, threads=[128, 256, 512, 1024])
    plan = services.campaign_plan(campaign=campaign)
    assert plan["job_count"] == 60
    assert plan["estimated_duration_s"] > 30 * 3600
    assert plan["estimated_duration"].startswith("1 d") or " h " in plan["estimated_duration"]


def test_thread_lists_per_spec_and_per_scenario_override_the_default():
    spec = InstanceSpecFactory(label="8-core 32 GB MEM")
    target = TargetFactory(spec=spec)
    point, write = ScenarioFactory(name="point"), ScenarioFactory(name="write")
    campaign = CampaignFactory(targets=[target], scenarios=[point, write], threads=[1],
                               threads_by_spec={"8-core 32 GB MEM": [32, 64]}, threads_by_scenario={"write": [16]})
    plan = services.campaign_plan(campaign=campaign)
    assert sorted((j["scenario"], j["threads"]) for j in plan["jobs"]) == [("point", 32), ("point", 64), ("write", 16)]


def test_a_scale_factor_shrinks_the_dataset_for_a_smoke_run():
    scenario = ScenarioFactory(dataset=DatasetFactory(name="full cache", tables=250, table_size=25_000))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], scale_factor=0.01)
    (job,) = services.campaign_plan(campaign=campaign)["jobs"]
    assert (job["tables"], job["table_size"]) == (3, 250)


def test_the_same_launch_request_twice_starts_one_run(django_capture_on_commit_callbacks):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    first = services.campaign_launch(campaign=campaign, idempotency_key="ci-build-42")
    second = services.campaign_launch(campaign=campaign, idempotency_key="ci-build-42")
    assert first.pk == second.pk and Run.objects.count() == 1


def test_launching_while_a_run_is_going_is_a_conflict():
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    services.campaign_launch(campaign=campaign)
    with pytest.raises(services.StateConflict, match="already has a run in progress"):
        services.campaign_launch(campaign=campaign)


@pytest.mark.django_db
def test_a_runs_eta_counts_the_jobs_own_time_and_warm_up_overrides_and_then_their_measured_pace():
    from datetime import timedelta

    from django.utils import timezone

    from campaigns.models import Job, Run
    from campaigns.services import JOB_OVERHEAD_S, run_progress, runs_with_progress

    # A smoke run of a template: scenarios of 300 s, run at 4 s measured + 1 s warm-up per job.
    scenario = ScenarioFactory(time_s=300, warmup_s=60)
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], threads=[1, 2, 4, 8],
                               run_time_s=4, warmup_override_s=1)
    plan = services.campaign_plan(campaign=campaign)
    assert plan["estimated_duration_s"] == pytest.approx(4 * (4 + 1 + JOB_OVERHEAD_S) + plan["jobs"][0]["estimated_prepare_s"])
    run = Run.objects.create(campaign=campaign, started_at=timezone.now() - timedelta(seconds=20))
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    target = campaign.targets.get()
    jobs = [Job.objects.create(run=run, target=target, scenario=scenario,
                               threads=p["threads"], position=p["position"], time_s=4, warmup_s=1)
            for p in plan["jobs"]]
    before = run_progress(runs_with_progress().get(pk=run.pk))
    assert before["eta_s"] == pytest.approx(4 * (4 + 1 + JOB_OVERHEAD_S))  # not 4 × 360 s
    # Two jobs done in the 20 s elapsed: 10 s each, 5 s of which the app spent beyond the jobs' own time.
    Job.objects.filter(pk__in=[j.pk for j in jobs[:2]]).update(status=Job.Status.SUCCEEDED)
    after = run_progress(runs_with_progress().get(pk=run.pk))
    assert after["done"] == 2 and after["eta_s"] == pytest.approx(2 * (4 + 1) + 2 * 5, abs=0.5)
