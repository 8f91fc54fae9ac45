"""API for nightly campaigns: /api/v1/schedules/ and /api/v1/regressions/."""
from __future__ import annotations

import pytest

from campaigns import monitoring, roles
from campaigns.models import CampaignSchedule
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.monitoring import history
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def test_an_operator_creates_and_updates_a_schedule_an_admin_deletes_it_kept_in_step_with_beat():
    operator = client_for(make_user(roles.OPERATOR))
    campaign = CampaignFactory()
    created = operator.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 2 * * *",
                                                   "timezone": "Europe/Paris", "label": "nightly"}, format="json")
    assert created.status_code == 201, created.content
    schedule = CampaignSchedule.objects.get(pk=created.json()["id"])
    assert schedule.periodic_task.enabled and schedule.periodic_task.crontab.hour == "2"
    patched = operator.patch(f"/api/v1/schedules/{schedule.pk}/", {"enabled": False}, format="json")
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    schedule.refresh_from_db()
    assert not schedule.periodic_task.enabled
    assert client_for(make_user(roles.ADMIN)).delete(f"/api/v1/schedules/{schedule.pk}/").status_code == 204
    assert not CampaignSchedule.objects.exists()


def test_a_bad_cron_or_time_zone_is_a_400_naming_the_field():
    operator = client_for(make_user(roles.OPERATOR))
    campaign = CampaignFactory()
    bad_cron = operator.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "at night"}, format="json")
    assert bad_cron.status_code == 400 and "cron" in bad_cron.json()
    bad_tz = operator.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 2 * * *",
                                                  "timezone": "Nowhere/Land"}, format="json")
    assert bad_tz.status_code == 400 and "timezone" in bad_tz.json()


def test_a_viewer_reads_schedules_but_cannot_create_one():
    viewer = client_for(make_user(roles.VIEWER))
    campaign = CampaignFactory()
    assert viewer.get("/api/v1/schedules/").status_code == 200
    assert viewer.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 2 * * *"},
                       format="json").status_code == 403


def test_regressions_are_listed_and_filtered_by_campaign():
    viewer = client_for(make_user(roles.VIEWER))
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850])
    (current,) = history(campaign, target, scenario, [9000])
    monitoring.run_evaluate(run=current)
    listed = viewer.get(f"/api/v1/regressions/?campaign={campaign.pk}").json()
    assert listed["count"] == 1
    assert listed["results"][0]["kind"] == "regression" and listed["results"][0]["run"] == current.pk
    assert viewer.get(f"/api/v1/regressions/?campaign={campaign.pk + 1000}").json()["count"] == 0
