"""Input that must fail safely: every write endpoint of the API and the forms of the web UI answer a
400 naming the field or the cause (never a 500), whatever a client sends."""
from __future__ import annotations

import functools
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.settings import spectacular_settings
from rest_framework.test import APIClient

from campaigns import jsonlimits, monitoring, roles
from campaigns.api.fields import StrictInputMixin
from campaigns.jsonlimits import MAX_JSON_DEPTH
from campaigns.models import (
    Annotation,
    Campaign,
    CampaignSchedule,
    ClientHost,
    Regression,
    Run,
    ShareLink,
    Target,
    Workload,
    WorkloadVersion,
)
from tests.factories import CampaignFactory, JobResultFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db

WRITE_METHODS = ("post", "put", "patch")
# 4 KB of brackets, opened and closed: far deeper than Python's recursion limit.
NESTED_BODIES = {
    "arrays": "[" * 2048 + "]" * 2048,
    "objects": '{"a":' * 800 + "1" + "}" * 800,
    "an object of arrays": '{"a":' + "[" * 2040 + "]" * 2040 + "}",
}


@functools.cache
def _schema() -> dict[str, Any]:
    """Built once per test process (0.5 s each time; the tests only read it)."""
    return SchemaGenerator().get_schema(request=None, public=True)


def write_operations() -> list[tuple[str, str]]:
    """Every (path, method) of the API that writes, from its OpenAPI schema: none can be forgotten."""
    return [(path, method) for path, item in _schema()["paths"].items() for method in item
            if method in WRITE_METHODS]


@pytest.fixture
def one_of_each() -> dict[str, Any]:
    """A row of every resource a write endpoint's path names, so each request gets past its 404."""
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    result = JobResultFactory(job__target=target, job__scenario=scenario, job__run__campaign=campaign)
    schedule = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="0 2 * * *"))
    host = ClientHost.objects.create(hostname="input-host", queue="host.input-host")
    Campaign.objects.create(name="a seed template", is_template=True, template_key="seed-001")
    user = make_user(roles.VIEWER, "someone")
    note = Annotation.objects.create(run=result.job.run, at=timezone.now(), text="a note")
    change = Regression.objects.create(campaign=campaign, run=result.job.run, target=target, scenario=scenario,
                                       threads=8, metric="qps", kind="regression", baseline_value=10.0,
                                       current_value=9.0, change_pct=-10.0, method="test")
    link = ShareLink.objects.create(token_hash="0" * 64, created_by=user,
                                    expires_at=timezone.now() + timedelta(days=1))
    workload = Workload.objects.create(name="input-workload")
    version = WorkloadVersion.objects.create(workload=workload, number=1, content_hash="0" * 64, entry="a.lua",
                                             files={"a.lua": "function event() end"})
    return {
        "workloads": workload.pk, "workload-versions": version.pk,
        "share-links": link.pk,
        "products": target.product_id, "specs": target.spec_id, "targets": target.pk, "datasets": scenario.dataset_id,
        "scenarios": scenario.pk, "campaigns": campaign.pk, "runs": result.job.run_id, "jobs": result.job_id,
        "results": result.pk, "schedules": schedule.pk, "client-hosts": host.pk, "users": user.pk,
        "templates": "seed-001", "annotations": note.pk, "regressions": change.pk,
    }


def _url(path: str, ids: dict[str, Any]) -> str:
    if "{" not in path:
        return path
    resource = path.split("/")[3]
    return path.replace("{id}", str(ids[resource])).replace("{key}", str(ids[resource]))


def _send(client: APIClient, method: str, url: str, body: str) -> Any:
    return getattr(client, method)(url, body, content_type="application/json")


# ---------------------------------------------------------------- nested bodies


@pytest.mark.parametrize("shape", sorted(NESTED_BODIES))
def test_every_write_endpoint_answers_a_deeply_nested_body_with_a_400_naming_the_cause(shape, one_of_each):
    admin = client_for(make_user(roles.ADMIN))
    operations = write_operations()
    assert len(operations) >= 30
    answers = {}
    for path, method in operations:
        response = _send(admin, method, _url(path, one_of_each), NESTED_BODIES[shape])
        answers[f"{method.upper()} {path}"] = (response.status_code, response.content.decode()[:200])
    wrong = {op: answer for op, answer in answers.items()
             if answer[0] != 400 or "nested more than" not in answer[1]}
    assert not wrong, wrong


def test_anonymous_writes_with_a_nested_body_are_refused_without_a_500(one_of_each):
    for path, method in write_operations():
        response = _send(APIClient(), method, _url(path, one_of_each), NESTED_BODIES["arrays"])
        assert response.status_code in (400, 401), (method, path, response.status_code)
    token = _send(APIClient(), "post", "/api/v1/auth/token/", NESTED_BODIES["objects"])
    assert token.status_code == 400 and "nested more than" in token.json()["detail"]


def test_json_up_to_the_depth_limit_is_read_and_deeper_is_refused():
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert jsonlimits.loads(at_limit) is not None
    for text in ("[" + at_limit + "]", *NESTED_BODIES.values()):
        with pytest.raises(ValueError, match="nested more than"):
            jsonlimits.loads(text)
    assert jsonlimits.loads('{"threads": [1, 2]}') == {"threads": [1, 2]} and jsonlimits.loads("7") == 7


@pytest.mark.parametrize("shape", sorted(NESTED_BODIES))
def test_a_campaign_form_with_nested_json_in_its_thread_maps_shows_the_error(shape, role_client):
    # The thread-map fields read JSON back when the form is shown again: nesting must not break that.
    target = TargetFactory()
    response = role_client("operator").post("/campaigns/new/", {
        "name": "nested", "targets": [target.pk], "threads": "2", "repetitions": "1", "clients_min": "1",
        "scale_factor": "1", "threads_by_spec": NESTED_BODIES[shape], "threads_by_scenario": NESTED_BODIES[shape]})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="id_threads_by_spec_error1"' in html and 'id="id_threads_by_scenario_error1"' in html
    assert not Campaign.objects.filter(name="nested").exists()


# ---------------------------------------------------------------- unknown and read-only fields


def _request_serializers() -> dict[str, Any]:
    """Per write operation, the serializer drf-spectacular documents for its body (None: the action takes none).

    The same walk over the URLconf the schema is made from, so a new write endpoint is covered once routed."""
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    found = {}
    for path, path_regex, method, view in generator._get_paths_and_endpoints():
        if method.lower() not in WRITE_METHODS:
            continue
        view.request = spectacular_settings.GET_MOCK_REQUEST(method, path, view, None)
        view.schema.path, view.schema.path_regex, view.schema.method = path, path_regex, method
        serializer = view.schema.get_request_serializer()
        if isinstance(serializer, dict):  # per media type: {"multipart/form-data": ResultsImportSerializer}
            (serializer,) = set(serializer.values())
        found[f"{method} {path}"] = serializer if serializer is None or isinstance(serializer, type) else type(serializer)
    return found


def test_every_serializer_that_reads_a_request_body_refuses_unknown_and_read_only_fields():
    found = _request_serializers()
    assert len(found) == len(write_operations())
    lax = {op: cls.__name__ for op, cls in found.items() if cls is not None and not issubclass(cls, StrictInputMixin)}
    assert not lax
    # The actions that take no body check theirs against an empty strict serializer (the test below sends them one).
    assert {op for op, cls in found.items() if cls is None} == {
        "POST /api/v1/campaigns/{id}/plan/", "POST /api/v1/runs/{id}/cancel/", "POST /api/v1/targets/{id}/check/",
        "POST /api/v1/auth/token/revoke/", "POST /api/v1/runs/{id}/retry-failed/", "POST /api/v1/runs/{id}/run-again/",
        "POST /api/v1/share-links/{id}/revoke/", "POST /api/v1/targets/{id}/settings-confirm/",
        "POST /api/v1/client-hosts/{id}/revoke/", "POST /api/v1/workload-versions/{id}/approve/"}


def test_every_write_endpoint_answers_an_unknown_field_with_a_400_naming_it(one_of_each):
    admin = client_for(make_user(roles.ADMIN))
    wrong = {}
    for path, method in write_operations():
        response = _send(admin, method, _url(path, one_of_each), '{"bogus_field": 1}')
        body = response.json() if response.status_code == 400 else {}
        if "unknown field" not in str(body.get("bogus_field")):
            wrong[f"{method.upper()} {path}"] = (response.status_code, response.content[:200])
    assert not wrong, wrong
    assert not Run.objects.exclude(pk=one_of_each["runs"]).exists()


def _properties(schema: dict[str, Any], reference: dict[str, Any] | None) -> set[str]:
    if not reference or "$ref" not in reference:
        return set()
    return set(schema["components"]["schemas"][reference["$ref"].rsplit("/", 1)[1]].get("properties", {}))


def test_every_write_endpoint_answers_a_field_it_only_shows_with_a_400_naming_it(one_of_each):
    # What a response shows but the request does not take (ids, timestamps, a campaign's is_template) is
    # refused by name, not silently ignored.
    schema = _schema()
    admin = client_for(make_user(roles.ADMIN))
    checked, wrong = 0, {}
    for path, method in write_operations():
        operation = schema["paths"][path][method]
        content = operation.get("requestBody", {}).get("content", {})
        taken = set().union(*(_properties(schema, c.get("schema")) for c in content.values()))
        shown = set().union(*(_properties(schema, r.get("content", {}).get("application/json", {}).get("schema"))
                              for code, r in operation["responses"].items() if code.startswith("2")))
        for name in sorted(shown - taken):
            checked += 1
            response = _send(admin, method, _url(path, one_of_each), json.dumps({name: 1}))
            if response.status_code != 400 or name not in response.json():
                wrong[f"{method.upper()} {path} {name}"] = (response.status_code, response.content[:200])
    assert checked > 50 and not wrong, wrong


def test_a_campaign_cannot_be_made_a_template_over_the_api(one_of_each):
    operator = client_for(make_user(roles.OPERATOR))
    made = operator.post("/api/v1/campaigns/", {"name": "sneaky", "is_template": True, "template_key": ""},
                         format="json")
    assert made.status_code == 400
    assert set(made.json()) == {"is_template", "template_key"}
    patched = operator.patch(f"/api/v1/campaigns/{one_of_each['campaigns']}/", {"template_key": "seed-001"},
                             format="json")
    assert patched.status_code == 400 and "template_key" in patched.json()
    assert not Campaign.objects.filter(is_template=True).exclude(template_key="seed-001").exists()
    # Read, they are still there.
    shown = operator.get(f"/api/v1/campaigns/{one_of_each['campaigns']}/").json()
    assert shown["is_template"] is False and shown["template_key"] == ""


@pytest.mark.parametrize("body, field", [({}, "templates"), ({"bogus": 1}, "bogus"), ({"template": ["seed-001"]},
                                                                                        "template")])
def test_a_quick_run_names_its_templates_or_is_a_400_naming_the_field(body, field):
    operator = client_for(make_user(roles.OPERATOR))
    TargetFactory(name="demo-mariadb")
    response = operator.post("/api/v1/templates/quick-run/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Run.objects.exists() and not Campaign.objects.exists()


def test_a_browsable_api_form_post_may_carry_its_csrf_token_but_no_other_stranger():
    operator = client_for(make_user(roles.OPERATOR))
    made = operator.post("/api/v1/products/", {"name": "form-made", "engine": "mysql", "csrfmiddlewaretoken": "x"},
                         format="multipart")
    assert made.status_code == 201, made.content
    refused = operator.post("/api/v1/products/", {"name": "form-made-2", "engine": "mysql", "extra": "x"},
                            format="multipart")
    assert refused.status_code == 400 and "extra" in refused.json()


# ---------------------------------------------------------------- a target's host, user and database

BAD_CONNECTION_VALUES = ["db host", "db\nhost", "db\thost", "db\rhost", "-db", "db\x07", "db;id", "db$(id)", "db|x",
                         "db'x"]
BAD_HOSTS = ["db.example/x", "db..example", "http://db", "db:3306", "-db.example", "db-.example", "[::1]"]
GOOD_HOSTS = ["127.0.0.1", "::1", "db", "db-1.example.internal", "my_db", "db.example."]


def _target_fields(product_id: int, **changes: str) -> dict[str, Any]:
    return {"name": "checked", "product": product_id, "driver": "mysql", "host": "127.0.0.1", "port": 3306,
            "database": "sbtest", "user": "bench", **changes}


@pytest.mark.parametrize("field, value", [
    *((f, v) for f in ("host", "user", "database") for v in BAD_CONNECTION_VALUES),
    *(("host", v) for v in BAD_HOSTS),
])
def test_a_bad_host_user_or_database_is_a_400_naming_the_field_over_the_api(field, value):
    operator = client_for(make_user(roles.OPERATOR))
    target = TargetFactory()
    created = operator.post("/api/v1/targets/", _target_fields(target.product_id, **{field: value}), format="json")
    assert created.status_code == 400 and list(created.json()) == [field], created.content
    patched = operator.patch(f"/api/v1/targets/{target.pk}/", {field: value}, format="json")
    assert patched.status_code == 400 and list(patched.json()) == [field], patched.content
    assert not Target.objects.filter(name="checked").exists()
    target.refresh_from_db()
    assert "\n" not in target.host + target.user + target.database


@pytest.mark.parametrize("host", GOOD_HOSTS)
def test_a_host_name_or_ip_address_is_accepted(host):
    operator = client_for(make_user(roles.OPERATOR))
    created = operator.post("/api/v1/targets/", _target_fields(TargetFactory().product_id, host=host), format="json")
    assert created.status_code == 201, created.content


@pytest.mark.parametrize("field, value", [("host", "db host"), ("host", "db\nhost"), ("host", "db/x"),
                                          ("user", "bench user"), ("user", "-bench"), ("database", "sb\ntest"),
                                          ("database", "sb;test")])
def test_the_target_form_and_the_admin_show_the_same_errors(field, value, role_client):
    product_id = TargetFactory().product_id
    form = role_client("operator").post("/targets/new/", _target_fields(product_id, **{field: value}))
    assert f'id="id_{field}_error1"' in form.content.decode()
    superuser = get_user_model().objects.create_superuser("root-admin", password="pw-12345678")
    admin_site = Client()
    admin_site.force_login(superuser)
    added = admin_site.post("/admin/campaigns/target/add/", _target_fields(product_id, **{field: value}))
    assert added.status_code == 200 and field in added.context["adminform"].form.errors
    assert not Target.objects.filter(name="checked").exists()


# ---------------------------------------------------------------- rows no page expects


def test_the_seeds_page_renders_the_rows_it_can_and_logs_the_rest(role_client, caplog):
    good = Campaign.objects.create(name="seed 001 template", is_template=True, template_key="seed-001")
    # Rows the API once accepted from any operator: a template without a key, one no URL takes.
    empty = Campaign.objects.create(name="keyless template", is_template=True, template_key="")
    odd = Campaign.objects.create(name="odd template", is_template=True, template_key="a key/with spaces")
    for role in ("viewer", "operator"):
        with caplog.at_level("ERROR", logger="campaigns.views.base"):
            response = role_client(role).get("/seeds/")
        assert response.status_code == 200
        html = response.content.decode()
        assert 'id="template-seed-001"' in html and good.name in html
        if role == "operator":
            assert 'action="/seeds/seed-001/instantiate/"' in html
            table = html.split('id="templates-h"', 1)[1].split('id="instances-h"', 1)[0]
            assert table.count("<tr id=") == 1 and empty.name not in table and odd.name not in table
            logged = " ".join(r.getMessage() for r in caplog.records)
            assert "keyless template" in logged and "odd template" in logged
    assert client_for(make_user(roles.VIEWER, "api-viewer")).get("/api/v1/templates/").status_code == 200


def test_the_campaign_form_does_not_make_templates(role_client):
    target = TargetFactory()
    response = role_client("operator").post("/campaigns/new/", {
        "name": "not a template", "targets": [target.pk], "threads": "2", "repetitions": "1", "clients_min": "1",
        "scale_factor": "1", "is_template": "on", "template_key": ""})
    assert response.status_code == 302
    assert Campaign.objects.get(name="not a template").is_template is False


@pytest.mark.django_db
def test_a_lone_surrogate_in_any_field_is_a_400_not_a_500():
    # JSON's "\ud800" decodes to a lone surrogate, which PostgreSQL cannot store.
    api = client_for(make_user(roles.OPERATOR, "surrogate-operator"))
    for path, body in (("/api/v1/products/", '{"name": "x\\ud800", "engine": "other"}'),
                       ("/api/v1/workloads/", '{"name": "w", "entry": "a.lua", "files": {"a\\udfff.lua": "x=1"}}')):
        answer = api.post(path, body, content_type="application/json")
        assert answer.status_code == 400, (path, answer.content)
        assert "lone UTF-16 surrogate" in answer.json()["detail"]


@pytest.mark.django_db
def test_control_and_formatting_characters_are_refused_in_names():
    # A newline, a terminal's escape, a right-to-left override: 400 naming the field.
    api = client_for(make_user(roles.OPERATOR, "control-operator"))
    for name, code in (("a\nb", "U+000A"), ("a\x1b[31mred", "U+001B"), ("abc\u202edcba", "U+202E")):
        answer = api.post("/api/v1/products/", {"name": name, "engine": "other"}, format="json")
        assert answer.status_code == 400, answer.content
        assert code in answer.json()["name"][0], answer.json()
    assert api.post("/api/v1/products/", {"name": "MariaDB 11 (ça va)", "engine": "other"},
                    format="json").status_code == 201
