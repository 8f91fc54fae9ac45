"""Share links (issue: a read-only, expiring, revocable link to a comparison or report that opens without an
account): made from the comparison and report pages and the API, revoked by their creator or an admin, frozen to
the runs they covered, and shown without any target address, port, endpoint option or client host name."""
from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from campaigns import roles
from campaigns.api.throttling import throttle_reset
from campaigns.models import PublishedResult, Run, ShareLink
from campaigns.sysbench.command import redact_endpoint
from tests.factories import (
    JobFactory,
    JobResultFactory,
    ProductFactory,
    TargetFactory,
)
from tests.helpers.users import client_for, make_user
from tests.helpers.worlds import (
    CLIENT_HOSTS,
    DATABASES,
    HOSTS,
    PORTS,
    SECRETS,
    USERS,
    make_world,
    share_command,
    share_link_create,
    share_link_url,
)

pytestmark = pytest.mark.django_db

# Distinctive enough that any occurrence in a page is a leak.


@pytest.fixture(autouse=True)
def _share_buckets_refilled() -> Iterator[None]:
    throttle_reset()
    yield
    throttle_reset()




@pytest.fixture
def world() -> dict[str, Any]:
    return make_world()








def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s.lower() in text.lower()]


# ---------------------------------------------------------------- redaction


def test_endpoint_options_are_replaced_in_a_command_and_the_rest_of_it_kept():
    target = TargetFactory.build(host=HOSTS[0], port=PORTS[0], user=USERS[0], database=DATABASES[0])
    command = share_command(target, 4) + "\nsysbench oltp_read_only '--mysql-socket=/run/my sock' --pgsql-host=pg9 run"
    redacted = redact_endpoint(command)
    assert _leaks(redacted) == [] and "pg9" not in redacted and "my sock" not in redacted
    assert "--db-driver=mysql" in redacted and "--threads=4" in redacted and "--histogram=on" in redacted
    assert redacted.count("--mysql-host=***") == 1 and "--mysql-port=***" in redacted
    assert "pw-never-shown" not in command  # format_command already hid the password
    assert redact_endpoint("sysbench 'unbalanced --mysql-host=h1 run") == "sysbench 'unbalanced --mysql-host=*** run"


def test_the_shared_comparison_and_report_name_no_host_port_endpoint_or_client_but_the_logged_in_pages_do(
        world, role_client):
    operator = role_client(roles.OPERATOR)
    # The logged-in report shows where everything ran: the test data really holds what must be hidden.
    own_report = operator.get(f"/compare/report/?{world['query']}").content.decode()
    assert set(_leaks(own_report)) == set(SECRETS)
    anonymous = Client()
    for shows in ("comparison", "report"):
        created = share_link_create(operator, world["query"], shows=shows)
        assert created.status_code == 201
        url = share_link_url(created)
        page = anonymous.get(url)
        html = page.content.decode()
        assert page.status_code == 200, html[:500]
        assert _leaks(html) == [], shows
        assert "ShareDB Alpha vs ShareDB Beta" in html and 'id="compare-charts"' in html
        assert 'class="comparison fit"' in html and "1,300" in html
        if shows == "report":
            assert "client host 1" in html and "client host 2" in html and "--mysql-host=***" in html
            assert "max_connections" in html and "Print or save as PDF" in html
        else:
            csv_answer = anonymous.get(url + "comparison.csv")
            assert csv_answer.status_code == 200 and _leaks(csv_answer.content.decode()) == []
            rows = list(csv.DictReader(io.StringIO(csv_answer.content.decode())))
            assert {r["product"] for r in rows} == {"ShareDB Alpha", "ShareDB Beta"} and len(rows) == 4


def test_the_shared_page_has_no_navigation_no_app_links_and_asks_not_to_be_indexed(world, role_client):
    url = share_link_url(share_link_create(role_client(roles.OPERATOR), world["query"]))
    page = Client().get(url)
    html = page.content.decode()
    assert page["X-Robots-Tag"].startswith("noindex") and page["Referrer-Policy"] == "no-referrer"
    assert '<meta name="robots" content="noindex' in html and "no-store" in page["Cache-Control"]
    assert 'aria-label="Main"' not in html and "Log out" not in html and "csrfmiddlewaretoken" not in html
    links = re.findall(r'href="([^"]+)"', html)
    app_links = [h for h in links if not (h.startswith(("/static/", "#", "data:")) or h == url + "comparison.csv")]
    assert app_links == []
    assert "Share…" not in html  # no share control on a shared page


def test_the_shared_page_keeps_its_frozen_choice_whatever_the_query_and_later_runs(world, role_client):
    operator = role_client(roles.OPERATOR)
    url = share_link_url(share_link_create(operator, f"campaign={world['campaign'].pk}"))
    link = ShareLink.objects.get()
    assert link.selection["runs"] == [world["run"].pk]
    # A later run of the same campaign and targets, with a figure no one could miss.
    later = Run.objects.create(campaign=world["campaign"], status=Run.Status.SUCCEEDED)
    other_target = TargetFactory(name="unshared target", product=ProductFactory(name="Unshared Gamma"),
                                 spec=world["targets"][0].spec)
    for target in (*world["targets"], other_target):
        JobResultFactory(job=JobFactory(run=later, target=target, scenario=world["scenario"], threads=4), qps=987654.0)
    own = operator.get(f"/compare/?campaign={world['campaign'].pk}").content.decode()
    assert "987,654" in own and "Unshared Gamma" in own
    anonymous = Client()
    for query in ("", f"?runs={later.pk}", f"?targets={other_target.pk}&campaign={world['campaign'].pk}",
                  f"?products={other_target.product_id}&trusted_only=on"):
        html = anonymous.get(url + query).content.decode()
        assert "987,654" not in html and "Unshared Gamma" not in html and "1,300" in html, query


def test_an_unknown_expired_or_revoked_token_is_the_same_plain_404_and_an_open_is_counted(world, role_client):
    operator = role_client(roles.OPERATOR)
    anonymous = Client()
    live = share_link_url(share_link_create(operator, world["query"]))
    expired = share_link_url(share_link_create(operator, world["query"]))
    revoked = share_link_url(share_link_create(operator, world["query"]))
    by_url = {url: ShareLink.objects.get(token_hash=hashlib.sha256(url.split("/")[2].encode()).hexdigest())
              for url in (live, expired, revoked)}
    ShareLink.objects.filter(pk=by_url[expired].pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert operator.post(f"/share-links/{by_url[revoked].pk}/revoke/").status_code == 200
    assert anonymous.get(live).status_code == 200
    answers = [anonymous.get(url) for url in (expired, revoked, "/s/" + "x" * 43 + "/", "/s/short/",
                                               expired + "comparison.csv")]
    assert {(a.status_code, a.content) for a in answers} == {(404, b"Not found.\n")}
    assert {a["Content-Type"] for a in answers} == {"text/plain; charset=utf-8"}
    link = ShareLink.objects.get(pk=by_url[live].pk)
    assert link.open_count == 1 and link.last_opened_at is not None
    assert ShareLink.objects.get(pk=by_url[expired].pk).open_count == 0


def test_only_the_tokens_hash_is_stored_and_the_list_never_shows_it(world, role_client):
    operator = role_client(roles.OPERATOR)
    created = share_link_create(operator, world["query"])
    url = share_link_url(created)
    token = url.split("/")[2]
    assert len(token) >= 40 and created["Cache-Control"] == "no-store"
    link = ShareLink.objects.get()
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(ShareLink.objects.values().get())
    listing = operator.get("/share-links/").content.decode()
    assert token not in listing and "ShareDB Alpha vs ShareDB Beta" in listing and "user-operator" in listing
    assert 'data-state="active"' in listing and "never" in listing  # not opened yet


def test_no_log_line_carries_a_share_token(world, role_client, caplog):
    url = share_link_url(share_link_create(role_client(roles.OPERATOR), world["query"]))
    token = url.split("/")[2]
    ShareLink.objects.update(revoked_at=timezone.now())
    with caplog.at_level(logging.DEBUG):
        assert Client().get(url).status_code == 404
        assert Client().get("/s/" + "y" * 43 + "/").status_code == 404
    assert token not in caplog.text and "y" * 43 not in caplog.text


def test_requests_past_the_per_address_budget_get_a_429(world, role_client, settings):
    url = share_link_url(share_link_create(role_client(roles.OPERATOR), world["query"]))
    settings.BENCHAPP_SHARE_RATE_ADDRESS = "3/minute"
    anonymous = Client()
    codes = [anonymous.get(url).status_code for _ in range(3)]
    refused = anonymous.get("/s/" + "z" * 43 + "/")  # the budget is the address's, over every token
    assert codes == [200, 200, 200] and refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    other = Client(REMOTE_ADDR="192.0.2.9")
    assert other.get(url).status_code == 200


# ---------------------------------------------------------------- who may make and revoke


def test_a_viewer_cannot_make_a_link_and_an_operator_revokes_only_their_own(world, role_client):
    assert share_link_create(role_client(roles.VIEWER), world["query"]).status_code == 403
    alice, bob = Client(), Client()
    alice.force_login(make_user(roles.OPERATOR, "alice"))
    bob.force_login(make_user(roles.OPERATOR, "bob"))
    share_link_create(alice, world["query"])
    link = ShareLink.objects.get()
    assert bob.post(f"/share-links/{link.pk}/revoke/").status_code == 404  # not among bob's links
    assert "ShareDB" not in bob.get("/share-links/").content.decode()
    admin = role_client(roles.ADMIN)
    assert "alice" in admin.get("/share-links/").content.decode()
    assert admin.post(f"/share-links/{link.pk}/revoke/").status_code == 200
    link.refresh_from_db()
    assert link.revoked_at is not None and link.revoked_by.get_username() == "user-admin"


def test_the_page_form_names_a_bad_expiry_and_refuses_an_empty_choice(world, role_client):
    operator = role_client(roles.OPERATOR)
    for days in ("0", "91", "soon", ""):
        answer = share_link_create(operator, world["query"], days=days)
        assert answer.status_code == 400 and "expires_in_days" in answer.content.decode(), days
    nothing = share_link_create(operator, "")
    assert nothing.status_code == 400 and "Nothing to share" in nothing.content.decode()
    none_match = share_link_create(operator, f"targets={TargetFactory().pk}")
    assert none_match.status_code == 400 and "no succeeded job matches" in none_match.content.decode()
    assert not ShareLink.objects.exists()


def test_the_comparison_and_report_pages_offer_share_to_operators_only(world, role_client):
    for page in ("/compare/", "/compare/report/"):
        assert 'data-testid="share-control"' in role_client(roles.OPERATOR).get(f"{page}?{world['query']}").content.decode()
        assert 'data-testid="share-control"' not in role_client(roles.VIEWER).get(f"{page}?{world['query']}").content.decode()
    # The user menu leads operators to their links, on every page.
    assert 'href="/share-links/"' in role_client(roles.OPERATOR).get("/").content.decode()
    assert 'href="/share-links/"' not in role_client(roles.VIEWER).get("/").content.decode()


# ---------------------------------------------------------------- API


def test_the_api_makes_lists_and_revokes_links(world):
    alice = make_user(roles.OPERATOR, "alice")
    api = client_for(alice)
    made = api.post("/api/v1/share-links/", {"targets": [t.pk for t in world["targets"]], "shows": "report",
                                             "expires_in_days": 30}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["url"].startswith("http://testserver/s/") and body["shows"] == "report"
    assert body["state"] == "active" and body["created_by"] == "alice" and body["open_count"] == 0
    assert body["selection"]["runs"] == [world["run"].pk]
    expires = timezone.datetime.fromisoformat(body["expires_at"])
    assert timedelta(days=29, hours=23) < expires - timezone.now() <= timedelta(days=30)
    token = body["url"].split("/")[4]
    html = Client().get(f"/s/{token}/").content.decode()
    assert "2. Test environment" in html and _leaks(html) == []
    listed = api.get("/api/v1/share-links/").json()
    assert [r["id"] for r in listed["results"]] == [body["id"]] and token not in str(listed)
    assert listed["results"][0]["open_count"] == 1 and listed["results"][0]["last_opened_at"]
    # Another operator neither sees nor revokes it; a viewer has no access; the creator revokes.
    bob = client_for(make_user(roles.OPERATOR, "bob"))
    assert bob.get("/api/v1/share-links/").json()["count"] == 0
    assert bob.post(f"/api/v1/share-links/{body['id']}/revoke/").status_code == 404
    assert client_for(make_user(roles.VIEWER, "val")).get("/api/v1/share-links/").status_code == 403
    revoked = api.post(f"/api/v1/share-links/{body['id']}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert revoked.json()["revoked_by"] == "alice"
    assert Client().get(f"/s/{token}/").status_code == 404


def test_an_admin_revokes_any_link_and_sees_every_one(world):
    api = client_for(make_user(roles.OPERATOR, "alice"))
    made = api.post("/api/v1/share-links/", {"targets": [world["targets"][0].pk]}, format="json").json()
    assert made["expires_at"] and made["shows"] == "comparison"
    admin = client_for(make_user(roles.ADMIN, "root-admin"))
    assert admin.get("/api/v1/share-links/").json()["count"] == 1
    assert admin.post(f"/api/v1/share-links/{made['id']}/revoke/").json()["revoked_by"] == "root-admin"
    assert admin.delete(f"/api/v1/share-links/{made['id']}/").status_code == 405  # revoked, never deleted


@pytest.mark.parametrize(("body", "field"), [
    ({"targets": [1], "expires_in_days": 0}, "expires_in_days"),
    ({"targets": [1], "expires_in_days": 91}, "expires_in_days"),
    ({"targets": [1], "expires_in_days": "a week"}, "expires_in_days"),
    ({"targets": [999999]}, "targets"),
    ({"targets": ["x"]}, "targets"),
    ({"runs": [999999]}, "runs"),
    ({"targets": [1], "shows": "everything"}, "shows"),
    ({"published_product": [1, 2], "targets": [1]}, "published_product"),
    ({"published": ["no-such-seed"]}, "published"),
    ({}, "non_field_errors"),
    ({"specs": [1]}, "non_field_errors"),
])
def test_the_api_answers_bad_input_with_a_400_naming_the_field(world, body, field):
    body = {k: ([world["targets"][0].pk] if v == [1] and k == "targets" else v) for k, v in body.items()}
    if field == "published_product":
        body["published_product"] = [world["targets"][0].product_id, world["targets"][1].product_id]
    if field == "non_field_errors" and "specs" in body:
        body["specs"] = [world["targets"][0].spec_id]
    answer = client_for(make_user(roles.OPERATOR)).post("/api/v1/share-links/", body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.content
    assert not ShareLink.objects.exists()


def test_a_viewer_cannot_make_a_link_over_the_api(world):
    answer = client_for(make_user(roles.VIEWER)).post("/api/v1/share-links/", {"targets": [world["targets"][0].pk]},
                                                      format="json")
    assert answer.status_code == 403 and not ShareLink.objects.exists()


def test_published_figures_alone_can_be_shared_and_a_link_opens_in_constant_queries(
        world, role_client, django_assert_max_num_queries):
    from campaigns.seeds.published import load_published

    load_published()
    document = PublishedResult.objects.values_list("document", flat=True).first()
    operator = role_client(roles.OPERATOR)
    published = share_link_url(share_link_create(operator, f"published={document}"))
    page = Client().get(published)
    assert page.status_code == 200 and 'badge published' in page.content.decode()
    assert ShareLink.objects.get().selection["runs"] == []  # nothing measured to freeze: the figures are printed
    measured = share_link_url(share_link_create(operator, world["query"], shows="report"))
    anonymous = Client()
    anonymous.get(measured)
    with django_assert_max_num_queries(19):  # the open (2), the layout, the report (its job order one more)
        assert anonymous.get(measured).status_code == 200


def test_a_report_field_added_later_stays_out_of_shared_reports_until_listed():
    from campaigns.comparison.redaction import report_redacted

    report = {"environment": [{"target": "t", "product": "p", "spec": "s", "version": "v", "settings": [],
                               "datadir_host": HOSTS[0]}],
              "hosts": [{"hostname": CLIENT_HOSTS[0], "jobs": 1, "sysbench": "1.0.20", "cores": 2, "memory_gb": 4,
                         "address": HOSTS[1]}],
              "method": [{"scenario": "x", "test": "oltp", "target": "t", "product": "p", "command": "sysbench run",
                          "imported": False, "threads": "1", "client_address": HOSTS[1]}]}

    class NoJobs:
        def jobs(self) -> Any:
            from campaigns.models import Job
            return Job.objects.none()

    shown = report_redacted(report, selection=NoJobs())
    assert _leaks(str(shown)) == [] and shown["hosts"][0]["hostname"] == "client host 1"
    assert shown["hosts"][0]["cores"] == 2 and shown["method"][0]["command"] == "sysbench run"
