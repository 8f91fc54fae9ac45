"""The plan's prepare estimates: a workload of one's own prepares with its own code, so its time
and size come from an earlier prepare of the same version and parameters, or say "unknown" until one ran; a dataset
already prepared on the target is reused, and the plan shows no prepare command for it."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client as PageClient
from django.utils import timezone

from campaigns import roles, services
from campaigns.execution.datasets import dataset_signature
from campaigns.models import PreparedDataset
from campaigns.services.workloads import workload_save
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import make_user

pytestmark = pytest.mark.django_db

KV = Path(__file__).resolve().parent / "data" / "workloads" / "kv"


@pytest.mark.slow  # workload_save runs sysbench on the entry script (seconds)
def test_a_workloads_prepare_is_unknown_until_one_ran_then_its_own_figures():
    user = make_user(roles.OPERATOR, "estimate-operator")
    version = workload_save(files={p.name: p.read_text() for p in sorted(KV.glob("*.lua"))}, entry="kv.lua",
                            name="kv-estimates", user=user)
    scenario = ScenarioFactory(test=version.label(), workload_version=version, options={},
                               dataset=DatasetFactory(name="kv est", tables=1, table_size=1),
                               prepare_mode="auto")
    target = TargetFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1, 2])
    plan = services.campaign_plan(campaign=campaign)
    first = plan["jobs"][0]
    assert first["estimated_prepare_s"] is None and first["prepare_estimate"].startswith("unknown")
    assert plan["unknown_prepares"] == 1 and plan["estimated_dataset_bytes"] == 0
    page = PageClient()
    page.force_login(user)
    text = page.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "prepare unknown: no earlier prepare of this workload" in text
    assert "1 prepare of unknown time and size" in text
    # An earlier prepare of the same version and parameters, on another target: its figures stand.
    PreparedDataset.objects.create(target=TargetFactory(), signature=dataset_signature(
        scenario=scenario, tables=1, table_size=1), tables=1, table_size=1, status=PreparedDataset.Status.READY,
        prepared_at=timezone.now(), prepare_s=86.0, size_bytes=200 * 1024 * 1024)
    plan = services.campaign_plan(campaign=campaign)
    assert plan["jobs"][0]["estimated_prepare_s"] == 86.0 and plan["unknown_prepares"] == 0
    assert plan["estimated_dataset_bytes"] == 200 * 1024 * 1024


def test_a_dataset_ready_on_the_target_is_reused_without_a_prepare_command():
    scenario = ScenarioFactory(dataset=DatasetFactory(name="ready ds", tables=2, table_size=1000))
    target = TargetFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1])
    assert services.campaign_plan(campaign=campaign)["jobs"][0]["prepare_command"]
    PreparedDataset.objects.create(target=target, signature=dataset_signature(
        scenario=scenario, tables=2, table_size=1000), tables=2, table_size=1000,
        status=PreparedDataset.Status.READY, prepared_at=timezone.now(), prepare_s=3.0)
    job = services.campaign_plan(campaign=campaign)["jobs"][0]
    assert job["prepare_command"] is None and job["estimated_prepare_s"] == 0.0
    assert job["prepare_estimate"] == "reused: already prepared on the target"
