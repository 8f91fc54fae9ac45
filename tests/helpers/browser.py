"""What browser tests share: Debian's Chromium through Playwright against the live server (the browser_page
fixture), the problems a page must never have (console errors, page errors, failed requests), logging in, waiting
for a JavaScript condition, and where screenshots go. Moved here from tests/test_browser.py so that new browser
tests need not import a test module."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import OUTPUT_DIR

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = OUTPUT_DIR / "screenshots"


class BrowserProblems:
    """Collects what must never happen on a page: console errors, uncaught errors, failed requests."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def watch(self, page: Any) -> None:
        page.on("console", lambda m: self.items.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.items.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.items.append(
            f"request failed: {r.url} {r.failure}") if not _aborted_by_navigation(r) else None)
        page.on("response", lambda r: self.items.append(f"HTTP {r.status}: {r.url}")
                if r.status >= 400 else None)


def _aborted_by_navigation(request: Any) -> bool:
    # A poll in flight when the page reloads or navigates is aborted by the browser: not an error.
    return "ERR_ABORTED" in (request.failure or "") and ("/api/v1/" in request.url or "/live/" in request.url
                                                       or "/timeline/" in request.url)


@pytest.fixture
def browser_page(live_server: Any, monkeypatch: pytest.MonkeyPatch,
                 screenshots_dir: Path) -> Iterator[tuple[Any, Any, BrowserProblems]]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
        context.set_default_timeout(15_000)
        page = context.new_page()
        problems.watch(page)
        try:
            yield browser, page, problems
        finally:
            context.close()
            browser.close()


def wait_js(page: Any, expression: str, *, timeout_ms: int = 30_000) -> None:
    """Waits until a JavaScript expression is truthy, polling with page.evaluate: a DevTools call, which the page's
    Content-Security-Policy allows, where wait_for_function evaluates its string with eval, which it forbids."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_ms} ms waiting for {expression}")
        page.wait_for_timeout(100)


def open_page(browser: Any, base_url: str, problems: BrowserProblems, **options: Any) -> tuple[Any, Any]:
    """A new browser context (Playwright's new_context options, e.g. viewport, is_mobile) on base_url and a page in
    it, whose console errors and failed requests `problems` keeps; 15 s for any wait."""
    context = browser.new_context(base_url=base_url, **options)
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems.watch(page)
    return context, page


def log_in(page: Any, username: str, password: str) -> None:
    """Logs the page in through the login form, as a user does, and waits for the dashboard (a refused login stays
    on the form, and this times out)."""
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
