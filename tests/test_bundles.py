"""Portable results: a run exported as one JSON bundle and imported into another benchapp, with every
figure, sample, metric and verdict; nothing secret in it; a bad bundle refused whole, naming the part."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from campaigns import roles, services
from campaigns.models import Campaign, Dataset, HostSample, IntervalSample, Job, Run, Scenario, ServerSample, Target
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

# A real sysbench output captured on this kind of machine (tests/data/sysbench/README.md).
_LOG = (Path(__file__).parent / "data" / "sysbench" / "mysql_oltp_point_select.txt").read_text()
# What differs between the export of a run and the export of its imported copy: the ids and where it came from.
# An imported copy's jobs are marked imported (its results' source too).
_LOCAL = {"exported_at", "source", "key", "target", "scenario", "label", "trigger", "created_at", "started_at",
          "finished_at", "imported"}


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in _LOCAL}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_measured_run_moves_to_another_install_with_every_figure_and_no_secret(celery_worker_process,
                                                                                 target_databases):
    target = TargetFactory(name="lab maria")
    scenario = ScenarioFactory(name="lab point select", dataset=DatasetFactory(name="lab tiny", tables=1,
                                                                             table_size=1000))
    campaign = CampaignFactory(name="lab nightly", targets=[target], scenarios=[scenario], threads=[2],
                               webhook_url="https://hooks.example.com/T000/B000/XXXX")
    run = services.campaign_launch(campaign=campaign)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=90, what="the run to finish")
    job = Job.objects.get(run=run)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert IntervalSample.objects.filter(job=job).exists() and HostSample.objects.filter(job=job).exists()
    target.set_password("s3cret-Pw")  # the demo MariaDB takes none; a stored one must still never travel
    target.save()
    operator = client_for(make_user(roles.OPERATOR))
    response = operator.get(f"/api/v1/runs/{run.pk}/export/")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    text = response.content.decode()
    assert "s3cret-Pw" not in text and "hooks.example.com" not in text and "password_encrypted" not in text
    bundle = json.loads(text)
    assert bundle["format"] == "benchapp-run" and bundle["version"] == 2
    (exported_job,) = bundle["jobs"]
    assert exported_job["result"]["qps"] == job.result.qps and len(exported_job["samples"]) >= 2
    assert exported_job["host_samples"] and exported_job["clients"][0]["raw_output"]

    # "Another install": nothing of the lab's campaign, target or scenario is here any more.
    Campaign.objects.filter(pk=campaign.pk).delete()
    Target.objects.filter(pk=target.pk).delete()
    Scenario.objects.filter(pk=scenario.pk).delete()
    Dataset.objects.filter(pk=scenario.dataset_id).delete()  # (an import binds no row it does not own)
    imported = operator.post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert imported.status_code == 201, imported.content
    body = imported.json()
    assert body["trigger"] == "import" and body["status"] == "succeeded" and body["campaign_name"] == "lab nightly"
    assert body["label"].startswith("imported from ")
    copy = Run.objects.get(pk=body["id"])
    new_target = Target.objects.get(name="lab maria")
    assert not new_target.has_password() and new_target.host == target.host and new_target.port == target.port
    again = json.loads(operator.get(f"/api/v1/runs/{copy.pk}/export/").content)
    assert _comparable(again) == _comparable(bundle)
    new_job = copy.jobs.get()
    assert new_job.verdict == job.verdict and new_job.result.qps == job.result.qps
    assert ServerSample.objects.filter(job=new_job).count() == len(exported_job["server_samples"])
    # The comparison of the imported run shows the same cell.
    compared = operator.get(f"/api/v1/comparisons/?runs={copy.pk}")
    assert compared.status_code == 200 and str(job.result.qps) in compared.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), [
    (lambda b: b.update(format="something else"), "format: not a benchapp run bundle"),
    (lambda b: b.update(version=99), "version: 99 is not a bundle version"),
    (lambda b: b.update(jobs=[]), "jobs: a bundle holds at least one job"),
    (lambda b: b["jobs"][0].update(status="running"), "jobs[0].status: a bundled job must have finished"),
    (lambda b: b["jobs"][0].update(threads="many"), "jobs[0].threads:"),
    (lambda b: b["jobs"][0].update(target=12345), "jobs[0]: its target or scenario is not among the bundle's"),
    (lambda b: b["jobs"][0]["samples"].append({"t": "x"}), "jobs[0].samples[1].t:"),
])
def test_a_bad_bundle_is_refused_naming_the_part_and_stores_nothing(change, message):
    target, scenario = TargetFactory(), ScenarioFactory()
    run = services.results_import(files=[("a.log", _LOG)], target=target, scenario=scenario)
    bundle = json.loads(services.bundle_json(services.run_export(run=run)))
    bundle["jobs"][0]["samples"] = bundle["jobs"][0]["samples"][:1]
    change(bundle)
    runs_before = Run.objects.count()
    response = client_for(make_user(roles.OPERATOR)).post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert response.status_code == 400
    assert message in response.json()["bundle"][0]
    assert Run.objects.count() == runs_before


@pytest.mark.django_db
def test_viewers_may_export_but_not_import():
    target, scenario = TargetFactory(), ScenarioFactory()
    run = services.results_import(files=[("a.log", _LOG)], target=target, scenario=scenario)
    viewer = client_for(make_user(roles.VIEWER))
    assert viewer.get(f"/api/v1/runs/{run.pk}/export/").status_code == 200
    bundle = json.loads(services.bundle_json(services.run_export(run=run)))
    assert viewer.post("/api/v1/runs/import-bundle/", bundle, format="json").status_code == 403

