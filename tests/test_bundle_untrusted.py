"""A run bundle is untrusted input. Every value goes through the API's checks and a refusal
names the row and the field (400, nothing stored, every list and page still answering); nothing is attached to a
campaign, scenario or target of another user; an imported run says it was imported wherever it appears."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from campaigns import roles, services
from campaigns.models import (
    Attempt,
    Campaign,
    ClientSend,
    Dataset,
    HostSample,
    InstanceSpec,
    IntervalSample,
    Job,
    JobClient,
    JobResult,
    Product,
    Run,
    Scenario,
    ServerSample,
    Target,
)
from campaigns.sysbench.catalogue import CONNECTION_OPTIONS
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

_LOG = (Path(__file__).parent / "data" / "sysbench" / "mysql_oltp_point_select.txt").read_text()
_COUNTED = (Attempt, ClientSend, Campaign, Dataset, InstanceSpec, Job, JobClient, JobResult, IntervalSample, HostSample, ServerSample,
            Product, Run, Scenario, Target)
_API_LISTS = ("results", "jobs", "runs", "scenarios", "targets", "datasets", "campaigns")
_PAGES = ("/", "/runs/", "/targets/", "/scenarios/", "/datasets/", "/campaigns/")


def _set(path: str, value: Any):
    """A change to the bundle: set the value at a dotted path (list indexes as numbers)."""
    def change(bundle: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = bundle
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return change


def _append(path: str, value: Any):
    def change(bundle: dict[str, Any]) -> None:
        node: Any = bundle
        for part in path.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        node.append(value)
    return change


_CONNECTION_CASES = [
    pytest.param(_set("scenarios.0.options", {name: "1"}), f"scenarios[0].options: {name}: a connection option",
                 id=f"option {name}")
    for name in sorted(CONNECTION_OPTIONS)
] + [
    pytest.param(_set("scenarios.0.options", {"--MySQL_Host": "127.0.0.1"}),
                 "scenarios[0].options: --MySQL_Host: a connection option", id="option spelled otherwise"),
]

CASES = [
    # M2, as the issue lists them.
    pytest.param(_set("jobs.0.result.qps", "NaN"), "jobs[0].result.qps: not a finite number", id="qps NaN"),
    pytest.param(_set("jobs.0.result.qps", "Infinity"), "jobs[0].result.qps: not a finite number", id="qps inf"),
    pytest.param(_set("jobs.0.started_at", "0001-01-01T00:00:00+14:00"), "jobs[0].started_at: out of range",
                 id="started_at year 1"),
    pytest.param(_set("scenarios.0.options", ["point-selects", 10]), "scenarios[0].options: must be an object",
                 id="options as a list"),
    pytest.param(_set("scenarios.0.test", "no_such_test"), "scenarios[0].test:", id="unknown test"),
    pytest.param(_set("campaign.threads_by_scenario", {"x": ["y"]}), "campaign.threads_by_scenario:",
                 id="threads_by_scenario junk"),
    pytest.param(_set("campaign.threads_by_scenario", "8"), "campaign.threads_by_scenario: must be an object",
                 id="threads_by_scenario text"),
    pytest.param(_set("jobs.0.clients.0.histogram", [["a", 1]]), "jobs[0].clients[0].histogram:",
                 id="junk histogram"),
    pytest.param(_set("jobs.0.clients.0.histogram", {"1": 2}), "jobs[0].clients[0].histogram:",
                 id="histogram object"),
    pytest.param(_set("jobs.0.server_snapshot", {"before": "x"}), "jobs[0].server_snapshot: before: must be",
                 id="junk snapshot"),
    pytest.param(_set("jobs.0.server_snapshot", {"before": {"status": {"Questions": "many"}}}),
                 "jobs[0].server_snapshot: before.status:", id="snapshot status text"),
    pytest.param(_set("campaign.threads", ["x"]), "campaign.threads:", id="threads text"),
    pytest.param(_set("campaign.repetitions", 100000), "campaign.repetitions:", id="repetitions 100000"),
    pytest.param(_set("scenarios.0.dataset.tables", 0), "scenarios[0].dataset.tables:", id="tables 0"),
    pytest.param(_set("scenarios.0.dataset.table_size", 10**15), "scenarios[0].dataset.table_size:",
                 id="dataset table_size 1e15"),
    pytest.param(_set("jobs.0.table_size", 10**15), "jobs[0].table_size: out of range", id="job table_size 1e15"),
    pytest.param(_set("jobs.0.tables", 0), "jobs[0].tables: out of range", id="job tables 0"),
    pytest.param(_set("jobs.0.wall_time_s", -1), "jobs[0].wall_time_s: out of range", id="wall time negative"),
    pytest.param(_set("campaign.client_tries", 1000), "campaign.client_tries:", id="client_tries 1000"),
    # The API's own bounds (its serializers' max values) hold for a bundle too.
    pytest.param(_set("scenarios.0.time_s", 10**9), "scenarios[0].time_s: must be at most", id="time_s 1e9"),
    pytest.param(_set("campaign.clients_min", 10**6), "campaign.clients_min: must be at most", id="clients_min"),
    pytest.param(_set("campaign.run_time_s", 10**9), "campaign.run_time_s: must be at most", id="run_time_s"),
    pytest.param(_set("targets.0.spec", {"label": "huge", "cpu_cores": 10**7, "memory_gb": 1}),
                 "targets[0].spec.cpu_cores: must be at most", id="spec cores 1e7"),
    # A row per field type.
    pytest.param(_set("jobs.0.threads", "many"), "jobs[0].threads:", id="integer text"),
    pytest.param(_set("jobs.0.threads", 1.5), "jobs[0].threads: not a whole number", id="integer fraction"),
    pytest.param(_set("jobs.0.threads", 10**9), "jobs[0].threads: out of range", id="threads 1e9"),
    pytest.param(_set("jobs.0.threads", True), "jobs[0].threads:", id="integer bool"),
    pytest.param(_set("jobs.0.result.tps", -5), "jobs[0].result.tps: out of range", id="negative figure"),
    pytest.param(_set("jobs.0.result.tps", [1]), "jobs[0].result.tps: not a number", id="float list"),
    pytest.param(_set("jobs.0.imported", "yes"), "jobs[0].imported: true or false", id="boolean text"),
    pytest.param(_set("jobs.0.error", {"a": 1}), "jobs[0].error: text was expected", id="text object"),
    pytest.param(_set("jobs.0.started_at", "yesterday"), "jobs[0].started_at:", id="time text"),
    pytest.param(_set("jobs.0.started_at", "2024-01-01T00:00:00"), "jobs[0].started_at: an ISO 8601 time with",
                 id="naive time"),
    pytest.param(_set("jobs.0.started_at", "9999-01-01T00:00:00+00:00"), "jobs[0].started_at: out of range",
                 id="time far ahead"),
    pytest.param(_set("jobs.0.verdict", "great"), "jobs[0].verdict:", id="choice"),
    pytest.param(_set("jobs.0.status", "running"), "jobs[0].status: a bundled job must have finished",
                 id="unfinished job"),
    pytest.param(_set("jobs.0.findings", "junk"), "jobs[0].findings: must be a list", id="findings text"),
    pytest.param(_set("jobs.0.findings", [{"level": 3}]), "jobs[0].findings: a finding's level", id="finding"),
    pytest.param(_set("jobs.0.clients.0.summary", {"qps": "NaN"}), "jobs[0].clients[0].summary: qps:",
                 id="summary"),
    pytest.param(_set("jobs.0.clients.0.sends", [{"number": 1, "host": "h", "sent_at": "x", "ended_at": None}]),
                 "jobs[0].clients[0].sends[0].sent_at: not an ISO 8601 time", id="send time"),
    pytest.param(_set("jobs.0.attempts", [{"number": 1, "cause": "x"}]), "jobs[0].attempts[0].ended_at: missing",
                 id="attempt without its end"),
    pytest.param(_set("jobs.0.attempts", [{"number": 0, "ended_at": "2025-01-01T00:00:00+00:00"}]),
                 "jobs[0].attempts[0].number: out of range", id="attempt number 0"),
    pytest.param(_set("jobs.0.attempts", [{"number": 1, "ended_at": "2025-01-01T00:00:00+00:00"}] * 2),
                 "jobs[0].attempts: an attempt number is listed twice", id="attempt twice"),
    pytest.param(lambda b: b["jobs"][0].pop("attempts") and None or _set("jobs.0.earlier_attempts", [
                     {"attempt": 1, "ended_at": "x"}])(b),
                 "jobs[0].earlier_attempts[0].ended_at: not an ISO 8601 time", id="version 1 attempt time"),
    pytest.param(_set("jobs.0.samples.0.t", "x"), "jobs[0].samples[0].t:", id="sample t"),
    pytest.param(_set("jobs.0.samples.0.qps", "1e400"), "jobs[0].samples[0].qps: not a finite number",
                 id="sample overflow"),
    pytest.param(lambda b: b["jobs"][0]["samples"].append(dict(b["jobs"][0]["samples"][0])),
                 "jobs[0].samples[", id="a second row of one second"),
    pytest.param(_set("jobs.0.server_samples", [{"t": 1, "rates": {"x": "y"}, "gauges": {}}]),
                 "jobs[0].server_samples[0].rates: x:", id="server sample rates"),
    pytest.param(_set("jobs.0.server_samples", "x"), "jobs[0].server_samples: a list was expected",
                 id="server samples text"),
    pytest.param(_set("jobs.0.target", [1]), "jobs[0]: its target or scenario is not among the bundle's",
                 id="unhashable key"),
    pytest.param(_set("targets.0.key", {"a": 1}), "targets[0].key:", id="target key object"),
    pytest.param(_set("jobs.0.clients", "x"), "jobs[0].clients: a list was expected", id="clients text"),
    pytest.param(_set("scenarios.0.percentile", 50.5), "scenarios[0].percentile:", id="fractional percentile"),
    pytest.param(_set("scenarios.0.table_ddl", "DROP TABLE x"), "scenarios[0].table_ddl: refused",
                 id="ddl"),
    pytest.param(_set("scenarios.0.options", {"point-selects": "1; rm -rf /"}), "scenarios[0].options:",
                 id="unsafe option value"),
    pytest.param(_set("targets.0.host", "db\n--mysql-host=evil"), "targets[0].host:", id="target host newline"),
    pytest.param(_set("targets.0.port", 70000), "targets[0].port:", id="target port"),
    pytest.param(_set("targets.0.driver", "oracle"), "targets[0].driver:", id="target driver"),
    pytest.param(_set("targets.0.product", {"name": "", "engine": "mysql"}), "targets[0].product.name:",
                 id="product without a name"),
    pytest.param(_set("targets.0.product", {"name": "new product", "engine": "db2"}),
                 "targets[0].product.engine:", id="product engine"),
    pytest.param(_set("targets.0.spec", {"label": "big", "cpu_cores": 0, "memory_gb": 1}),
                 "targets[0].spec.cpu_cores:", id="spec cores"),
    pytest.param(_set("scenarios.0.dataset.sizes_by_spec", {"x": [1]}), "scenarios[0].dataset.sizes_by_spec:",
                 id="sizes_by_spec"),
    pytest.param(_set("campaign.name", ""), "campaign.name:", id="campaign without a name"),
    pytest.param(_set("campaign.scale_factor", "NaN"), "campaign.scale_factor: not a finite number",
                 id="scale factor"),
    pytest.param(_append("round_trips", {"target": 999, "host_name": "h", "count": 1, "median_ms": 1,
                                         "p99_ms": 1}), "round_trips[0].target:", id="round trip target"),
    *_CONNECTION_CASES,
]


@pytest.fixture
def bundle() -> dict[str, Any]:
    owner = make_user(roles.OPERATOR, username="lab-owner")
    target = TargetFactory(name="lab db", created_by=owner)
    scenario = ScenarioFactory(name="lab point select", created_by=owner,
                               dataset=DatasetFactory(name="lab tiny", created_by=owner))
    run = services.results_import(files=[("a.log", _LOG)], target=target, scenario=scenario)
    data = json.loads(services.bundle_json(services.run_export(run=run)))
    data["jobs"][0]["samples"] = data["jobs"][0]["samples"][:3]
    data["jobs"][0]["clients"] = data["jobs"][0]["clients"] or [{"index": 0, "threads": 1, "status": "succeeded"}]
    return data


def _rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of every model a bundle can write, whole: a refused import must leave each one as it was, not only
    their number."""
    return {model.__name__: list(model._default_manager.order_by("pk").values()) for model in _COUNTED}


def _everything_answers(user: Any) -> None:
    api = client_for(user)
    for name in _API_LISTS:
        response = api.get(f"/api/v1/{name}/")
        assert response.status_code == 200, (name, response.content[:300])
    web = Client()
    web.force_login(user)
    for page in _PAGES:
        response = web.get(page)
        assert response.status_code == 200, (page, response.status_code)
    for run in Run.objects.all():
        assert web.get(f"/runs/{run.pk}/").status_code == 200
        assert api.get(f"/api/v1/comparisons/?runs={run.pk}").status_code == 200
    for job in Job.objects.all():
        assert web.get(f"/jobs/{job.pk}/").status_code == 200
    for campaign in Campaign.objects.all():
        assert web.get(f"/campaigns/{campaign.pk}/").status_code == 200
        assert api.post(f"/api/v1/campaigns/{campaign.pk}/plan/", {}, format="json").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), CASES)
def test_each_bad_value_is_refused_naming_row_and_field_and_nothing_is_stored(bundle, change, message):
    operator = make_user(roles.OPERATOR, username="importer")
    bad = copy.deepcopy(bundle)
    change(bad)
    before = _rows()
    response = client_for(operator).post("/api/v1/runs/import-bundle/", bad, format="json")
    assert response.status_code == 400, response.content[:500]
    assert message in response.json()["bundle"][0], response.json()
    assert _rows() == before


@pytest.mark.django_db
def test_after_every_refusal_every_list_and_page_still_answers(bundle):
    """The cases above each leave every row as it was; here they are all sent in turn, then every list and page is
    read once (reading them after each of the 240 cases cost 35 s of `make check` and told nothing more)."""
    operator = make_user(roles.OPERATOR, username="importer")
    api = client_for(operator)
    for case in CASES:
        change, _ = case.values
        bad = copy.deepcopy(bundle)
        change(bad)
        assert api.post("/api/v1/runs/import-bundle/", bad, format="json").status_code == 400, case.id
    _everything_answers(operator)


@pytest.mark.django_db
def test_the_unchanged_bundle_imports_and_every_page_answers(bundle):
    operator = make_user(roles.OPERATOR, username="importer")
    response = client_for(operator).post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert response.status_code == 201, response.content[:500]
    _everything_answers(operator)


@pytest.mark.django_db
def test_another_users_target_and_campaign_are_never_bound_by_name(bundle):
    """H1's way in: keep another user's target name (it has a password) and campaign name. The import makes rows
    of the importer's own instead; the other user's campaign gains no run, scenario or target."""
    victim = make_user(roles.OPERATOR, username="victim")
    target = Target.objects.get(name="lab db")
    target.set_password("victim-Pw-123")
    target.save()
    victim_campaign = CampaignFactory(name="victim nightly", targets=[target], created_by=victim)
    bundle["campaign"]["name"] = "victim nightly"
    attacker = make_user(roles.OPERATOR, username="attacker")
    response = client_for(attacker).post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert response.status_code == 201, response.content[:500]
    run = Run.objects.get(pk=response.json()["id"])
    assert run.campaign_id != victim_campaign.pk and run.campaign.name == "victim nightly (imported)"
    assert run.campaign.created_by == attacker
    assert not victim_campaign.runs.exists() and list(victim_campaign.targets.all()) == [target]
    assert victim_campaign.scenarios.count() == 0
    (job,) = run.jobs.all()
    assert job.target_id != target.pk and job.target.name == "lab db (imported)"
    assert not job.target.has_password() and job.target.created_by == attacker
    assert job.scenario.name == "lab point select (imported)" and job.scenario.created_by == attacker
    assert list(run.campaign.targets.all()) == [job.target]


@pytest.mark.django_db
def test_the_importers_own_rows_of_the_same_name_and_values_are_used_again(bundle):
    owner = Target.objects.get(name="lab db").created_by
    api = client_for(owner)
    first = api.post("/api/v1/runs/import-bundle/", bundle, format="json")
    second = api.post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert first.status_code == second.status_code == 201
    one, two = Run.objects.get(pk=first.json()["id"]), Run.objects.get(pk=second.json()["id"])
    assert one.campaign_id == two.campaign_id
    assert one.jobs.get().target.name == "lab db" and two.jobs.get().scenario.name == "lab point select"
    # Same name, other values: a new row, never the importer's changed under them.
    bundle["targets"][0]["port"] = 3399
    third = api.post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert third.status_code == 201
    assert Run.objects.get(pk=third.json()["id"]).jobs.get().target.name == "lab db (imported)"
    assert Target.objects.get(name="lab db").port != 3399


@pytest.mark.django_db
def test_an_imported_run_says_so_on_its_list_page_job_and_comparison(bundle):
    operator = make_user(roles.OPERATOR, username="importer")
    api = client_for(operator)
    response = api.post("/api/v1/runs/import-bundle/", bundle, format="json")
    run = Run.objects.get(pk=response.json()["id"])
    job = run.jobs.get()
    assert job.imported and job.result.source == JobResult.Source.IMPORTED
    web = Client()
    web.force_login(operator)
    assert "import" in web.get("/runs/").content.decode()
    assert 'class="badge imported"' in web.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge imported"' in web.get(f"/jobs/{job.pk}/").content.decode()
    assert 'badge imported' in web.get(f"/compare/?runs={run.pk}").content.decode()


@pytest.mark.django_db
def test_a_target_at_benchapps_own_database_is_refused(bundle):
    own = settings.DATABASES["default"]
    bundle["targets"][0].update(driver="pgsql", host=own.get("HOST") or "127.0.0.1", port=int(own.get("PORT") or 5432),
                                database=own["NAME"])
    response = client_for(make_user(roles.OPERATOR)).post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert response.status_code == 400 and "targets[0].host:" in response.json()["bundle"][0]
