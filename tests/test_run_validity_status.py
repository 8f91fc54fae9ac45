"""A run's status says what its jobs' verdicts say: "Succeeded · 24 of 24 jobs invalid" in amber, on every page that
shows a run's status and in the API, and the runs list and the API filter runs by validity."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from campaigns import roles
from campaigns.models import Job, Run
from campaigns.validity import RunVerdicts
from tests.factories import CampaignFactory, JobFactory, JobResultFactory, RunFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db

V = Job.Verdict


def _run(name: str, verdicts: list[str], *, status: str = Run.Status.SUCCEEDED) -> Run:
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(name=name, targets=[target], scenarios=[scenario], threads=[1]),
                     status=status)
    for verdict in verdicts:
        JobFactory(run=run, target=target, scenario=scenario, verdict=verdict)
    return run


@pytest.mark.parametrize(("counts", "text", "level"), [
    ((24, 0, 0), "", ""),
    ((0, 0, 24), "24 of 24 jobs invalid", "invalid"),
    ((19, 2, 3), "3 of 24 jobs invalid, 2 suspect", "invalid"),
    ((5, 1, 0), "1 of 6 jobs suspect", "suspect"),
    ((0, 0, 1), "1 of 1 job invalid", "invalid"),
    ((0, 0, 0), "", ""),
])
def test_a_runs_verdicts_in_words(counts, text, level):
    verdicts = RunVerdicts(*counts)
    assert (verdicts.text(), verdicts.level()) == (text, level)


def test_a_succeeded_run_of_invalid_jobs_says_so_in_amber_on_every_page_that_shows_its_status():
    spoiled = _run("all-invalid", [V.INVALID, V.INVALID])
    fine = _run("all-valid", [V.VALID, V.VALID])
    assert spoiled.status_text() == "Succeeded · 2 of 2 jobs invalid"
    assert fine.status_text() == "Succeeded"
    page = Client()
    page.force_login(make_user(roles.VIEWER))
    badge = re.compile(r'<span class="badge succeeded spoiled verdict-invalid"[^>]*>Succeeded · 2 of 2 jobs invalid'
                       r"</span>")
    for url in ("/runs/", "/", f"/campaigns/{spoiled.campaign_id}/", f"/runs/{spoiled.pk}/"):
        html = page.get(url).content.decode()
        assert badge.search(html), url
    run_page = page.get(f"/runs/{fine.pk}/").content.decode()
    assert re.search(r'<span class="badge succeeded"[^>]*id="run-status"[^>]*>Succeeded</span>', run_page)
    # The live page's poll carries the same words, so the badge does not change when it arrives.
    live = page.get(f"/runs/{spoiled.pk}/live/").json()["run"]
    assert (live["status_text"], live["verdict_level"]) == ("Succeeded · 2 of 2 jobs invalid", "invalid")


def test_the_runs_list_and_the_api_filter_by_validity():
    spoiled = _run("f-invalid", [V.VALID, V.INVALID])
    doubtful = _run("f-suspect", [V.VALID, V.SUSPECT])
    fine = _run("f-valid", [V.VALID])
    failed = _run("f-failed", [], status=Run.Status.FAILED)
    page = Client()
    page.force_login(make_user(roles.VIEWER, "validity-viewer"))
    api = client_for(make_user(roles.VIEWER, "validity-api"))

    def listed(validity: str) -> set[int]:
        html = page.get("/runs/", {"validity": validity}).content.decode()
        on_page = {int(n) for n in re.findall(r'name="runs" value="(\d+)"', html)}
        answer = api.get("/api/v1/runs/", {"validity": validity})
        assert answer.status_code == 200, answer.content
        assert {row["id"] for row in answer.json()["results"]} == on_page, validity
        return on_page

    assert listed("invalid") == {spoiled.pk}
    assert listed("untrusted") == {spoiled.pk, doubtful.pk}
    assert listed("trusted") == {fine.pk}
    assert {spoiled.pk, doubtful.pk, fine.pk, failed.pk} <= listed("")
    refused = api.get("/api/v1/runs/", {"validity": "sometimes"})
    assert refused.status_code == 400 and "validity" in refused.json()
    html = page.get("/runs/").content.decode()
    assert '<select id="filter-validity" name="validity">' in html and '<select id="filter-status"' in html


def test_the_api_gives_each_run_its_verdicts_and_status_words():
    run = _run("api-validity", [V.VALID, V.SUSPECT, V.INVALID])
    api = client_for(make_user(roles.VIEWER, "validity-reader"))
    for answer in (api.get(f"/api/v1/runs/{run.pk}/").json(), api.get("/api/v1/runs/").json()["results"][0]):
        assert answer["validity"] == {"valid": 1, "suspect": 1, "invalid": 1, "level": "invalid",
                                      "text": "1 of 3 jobs invalid, 1 suspect"}
        assert answer["status_text"] == "Succeeded · 1 of 3 jobs invalid, 1 suspect"


def test_pinning_an_all_invalid_run_as_baseline_warns_and_the_campaign_page_says_one_thing():
    run = _run("pin-invalid", [V.INVALID, V.INVALID])
    for job in run.jobs.all():
        JobResultFactory(job=job)
    page = Client()
    page.force_login(make_user(roles.OPERATOR, "pin-operator"))
    answer = page.post(f"/runs/{run.pk}/pin-baseline/", follow=True)
    text = answer.content.decode()
    assert (f"Run #{run.pk} is now the baseline of pin-invalid, but every judged job of run #{run.pk} is invalid "
            "(2 of 2 jobs invalid)") in text
    html = page.get(f"/campaigns/{run.campaign_id}/").content.decode()
    assert 'id="history-baseline"' in html
    assert "No baseline yet" not in html
    assert f"The pinned baseline, run #{run.pk}, has no trusted result in this cell" in html
    assert f"Unpin run #{run.pk}" in html


def test_a_variant_shows_beside_its_target_in_the_jobs_table_and_the_live_chart():
    target, scenario = TargetFactory(name="maria"), ScenarioFactory(name="ps")
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]))
    for variant in ("default", "lazy"):
        JobFactory(run=run, target=target, scenario=scenario, variant=variant, verdict=V.VALID)
    page = Client()
    page.force_login(make_user(roles.VIEWER, "variant-viewer"))
    html = page.get(f"/runs/{run.pk}/").content.decode()
    assert html.count('title="settings variant">lazy</span>') == 1
    assert html.count('title="settings variant">default</span>') == 1
    cells = {row["cell"] for row in page.get(f"/runs/{run.pk}/live/").json()["jobs"]}
    assert cells == {"maria · default · ps", "maria · lazy · ps"}
