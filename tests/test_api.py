"""The REST API as a script sees it: roles, secrets, errors, actions, live samples, comparisons.

Everything runs against the real PostgreSQL through DRF's APIClient with token authentication;
the last test drives the README quick-start through a real Celery worker and sysbench.
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from campaigns import roles
from campaigns.downsample import lttb_indices, minmax_indices
from campaigns.models import (
    Campaign,
    ClientHost,
    IntervalSample,
    Job,
    JobClient,
    JobResult,
    Run,
    Scenario,
    Target,
)
from tests.conftest import wait_for
from tests.factories import (
    CampaignFactory,
    DatasetFactory,
    InstanceSpecFactory,
    JobFactory,
    JobResultFactory,
    ProductFactory,
    RunFactory,
    ScenarioFactory,
    TargetFactory,
)
from tests.helpers.measured import add_samples
from tests.helpers.users import API, body_text, client_for, make_user

DATA = Path(__file__).resolve().parent / "data"
SYSBENCH_LOGS = DATA / "sysbench"
SECRET = "Tr0ub4dor-s3cret-pw"


# ---------------------------------------------------------------- clients per role


@pytest.fixture
def viewer() -> APIClient:
    return client_for(make_user(roles.VIEWER))


@pytest.fixture
def operator() -> APIClient:
    return client_for(make_user(roles.OPERATOR))


@pytest.fixture
def admin() -> APIClient:
    return client_for(make_user(roles.ADMIN))


# ---------------------------------------------------------------- auth and roles

LIST_ENDPOINTS = ["products", "specs", "targets", "datasets", "scenarios", "campaigns", "runs", "jobs", "results",
                  "client-hosts"]


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", [*LIST_ENDPOINTS, "comparisons", "users"])
def test_anonymous_requests_get_401_with_a_token_challenge(endpoint):
    response = APIClient().get(f"{API}/{endpoint}/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert APIClient().post(f"{API}/{endpoint}/", {}, format="json").status_code == 401


@pytest.mark.django_db
def test_a_bad_token_gets_401():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get(f"{API}/products/").status_code == 401


@pytest.mark.django_db
def test_viewer_reads_everything_but_every_write_is_403(viewer):
    target = TargetFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[ScenarioFactory()])
    for endpoint in LIST_ENDPOINTS:
        assert viewer.get(f"{API}/{endpoint}/").status_code == 200, endpoint
    assert viewer.get(f"{API}/targets/{target.pk}/").status_code == 200
    assert viewer.post(f"{API}/products/", {"name": "x", "engine": "mysql"}).status_code == 403
    assert viewer.patch(f"{API}/targets/{target.pk}/", {"port": 3307}).status_code == 403
    assert viewer.delete(f"{API}/targets/{target.pk}/").status_code == 403
    assert viewer.post(f"{API}/campaigns/{campaign.pk}/launch/").status_code == 403
    assert viewer.post(f"{API}/campaigns/{campaign.pk}/plan/").status_code == 403
    assert viewer.get(f"{API}/users/").status_code == 403
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_user_without_a_role_reads_nothing():
    client = client_for(make_user(None))
    response = client.get(f"{API}/products/")
    assert response.status_code == 403
    assert "viewer" in response.json()["detail"]


@pytest.mark.django_db
def test_operator_writes_but_cannot_delete_or_touch_hosts_and_users(operator):
    response = operator.post(f"{API}/products/", {"name": "TencentDB for MySQL 8.0", "engine": "mysql"})
    assert response.status_code == 201, response.json()
    product_id = response.json()["id"]
    assert operator.patch(f"{API}/products/{product_id}/", {"vendor": "Tencent"}).json()["vendor"] == "Tencent"
    assert operator.delete(f"{API}/products/{product_id}/").status_code == 403
    host = ClientHost.objects.create(hostname="client-1", queue="host.client-1")
    assert operator.get(f"{API}/client-hosts/{host.pk}/").json()["online"] is True
    assert operator.patch(f"{API}/client-hosts/{host.pk}/", {"cores": 8}).status_code == 403
    assert operator.get(f"{API}/users/").status_code == 403


@pytest.mark.django_db
def test_admin_deletes_and_creates_users_with_a_role(admin):
    product = ProductFactory()
    assert admin.delete(f"{API}/products/{product.pk}/").status_code == 204
    response = admin.post(f"{API}/users/", {"username": "ci-bot", "password": "a-long-password-1", "role": "operator"})
    assert response.status_code == 201, response.json()
    assert response.json()["role"] == "operator"
    assert "password" not in response.json()
    listed = {u["username"]: u["role"] for u in admin.get(f"{API}/users/").json()["results"]}
    assert listed["ci-bot"] == "operator"
    token = APIClient().post(f"{API}/auth/token/", {"username": "ci-bot", "password": "a-long-password-1"},
                             format="json")
    assert token.status_code == 200
    assert token.json()["role"] == "operator"
    bot = APIClient()
    bot.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    assert bot.post(f"{API}/products/", {"name": "p", "engine": "mysql"}).status_code == 201
    # A role change takes effect; a too-short password is refused with its field named.
    user_id = response.json()["id"]
    assert admin.patch(f"{API}/users/{user_id}/", {"role": "viewer"}).json()["role"] == "viewer"
    short = admin.post(f"{API}/users/", {"username": "x", "password": "short", "role": "viewer"})
    assert short.status_code == 400 and "password" in short.json()


@pytest.mark.django_db
def test_the_token_endpoint_refuses_a_wrong_password_without_saying_which_part_was_wrong():
    make_user(roles.VIEWER, "alice")
    response = APIClient().post(f"{API}/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert "nope" not in response.content.decode()


@pytest.mark.django_db
def test_session_authentication_serves_the_browser():
    client = APIClient()
    client.force_login(make_user(roles.VIEWER))
    assert client.get(f"{API}/products/").status_code == 200


@pytest.mark.django_db
def test_schema_and_docs_need_a_login():
    anonymous = APIClient()
    assert anonymous.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").status_code == 401
    for page in ("/api/docs/", "/api/redoc/"):
        response = anonymous.get(page)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), page
    token = client_for(make_user(None, "roleless"))
    assert token.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").status_code == 200


@pytest.mark.django_db
def test_schema_and_docs_are_served_without_a_cdn():
    client = APIClient()
    client.force_login(make_user(roles.VIEWER))
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/v1/comparisons/" in paths and "/api/v1/jobs/{id}/samples/" in paths
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/api/docs/assets/swagger-ui-dist/swagger-ui-bundle.js" in html and "cdn" not in html
    asset = client.get("/api/docs/assets/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
    assert client.get("/api/docs/assets/../../settings.py").status_code in (400, 404)


# ---------------------------------------------------------------- target passwords are write-only


@pytest.mark.django_db
def test_the_target_password_is_write_only_everywhere(operator):
    product, spec = ProductFactory(), InstanceSpecFactory()
    created = operator.post(f"{API}/targets/", {
        "name": "db-1", "product": product.pk, "spec": spec.pk, "driver": "mysql", "host": "127.0.0.1",
        "port": 3306, "database": "sbtest", "user": "root", "password": SECRET,
    })
    assert created.status_code == 201, created.json()
    target = Target.objects.get(name="db-1")
    assert target.get_password() == SECRET and SECRET not in target.password_encrypted
    assert created.json()["has_password"] is True
    responses = [
        created,
        operator.get(f"{API}/targets/"),
        operator.get(f"{API}/targets/{target.pk}/"),
        operator.get(f"{API}/targets/?q=db"),
        # An invalid update carrying the password must not echo it back.
        operator.patch(f"{API}/targets/{target.pk}/", {"password": SECRET, "port": 0}),
        operator.patch(f"{API}/targets/{target.pk}/", {"password": SECRET, "host": "-bad"}),
        operator.post(f"{API}/targets/", {"name": "db-2", "password": SECRET, "driver": "oracle"}),
        operator.post(f"{API}/targets/", {"name": "db-1", "password": SECRET * 200}),
        operator.post(f"{API}/targets/", {"password": {"nested": SECRET}}),
    ]
    assert [r.status_code for r in responses[4:]] == [400] * 5
    assert "port" in responses[4].json() and "host" in responses[5].json()
    campaign = CampaignFactory(targets=[target], scenarios=[ScenarioFactory()])
    responses.append(operator.post(f"{API}/campaigns/{campaign.pk}/plan/"))
    JobResultFactory(job=JobFactory(target=target))
    responses.append(operator.get(f"{API}/results/?format=csv"))
    responses.append(operator.get(f"{API}/jobs/"))
    responses.append(operator.get("/api/schema/"))
    for response in responses:
        text = body_text(response)
        assert SECRET not in text
        if response.status_code < 300 and response.request["PATH_INFO"] != "/api/schema/":
            assert '"password"' not in text
    assert "--mysql-password=***" in json.dumps(responses[9].json())
    # Leaving the password out keeps it (while the endpoint stays); an empty string clears it.
    kept = operator.patch(f"{API}/targets/{target.pk}/", {"name": "db-1 renamed"})
    assert kept.json()["password_cleared"] is False and kept.json()["notice"] == ""
    target.refresh_from_db()
    assert target.get_password() == SECRET
    operator.patch(f"{API}/targets/{target.pk}/", {"password": ""})
    target.refresh_from_db()
    assert not target.has_password()


@pytest.mark.django_db
def test_the_schema_shows_the_password_in_requests_only():
    viewer = client_for(make_user(roles.VIEWER))
    schema = json.loads(viewer.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    components = schema["components"]["schemas"]
    assert "password" in components["TargetRequest"]["properties"]
    assert "password" not in components["Target"]["properties"]


# ---------------------------------------------------------------- 400 per field, 404, never 500


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("endpoint", "payload", "field"),
    [
        ("products", {"name": "p", "engine": "oracle"}, "engine"),
        ("products", {"engine": "mysql"}, "name"),
        ("specs", {"label": "huge", "cpu_cores": 10**30, "memory_gb": 1}, "cpu_cores"),
        ("specs", {"label": "nan", "cpu_cores": 1, "memory_gb": "NaN"}, "memory_gb"),
        ("datasets", {"name": "d", "tables": 1, "table_size": 10, "sizes_by_spec": "abc"}, "sizes_by_spec"),
        ("datasets", {"name": "d", "tables": 1, "table_size": 10, "sizes_by_spec": {"8-core": [1]}}, "sizes_by_spec"),
        ("datasets", {"name": "d", "tables": 0, "table_size": 10}, "tables"),
        ("scenarios", {"name": "s", "test": "no_such_test", "dataset": None}, "test"),
        ("campaigns", {"name": "c", "threads": [0]}, "threads"),
        ("campaigns", {"name": "c", "threads": "8"}, "threads"),
        ("campaigns", {"name": "c", "threads_by_spec": {"8-core": "many"}}, "threads_by_spec"),
        ("campaigns", {"name": "c", "threads_by_scenario": ["a"]}, "threads_by_scenario"),
        ("campaigns", {"name": "c", "targets": [10**25]}, "targets"),
        ("campaigns", {"name": "c", "notify_emails": "ops@example.com, not an address"}, "notify_emails"),
        ("campaigns", {"name": "c", "scale_factor": 2}, "scale_factor"),
        ("targets", {"name": "t", "driver": "mysql", "host": "h", "port": 70000, "database": "d", "user": "u"},
         "port"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field(operator, endpoint, payload, field):
    response = operator.post(f"{API}/{endpoint}/", payload)
    assert response.status_code == 400, response.content
    assert field in response.json()


@pytest.mark.django_db
def test_scenario_options_are_validated_by_the_sysbench_catalogue(operator):
    dataset = DatasetFactory()
    base = {"name": "rw", "test": "oltp_read_write", "dataset": dataset.pk}
    bad = operator.post(f"{API}/scenarios/", {**base, "options": {"no-such-option": 1}})
    assert bad.status_code == 400 and "options" in bad.json()
    wrong_type = operator.post(f"{API}/scenarios/", {**base, "options": {"point-selects": {"a": 1}}})
    assert wrong_type.status_code == 400 and "options" in wrong_type.json()
    fraction = operator.post(f"{API}/scenarios/", {**base, "percentile": 99.5})
    assert fraction.status_code == 400 and "percentile" in fraction.json()
    good = operator.post(f"{API}/scenarios/", {**base, "options": {"skip_trx": "on", "point-selects": "4"}})
    assert good.status_code == 201, good.json()
    assert good.json()["options"] == {"skip-trx": True, "point-selects": 4}
    # A partial update is checked against the stored test.
    scenario_id = good.json()["id"]
    assert operator.patch(f"{API}/scenarios/{scenario_id}/", {"options": {"bogus": 1}}).status_code == 400


@pytest.mark.django_db
def test_malformed_bodies_and_huge_numbers_are_400(operator):
    huge = '{"label": "x", "cpu_cores": 1' + "0" * 5000 + ', "memory_gb": 1}'
    assert operator.post(f"{API}/specs/", huge, content_type="application/json").status_code == 400
    assert operator.post(f"{API}/specs/", b"\xff\xfe{", content_type="application/json").status_code == 400
    assert operator.post(f"{API}/specs/", "[1, 2]", content_type="application/json").status_code == 400
    assert operator.post(f"{API}/specs/", '{"label": "x", "cpu_cores": 1, "memory_gb": 1e400}',
                         content_type="application/json").status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    ["jobs/?status=bogus", "jobs/?id=abc", "jobs/?threads_min=1.5", "jobs/?finished_after=yesterday",
     "specs/?cpu_cores=1e999999", "specs/?memory_gb_min=1e999999", "jobs/?q=" + "%00",
     "jobs/series-of-nonsense/", "comparisons/?targets=1,x", "comparisons/", "jobs/1/samples/?since=abc",
     "jobs/1/series/?max_points=1"],
)
def test_bad_query_parameters_are_a_400_or_404_never_a_500(viewer, query):
    JobFactory(pk=1)
    response = viewer.get(f"{API}/{query}")
    assert response.status_code in (400, 404), (query, response.status_code)


@pytest.mark.django_db
def test_out_of_range_ids_select_nothing(viewer):
    JobFactory()
    assert viewer.get(f"{API}/jobs/?id={10**30}").json()["count"] == 0
    assert viewer.get(f"{API}/jobs/?offset={10**30}").json()["results"] == []
    assert viewer.get(f"{API}/jobs/{10**18}/").status_code == 404
    assert viewer.get(f"{API}/jobs/{10**30}/").status_code == 404
    assert viewer.get(f"{API}/jobs/abc/").status_code == 404


@pytest.mark.django_db
def test_deleting_a_target_that_jobs_refer_to_is_a_409(admin):
    job = JobFactory()
    response = admin.delete(f"{API}/targets/{job.target_id}/")
    assert response.status_code == 409
    assert "1 jobs" in response.json()["detail"] and response.json()["code"] == "protected"
    assert Target.objects.filter(pk=job.target_id).exists()
    # The request failed cleanly: the same connection goes on working.
    assert admin.get(f"{API}/targets/{job.target_id}/").status_code == 200


# ---------------------------------------------------------------- campaigns: plan, launch, cancel


@pytest.fixture
def campaign() -> Campaign:
    targets = [TargetFactory(), TargetFactory()]
    scenarios = [ScenarioFactory(), ScenarioFactory()]
    return CampaignFactory(targets=targets, scenarios=scenarios, threads=[1, 4], repetitions=2)


@pytest.mark.django_db
def test_plan_lists_the_jobs_a_launch_would_create(operator, campaign):
    response = operator.post(f"{API}/campaigns/{campaign.pk}/plan/")
    assert response.status_code == 200
    assert response.json()["job_count"] == 2 * 2 * 2 * 2
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_launch_answers_202_with_the_run_and_creates_its_jobs(operator, campaign):
    response = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", {"label": "nightly"})
    assert response.status_code == 202, response.json()
    run = Run.objects.get()
    body = response.json()
    assert body["id"] == run.pk and body["status"] == "running" and body["trigger"] == "api"
    assert body["label"] == "nightly" and body["jobs_total"] == 16 and body["jobs_pending"] == 16
    assert run.jobs.count() == 16
    assert run.created_by.username == "user-operator"


@pytest.mark.django_db
def test_a_retried_launch_with_the_same_idempotency_key_returns_the_same_run(operator, campaign):
    first = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", HTTP_IDEMPOTENCY_KEY="ci-build-42")
    second = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", HTTP_IDEMPOTENCY_KEY="ci-build-42")
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert Run.objects.count() == 1
    assert Run.objects.get().idempotency_key == "ci-build-42"
    too_long = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", HTTP_IDEMPOTENCY_KEY="k" * 201)
    assert too_long.status_code == 400 and "Idempotency-Key" in too_long.json()


@pytest.mark.django_db
def test_launching_a_campaign_that_is_already_running_is_a_409(operator, campaign):
    assert operator.post(f"{API}/campaigns/{campaign.pk}/launch/").status_code == 202
    again = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", HTTP_IDEMPOTENCY_KEY="another-key")
    assert again.status_code == 409
    assert "already has a run in progress" in again.json()["detail"]
    assert Run.objects.count() == 1


@pytest.mark.django_db
def test_launching_an_empty_campaign_is_a_409(operator):
    empty = CampaignFactory()
    assert operator.post(f"{API}/campaigns/{empty.pk}/launch/").status_code == 409


@pytest.mark.django_db
def test_cancel_stops_an_active_run_and_cancelling_a_finished_run_is_a_409(operator, admin, campaign):
    run_id = operator.post(f"{API}/campaigns/{campaign.pk}/launch/").json()["id"]
    cancelled = operator.post(f"{API}/runs/{run_id}/cancel/")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["jobs_cancelled"] == 16
    again = operator.post(f"{API}/runs/{run_id}/cancel/")
    assert again.status_code == 409
    assert "already cancelled" in again.json()["detail"]
    assert admin.delete(f"{API}/runs/{run_id}/").status_code == 204


@pytest.mark.django_db
def test_deleting_a_campaign_or_run_in_progress_is_a_409(operator, admin, campaign):
    run_id = operator.post(f"{API}/campaigns/{campaign.pk}/launch/").json()["id"]
    assert admin.delete(f"{API}/campaigns/{campaign.pk}/").status_code == 409
    assert admin.delete(f"{API}/runs/{run_id}/").status_code == 409
    assert Campaign.objects.filter(pk=campaign.pk).exists()


@pytest.mark.django_db
def test_checking_an_unreachable_target_is_a_400_naming_the_cause(operator):
    target = TargetFactory(port=1, password=SECRET)
    response = operator.post(f"{API}/targets/{target.pk}/check/")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "target_unreachable"
    assert "connection refused to 127.0.0.1:1" in body["detail"]
    assert SECRET not in response.content.decode()


@pytest.mark.django_db
def test_checking_a_reachable_target_returns_its_version_and_settings(operator):
    target = TargetFactory(database="mysql")
    response = operator.post(f"{API}/targets/{target.pk}/check/")
    assert response.status_code == 200, response.json()
    assert "MariaDB" in response.json()["version"]
    assert "innodb_buffer_pool_size" in response.json()["settings"]


# ---------------------------------------------------------------- scenarios from a pasted command


def seed_command(title: str) -> str:
    blocks = (DATA / "seed_commands.txt").read_text().split("\n---\n")
    for block in blocks:
        if block.lstrip().startswith(f"# {title}"):
            return block.split("\n", 1)[1]
    raise AssertionError(f"no seed command {title!r}")


@pytest.mark.django_db
def test_from_command_reads_a_seed_003_command_without_keeping_the_password(operator):
    command = seed_command("seed 003: step 2, OLTP read-only scenario")
    response = operator.post(f"{API}/scenarios/from-command/", {"command": command})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["test"] == "oltp_read_only" and body["command"] == "run"
    assert body["tables"] == 10 and body["table_size"] == 10_000_000 and body["time_s"] == 300
    assert body["threads"][0] == 2 and body["threads"][-1] == 3000
    assert body["options"]["skip-trx"] is True
    assert body["target_hint"]["driver"] == "mysql" and "password" not in body["target_hint"]
    assert any("password was dropped" in w for w in body["warnings"])
    assert body["proposed"] == {"test": "oltp_read_only", "options": {"skip-trx": True}, "time_s": 300,
                                "report_interval_s": 1, "percentile": 95.0}
    assert body["scenario"] is None and not Scenario.objects.exists()


@pytest.mark.django_db
def test_from_command_with_save_creates_the_scenario(operator):
    dataset = DatasetFactory(name="seed-003", tables=10, table_size=10_000_000)
    command = seed_command("seed 003: step 2, OLTP write-only scenario").replace("--mysql-password=XXX",
                                                                                 f"--mysql-password={SECRET}")
    missing = operator.post(f"{API}/scenarios/from-command/", {"command": command, "save": True})
    assert missing.status_code == 400 and set(missing.json()) == {"name", "dataset"}
    response = operator.post(f"{API}/scenarios/from-command/",
                             {"command": command, "save": True, "name": "003 write-only", "dataset": dataset.pk})
    assert response.status_code == 201, response.json()
    assert SECRET not in response.content.decode()
    scenario = Scenario.objects.get(name="003 write-only")
    assert response.json()["scenario"]["id"] == scenario.pk
    assert scenario.test == "oltp_write_only" and scenario.time_s == 300 and scenario.percentile == 95
    assert scenario.dataset == dataset and SECRET not in json.dumps(scenario.options)
    duplicate = operator.post(f"{API}/scenarios/from-command/",
                              {"command": command, "save": True, "name": "003 write-only", "dataset": dataset.pk})
    assert duplicate.status_code == 400 and "name" in duplicate.json()


@pytest.mark.django_db
def test_from_command_without_a_test_is_a_400_naming_the_command(operator):
    response = operator.post(f"{API}/scenarios/from-command/", {"command": "ls -la /tmp"})
    assert response.status_code == 400
    assert "no sysbench test" in response.json()["command"][0]


# ---------------------------------------------------------------- importing logs


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/plain")


@pytest.mark.django_db
def test_import_stores_a_real_sysbench_log_as_a_run_with_its_figures(operator):
    target, scenario = TargetFactory(), ScenarioFactory(test="oltp_read_write")
    log = (SYSBENCH_LOGS / "mysql_oltp_read_write.txt").read_bytes()
    response = operator.post(f"{API}/results/import/", {
        "files": [upload("rw.txt", log)], "target": target.pk, "scenario": scenario.pk,
    }, format="multipart")
    assert response.status_code == 201, response.json()
    result = response.json()["results"][0]
    assert result["qps"] == pytest.approx(7234.43) and result["tps"] == pytest.approx(361.72)
    assert result["latency_pct"] == 95.0 and result["latency_pct_ms"] == pytest.approx(3.43)
    assert result["source"] == "imported" and result["target"] == target.pk
    assert response.json()["run"]["trigger"] == "import"
    assert IntervalSample.objects.filter(job_id=result["job"]).count() == 3


@pytest.mark.django_db
def test_an_imported_log_with_checkpoints_is_stored_as_the_whole_run_not_its_last_block(operator):
    target, scenario = TargetFactory(), ScenarioFactory(test="oltp_read_write")
    log = (SYSBENCH_LOGS / "mysql_oltp_read_write_checkpoints_whole_run.txt").read_bytes()
    response = operator.post(f"{API}/results/import/", {
        "files": [upload("checkpoints.txt", log)], "target": target.pk, "scenario": scenario.pk,
    }, format="multipart")
    assert response.status_code == 201, response.json()
    result = response.json()["results"][0]
    # 1,378 + 1,262 + 1,050 transactions in 9.0164 s; the final block alone (after the last checkpoint)
    # says 348.43 tps, which is what used to be stored.
    assert result["tps"] == pytest.approx(409.25) and result["transactions"] == 3690
    assert result["duration_s"] == pytest.approx(9.0164) and result["ignored_errors"] == 4
    # No printed figure is the whole run's percentile: none is stored rather than the last block's.
    assert result["latency_pct_ms"] is None
    assert result["latency_max_ms"] == pytest.approx(21.39) and result["latency_avg_ms"] == pytest.approx(4.88)


@pytest.mark.django_db
@pytest.mark.parametrize(("files", "status"), [
    (["cut.txt"], "failed"),
    (["cut.txt", "whole.txt"], "partially_succeeded"),
    (["whole.txt"], "succeeded"),
])
def test_an_imported_runs_status_follows_its_jobs_by_the_measured_runs_rule(operator, files, status):
    """A log that ends before its final statistics is a failed job: a run of only such jobs is failed, not
    succeeded."""
    log = (SYSBENCH_LOGS / "mysql_oltp_read_write.txt").read_bytes()
    contents = {"whole.txt": log, "cut.txt": log[:log.index(b"SQL statistics:")]}
    target, scenario = TargetFactory(), ScenarioFactory(test="oltp_read_write")
    response = operator.post(f"{API}/results/import/", {
        "files": [upload(name, contents[name]) for name in files], "target": target.pk, "scenario": scenario.pk,
    }, format="multipart")
    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["run"]["id"])
    assert run.status == status and run.finished_at is not None
    jobs = {job.status for job in run.jobs.all()}
    assert jobs == ({"failed", "succeeded"} if len(files) == 2 else {status})
    if "cut.txt" in files:
        assert "final statistics" in run.jobs.get(status="failed").error


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("notes.txt", b"just some notes\nnothing to see\n", "notes.txt: not sysbench output"),
        ("latin1.txt", "sysbench 1.0.20 caf\xe9".encode("latin-1"), "latin1.txt: not UTF-8"),
        ("binary.log", b"sysbench 1.0.20\x00\x01\x02", "binary.log: binary data"),
    ],
)
def test_import_refuses_a_file_that_is_not_sysbench_output_and_stores_nothing(operator, name, content, message):
    target, scenario = TargetFactory(), ScenarioFactory()
    good = (SYSBENCH_LOGS / "mysql_oltp_point_select.txt").read_bytes()
    counts = (Run.objects.count(), Job.objects.count(), JobResult.objects.count(), Campaign.objects.count())
    response = operator.post(f"{API}/results/import/", {
        "files": [upload("good.txt", good), upload(name, content)], "target": target.pk, "scenario": scenario.pk,
    }, format="multipart")
    assert response.status_code == 400
    assert message in json.dumps(response.json())
    after = (Run.objects.count(), Job.objects.count(), JobResult.objects.count(), Campaign.objects.count())
    assert after == counts


@pytest.mark.django_db
def test_import_of_too_many_files_is_a_json_400(operator):
    files = [upload(f"log-{i}.txt", b"x") for i in range(101)]
    response = operator.post(f"{API}/results/import/", {"files": files, "target": 1, "scenario": 1},
                             format="multipart")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "malformed"


@pytest.mark.django_db
def test_import_needs_files_target_and_scenario(operator):
    response = operator.post(f"{API}/results/import/", {}, format="multipart")
    assert response.status_code == 400
    assert {"files", "target", "scenario"} <= set(response.json())


@pytest.mark.django_db
def test_a_job_in_detail_shows_its_clients_and_snapshots(viewer):
    job = JobFactory(server_snapshot={"before": {"version": "10.11.6-MariaDB"}})
    JobClient.objects.create(job=job, index=0, host_name="client-a", threads=4, status="succeeded", exit_code=0,
                             command_line="sysbench oltp_read_write --mysql-password=*** run")
    detail = viewer.get(f"{API}/jobs/{job.pk}/").json()
    assert detail["server_snapshot"]["before"]["version"] == "10.11.6-MariaDB"
    assert detail["clients"][0]["host_name"] == "client-a" and "***" in detail["clients"][0]["command_line"]
    assert "server_snapshot" not in viewer.get(f"{API}/jobs/").json()["results"][0]


# ---------------------------------------------------------------- live samples and series


@pytest.mark.django_db
def test_samples_since_sums_clients_per_second_and_keeps_the_worst_latency(viewer):
    job = JobFactory(status=Job.Status.RUNNING, clients_needed=2)
    add_samples(job, 0, [1, 2, 3, 4, 5], qps=lambda t: 100 * t, lat=lambda t: 4.0)
    add_samples(job, 1, [1, 2, 3, 4], qps=lambda t: 10 * t, lat=lambda t: 6.0 + t)
    response = viewer.get(f"{API}/jobs/{job.pk}/samples/?since=2")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "running" and body["finished"] is False
    assert body["latency"] == {"pct": 95.0, "aggregate": "max", "label": "worst client"}
    assert [s["t"] for s in body["samples"]] == [3, 4, 5]
    assert body["samples"][0]["qps"] == 330 and body["samples"][0]["clients"] == 2
    assert body["samples"][0]["threads"] == 4 and body["samples"][0]["tps"] == 20
    assert body["samples"][0]["latency_pct_ms"] == 9.0
    assert body["samples"][2] == {**body["samples"][2], "qps": 500, "clients": 1, "latency_pct_ms": 4.0}
    assert body["last_t"] == 5 and body["more"] is False
    # Polling again from the last second seen returns nothing new.
    assert viewer.get(f"{API}/jobs/{job.pk}/samples/?since=5").json()["samples"] == []
    assert len(viewer.get(f"{API}/jobs/{job.pk}/samples/").json()["samples"]) == 5
    limited = viewer.get(f"{API}/jobs/{job.pk}/samples/?limit=2").json()
    assert [s["t"] for s in limited["samples"]] == [1, 2] and limited["more"] is True


@pytest.mark.django_db
def test_series_is_downsampled_to_1000_points_keeping_every_extreme(viewer):
    job = JobFactory()
    ts = [float(t) for t in range(1, 5001)]
    qps = {t: 1000 + 100 * math.sin(t / 50) for t in ts}
    qps[1234.0], qps[4321.0] = 5000.0, 1.0
    lat = {t: 5 + (t % 7) for t in ts}
    lat[77.0] = 250.0
    add_samples(job, 0, ts, qps=qps.__getitem__, lat=lat.__getitem__)
    body = viewer.get(f"{API}/jobs/{job.pk}/series/").json()
    assert body["total_points"] == 5000 and body["downsampled"] is True and body["method"] == "minmax"
    for metric, points in body["series"].items():
        assert len(points) <= 1000, metric
        assert [p[0] for p in points] == sorted(p[0] for p in points)
    qps_points = dict(map(tuple, body["series"]["qps"]))
    assert qps_points[1234.0] == 5000.0 and qps_points[4321.0] == 1.0
    assert max(v for _, v in body["series"]["latency_pct_ms"]) == 250.0
    full = viewer.get(f"{API}/jobs/{job.pk}/series/?full=1").json()
    assert full["downsampled"] is False and len(full["series"]["qps"]) == 5000
    lttb = viewer.get(f"{API}/jobs/{job.pk}/series/?method=lttb&max_points=500").json()
    assert len(lttb["series"]["qps"]) == 500


def test_minmax_downsampling_keeps_the_min_and_max_of_every_bucket():
    values = [math.sin(i / 10) * i for i in range(5000)]
    kept = minmax_indices(values, 1000)
    assert len(kept) <= 1000 and kept == sorted(kept)
    assert values.index(max(values)) in kept and values.index(min(values)) in kept
    assert minmax_indices([1.0, None, 3.0], 1000) == [0, 1, 2]
    assert len(minmax_indices([None] * 5000, 1000)) == 500


def test_lttb_keeps_the_ends_and_the_point_budget():
    ts = list(range(5000))
    values = [float(i % 100) for i in ts]
    kept = lttb_indices(ts, values, 1000)
    assert len(kept) == 1000 and kept[0] == 0 and kept[-1] == 4999 and kept == sorted(kept)


# ---------------------------------------------------------------- comparisons


@pytest.fixture
def comparison_data() -> dict[str, Any]:
    """Two products on the same spec, one scenario, 2 thread counts × 3 repetitions, plus noise to ignore."""
    spec = InstanceSpecFactory(label="8-core 32 GB MEM", cpu_cores=8, memory_gb=32)
    mysql = TargetFactory(product=ProductFactory(name="MySQL 8.0"), spec=spec)
    tdsql = TargetFactory(product=ProductFactory(name="TDSQL-C"), spec=spec)
    scenario = ScenarioFactory(name="read-write", test="oltp_read_write",
                               dataset=DatasetFactory(name="sbtest 10x1M", tables=10, table_size=1_000_000))
    run = RunFactory()
    figures = {
        (mysql, 8): [1000, 1100, 1200], (mysql, 16): [2000, 2000, 2300],
        (tdsql, 8): [1500, 1650, 1800], (tdsql, 16): [3000, 2900, 3100],
    }
    for (target, threads), qps_values in figures.items():
        for repetition, qps in enumerate(qps_values, start=1):
            job = JobFactory(run=run, target=target, scenario=scenario, threads=threads, repetition=repetition,
                             tables=10, table_size=1_000_000)
            JobResultFactory(job=job, qps=qps, tps=qps / 20, latency_avg_ms=8000 / qps, latency_pct_ms=16000 / qps)
    # A failed job's result never counts.
    failed = JobFactory(run=run, target=mysql, scenario=scenario, threads=8, status=Job.Status.FAILED,
                        tables=10, table_size=1_000_000)
    JobResultFactory(job=failed, qps=1)
    return {"mysql": mysql, "tdsql": tdsql, "scenario": scenario, "run": run, "spec": spec}


@pytest.mark.django_db
def test_comparison_tables_products_per_dataset_and_scenario_with_geometric_means_spread_and_deltas(
        viewer, comparison_data):
    mysql, tdsql = comparison_data["mysql"], comparison_data["tdsql"]
    response = viewer.get(f"{API}/comparisons/?targets={mysql.pk},{tdsql.pk}")
    assert response.status_code == 200
    body = response.json()
    assert [p["name"] for p in body["products"]] == ["MySQL 8.0", "TDSQL-C"]
    assert body["baseline_product"] == mysql.product_id and body["job_count"] == 12
    (group,) = body["groups"]
    assert group["dataset"]["name"] == "sbtest 10x1M" and group["scenario"]["name"] == "read-write"
    assert [(r["spec"], r["threads"], r["concurrency"], r["tables"], r["table_size"]) for r in group["rows"]] == [
        ("8-core 32 GB MEM", 8, 8, 10, 1_000_000), ("8-core 32 GB MEM", 16, 16, 10, 1_000_000)]
    base, other = group["rows"][0]["cells"]
    # The value is the geometric mean of the repetitions (1000, 1100, 1200); the median stays beside it.
    assert base["qps"] == {"value": 1096.9613, "statistic": "geometric mean", "median": 1100.0, "n": 3,
                           "mean": 1100.0, "stdev": 100.0, "cv_pct": 9.09, "min": 1000.0, "max": 1200.0}
    assert base["tps"]["median"] == 55.0 and base["latency_pct"] == 95.0 and base["n"] == 3
    assert base["delta_pct"] == {"qps": None, "tps": None, "latency_avg_ms": None, "latency_pct_ms": None}
    # Δ% = ratio of geometric means − 1, the second product against the first.
    assert other["qps"]["median"] == 1650.0 and other["delta_pct"]["qps"] == 50.0
    assert other["delta_pct"]["latency_avg_ms"] == pytest.approx(-33.33, abs=0.01)
    # products= puts the baseline first as asked.
    swapped = viewer.get(f"{API}/comparisons/?products={tdsql.product_id},{mysql.product_id}").json()
    assert [p["name"] for p in swapped["products"]] == ["TDSQL-C", "MySQL 8.0"]
    # 2095.38 (geometric mean of 2000, 2000, 2300) against 2998.89 (of 3000, 2900, 3100).
    assert swapped["groups"][0]["rows"][1]["cells"][1]["delta_pct"]["qps"] == pytest.approx(-30.13, abs=0.01)
    by_run = viewer.get(f"{API}/comparisons/?runs={comparison_data['run'].pk}&threads=16").json()
    assert [r["threads"] for r in by_run["groups"][0]["rows"]] == [16]


@pytest.mark.django_db
def test_comparison_exports_csv(viewer, comparison_data):
    response = viewer.get(f"{API}/comparisons/?campaign={comparison_data['run'].campaign_id}&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body_text(response))))
    assert len(rows) == 4
    first = rows[0]
    assert (first["scenario"], first["spec"], first["threads"], first["product"]) == \
        ("read-write", "8-core 32 GB MEM", "8", "MySQL 8.0")
    assert float(first["qps_median"]) == 1100.0 and first["n"] == "3"
    assert (float(first["qps_value"]), float(first["qps_min"]), float(first["qps_max"]), float(first["qps_stdev"])) \
        == (1096.9613, 1000.0, 1200.0, 100.0)
    assert float(rows[1]["qps_delta_pct"]) == 50.0


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_comparison_filtered_to_a_target_without_results_is_empty_not_a_500(viewer, comparison_data, fmt):
    """An empty products= and a target whose product has no cell in the selection."""
    idle = TargetFactory(product=ProductFactory(name="Idle product"), spec=comparison_data["spec"])
    run, scenario = comparison_data["run"], comparison_data["scenario"]
    response = viewer.get(f"{API}/comparisons/?campaign={run.campaign_id}&products=&runs={run.pk}"
                          f"&scenarios={scenario.pk}&specs={comparison_data['spec'].pk}&targets={idle.pk}"
                          f"&threads=8&format={fmt}")
    assert response.status_code == 200, body_text(response)
    if fmt == "csv":
        assert list(csv.DictReader(io.StringIO(body_text(response)))) == []
    else:
        assert response.json()["products"] == [] and response.json()["groups"] == []
    # Beside a target that has results, the idle one's product is left out rather than shown empty.
    both = viewer.get(f"{API}/comparisons/?targets={idle.pk},{comparison_data['tdsql'].pk}&products=").json()
    assert [p["name"] for p in both["products"]] == ["TDSQL-C"]


@pytest.mark.django_db
def test_results_export_csv_with_their_context(viewer, comparison_data):
    response = viewer.get(f"{API}/results/?product={comparison_data['tdsql'].product_id}&format=csv&ordering=id")
    rows = list(csv.DictReader(io.StringIO(body_text(response))))
    assert len(rows) == 6
    assert {r["product_name"] for r in rows} == {"TDSQL-C"} and rows[0]["spec_label"] == "8-core 32 GB MEM"
    assert rows[0]["threads"] == "8" and float(rows[0]["qps"]) == 1500.0


@pytest.mark.django_db
def test_results_list_filters_and_orders(viewer, comparison_data):
    body = viewer.get(f"{API}/results/?job_status=succeeded&threads_min=16&ordering=-qps").json()
    assert body["count"] == 6
    assert [r["qps"] for r in body["results"]][:2] == [3100.0, 3000.0]
    assert body["results"][0]["scenario_name"] == "read-write" and body["results"][0]["threads"] == 16


# ---------------------------------------------------------------- query counts


def _rows(kind: str, n: int) -> None:
    for _ in range(n):
        if kind in ("jobs", "results", "runs"):
            JobResultFactory()
        elif kind == "campaigns":
            CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
        elif kind == "client-hosts":
            ClientHost.objects.create(hostname=f"host-{ClientHost.objects.count()}", queue="q")
        elif kind == "users":
            make_user(roles.VIEWER, f"viewer-{get_user_model().objects.count()}")
        elif kind == "scenarios":
            ScenarioFactory()
        elif kind == "targets":
            TargetFactory()
        elif kind == "products":
            ProductFactory()
        elif kind == "specs":
            InstanceSpecFactory()
        elif kind == "datasets":
            DatasetFactory(name=f"ds-{n}-{Scenario.objects.count()}-{_}")


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", [*LIST_ENDPOINTS, "users"])
def test_list_query_count_does_not_grow_with_rows(admin, endpoint, django_assert_max_num_queries):
    # Token + user, roles, count, rows, and the prefetches: jobs and results their targets and scenarios,
    # campaigns their targets and scenarios, users their groups.
    budget = 6
    for n in (2, 12):
        _rows(endpoint, n)
        with django_assert_max_num_queries(budget):
            response = admin.get(f"{API}/{endpoint}/?limit=100")
        assert response.status_code == 200
        assert response.json()["count"] >= n


@pytest.mark.django_db
def test_comparison_query_count_does_not_grow_with_rows(viewer, django_assert_max_num_queries):
    spec = InstanceSpecFactory()
    targets = [TargetFactory(spec=spec), TargetFactory(spec=spec)]
    ids = ",".join(str(t.pk) for t in targets)
    for threads in (1, 2, 4, 8, 16, 32):
        for target in targets:
            JobResultFactory(job=JobFactory(target=target, threads=threads))
        # 4, and one each for the cells' per-query costs and the specs' prices of the curves.
        with django_assert_max_num_queries(6):
            assert viewer.get(f"{API}/comparisons/?targets={ids}").status_code == 200


# ---------------------------------------------------------------- the README quick-start


def quickstart(client: APIClient, *, admin_password: str, target_db: str, poll: Callable[[int], dict]) -> dict:
    """The README's curl sequence, step by step, as a script would run it."""
    token = client.post(f"{API}/auth/token/", {"username": "admin", "password": admin_password}).json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    product = client.post(f"{API}/products/", {"name": "MariaDB 10.11", "engine": "mariadb"}).json()
    spec = client.post(f"{API}/specs/", {"label": "local 2-core", "cpu_cores": 2, "memory_gb": 4}).json()
    target = client.post(f"{API}/targets/", {
        "name": "local-mariadb", "product": product["id"], "spec": spec["id"], "driver": "mysql",
        "host": "127.0.0.1", "port": 3306, "database": target_db, "user": "root", "password": "",
    })
    assert target.status_code == 201, target.json()
    dataset = client.post(f"{API}/datasets/", {"name": "tiny 1x200", "tables": 1, "table_size": 200}).json()
    scenario = client.post(f"{API}/scenarios/from-command/", {
        "command": "sysbench oltp_read_only --mysql-host=db.example --mysql-user=sb --mysql-password=secret "
                   "--tables=1 --table-size=200 --threads=1 --time=2 --report-interval=1 run",
        "save": True, "name": "read-only 2 s", "dataset": dataset["id"],
    })
    assert scenario.status_code == 201, scenario.json()
    campaign = client.post(f"{API}/campaigns/", {
        "name": "quick-start", "targets": [target.json()["id"]], "scenarios": [scenario.json()["scenario"]["id"]],
        "threads": [1],
    })
    assert campaign.status_code == 201, campaign.json()
    launched = client.post(f"{API}/campaigns/{campaign.json()['id']}/launch/", HTTP_IDEMPOTENCY_KEY="quick-start-1")
    assert launched.status_code == 202, launched.json()
    run = poll(launched.json()["id"])
    comparison = client.get(f"{API}/comparisons/?runs={run['id']}")
    assert comparison.status_code == 200
    return {"run": run, "comparison": comparison.json()}


@pytest.mark.django_db
def test_the_quickstart_sequence_up_to_the_launch(operator):
    get_user_model().objects.create_superuser("admin", password="quick-start-pw")

    def poll(run_id: int) -> dict:
        run = APIClient().get(f"{API}/runs/{run_id}/")
        assert run.status_code == 401
        return operator.get(f"{API}/runs/{run_id}/").json()

    outcome = quickstart(APIClient(), admin_password="quick-start-pw", target_db="bench_test", poll=poll)
    assert outcome["run"]["status"] == "running" and outcome["run"]["jobs_total"] == 1
    assert outcome["comparison"]["groups"] == []


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_quickstart_sequence_through_a_real_worker(celery_worker_process, target_databases):
    get_user_model().objects.create_superuser("admin", password="quick-start-pw")
    client = APIClient()

    def poll(run_id: int) -> dict:
        def finished() -> dict | None:
            run = client.get(f"{API}/runs/{run_id}/").json()
            return run if run["status"] in ("succeeded", "partially_succeeded", "failed", "cancelled") else None

        run = wait_for(finished, timeout_s=120, interval_s=0.5, what=f"run {run_id} to finish")
        job = client.get(f"{API}/jobs/?run={run_id}").json()["results"][0]
        assert run["status"] == "succeeded", job["error"]
        samples = client.get(f"{API}/jobs/{job['id']}/samples/?since=0").json()
        assert samples["finished"] is True and len(samples["samples"]) >= 1
        return run

    outcome = quickstart(client, admin_password="quick-start-pw", target_db=target_databases["mysql"], poll=poll)
    result = JobResult.objects.get(job__run_id=outcome["run"]["id"])
    (group,) = outcome["comparison"]["groups"]
    (cell,) = group["rows"][0]["cells"]
    assert cell["qps"]["median"] == pytest.approx(result.qps, rel=1e-4) and cell["n"] == 1
    assert JobClient.objects.get(job=result.job).command_line.count("secret") == 0
