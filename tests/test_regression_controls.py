"""Regressions a user can act on: pin and unpin a baseline from the run and campaign pages, acknowledge
a change with a note (page and API), values with units and signs, and each schedule's next firing time."""
from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from campaigns import monitoring, roles
from campaigns.models import CampaignSchedule, Job, JobResult, Regression, Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def _history() -> tuple[list[Run], Run]:
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    runs = []
    for qps in (10_000, 10_300, 9_700, 10_150, 9_850, 9_000):
        now = timezone.now()
        run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                                 started_at=now, finished_at=now)
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED)
        JobResult.objects.create(job=job, qps=qps, latency_pct_ms=1e5 / qps, latency_pct=95.0)
        runs.append(run)
    monitoring.run_evaluate(run=runs[-1])
    return runs[:-1], runs[-1]


def _page(role: str) -> Client:
    page = Client()
    page.force_login(make_user(role, f"controls-{role}"))
    return page


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_run_is_pinned_as_the_baseline_from_its_page_and_unpinned_from_the_campaign_page():
    history, current = _history()
    operator = _page(roles.OPERATOR)
    html = operator.get(f"/runs/{history[0].pk}/").content.decode()
    assert 'id="pin-baseline"' in html
    response = operator.post(f"/runs/{history[0].pk}/pin-baseline/")
    assert response.status_code == 302
    campaign = current.campaign
    campaign.refresh_from_db()
    assert campaign.baseline_run_id == history[0].pk
    assert "This run is the campaign's pinned baseline" in operator.get(f"/runs/{history[0].pk}/").content.decode()
    campaign_page = operator.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f"Unpin run #{history[0].pk}" in campaign_page
    operator.post(f"/campaigns/{campaign.pk}/unpin-baseline/")
    campaign.refresh_from_db()
    assert campaign.baseline_run_id is None
    # A failed run cannot be a baseline; a viewer sees no control and cannot post one.
    Run.objects.filter(pk=history[1].pk).update(status=Run.Status.FAILED)
    refused = operator.post(f"/runs/{history[1].pk}/pin-baseline/", follow=True).content.decode()
    assert "Not pinned: run #" in refused
    viewer = _page(roles.VIEWER)
    assert 'id="pin-baseline"' not in viewer.get(f"/runs/{history[0].pk}/").content.decode()
    assert viewer.post(f"/runs/{history[0].pk}/pin-baseline/").status_code == 403


def test_a_regression_shows_units_and_signs_and_is_acknowledged_with_a_note():
    _, current = _history()
    regression = Regression.objects.get(run=current, metric="qps")
    operator = _page(roles.OPERATOR)
    row = operator.get(f"/runs/{current.pk}/").content.decode().split('data-metric="qps">', 1)[1].split("</tr>", 1)[0]
    text = _text(row)
    assert "9,998 QPS" in text and "9,000 QPS" in text and "-10.0%" in text and "Acknowledge" in text
    operator.post(f"/regressions/{regression.pk}/acknowledge/", {"note": "expected: buffer pool halved"})
    regression.refresh_from_db()
    assert regression.acknowledgement == "expected: buffer pool halved" and regression.acknowledged_at is not None
    row = operator.get(f"/runs/{current.pk}/").content.decode().split('data-metric="qps">', 1)[1].split("</tr>", 1)[0]
    assert "acknowledged" in row and "expected: buffer pool halved" in row and "(controls-operator)" in row
    api = client_for(make_user(roles.OPERATOR, "controls-api"))
    answer = api.post(f"/api/v1/regressions/{regression.pk}/acknowledge/", {"note": "looked again"}, format="json")
    assert answer.status_code == 200 and answer.json()["acknowledgement"] == "looked again"
    assert api.post(f"/api/v1/regressions/{regression.pk}/acknowledge/", {"note": "x" * 501},
                    format="json").status_code == 400
    assert client_for(make_user(roles.VIEWER)).post(f"/api/v1/regressions/{regression.pk}/acknowledge/",
                                                    {"note": "no"}, format="json").status_code == 403


def test_each_schedule_shows_when_it_fires_next_in_its_time_zone():
    campaign = CampaignFactory()
    schedule = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="30 2 * * *",
                                                                  timezone="Asia/Shanghai"))
    expected = monitoring.schedule_next_firing(schedule)
    now = timezone.now().astimezone(ZoneInfo("Asia/Shanghai"))
    assert expected.hour == 2 and expected.minute == 30 and dt.timedelta(0) < expected - now <= dt.timedelta(days=1)
    html = _page(roles.VIEWER).get(f"/campaigns/{campaign.pk}/").content.decode()
    cell = html.split('data-testid="next-firing">', 1)[1].split("</td>", 1)[0]
    assert f"{expected:%Y-%m-%d} 02:30" in cell and "Asia/Shanghai" in cell
    schedule.enabled = False
    assert monitoring.schedule_next_firing(schedule) is None
    leap = CampaignSchedule(campaign=campaign, cron="0 3 29 2 *", timezone="UTC", enabled=True)
    assert (monitoring.schedule_next_firing(leap).month, monitoring.schedule_next_firing(leap).day) == (2, 29)
