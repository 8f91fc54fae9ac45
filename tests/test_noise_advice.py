"""The repetitions a campaign's measured noise calls for: GET /api/v1/campaigns/{id}/noise/ and the
campaign form's advice, from stored runs."""
from __future__ import annotations

import statistics

import pytest
from django.test import Client
from django.utils import timezone

from campaigns import roles
from campaigns.models import Job, JobResult, Run
from campaigns.statistics import repetitions_needed
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def _runs(campaign, target, scenario, runs: list[list[float]]) -> None:
    for values in runs:
        now = timezone.now()
        run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
        for qps in values:
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED)
            JobResult.objects.create(job=job, qps=qps, latency_pct_ms=1e5 / qps, latency_pct=95.0)


def _noisy_campaign():
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], repetitions=3)
    # Within a run repetitions vary by about 8%; run means barely move from run to run.
    _runs(campaign, target, scenario, [[1000.0, 1080.0, 920.0], [1010.0, 1090.0, 930.0], [990.0, 1070.0, 910.0],
                                       [1005.0, 1085.0, 925.0]])
    return campaign


def test_the_noise_endpoint_measures_the_campaigns_runs_and_recommends_repetitions():
    campaign = _noisy_campaign()
    body = client_for(make_user(roles.VIEWER)).get(f"/api/v1/campaigns/{campaign.pk}/noise/").json()
    assert body["runs"] == 4 and body["repetitions"] == 3 and body["baseline_runs"] == campaign.baseline_last_n
    assert body["cv_within_pct"] == pytest.approx(statistics.stdev([1000, 1080, 920]) / 1000 * 100, rel=0.02)
    assert body["cv_between_pct"] < 1.0 and body["between_only_pct"] == 0.0
    expected = repetitions_needed(body["cv_within_pct"], change_pct=15.0, baseline_runs=campaign.baseline_last_n)
    assert body["recommended"]["15"] == expected and expected > 3  # 8% per repetition: 3 are too few for 15%
    assert body["recommended"]["30"] < expected


def test_a_campaign_never_run_with_repetitions_says_its_noise_is_not_measured_yet():
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    _runs(campaign, target, scenario, [[1000.0], [1100.0]])
    body = client_for(make_user(roles.VIEWER)).get(f"/api/v1/campaigns/{campaign.pk}/noise/").json()
    assert body["cv_within_pct"] is None and body["recommended"] == {}
    operator = make_user(roles.OPERATOR, "noise-operator")
    page = Client()
    page.force_login(operator)
    html = page.get(f"/campaigns/{campaign.pk}/edit/").content.decode()
    assert "Noise not measured yet" in html


def test_the_campaign_form_recommends_the_repetitions_the_measured_noise_calls_for():
    campaign = _noisy_campaign()
    page = Client()
    page.force_login(make_user(roles.OPERATOR, "noise-operator"))
    html = page.get(f"/campaigns/{campaign.pk}/edit/").content.decode()
    advice = html.split('id="noise-advice">', 1)[1].split("</p>", 1)[0]
    cv = statistics.median([statistics.stdev(v) / statistics.fmean(v) * 100 for v in
                            ([1000, 1080, 920], [1010, 1090, 930], [990, 1070, 910], [1005, 1085, 925])])
    needed = repetitions_needed(cv, change_pct=15.0, baseline_runs=campaign.baseline_last_n)
    assert "Measured over the last 4 runs" in advice and f"{cv:.1f}% (CV)" in advice
    assert f"a 15% change needs {needed} repetitions" in advice and "This campaign uses 3." in advice
