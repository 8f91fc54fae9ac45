"""Annotations: notes on runs and targets through the API and the run page, the ones benchapp records
when a target's server changed between two runs, on the history, and quoted beside a change point near them."""
from __future__ import annotations

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from campaigns import monitoring, roles
from campaigns.models import Annotation, Job, JobResult, Regression, Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def _run(campaign, target, scenario, qps: float, *, version: str = "10.11.5", flush: str = "1",
         variant: str = "", variant_settings: dict[str, str] | None = None) -> Run:
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                             started_at=now, finished_at=now)
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED,
                             variant=variant, variant_settings=variant_settings or {},
                             server_snapshot={"before": {"version": version, "settings": {
                                 "innodb_flush_log_at_trx_commit": flush, "max_connections": "151"}}})
    JobResult.objects.create(job=job, qps=qps, latency_pct_ms=1e5 / qps, latency_pct=95.0)
    return run


def test_notes_are_written_read_and_refused_with_the_field_named():
    target, scenario = TargetFactory(), ScenarioFactory()
    run = _run(CampaignFactory(targets=[target], scenarios=[scenario]), target, scenario, 1000.0)
    operator = client_for(make_user(roles.OPERATOR))
    made = operator.post("/api/v1/annotations/", {"run": run.pk, "text": " upgraded to 10.11.6 "}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["text"] == "upgraded to 10.11.6" and body["kind"] == "user" and body["created_by"] == "user-operator"
    assert body["at"] is not None
    on_target = operator.post("/api/v1/annotations/", {"target": target.pk, "text": "flush=2",
                                                       "at": "2026-01-02T03:04:05Z"}, format="json")
    assert on_target.status_code == 201
    assert operator.post("/api/v1/annotations/", {"text": "nowhere"}, format="json").json() == {
        "run": ["an annotation belongs to a run or a target: give one of them"]}
    assert "text" in operator.post("/api/v1/annotations/", {"run": run.pk, "text": "  "}, format="json").json()
    assert operator.post("/api/v1/annotations/", {"run": run.pk, "text": "x" * 501}, format="json").status_code == 400
    assert operator.post("/api/v1/annotations/", {"run": run.pk, "text": "a", "kind": "auto"},
                         format="json").status_code == 400  # kind is benchapp's to set
    viewer = client_for(make_user(roles.VIEWER))
    assert [a["text"] for a in viewer.get(f"/api/v1/annotations/?run={run.pk}").json()["results"]] == [
        "upgraded to 10.11.6"]
    assert viewer.post("/api/v1/annotations/", {"run": run.pk, "text": "no"}, format="json").status_code == 403


def test_benchapp_notes_a_version_or_setting_change_between_two_runs_once():
    target, scenario = TargetFactory(name="maria"), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    first = _run(campaign, target, scenario, 1000.0)
    assert monitoring.annotations_auto(run=first) == []  # nothing earlier to compare with
    same = _run(campaign, target, scenario, 1000.0)
    assert monitoring.annotations_auto(run=same) == []
    changed = _run(campaign, target, scenario, 900.0, version="10.11.6", flush="2")
    (note,) = monitoring.annotations_auto(run=changed)
    assert note.kind == "auto" and note.target == target and note.run == changed
    assert note.text == "maria: server version 10.11.5 → 10.11.6; innodb_flush_log_at_trx_commit 1 → 2"
    assert monitoring.annotations_auto(run=changed) == []  # idempotent


def test_a_setting_that_benchapps_own_variant_changed_is_not_noted_as_changed_outside():
    """A run whose first job on the target runs under a variant setting flush=2: that is benchapp's own change, not
    an outside one, and the job is compared with the previous one under the same variant."""
    target, scenario = TargetFactory(name="maria"), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    _run(campaign, target, scenario, 1000.0)
    lazy = {"innodb_flush_log_at_trx_commit": "2"}
    varied = _run(campaign, target, scenario, 1100.0, flush="2", variant="lazy", variant_settings=lazy)
    assert monitoring.annotations_auto(run=varied) == [], "no false 'setting changed 1 → 2'"
    again = _run(campaign, target, scenario, 1100.0, flush="2", variant="lazy", variant_settings=lazy,
                 version="10.11.6")
    (note,) = monitoring.annotations_auto(run=again)
    assert note.text == "maria: server version 10.11.5 → 10.11.6"


def test_a_change_point_quotes_the_note_beside_it_and_the_history_and_run_page_show_notes():
    target, scenario = TargetFactory(name="maria"), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    rng = np.random.default_rng(9)
    runs = []
    for i in range(30):
        upgraded = i >= 20
        runs.append(_run(campaign, target, scenario, 10_000 * (0.95 if upgraded else 1.0) * rng.lognormal(0, 0.004),
                         version="10.11.6" if upgraded else "10.11.5"))
        monitoring.run_finished(run_id=runs[-1].pk)
    (point,) = Regression.objects.filter(detector=Regression.Detector.CHANGE_POINT)
    assert abs(runs.index(point.run) - 20) <= 1
    assert "server version 10.11.5 → 10.11.6" in point.explanation
    body = client_for(make_user(roles.VIEWER)).get(
        f"/api/v1/regressions/history/?campaign={campaign.pk}&target={target.pk}&scenario={scenario.pk}&threads=8"
    ).json()
    assert [a["run_id"] for a in body["annotations"]] == [runs[20].pk]
    assert body["changes"][0]["explanation"] == point.explanation
    page = Client()
    page.force_login(make_user(roles.OPERATOR, "note-operator"))
    response = page.post(f"/runs/{runs[20].pk}/annotate/", {"text": "maintenance window"})
    assert response.status_code == 302 and response["Location"].endswith("#notes")
    html = page.get(f"/runs/{runs[20].pk}/").content.decode()
    assert "recorded by benchapp" in html and "server version 10.11.5 → 10.11.6" in html
    assert "maintenance window" in html and "(note-operator)" in html
    assert Annotation.objects.filter(run=runs[20]).count() == 2
