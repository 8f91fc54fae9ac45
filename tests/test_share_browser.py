"""A share link in a real browser: an operator makes one on the comparison page, a browser that never logged in
opens it and sees the tables and charts, the operator revokes it, and the same browser then gets the 404."""
from __future__ import annotations

import re

import pytest

from campaigns.api.throttling import throttle_reset
from tests.helpers.browser import SHOTS, log_in, open_page, wait_js
from tests.helpers.ui import PASSWORD, make_user
from tests.helpers.worlds import SECRETS, make_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS_DRAWN = ("document.querySelectorAll('.charts canvas').length > 0 && "
                "[...document.querySelectorAll('.charts canvas')].every(c => Chart.getChart(c))")


def test_an_operator_shares_a_comparison_a_stranger_opens_it_and_loses_it_on_revoke(browser_page, live_server):
    browser, page, problems = browser_page
    throttle_reset()
    world = make_world()
    make_user("share-operator", "operator")
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, "share-operator", PASSWORD)
    page.goto(f"/compare/?{world['query']}")
    # On a phone the open control stays on the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_text("Share…").click()
    page.locator("#share-days").wait_for()
    box = page.locator(".share-form").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    page.screenshot(path=str(SHOTS / "share-00-control-390.png"))
    page.set_viewport_size({"width": 1440, "height": 900})
    page.locator("#share-days").fill("3")
    page.locator("[data-testid=share-create]").click()
    url_field = page.locator("[data-testid=share-url]")
    url_field.wait_for()
    url = url_field.input_value()
    assert re.fullmatch(rf"{re.escape(live_server.url)}/s/[A-Za-z0-9_-]{{40,}}/", url), url
    row = page.locator("table.share-links tbody tr").first
    assert "ShareDB Alpha vs ShareDB Beta" in row.inner_text() and "never" in row.inner_text()
    page.screenshot(path=str(SHOTS / "share-01-created.png"), full_page=True)

    stranger, shared = open_page(browser, live_server.url, problems, viewport={"width": 1440, "height": 900})
    answer = shared.goto(url)
    assert answer.status == 200 and answer.headers["referrer-policy"] == "no-referrer"
    wait_js(shared, CHARTS_DRAWN)
    assert shared.locator("table.comparison").count() == 1
    assert "ShareDB Alpha vs ShareDB Beta" in shared.locator("h1").inner_text()
    assert shared.locator("nav").count() == 0 and shared.locator("a[href^='/compare'], a[href='/']").count() == 0
    text = shared.content()
    assert [s for s in SECRETS if s in text] == []
    shared.screenshot(path=str(SHOTS / "share-02-shared-1440.png"), full_page=True)
    shared.emulate_media(media="print")
    shared.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
    shared.screenshot(path=str(SHOTS / "share-03-shared-a4-print.png"), full_page=True)
    phone, phone_page = open_page(browser, live_server.url, problems, viewport={"width": 390, "height": 844},
                               is_mobile=True, has_touch=True)
    phone_page.goto(url)
    wait_js(phone_page, CHARTS_DRAWN)
    phone_page.wait_for_timeout(500)  # charts size themselves a frame after load
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    phone_page.screenshot(path=str(SHOTS / "share-04-shared-390.png"), full_page=True)
    phone.close()

    # The list counts the two opens (wide and phone); the operator revokes; the stranger's next load is the plain 404.
    page.goto("/share-links/")
    row = page.locator("table.share-links tbody tr").first
    assert row.locator("td.num").inner_text() == "2" and page.locator("table.share-links tbody tr").count() == 1
    row.locator("[data-testid=share-revoke]").click()
    page.locator("table.share-links tbody tr[data-state=revoked]").wait_for()
    page.screenshot(path=str(SHOTS / "share-05-revoked.png"), full_page=True)
    assert not problems.items, "\n".join(problems.items)
    gone = shared.goto(url)  # its console error and the browser's favicon request are this 404's own
    assert gone.status == 404 and shared.locator("body").inner_text().strip() == "Not found."
    stranger.close()


def test_a_shared_report_prints_like_the_report_without_hosts_or_a_way_back(browser_page, live_server):
    browser, page, problems = browser_page
    throttle_reset()
    world = make_world()
    make_user("report-operator", "operator")
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, "report-operator", PASSWORD)
    page.goto(f"/compare/report/?{world['query']}")
    page.get_by_text("Share…").click()
    page.screenshot(path=str(SHOTS / "share-06-report-share-control.png"))
    page.locator("[data-testid=share-create]").click()
    url = page.locator("[data-testid=share-url]").input_value()
    assert "(print-ready report)" in page.locator("table.share-links tbody tr").first.inner_text()

    stranger, shared = open_page(browser, live_server.url, problems, viewport={"width": 1440, "height": 900})
    shared.goto(url)
    wait_js(shared, CHARTS_DRAWN)
    article = shared.locator("article.whitepaper").inner_text()
    assert "2. Test environment" in article and "client host 1" in article and "--mysql-host=***" in article
    assert [s for s in SECRETS if s in shared.content()] == []
    assert shared.get_by_text("Back to the comparison").count() == 0 and shared.locator("a").count() == 0
    shared.screenshot(path=str(SHOTS / "share-07-shared-report-1440.png"), full_page=True)
    shared.emulate_media(media="print")
    shared.set_viewport_size({"width": 794, "height": 1123})
    shared.screenshot(path=str(SHOTS / "share-08-shared-report-a4-print.png"), full_page=True)
    stranger.close()
    assert not problems.items, "\n".join(problems.items)
