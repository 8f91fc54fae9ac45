"""Watching a run in a real browser: a real Celery worker runs four short sysbench jobs on the local MariaDB while
the dashboard and the run page are watched. Elapsed ticks, the ETA falls as jobs finish, one timeline gains points
from more than one job with a line where each job started, QPS by threads fills in, the running job's phase never
reads "21 s of 10 s" and its output pane is its own. Screenshots mid-run and finished at 1440×900 and 390×844.
"""
from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from campaigns import services
from campaigns.models import Run
from tests.conftest import record_measurement
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import PASSWORD, SHOTS, USER, log_in, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PHASE = re.compile(r"Running: (\d+) s of (\d+) s")


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def _phone(browser: Any, live_server: Any, problems: Any) -> Any:
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server.url,
                                  is_mobile=True, has_touch=True)
    page = context.new_page()
    problems.watch(page)
    log_in(page, USER, PASSWORD)
    return context, page


def _progress(run: Run) -> dict[str, Any]:
    return services.run_progress(services.runs_with_progress().get(pk=run.pk))


# alone: it reads the run page's ETA after each job, and beside other test processes its live refresh missed a job
# count (only one ETA seen, twice on 2026-11-27); the run itself succeeded.
@pytest.mark.alone
def test_a_user_watches_a_run_from_the_dashboard_to_its_finished_timeline(
        browser_page, live_server, celery_worker_process, target_databases):
    browser, page, problems = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    user = get_user_model().objects.create_superuser(USER, "admin@example.com", PASSWORD)
    scenario = ScenarioFactory(name="watch point select", test="oltp_point_select", time_s=3, warmup_s=0,
                               dataset=DatasetFactory(name="watch tiny", tables=1, table_size=1000))
    campaign = CampaignFactory(name="watch campaign", targets=[TargetFactory(name="watch-mariadb")],
                               scenarios=[scenario], threads=[1, 2, 4, 8])
    log_in(page, USER, PASSWORD)
    run = services.campaign_launch(campaign=campaign, user=user)
    etas: dict[int, float] = {}  # jobs done → the first ETA read with that many done

    # The dashboard lists the run in progress at the top of the recent runs, linked to it and to its campaign.
    page.goto("/")
    row = page.locator(f"#recent-runs tbody tr[data-run='{run.pk}']")
    assert row.get_attribute("class") == "in-progress"
    assert page.locator("#recent-runs tbody tr").first.get_attribute("data-run") == str(run.pk)
    assert row.get_by_role("link", name=f"#{run.pk}").get_attribute("href") == f"/runs/{run.pk}/"
    assert row.get_by_role("link", name="watch campaign").get_attribute("href") == f"/campaigns/{campaign.pk}/"
    _shot(page, "watch-01-dashboard-1440")
    progress = _progress(run)
    etas.setdefault(progress["done"], progress["eta_s"])
    # The plan's estimate for 4 jobs of 3 s, not hours: (3 s + 2 s overhead) × 4 and a tiny preparation.
    assert progress["eta_s"] is not None and progress["eta_s"] < 60

    row.get_by_role("link", name=f"#{run.pk}").click()
    page.wait_for_url(f"**/runs/{run.pk}/")
    page.wait_for_selector("#live:not([hidden])", timeout=60_000)

    # Elapsed ticks between two reads, without a reload.
    first_elapsed = page.locator("#run-elapsed").inner_text()
    page.wait_for_timeout(2200)
    assert page.locator("#run-elapsed").inner_text() != first_elapsed
    assert not page.locator("#run-eta-wrap").is_hidden()

    phases: list[str] = []
    mid_run_shots = False
    deadline = time.monotonic() + 180
    while True:
        progress = _progress(run)
        if progress["eta_s"] is not None:
            etas.setdefault(progress["done"], progress["eta_s"])
        state = page.evaluate("""() => ({
            phase: document.getElementById('live-phase').textContent,
            hidden: document.getElementById('live').hidden,
            label: document.getElementById('live-label').textContent,
            tailJob: document.getElementById('tail-job').textContent,
            status: document.getElementById('run-status').dataset.status,
            boundaries: Number(document.getElementById('chart-throughput').dataset.boundaries || 0),
            // The charts are made just after the load event: none yet while the page reloads itself.
            points: window.Chart?.getChart('chart-throughput')?.data.datasets[0].data.filter(p => p.y !== null).length ?? 0,
            threadPoints: window.Chart?.getChart('chart-threads')?.data.datasets.reduce((n, d) => n + d.data.length, 0) ?? 0,
        })""")
        if state["status"] == "succeeded":
            break
        if not state["hidden"]:
            phases.append(state["phase"])
            number = re.match(r"#(\d+) ", state["label"])
            # The output pane belongs to the job being shown.
            assert number and state["tailJob"] == f"job #{number.group(1)}", state
        if not mid_run_shots and state["boundaries"] >= 2 and state["points"] >= 3 and state["threadPoints"] >= 1:
            # Mid-run: the timeline holds points of more than one job, a line where each started; QPS by
            # threads has the finished job's point. Two jobs are still to come: the phone's page is taken
            # before the run ends (when the page reloads itself).
            mid_run_shots = True
            _shot(page, "watch-02-run-mid-1440")
            phone_context, phone = _phone(browser, live_server, problems)
            phone.goto(f"/runs/{run.pk}/")
            phone.wait_for_timeout(1500)
            assert phone.evaluate("document.documentElement.scrollWidth") <= 390
            _shot(phone, "watch-03-run-mid-390")
            phone.locator("#timeline").scroll_into_view_if_needed()
            _shot(phone, "watch-04-run-mid-390-timeline")
            phone_context.close()
        assert time.monotonic() < deadline, f"run #{run.pk} did not finish: {state}"
        page.wait_for_timeout(250)

    assert mid_run_shots, "never saw the timeline with two jobs while the run was going"
    # The ETA falls as jobs finish (the phone's page may hide a count or two from this loop's reads).
    seen = sorted(n for n in etas if n >= 1)
    assert len(seen) >= 2, etas
    assert all(etas[b] < etas[a] for a, b in zip(seen, seen[1:], strict=False)), etas
    # "Running: 21 s of 10 s" never appears: past its --time a job is "finishing".
    running = [PHASE.search(p) for p in phases if PHASE.search(p)]
    assert running, phases
    assert all(int(m.group(1)) <= int(m.group(2)) for m in running), phases

    page.wait_for_timeout(1000)  # the page reloads itself once the run has finished
    page.reload()
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, list(run.jobs.values_list("status", "error"))
    wait_js(page, "Number(document.getElementById('chart-throughput').dataset.boundaries || 0) === 4")
    wait_js(page, "Chart.getChart('chart-threads').data.datasets.length === 1 && "
                  "Chart.getChart('chart-threads').data.datasets[0].data.length === 4")
    threads_curve = page.evaluate("Chart.getChart('chart-threads').data.datasets[0].data.map(p => p.x)")
    assert threads_curve == [1, 2, 4, 8]
    timeline = page.evaluate(f"fetch('/runs/{run.pk}/timeline/').then(r => r.json())")
    assert [j["threads"] for j in timeline["jobs"]] == [1, 2, 4, 8]
    assert all(j["seconds"] >= 2 for j in timeline["jobs"])
    starts = [j["start_s"] for j in timeline["jobs"]]
    shown = page.evaluate("Chart.getChart('chart-throughput').data.datasets[0].data.filter(p => p.y !== null)"
                          ".map(p => p.x)")
    # Points from every job, each after its own start line.
    assert all(any(start < x < (starts[i + 1] if i + 1 < len(starts) else 1e9) for x in shown)
               for i, start in enumerate(starts))
    assert page.locator("#run-eta-wrap").is_hidden()
    assert "so far" not in page.locator("#run-elapsed").inner_text()
    _shot(page, "watch-05-run-finished-1440")
    page.locator("#timeline").scroll_into_view_if_needed()
    _shot(page, "watch-06-run-finished-1440-timeline")
    phone_context, phone = _phone(browser, live_server, problems)
    phone.goto(f"/runs/{run.pk}/")
    phone.wait_for_timeout(1500)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.locator("#timeline").scroll_into_view_if_needed()
    _shot(phone, "watch-07-run-finished-390-timeline")
    phone_context.close()

    # A lone point (a job's first second) is drawn as a dot; two seconds make a line.
    radii = page.evaluate("""() => {
        const chart = Chart.getChart('chart-throughput');
        const dataset = chart.data.datasets[0];
        dataset.data = [{x: 1, y: 500}];
        chart.update('none');
        const lone = chart.getDatasetMeta(0).data[0].options.radius;
        dataset.data = [{x: 1, y: 500}, {x: 2, y: 600}];
        chart.update('none');
        return [lone, chart.getDatasetMeta(0).data[0].options.radius];
    }""")
    assert radii == [3, 0]
    assert not problems.items, problems.items
    record_measurement(f"run watch browser: run #{run.pk} of 4 jobs took "
                       f"{(run.finished_at - run.started_at).total_seconds():.1f} s; ETAs by jobs done {etas}")
