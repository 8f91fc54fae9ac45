"""Navigation and the API tokens page in a real browser: three menus beside Dashboard on a
desktop, a "Menu" button on a phone that opens them with the current section's links in sight, and a token created
and shown once."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import SHOTS, log_in, open_page
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_grouped_navigation_on_desktop_and_a_menu_on_a_phone(browser_page):
    browser, page, problems = browser_page
    make_user("nav-operator", "operator")
    log_in(page, "nav-operator", PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})
    nav = page.get_by_role("navigation", name="Main")
    # Four entries at the top: Dashboard and three menus.
    assert nav.locator(":scope > ul > li").count() == 4
    assert not page.get_by_role("button", name="Menu").is_visible()
    compare = nav.locator("summary", has_text="Compare")
    compare.click()
    expect(nav.get_by_role("link", name="Quick compare")).to_be_visible()
    expect(nav.get_by_role("link", name="Compare results")).to_be_visible()
    page.screenshot(path=str(SHOTS / "28-nav-1440.png"))
    # Opening another menu closes the first; Escape closes it.
    nav.locator("summary", has_text="Setup").click()
    expect(nav.get_by_role("link", name="Quick compare")).to_be_hidden()
    nav.get_by_role("link", name="Targets").click()
    page.wait_for_url("**/targets/")
    assert nav.locator("details[data-current] > summary").inner_text().startswith("Setup")

    context, phone = open_page(browser, page.url.split("/targets")[0], problems,
                               viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        log_in(phone, "nav-operator", PASSWORD)
        phone.goto("/runs/")
        menu = phone.get_by_role("button", name="Menu")
        assert menu.is_visible() and menu.get_attribute("aria-expanded") == "false"
        assert not phone.get_by_role("navigation", name="Main").is_visible()
        phone.screenshot(path=str(SHOTS / "28-nav-phone-closed.png"))
        menu.click()
        assert menu.get_attribute("aria-expanded") == "true"
        runs = phone.get_by_role("navigation", name="Main").get_by_role("link", name="Runs")
        assert runs.is_visible() and runs.get_attribute("aria-current") == "page"
        box = runs.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
        phone.screenshot(path=str(SHOTS / "28-nav-phone-open.png"))
    finally:
        context.close()
    assert not problems.items, "\n".join(problems.items)


def test_a_token_is_created_from_the_menu_and_shown_once(browser_page):
    _, page, problems = browser_page
    make_user("token-viewer", "viewer")
    log_in(page, "token-viewer", PASSWORD)
    page.locator(".usermenu summary").click()
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("nightly CI")
    page.get_by_role("button", name="Create token").click()
    shown = page.get_by_test_id("new-token")
    assert "shown this once" in shown.inner_text()
    key = page.locator("#new-token-value").input_value()
    assert len(key) == 40
    page.screenshot(path=str(SHOTS / "28-api-token-created.png"), full_page=True)
    page.goto("/tokens/")
    assert key not in page.content() and "nightly CI" in page.get_by_test_id("tokens").inner_text()
    page.get_by_role("button", name="Revoke nightly CI").click()
    assert "revoked" in page.get_by_test_id("tokens").inner_text()
    assert not problems.items, "\n".join(problems.items)
