"""The run page of a failed run in a real browser: the cause at the top with Edit target and
Test connection, and a cancel that asks first, at 1440 px and on a phone."""
from __future__ import annotations

import pytest

from campaigns.models import Job, Run
from tests.factories import TargetFactory
from tests.helpers.browser import SHOTS, log_in, open_page
from tests.helpers.measured import REFUSED, failed_run
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_failed_run_shows_its_cause_first_and_a_cancel_asks_before_it_stops(browser_page):
    browser, page, problems = browser_page
    failed = failed_run([(Job.Status.SUCCEEDED, ""), (Job.Status.FAILED, REFUSED), (Job.Status.FAILED, REFUSED)],
                  run_status=Run.Status.PARTIALLY_SUCCEEDED, target=TargetFactory(name="failing pg"))
    running = failed_run([(Job.Status.RUNNING, ""), (Job.Status.QUEUED, "")], run_status=Run.Status.RUNNING,
                   target=TargetFactory(name="running pg"))
    make_user("failure-operator", "operator")
    log_in(page, "failure-operator", PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/runs/{failed.pk}/")
    banner = page.get_by_test_id("failure-banner")
    assert banner.is_visible() and banner.bounding_box()["y"] < 300
    assert "2 of 3 jobs failed." in banner.inner_text() and REFUSED in banner.inner_text()
    assert banner.get_by_role("link", name="Edit target").is_visible()
    assert banner.get_by_role("button", name="Test connection").is_visible()
    assert page.get_by_role("button", name="Retry 2 failed jobs").is_visible()
    # It measured nothing: a line under the banner, no empty timeline charts (and no script error without them).
    assert page.get_by_test_id("measured-nothing").is_visible() and page.locator("canvas").count() == 0
    page.screenshot(path=str(SHOTS / "28-run-failed-1440.png"))

    page.goto(f"/runs/{running.pk}/")
    page.locator("#cancel-run-open").click()
    confirm = page.get_by_role("button", name="Yes, cancel the run")
    assert confirm.is_visible()
    assert "Its 2 unfinished jobs stop now" in page.locator(".confirm-box").inner_text()
    page.screenshot(path=str(SHOTS / "28-run-cancel-confirm-1440.png"))

    context, phone = open_page(browser, page.url.split("/runs")[0], problems, viewport={"width": 390, "height": 844},
                               is_mobile=True)
    try:
        log_in(phone, "failure-operator", PASSWORD)
        phone.goto(f"/runs/{failed.pk}/")
        banner = phone.get_by_test_id("failure-banner")
        box = banner.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
        phone.screenshot(path=str(SHOTS / "28-run-failed-phone.png"))
    finally:
        context.close()
    assert not problems.items, "\n".join(problems.items)
