"""Accessibility (issue "A first comparison in five minutes", Measured): axe-core, from npm (frontend/package.json's
devDependencies), injected into the dashboard, quick compare, run, comparison and report pages finds no serious or
critical violation."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from campaigns.models import Run
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, BrowserProblems, log_in, open_page
from tests.helpers.measured import published_comparison
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent.parent / "frontend" / "node_modules" / "axe-core" / "axe.min.js"


def _violations(page: Any) -> list[str]:
    """axe's serious and critical violations of the page as it stands: rule, impact and the first offenders."""
    # Chart canvases draw after the load event; let them, so that axe sees the page a user does.
    page.wait_for_load_state("networkidle")
    page.add_script_tag(content=AXE.read_text())
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']} — " + "; ".join(n["html"][:120] for n in v["nodes"][:3])
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def test_axe_finds_no_serious_or_critical_violation_on_the_pages_of_a_first_comparison(live_server, monkeypatch):
    from playwright.sync_api import sync_playwright

    assert AXE.exists(), "axe-core is missing: run `npm ci` in frontend/ (scripts/setup.sh does)"
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    query = published_comparison()
    run = Run.objects.order_by("pk").first()
    make_user("axe-operator", "operator")
    problems = BrowserProblems()
    found: dict[str, list[str]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # The pages' Content-Security-Policy allows only their own scripts: axe is injected past it.
        context, page = open_page(browser, live_server.url, problems, viewport={"width": 1440, "height": 900},
                                  bypass_csp=True)
        log_in(page, "axe-operator", PASSWORD)
        for name, url in (("dashboard", "/"), ("quick compare", "/quick/"), ("run", f"/runs/{run.pk}/"),
                          ("comparison", f"/compare/?{query}"), ("report", f"/compare/report/?{query}")):
            page.goto(url)
            found[name] = _violations(page)
            page.screenshot(path=str(SHOTS / f"axe-{name.replace(' ', '-')}.png"))
        context.close()
        browser.close()
    assert {name: items for name, items in found.items() if items} == {}, "\n".join(f"{n}: {i}" for n, items in found.items() for i in items)
    assert not problems.items, "\n".join(problems.items)
