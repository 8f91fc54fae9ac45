"""Browser helpers: Debian's chromium through Playwright, a watch on console errors and failed requests, logging in
and waiting for the page's JavaScript (the same as tests/test_browser.py's, for tests that may not import a test
module)."""
from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

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
