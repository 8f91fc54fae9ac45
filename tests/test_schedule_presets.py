"""Schedules: presets beside cron (nightly, weekly, every N hours), @nightly and @daily accepted
from the page and the API alike, the schedules before the plan, the saved message where the page lands, and a
warning when the regression threshold is below what the campaign's measured noise can detect."""
from __future__ import annotations

import re

import pytest
from django.utils import timezone

from campaigns.forms import ScheduleForm
from campaigns.models import Campaign, CampaignSchedule, Job, JobResult, Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("fields", "cron"), [
    ({"preset": "nightly"}, "0 2 * * *"),
    ({"preset": "weekly"}, "0 2 * * 1"),
    ({"preset": "hours", "every_hours": "6"}, "0 */6 * * *"),
    ({"cron": "@nightly"}, "0 2 * * *"),
    ({"cron": "@daily"}, "0 0 * * *"),
    ({"cron": "15 3 * * 2"}, "15 3 * * 2"),
])
def test_a_schedule_is_a_preset_or_a_cron_expression_and_the_page_says_it_was_saved_where_it_lands(
        role_client, fields, cron):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    client = role_client("operator")
    response = client.post(f"/campaigns/{campaign.pk}/schedules/", {"timezone": "UTC", "enabled": "on", **fields})
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = CampaignSchedule.objects.get(campaign=campaign)
    assert schedule.cron == cron
    assert response["Location"] == f"/campaigns/{campaign.pk}/?schedule_saved={schedule.pk}#schedules"
    page = client.get(response["Location"]).content.decode()
    saved = re.search(r'data-testid="schedule-saved">(.*?)</p>', page, re.S).group(1)
    assert f"Schedule <code>{cron}</code> (UTC) saved: the next run starts 20" in saved
    assert 'class="messages"' not in page  # said once, in the section, not at the top of the page
    # The schedules come before the plan.
    assert page.index('id="schedules"') < page.index('id="plan-h"')


def test_every_n_hours_needs_its_n_and_an_empty_schedule_says_what_to_choose(role_client):
    campaign = CampaignFactory()
    client = role_client("operator")
    html = client.post(f"/campaigns/{campaign.pk}/schedules/", {"preset": "hours", "timezone": "UTC"}).content.decode()
    assert 'id="id_every_hours_error1"' in html and "Say every how many hours" in html
    html = client.post(f"/campaigns/{campaign.pk}/schedules/", {"timezone": "UTC"}).content.decode()
    assert 'id="id_cron_error1"' in html and "a preset above, or a cron expression" in html
    assert not CampaignSchedule.objects.exists()


def test_the_api_accepts_the_same_shorthands():
    campaign = CampaignFactory()
    api = client_for(make_user("operator"))
    response = api.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "@nightly", "timezone": "UTC"},
                        format="json")
    assert response.status_code == 201, response.content
    assert response.json()["cron"] == "0 2 * * *"


def _noisy_history(campaign: Campaign) -> None:
    """Three succeeded runs whose repeated cells vary by about 30% (CV) within a run."""
    target, scenario = campaign.targets.first(), campaign.scenarios.first()
    now = timezone.now()
    for figures in ([1000.0, 1600.0, 700.0], [900.0, 1500.0, 1100.0], [1300.0, 800.0, 1000.0]):
        run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=now, finished_at=now)
        for repetition, qps in enumerate(figures, start=1):
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=4, repetition=repetition,
                                     status=Job.Status.SUCCEEDED)
            JobResult.objects.create(job=job, qps=qps)


def test_a_threshold_below_the_measured_noise_is_warned_beside_the_schedules(role_client):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()], repetitions=3,
                               regression_threshold_pct=5.0)
    client = role_client("operator")
    assert 'data-testid="threshold-warning"' not in client.get(f"/campaigns/{campaign.pk}/").content.decode()
    _noisy_history(campaign)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    warning = re.search(r'data-testid="threshold-warning">(.*?)</p>', page, re.S).group(1)
    assert "The regression threshold (5%) is below what this campaign&#x27;s noise can detect" in warning
    assert re.search(r"one repetition&#x27;s QPS varies by \d+\.\d% \(CV\)", warning)
    assert "with 3 repetitions" in warning
    caught = re.search(r"only changes of about (\d+)% or more are caught", warning)
    assert caught and int(caught.group(1)) > 5
    Campaign.objects.filter(pk=campaign.pk).update(regression_threshold_pct=int(caught.group(1)))
    assert 'data-testid="threshold-warning"' not in client.get(f"/campaigns/{campaign.pk}/").content.decode()


def test_when_starts_at_nightly_or_at_the_edited_schedules_own_choice_and_a_cron_beside_a_preset_is_not_dropped(
        role_client):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    client = role_client("operator")
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    when = re.search(r'<select name="preset"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.search(r'<option value="nightly" selected>', when), when
    # N and the cron expression sit in boxes of their own, which schedule.js shows only for their choice.
    assert 'data-schedule-field="every_hours"' in page and 'data-schedule-field="cron"' in page
    assert "campaigns/build/schedule.js" in page
    # A schedule being edited starts at its own choice: custom for a custom cron, every N hours with its N.
    for cron, preset, hours in (("15 3 * * 2", "", None), ("0 */6 * * *", "hours", 6), ("0 2 * * 1", "weekly", None)):
        schedule = CampaignSchedule.objects.create(campaign=campaign, cron=cron, timezone="UTC")
        form = ScheduleForm(instance=schedule)
        assert (form["preset"].value(), form["every_hours"].value()) == (preset, hours)
        schedule.delete()
    # Without JavaScript every field is posted: a cron typed beside a preset is refused, not silently replaced.
    html = client.post(f"/campaigns/{campaign.pk}/schedules/",
                       {"preset": "nightly", "cron": "15 3 * * 2", "timezone": "UTC"}).content.decode()
    assert 'id="id_cron_error1"' in html and "choose “Custom” under When" in html
    assert not CampaignSchedule.objects.exists()
    # The same expression as the preset's (or N typed beside another preset) is harmless.
    response = client.post(f"/campaigns/{campaign.pk}/schedules/",
                           {"preset": "nightly", "cron": "@nightly", "every_hours": "6", "timezone": "UTC"})
    assert response.status_code == 302
    assert CampaignSchedule.objects.get(campaign=campaign).cron == "0 2 * * *"
