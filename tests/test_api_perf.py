"""What keeps the API fast stays correct: cached comparisons and series are never stale, and the
read paths' query counts do not grow with the rows they read (bench/api_bench.py measures speed).
"""
from __future__ import annotations

import json
import time

import pytest
from django.test import override_settings

from campaigns.execution import results
from campaigns.models import Job, Run
from tests.factories import (
    InstanceSpecFactory,
    JobFactory,
    JobResultFactory,
    ProductFactory,
    RunFactory,
    ScenarioFactory,
    TargetFactory,
)
from tests.helpers.measured import add_samples
from tests.helpers.users import API, client_for, make_user

# How long the cache tests try for two requests with no commit anywhere in the cluster between them.
TRY_FOR_S = 20

UNREACHABLE_CACHE = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                 "LOCATION": "redis://127.0.0.1:1/0",
                                 "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}


@pytest.fixture
def viewer():
    return client_for(make_user("viewer"))


@pytest.fixture
def two_products():
    spec = InstanceSpecFactory(label="4-core 16 GB")
    first = TargetFactory(product=ProductFactory(name="Alpha DB"), spec=spec)
    second = TargetFactory(product=ProductFactory(name="Beta DB"), spec=spec)
    scenario = ScenarioFactory(name="point selects", test="oltp_point_select")
    run = RunFactory()
    for target, qps in ((first, 1000.0), (second, 1500.0)):
        JobResultFactory(job=JobFactory(run=run, target=target, scenario=scenario, threads=8), qps=qps)
    return {"first": first, "second": second, "scenario": scenario, "run": run, "spec": spec,
            "url": f"{API}/comparisons/?products={first.product_id},{second.product_id}"}


def _qps_medians(body: dict) -> list[float | None]:
    return [cell and cell["qps"]["median"] for group in body["groups"] for row in group["rows"]
            for cell in row["cells"]]


# ---------------------------------------------------------------- cached comparisons are never stale


@pytest.mark.django_db
def test_a_repeated_comparison_is_the_same_answer_byte_for_byte(viewer, two_products):
    first = viewer.get(two_products["url"])
    again = viewer.get(two_products["url"])
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and again["Content-Type"] == first["Content-Type"] == "application/json"
    assert _qps_medians(again.json()) == [1000.0, 1500.0]


@pytest.mark.django_db
def test_a_new_result_is_in_the_very_next_comparison(viewer, two_products):
    assert viewer.get(two_products["url"]).json()["job_count"] == 2
    JobResultFactory(job=JobFactory(run=two_products["run"], target=two_products["first"],
                                    scenario=two_products["scenario"], threads=8, repetition=2), qps=3000.0)
    body = viewer.get(two_products["url"]).json()
    assert body["job_count"] == 3 and _qps_medians(body) == [2000.0, 1500.0]


@pytest.mark.django_db
def test_a_job_that_closes_as_succeeded_joins_the_comparison_at_once(viewer, two_products):
    # The result is stored while the job is still finalizing; the job then succeeds by an UPDATE,
    # which sends no signal: execution.results.job_close outdates the cached comparisons itself.
    job = JobFactory(run=two_products["run"], target=two_products["second"], scenario=two_products["scenario"],
                     threads=8, repetition=2, status=Job.Status.RUNNING, phase="finalizing")
    JobResultFactory(job=job, qps=2500.0)
    assert viewer.get(two_products["url"]).json()["job_count"] == 2
    results.job_close(job, status=Job.Status.SUCCEEDED)
    body = viewer.get(two_products["url"]).json()
    assert body["job_count"] == 3 and _qps_medians(body) == [1000.0, 2000.0]


@pytest.mark.django_db
def test_renamed_products_and_deleted_runs_change_the_comparison_at_once(viewer, two_products):
    assert [p["name"] for p in viewer.get(two_products["url"]).json()["products"]] == ["Alpha DB", "Beta DB"]
    product = two_products["first"].product
    product.name = "Alpha DB 2"
    product.save()
    assert [p["name"] for p in viewer.get(two_products["url"]).json()["products"]] == ["Alpha DB 2", "Beta DB"]
    spec = two_products["spec"]
    spec.label = "4-core 16 GB (new)"
    spec.save()
    assert viewer.get(two_products["url"]).json()["groups"][0]["rows"][0]["spec"] == "4-core 16 GB (new)"
    Run.objects.filter(pk=two_products["run"].pk).delete()
    body = viewer.get(two_products["url"]).json()
    assert body["job_count"] == 0 and body["groups"] == []


@pytest.mark.django_db
def test_other_renderings_of_a_comparison_are_not_served_from_the_json_cache(viewer, two_products):
    compact = viewer.get(two_products["url"]).content
    indented = viewer.get(two_products["url"], HTTP_ACCEPT="application/json; indent=2")
    assert indented.content != compact and json.loads(indented.content) == json.loads(compact)
    assert viewer.get(two_products["url"] + "&format=csv")["Content-Type"].startswith("text/csv")


@pytest.mark.django_db
def test_comparisons_and_series_are_answered_when_the_cache_is_unreachable(viewer, two_products):
    job = JobFactory()
    add_samples(job, 0, [1.0, 2.0, 3.0])
    expected = viewer.get(two_products["url"]).json()
    with override_settings(CACHES=UNREACHABLE_CACHE):
        assert viewer.get(two_products["url"]).json() == expected
        series = viewer.get(f"{API}/jobs/{job.pk}/series/")
        assert series.status_code == 200 and series.json()["total_points"] == 3


# ---------------------------------------------------------------- cached series


@pytest.mark.django_db
def test_a_finished_jobs_series_comes_from_the_cache_without_reading_samples(
        viewer, django_assert_num_queries):
    job = JobFactory(status=Job.Status.SUCCEEDED, phase="done")
    add_samples(job, 0, [float(t) for t in range(1, 2001)], qps=lambda t: 100 + t % 7)
    url = f"{API}/jobs/{job.pk}/series/?max_points=100"
    with django_assert_num_queries(3):  # token + user + roles, the job, its seconds
        first = viewer.get(url)
    with django_assert_num_queries(2):
        again = viewer.get(url)
    assert again.content == first.content and first.json()["total_points"] == 2000
    assert len(first.json()["series"]["qps"]) == 100
    # Another query of the same job is an answer of its own, made from the job's cached seconds.
    with django_assert_num_queries(2):
        other = viewer.get(f"{API}/jobs/{job.pk}/series/?max_points=50&method=lttb").json()
    assert len(other["series"]["qps"]) == 50 and other["total_points"] == 2000 and other["method"] == "lttb"


@pytest.mark.django_db
def test_a_finished_jobs_samples_are_polled_from_its_cached_seconds_with_the_same_answer(
        viewer, django_assert_num_queries):
    job = JobFactory(status=Job.Status.RUNNING, phase="run", clients_needed=2)
    for client in (0, 1):
        add_samples(job, client, [float(t) for t in range(1, 301)], qps=lambda t: 100 + t % 7)
    queries = ["", "?since=0", "?since=120", "?since=299.5", "?since=300", "?since=10&limit=20"]
    live = {q: viewer.get(f"{API}/jobs/{job.pk}/samples/{q}").json() for q in queries}
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, phase="done")
    for q in queries:
        answer = viewer.get(f"{API}/jobs/{job.pk}/samples/{q}").json()
        assert answer["finished"] is True and answer["status"] == "succeeded"
        for field in ("samples", "last_t", "more", "clients"):
            assert answer[field] == live[q][field], (q, field)
    assert live["?since=120"]["samples"][0]["t"] == 121 and live["?since=300"]["samples"] == []
    assert live["?since=10&limit=20"]["more"] is True and len(live["?since=10&limit=20"]["samples"]) == 20
    with django_assert_num_queries(2):  # token + user + roles, the job: the seconds come from the cache
        viewer.get(f"{API}/jobs/{job.pk}/samples/?since=42")


@pytest.mark.django_db
@pytest.mark.parametrize(("status", "phase"), [(Job.Status.RUNNING, "run"), (Job.Status.FAILED, "run")])
def test_a_series_that_may_still_grow_is_never_cached(viewer, status, phase):
    # A failed job whose clients have not all stopped ("run" phase) may still get a few seconds.
    job = JobFactory(status=status, phase=phase)
    add_samples(job, 0, [1.0, 2.0])
    assert viewer.get(f"{API}/jobs/{job.pk}/series/").json()["total_points"] == 2
    add_samples(job, 0, [3.0])
    assert viewer.get(f"{API}/jobs/{job.pk}/series/").json()["total_points"] == 3


# ---------------------------------------------------------------- query counts of the other read paths


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["samples/", "samples/?since=10", "series/", "series/?full=1", ""])
def test_job_read_paths_query_count_does_not_grow_with_samples(viewer, path, django_assert_max_num_queries):
    # Token + user + roles, the job, its seconds (the detail: its target, scenario and clients).
    for seconds in (20, 2000):
        job = JobFactory(status=Job.Status.RUNNING, phase="run", clients_needed=2)
        for client in (0, 1):
            add_samples(job, client, [float(t) for t in range(1, seconds + 1)])
        with django_assert_max_num_queries(6):
            assert viewer.get(f"{API}/jobs/{job.pk}/{path}").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", ["runs", "results", "targets", "scenarios", "campaigns"])
def test_detail_query_count_is_constant(viewer, endpoint, two_products, django_assert_max_num_queries):
    run = two_products["run"]
    ids = {"runs": run.pk, "results": run.jobs.first().result.pk, "targets": two_products["first"].pk,
           "scenarios": two_products["scenario"].pk, "campaigns": run.campaign_id}
    with django_assert_max_num_queries(6):
        assert viewer.get(f"{API}/{endpoint}/{ids[endpoint]}/").status_code == 200


# ---------------------------------------------------------------- cached lists are never stale


def _table_queries(captured, table: str) -> int:
    return sum(f'"{table}"' in q["sql"] for q in captured.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_a_repeated_list_comes_from_the_cache_and_the_next_commit_outdates_it():
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    admin = client_for(get_user_model().objects.create_superuser("list-admin", password="pw-12345678"))
    ProductFactory(name="Alpha DB")
    url = f"{API}/products/?ordering=name"
    # Anything committed anywhere in the cluster between two requests (the session worker's
    # heartbeat, every second; other test processes' writes) moves the snapshot on; tries for up to
    # TRY_FOR_S find two requests without one, however busy the cluster.
    cached_pairs = 0
    deadline = time.monotonic() + TRY_FOR_S
    attempt = 0
    while not cached_pairs and time.monotonic() < deadline:
        attempt += 1
        with CaptureQueriesContext(connection) as first_queries:
            first = admin.get(f"{url}&try={attempt}")
        with CaptureQueriesContext(connection) as again_queries:
            again = admin.get(f"{url}&try={attempt}")
        assert first.status_code == again.status_code == 200
        assert again.content == first.content and again["Content-Type"] == "application/json"
        assert _table_queries(first_queries, "campaigns_product") >= 1
        cached_pairs += _table_queries(again_queries, "campaigns_product") == 0
    assert cached_pairs >= 1, "the same list under the same snapshot is served from the cache"

    ProductFactory(name="Beta DB")  # committed at once: the snapshot moves on
    assert [p["name"] for p in admin.get(url).json()["results"]] == ["Alpha DB", "Beta DB"]
    patched = admin.patch(f"{API}/products/{first.json()['results'][0]['id']}/", {"name": "Alpha DB 2"}, format="json")
    assert patched.status_code == 200
    assert [p["name"] for p in admin.get(url).json()["results"]] == ["Alpha DB 2", "Beta DB"]
    # Another page, ordering or rendering is an answer of its own.
    assert [p["name"] for p in admin.get(f"{API}/products/?ordering=-name").json()["results"]] == ["Beta DB", "Alpha DB 2"]


@pytest.mark.django_db(transaction=True)
def test_a_cached_list_costs_one_query_the_tokens_which_brings_the_snapshot():
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    admin = client_for(get_user_model().objects.create_superuser("one-query-admin", password="pw-12345678"))
    ProductFactory(name="Zeta DB")
    one_query_hits = 0
    deadline = time.monotonic() + TRY_FOR_S
    attempt = 0
    # As above: a commit elsewhere in the cluster between the two requests moves the snapshot.
    while not one_query_hits and time.monotonic() < deadline:
        attempt += 1
        url = f"{API}/products/?try={attempt}"
        assert admin.get(url).status_code == 200
        with CaptureQueriesContext(connection) as again_queries:
            assert admin.get(url).json()["results"][0]["name"] == "Zeta DB"
        sqls = [q["sql"] for q in again_queries.captured_queries]
        if any("campaigns_product" in sql for sql in sqls[1:]):
            continue  # another session committed in between (a shared cluster): a new snapshot, rightly a miss
        one_query_hits += len(sqls) == 1 and "pg_current_snapshot" in sqls[0] and "campaigns_apitoken" in sqls[0]
    assert one_query_hits >= 1, "a cache hit reads the token, the user, the roles and the snapshot in one query"


@pytest.mark.django_db(transaction=True)
def test_client_hosts_are_listed_fresh_each_time_because_online_follows_the_clock():
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from campaigns.models import ClientHost

    admin = client_for(get_user_model().objects.create_superuser("hosts-admin", password="pw-12345678"))
    ClientHost.objects.create(hostname="client-x", queue="q", last_heartbeat=timezone.now())
    admin.get(f"{API}/client-hosts/?limit=1000")
    with CaptureQueriesContext(connection) as again_queries:
        hosts = {h["hostname"]: h for h in admin.get(f"{API}/client-hosts/?limit=1000").json()["results"]}
    assert hosts["client-x"]["online"] is True
    assert _table_queries(again_queries, "campaigns_clienthost") >= 1


@pytest.mark.django_db(transaction=True)
def test_lists_are_answered_when_the_cache_is_unreachable():
    from django.contrib.auth import get_user_model

    admin = client_for(get_user_model().objects.create_superuser("nocache-admin", password="pw-12345678"))
    ProductFactory(name="Gamma DB")
    with override_settings(CACHES=UNREACHABLE_CACHE):
        for _ in range(2):
            response = admin.get(f"{API}/products/")
            assert response.status_code == 200 and response.json()["results"][0]["name"] == "Gamma DB"


@pytest.mark.django_db
def test_lists_inside_a_transaction_are_never_cached(viewer):
    ProductFactory(name="Delta DB")
    assert [p["name"] for p in viewer.get(f"{API}/products/").json()["results"]] == ["Delta DB"]
    ProductFactory(name="Epsilon DB")  # same transaction: the snapshot text would not change
    assert sorted(p["name"] for p in viewer.get(f"{API}/products/").json()["results"]) == ["Delta DB", "Epsilon DB"]


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "write_status"), [("viewer", 403), ("operator", 201), ("admin", 201), (None, 403)])
def test_a_token_brings_its_role_in_the_same_query(role, write_status, django_assert_num_queries):
    client = client_for(make_user(role, username=f"one-query-{role}"))
    with django_assert_num_queries(1 if role is None else 2):  # token + user + roles (, the count: no rows)
        assert client.get(f"{API}/specs/").status_code == (403 if role is None else 200)
    created = client.post(f"{API}/specs/", {"label": f"spec by {role}", "cpu_cores": 2, "memory_gb": 4}, format="json")
    assert created.status_code == write_status, created.content


@pytest.mark.django_db
def test_an_inactive_users_token_is_refused():
    user = make_user("operator", username="gone-user")
    client = client_for(user)
    user.is_active = False
    user.save()
    response = client.get(f"{API}/specs/")
    assert response.status_code == 401 and "inactive" in response.json()["detail"].lower()


@pytest.mark.django_db
def test_an_unknown_token_is_refused_and_the_highest_of_several_roles_counts():
    from django.contrib.auth.models import Group
    from rest_framework.test import APIClient

    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    response = stranger.get(f"{API}/specs/")
    assert response.status_code == 401 and response.json()["detail"] == "Invalid token."
    user = make_user("viewer", username="two-roles")
    user.groups.add(Group.objects.get(name="operator"))
    created = client_for(user).post(f"{API}/specs/", {"label": "two roles", "cpu_cores": 2, "memory_gb": 4},
                                    format="json")
    assert created.status_code == 201, created.content


@pytest.mark.django_db
def test_the_authenticated_token_and_user_are_the_stored_ones():
    from campaigns.api.authentication import TokenAuthentication
    from campaigns.models import ApiToken
    from campaigns.services import token_issue

    user = make_user("operator", username="whole-token")
    key = token_issue(user=user)
    stored = ApiToken.objects.get(user=user)
    found_user, token = TokenAuthentication().authenticate_credentials(key)
    assert (token.pk, token.key_hash, token.user_id, token.created, token.expires_at) == (
        stored.pk, stored.key_hash, user.pk, stored.created, stored.expires_at)
    assert token.user is found_user and found_user.pk == user.pk and found_user.username == "whole-token"
    assert found_user.password == user.password and found_user._benchapp_groups == {"operator"}
