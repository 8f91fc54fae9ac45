"""Pickers: on quick compare, "Mine only" is a checkbox the keyboard ticks with Space, and a
list left with nothing in sight says why and how to get its choices back, never a silent "0 of 70 shown"."""
from __future__ import annotations

import pytest

from tests.factories import TargetFactory
from tests.helpers.browser import SHOTS, log_in
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_mine_only_with_space_and_an_empty_list_says_why(browser_page):
    browser, page, problems = browser_page
    user = make_user("picker-operator", "operator")
    TargetFactory(name="my own mariadb", created_by=user)
    for index in range(9):
        TargetFactory(name=f"colleague target {index}")
    log_in(page, "picker-operator", PASSWORD)
    page.goto("/quick/")
    field = page.locator("#q-targets-h + .field")
    count = field.locator(".picker-search [aria-live]")
    assert count.inner_text() == "10 choices"

    # Space on the focused "Mine only" ticks it: the user's own target stays, the colleagues' go, and it says so.
    mine = field.get_by_label("Mine only")
    mine.focus()
    page.keyboard.press("Space")
    assert mine.is_checked()
    assert count.inner_text() == "1 of 10 shown"
    assert field.get_by_label("my own mariadb").is_visible()
    assert not field.get_by_label("colleague target 0").is_visible()

    # A filter that matches none of the user's: the count says none matches and how to get the list back.
    field.get_by_role("searchbox").fill("colleague")
    assert count.inner_text() == "0 of 10 shown: none matches — clear the filter or untick Mine only"
    page.locator("section[aria-labelledby=q-targets-h]").screenshot(path=str(SHOTS / "28-picker-none-shown.png"))
    page.keyboard.press("Tab")  # from the filter to "Mine only" beside it
    page.keyboard.press("Space")
    assert not mine.is_checked()
    assert count.inner_text() == "9 of 10 shown"
    assert not problems.items, "\n".join(problems.items)
