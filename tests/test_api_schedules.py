"""API for nightly campaigns: /api/v1/schedules/ and /api/v1/regressions/."""
from __future__ import annotations

import pytest
from django.test import Client

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


def test_cron_fields_are_read_in_cron_order_day_of_month_then_month_then_weekday():
    operator = client_for(make_user(roles.OPERATOR, "cron-order-op"))
    campaign = CampaignFactory()
    fifteenth = operator.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 3 15 * *"}, format="json")
    assert fifteenth.status_code == 201, fifteenth.content
    crontab = CampaignSchedule.objects.get(pk=fifteenth.json()["id"]).periodic_task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week) == (
        "0", "3", "15", "*", "*")
    eighth_weekday = operator.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 0 * * 8"},
                                   format="json")
    assert eighth_weekday.status_code == 400 and "not a valid cron expression" in str(eighth_weekday.json()["cron"])
    # The campaign's page still answers with the schedule in force (it answered 500 for everyone before).
    page = Client()
    page.force_login(make_user(roles.VIEWER, "cron-order-viewer"))
    assert page.get(f"/campaigns/{campaign.pk}/").status_code == 200


def test_only_its_owner_or_an_admin_changes_a_schedule():
    owner_user = make_user(roles.OPERATOR, "schedule-owner")
    owner, other = client_for(owner_user), client_for(make_user(roles.OPERATOR, "schedule-other"))
    campaign = CampaignFactory()
    created = owner.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 2 * * *"}, format="json")
    schedule = CampaignSchedule.objects.get(pk=created.json()["id"])
    assert schedule.created_by == owner_user
    refused = other.patch(f"/api/v1/schedules/{schedule.pk}/", {"cron": "* * * * *"}, format="json")
    assert refused.status_code == 403 and "owner or an admin" in refused.json()["detail"]
    schedule.refresh_from_db()
    assert schedule.cron == "0 2 * * *"
    page = Client()
    page.force_login(make_user(roles.OPERATOR, "schedule-other-page"))
    assert page.post(f"/schedules/{schedule.pk}/toggle/").status_code == 403
    assert owner.patch(f"/api/v1/schedules/{schedule.pk}/", {"enabled": False}, format="json").status_code == 200
    admin = client_for(make_user(roles.ADMIN, "schedule-admin"))
    assert admin.patch(f"/api/v1/schedules/{schedule.pk}/", {"enabled": True}, format="json").status_code == 200
    assert other.delete(f"/api/v1/schedules/{schedule.pk}/").status_code == 403  # operators never delete
    assert admin.delete(f"/api/v1/schedules/{schedule.pk}/").status_code == 204
