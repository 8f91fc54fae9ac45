"""A cell's history: GET /api/v1/regressions/history/, the regressions on the run page and the history chart
on the campaign page, all on synthetic histories of stored results (no sysbench needed)."""
from __future__ import annotations

import json
import re
import statistics
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns import monitoring, roles
from campaigns.models import Campaign, Dataset, Job, JobResult, Run, Scenario, Target
from tests.factories import CampaignFactory, DatasetFactory, ProductFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import log_in, wait_js
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db

API = "/api/v1/regressions/history/"
BASELINE_QPS = [10000.0, 10300.0, 9700.0, 10150.0, 9850.0]
# What the newest night is judged against: the geometric mean of the five nights before it (9,997.7).
BASELINE_MEAN = statistics.geometric_mean(BASELINE_QPS)


def _runs(campaign: Campaign, target: Target, scenario: Scenario, values: list[float | list[float]], *,
          threads: int = 8, trigger: str = Run.Trigger.SCHEDULED, status: str = Run.Status.SUCCEEDED,
          tables: int = 4, table_size: int = 25_000) -> list[Run]:
    """One run per value (a list gives that run's repetitions), each with one succeeded job per repetition."""
    runs = []
    for value in values:
        now = timezone.now()
        run = Run.objects.create(campaign=campaign, status=status, trigger=trigger, label=f"nightly {len(runs)}",
                                 started_at=now, finished_at=now)
        for qps in value if isinstance(value, list) else [value]:
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads, tables=tables,
                                     table_size=table_size, status=Job.Status.SUCCEEDED)
            JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_pct_ms=2e5 / qps, latency_pct=95.0)
        runs.append(run)
    return runs


def _cell(name: str = "oltp nightly") -> tuple[Campaign, Target, Scenario]:
    target = TargetFactory(product=ProductFactory(name=f"{name} product"))
    scenario = ScenarioFactory(name=name, dataset=DatasetFactory(name=f"{name} data", tables=4, table_size=25_000))
    return CampaignFactory(targets=[target], scenarios=[scenario]), target, scenario


def _drop_history() -> tuple[Campaign, Target, Scenario, list[Run], Run]:
    """Five steady scheduled nights, then a night 10% slower, evaluated as the run-finished hook does."""
    campaign, target, scenario = _cell()
    history = _runs(campaign, target, scenario, BASELINE_QPS)
    (current,) = _runs(campaign, target, scenario, [9000.0])
    monitoring.run_evaluate(run=current)
    return campaign, target, scenario, history, current


def _query(campaign: Campaign, target: Target, scenario: Scenario, threads: int = 8, **extra: Any) -> str:
    params = {"campaign": campaign.pk, "target": target.pk, "scenario": scenario.pk, "threads": threads, **extra}
    return API + "?" + "&".join(f"{k}={v}" for k, v in params.items())


@pytest.fixture
def viewer() -> APIClient:
    return client_for(make_user(roles.VIEWER))


# ---------------------------------------------------------------- the API


def test_the_history_shows_each_run_the_baseline_band_and_the_ten_percent_drop(viewer):
    campaign, target, scenario, history, current = _drop_history()
    response = viewer.get(_query(campaign, target, scenario))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["cell"] == {"campaign": {"id": campaign.pk, "name": campaign.name},
                            "target": {"id": target.pk, "name": target.name},
                            "scenario": {"id": scenario.pk, "name": "oltp nightly"}, "threads": 8,
                            "variant": "", "latency_pct": 95.0}
    points = body["points"]
    assert [p["run_id"] for p in points] == [r.pk for r in [*history, current]]
    assert [p["qps"] for p in points] == [*BASELINE_QPS, 9000.0]
    assert [p["regression"] for p in points] == [False] * 5 + [True]
    assert not any(p["improvement"] for p in points)
    last = points[-1]
    assert last["label"] == "nightly 0" and last["trigger"] == "scheduled" and last["repetitions"] == 1
    assert last["latency_pct_ms"] == pytest.approx(2e5 / 9000) and last["noisy"] is False
    # The newest night is judged against the five before it: their geometric mean ± the 5% threshold.
    assert body["baseline"]["mean"] == pytest.approx(BASELINE_MEAN)
    assert body["baseline"]["low"] == pytest.approx(BASELINE_MEAN * 0.95)
    assert body["baseline"]["high"] == pytest.approx(BASELINE_MEAN * 1.05)
    assert sorted(body["baseline"]["run_ids"]) == sorted(r.pk for r in history)
    assert last["qps"] < body["baseline"]["low"]
    (change,) = [c for c in body["changes"] if c["metric"] == "qps"]
    assert change["run_id"] == current.pk and change["kind"] == "regression"
    assert change["change_pct"] == pytest.approx((9000 / BASELINE_MEAN - 1) * 100)
    assert change["baseline_value"] == pytest.approx(BASELINE_MEAN)
    assert change["p_value"] is not None and change["method"]


def test_only_succeeded_runs_of_this_cell_are_points_and_noisy_repetitions_are_flagged(viewer):
    campaign, target, scenario = _cell()
    _runs(campaign, target, scenario, [5000.0], status=Run.Status.FAILED)
    _runs(campaign, target, scenario, [7000.0], threads=16)  # another cell of the same campaign
    other_campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    _runs(other_campaign, target, scenario, [6000.0])
    steady, noisy = _runs(campaign, target, scenario, [[1000.0, 1010.0, 990.0], [1000.0, 1400.0, 700.0]],
                          trigger=Run.Trigger.MANUAL)
    body = viewer.get(_query(campaign, target, scenario)).json()
    assert [(p["run_id"], p["qps"], p["repetitions"]) for p in body["points"]] == [
        (steady.pk, pytest.approx(statistics.geometric_mean([1000.0, 1010.0, 990.0])), 3),
        (noisy.pk, pytest.approx(statistics.geometric_mean([1000.0, 1400.0, 700.0])), 3)]
    assert [p["noisy"] for p in body["points"]] == [False, True]
    # Manual runs only, nothing pinned: no baseline yet.
    assert body["baseline"] is None and body["changes"] == []


def test_a_pinned_baseline_run_makes_the_band_and_an_improvement_is_marked(viewer):
    campaign, target, scenario = _cell()
    (pinned,) = _runs(campaign, target, scenario, [[1000.0, 1010.0, 990.0]], trigger=Run.Trigger.MANUAL)
    campaign.baseline_run = pinned
    campaign.save()
    (faster,) = _runs(campaign, target, scenario, [[1300.0, 1290.0, 1310.0]])
    assert monitoring.run_evaluate(run=faster)
    body = viewer.get(_query(campaign, target, scenario)).json()
    assert body["baseline"]["run_ids"] == [pinned.pk] and body["baseline"]["mean"] == pytest.approx(
        statistics.geometric_mean([1000.0, 1010.0, 990.0]))
    assert body["baseline"]["label"] == f"pinned run #{pinned.pk}"
    assert [(p["improvement"], p["regression"]) for p in body["points"]] == [(False, False), (True, False)]
    assert {c["kind"] for c in body["changes"]} == {"improvement"}


def test_limit_keeps_the_newest_runs_oldest_first(viewer):
    campaign, target, scenario = _cell()
    runs = _runs(campaign, target, scenario, [100.0, 200.0, 300.0, 400.0])
    body = viewer.get(_query(campaign, target, scenario, limit=2)).json()
    assert [p["run_id"] for p in body["points"]] == [runs[2].pk, runs[3].pk]


@pytest.mark.parametrize(("drop", "override", "message"), [
    ("campaign", {}, "required"),
    ("target", {}, "required"),
    ("scenario", {}, "required"),
    ("threads", {}, "required"),
    (None, {"campaign": "abc"}, "valid integer"),
    (None, {"campaign": "0"}, "greater than or equal to 1"),
    (None, {"campaign": str(2**70)}, "less than or equal to"),
    (None, {"campaign": "-1"}, "greater than or equal to 1"),
    (None, {"campaign": "999999999"}, "no campaign with id 999999999"),
    (None, {"target": "999999999"}, "no target with id 999999999"),
    (None, {"scenario": "999999999"}, "no scenario with id 999999999"),
    (None, {"scenario": "1.5"}, "valid integer"),
    (None, {"threads": "0"}, "greater than or equal to 1"),
    (None, {"threads": "1000001"}, "less than or equal to"),
    (None, {"threads": "\x00"}, "valid integer"),
    (None, {"limit": "0"}, "greater than or equal to 1"),
    (None, {"limit": "100000"}, "less than or equal to"),
])
def test_each_bad_or_missing_parameter_is_a_400_naming_it(viewer, drop, override, message):
    campaign, target, scenario = _cell()
    params = {"campaign": campaign.pk, "target": target.pk, "scenario": scenario.pk, "threads": 8}
    params.pop(drop, None)
    params.update(override)
    response = viewer.get(API, params)
    assert response.status_code == 400, response.content
    name = drop or next(iter(override))
    assert list(response.json()) == [name]
    assert message in response.json()[name][0]


def test_a_viewer_reads_the_history_an_anonymous_client_gets_401_and_no_role_403(viewer):
    campaign, target, scenario, _, _ = _drop_history()
    url = _query(campaign, target, scenario)
    assert viewer.get(url).status_code == 200
    assert APIClient().get(url).status_code == 401
    assert client_for(make_user(None)).get(url).status_code == 403


def test_the_history_takes_a_constant_number_of_queries(viewer, django_assert_max_num_queries):
    campaign, target, scenario = _cell()
    # Token and user, roles, campaign, target, scenario, runs, baseline runs, results, regressions.
    budget = 9
    for nights in (3, 30):
        _runs(campaign, target, scenario, [10000.0 + i for i in range(nights)])
        with django_assert_max_num_queries(budget):
            response = viewer.get(_query(campaign, target, scenario))
        assert response.status_code == 200
    assert len(response.json()["points"]) == 33


@pytest.mark.slow  # schemathesis: 3.5 s
@pytest.mark.usefixtures("requests_share_the_test_transaction")
def test_the_history_answers_within_its_openapi_schema():
    import schemathesis
    from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

    from benchapp.wsgi import application

    campaign, target, scenario, _, _ = _drop_history()
    from campaigns.services import token_issue

    token_key = token_issue(user=make_user(roles.VIEWER))
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application,
                                            headers={"Authorization": f"Token {token_key}"})
    operation = schema["/api/v1/regressions/history/"]["GET"]
    for query in ({"campaign": campaign.pk, "target": target.pk, "scenario": scenario.pk, "threads": 8},
                  {"campaign": campaign.pk, "target": target.pk, "scenario": scenario.pk, "threads": 1},
                  {"campaign": campaign.pk, "target": target.pk, "threads": 8}):
        case = operation.Case(query=query, headers={"Authorization": f"Token {token_key}"})
        response = case.call()
        case.validate_response(response, checks=[status_code_conformance, response_schema_conformance])
    assert response.status_code == 400


# ---------------------------------------------------------------- the run page and the campaign page


def _page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def viewer_page() -> Client:
    client = Client()
    client.force_login(make_user(roles.VIEWER, "page-viewer"))
    return client


def test_the_run_page_lists_the_runs_regression_with_its_cell_and_a_link_to_the_history(viewer_page):
    campaign, target, scenario, history, current = _drop_history()
    html = _page(viewer_page, f"/runs/{current.pk}/")
    section = html.split('id="changes"', 1)[1].split("</section>", 1)[0]
    row = re.search(r'<tr data-kind="regression" data-metric="qps">(.*?)</tr>', section, re.S).group(1)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row))
    assert target.name in text and "oltp nightly product" in text and "oltp nightly" in text
    assert " 8 " in text and "4 × 25,000" in text and "QPS" in text
    assert f"{BASELINE_MEAN:,.0f} QPS" in text and "9,000 QPS" in text and "-10.0%" in text and "p = " in text
    assert "geometric mean of the last 5 scheduled runs" in text
    link = f"/campaigns/{campaign.pk}/?target={target.pk}&amp;scenario={scenario.pk}&amp;threads=8#history"
    assert link in row
    # A steady night before it has nothing to report, and says so.
    quiet = _page(viewer_page, f"/runs/{history[-1].pk}/")
    assert 'id="changes"' in quiet and "None beyond the campaign's threshold of 5%" in quiet


def test_the_campaign_page_draws_the_history_of_the_cell_the_link_chose(viewer_page):
    campaign, target, scenario, history, current = _drop_history()
    other = ScenarioFactory(name="another scenario", dataset=Dataset.objects.get(name="oltp nightly data"))
    _runs(campaign, target, other, [500.0, 510.0])
    html = _page(viewer_page, f"/campaigns/{campaign.pk}/?target={target.pk}&scenario={scenario.pk}&threads=8")
    section = html.split('id="history"', 1)[1].split("</section>", 1)[0]
    # target:scenario:threads:variant ("" without variants)
    options = re.findall(r'<option value="(\d+:\d+:\d+):"( selected)?>([^<]*)</option>', section)
    assert [(value, bool(sel)) for value, sel, _ in options] == [
        (f"{target.pk}:{other.pk}:8", False), (f"{target.pk}:{scenario.pk}:8", True)]
    assert options[1][2] == f"{target.name} · oltp nightly · 8 threads"
    assert 'id="history-chart"' in section and "Baseline: 9,998 QPS" in section
    assert f'<a href="/runs/{current.pk}/">#{current.pk}</a>' in section and "-10.0%" in section
    data = json.loads(re.search(r'<script id="history-data" type="application/json">(.*?)</script>', html, re.S)
                      .group(1))
    assert (data["target_id"], data["scenario_id"], data["threads"]) == (target.pk, scenario.pk, 8)
    assert [p["regression"] for p in data["points"]] == [False] * 5 + [True]
    assert data["baseline"]["low"] == pytest.approx(BASELINE_MEAN * 0.95)
    assert "campaigns/build/history.js" in html and 'data-api-url="/api/v1/regressions/history/"' in html
    # Without (or with a wrong) choice, the first cell is shown.
    first = _page(viewer_page, f"/campaigns/{campaign.pk}/?target=x&threads=%C2%B2")
    assert f'<option value="{target.pk}:{other.pk}:8:" selected>' in first


def test_a_campaign_without_results_says_its_history_is_empty(viewer_page):
    campaign, _, _ = _cell()
    html = _page(viewer_page, f"/campaigns/{campaign.pk}/")
    assert 'id="history"' in html and "No results yet" in html and "history.js" not in html


def test_the_campaign_pages_history_takes_a_constant_number_of_queries(viewer_page):
    campaign, target, scenario = _cell()
    counts = []
    for nights in (2, 20):
        _runs(campaign, target, scenario, [1000.0] * nights)
        with CaptureQueriesContext(connection) as queries:
            _page(viewer_page, f"/campaigns/{campaign.pk}/")
        counts.append(len(queries))
    assert counts[0] == counts[1]


# ---------------------------------------------------------------- in a real browser


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_user_follows_a_regression_to_its_cell_history_and_picks_another_cell(browser_page):
    from tests.helpers.browser import SHOTS as shots

    _, page, problems = browser_page
    campaign, target, scenario, history, current = _drop_history()
    # The same nights also measured 16 threads, which got 15% faster on the last one.
    for run, qps in zip([*history, current], [20000.0, 20600.0, 19400.0, 20300.0, 19700.0, 23000.0], strict=True):
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=16, tables=4, table_size=25_000,
                                 status=Job.Status.SUCCEEDED)
        JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_pct_ms=2e5 / qps, latency_pct=95.0)
    monitoring.run_evaluate(run=current)
    # A transactional test's database may have been flushed by an earlier one: the role groups with it.
    for role in roles.ROLES:
        Group.objects.get_or_create(name=role)
    make_user(roles.VIEWER, "history-viewer")
    log_in(page, "history-viewer", "pw-12345678")

    page.goto(f"/runs/{current.pk}/")
    row = page.locator("#changes-table tr[data-kind=regression][data-metric=qps]")
    assert "-10.0%" in row.inner_text()
    page.locator("#changes").screenshot(path=str(shots / "history-01-run-regressions.png"))
    row.get_by_role("link", name="cell history").click()
    page.wait_for_url(re.compile(rf"/campaigns/{campaign.pk}/\?target=.*#history$"))
    assert page.locator("#history-cell").input_value() == f"{target.pk}:{scenario.pk}:8:"
    wait_js(page, "() => Chart.getChart(document.getElementById('history-chart')) !== undefined")
    drawn = page.evaluate("""() => {
        const chart = Chart.getChart(document.getElementById('history-chart'));
        return Object.fromEntries(chart.data.datasets.map(d => [d.label, d.data]));
    }""")
    assert drawn["QPS"] == [*BASELINE_QPS, 9000.0]
    assert drawn["regression"] == [None] * 5 + [9000.0]
    assert drawn["baseline ± 5%"] == pytest.approx([BASELINE_MEAN * 1.05] * 6)
    assert drawn["band low"] == pytest.approx([BASELINE_MEAN * 0.95] * 6)
    page.wait_for_timeout(600)  # the chart's entry animation
    page.locator("#history").screenshot(path=str(shots / "history-02-campaign-cell-regression.png"))

    with page.expect_response(lambda r: "/api/v1/regressions/history/" in r.url) as answer:
        page.locator("#history-cell").select_option(f"{target.pk}:{scenario.pk}:16:")
    assert answer.value.status == 200
    wait_js(page, "() => document.getElementById('history-baseline').textContent"
                           ".includes('Baseline: 19,995.5 QPS')")  # the geometric mean of 20,000 ... 19,700
    drawn = page.evaluate("""() => {
        const chart = Chart.getChart(document.getElementById('history-chart'));
        return Object.fromEntries(chart.data.datasets.map(d => [d.label, d.data]));
    }""")
    assert drawn["improvement"] == [None] * 5 + [23000.0] and drawn["regression"] == [None] * 6
    assert "threads=16" in page.url
    rows = page.locator("#history-changes tr[data-kind=improvement]")
    assert rows.count() == 2  # QPS and latency
    assert "15.0%" in rows.nth(1).inner_text() and "23000.0" in rows.nth(1).inner_text()
    page.wait_for_timeout(600)
    page.locator("#history").screenshot(path=str(shots / "history-03-campaign-cell-improvement.png"))
    assert not problems.items, "\n".join(problems.items)
