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
