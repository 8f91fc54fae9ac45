"""The schedule form in a real browser: "When" starts at nightly, N shows only for "Every N
hours" and the cron expression only for "Custom"."""
from __future__ import annotations

import pytest

from campaigns.models import CampaignSchedule
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import SHOTS, log_in
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_when_starts_at_nightly_and_shows_n_only_for_every_n_hours(browser_page):
    _browser, page, problems = browser_page
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    make_user("schedule-operator", "operator")
    log_in(page, "schedule-operator", PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/campaigns/{campaign.pk}/#schedules")
    when, hours, cron = page.locator("#id_preset"), page.locator("#id_every_hours"), page.locator("#id_cron")
    assert when.input_value() == "nightly"
    assert not hours.is_visible() and not cron.is_visible()
    page.locator("#schedules").screenshot(path=str(SHOTS / "28-schedule-nightly-1280.png"))
    when.select_option("hours")
    assert hours.is_visible() and not cron.is_visible()
    page.locator("#schedules").screenshot(path=str(SHOTS / "28-schedule-hours-1280.png"))
    when.select_option("")
    assert cron.is_visible() and not hours.is_visible()
    when.select_option("hours")
    hours.fill("6")
    page.get_by_role("button", name="Add schedule").click()
    page.get_by_test_id("schedule-saved").wait_for()
    assert CampaignSchedule.objects.get(campaign=campaign).cron == "0 */6 * * *"
    assert not problems.items, "\n".join(problems.items)
