"""Connection checks are budgeted per user and logged, whichever way they come in (the check API, the target
page's check button, quick compare's connection test): one bucket per user, a 429 with Retry-After on the API, the
same refusal in words on the pages, and a log line per attempt naming who, where and what came back, never the
password."""
from __future__ import annotations

import logging
import socket

import pytest
from django.test import Client, override_settings

from campaigns import roles
from campaigns.api.throttling import throttle_reset
from campaigns.models import Target
from tests.factories import TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db
SECRET = "Check-Rate-Secret-77"


@pytest.fixture(autouse=True)
def _buckets_forgotten():
    yield
    throttle_reset()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


@override_settings(BENCHAPP_CHECK_RATE_USER="3/hour")
def test_the_fourth_check_in_an_hour_is_refused_with_retry_after_and_logged(caplog):
    user = make_user(roles.OPERATOR, "scanner")
    api = client_for(user)
    target = TargetFactory(password=SECRET, port=_closed_port())
    with caplog.at_level(logging.INFO, logger="campaigns.services.targets"):
        answers = [api.post(f"/api/v1/targets/{target.pk}/check/") for _ in range(3)]
        refused = api.post(f"/api/v1/targets/{target.pk}/check/")
    assert [a.status_code for a in answers] == [400, 400, 400]
    assert all(a.json()["code"] == "target_unreachable" for a in answers)
    assert refused.status_code == 429 and refused.json()["code"] == "throttled"
    assert "too many connection checks" in refused.json()["detail"] and int(refused["Retry-After"]) >= 1
    lines = [r.getMessage() for r in caplog.records]
    attempts = [line for line in lines if line.startswith("target check by scanner")]
    assert len(attempts) == 3 and all(f"127.0.0.1:{target.port}" in line and "failed" in line for line in attempts)
    assert any("scanner" in line and "over 3/hour" in line for line in lines)
    assert SECRET not in caplog.text
    # Another user's budget is their own.
    other = client_for(make_user(roles.OPERATOR, "colleague"))
    assert other.post(f"/api/v1/targets/{target.pk}/check/").status_code == 400


@override_settings(BENCHAPP_CHECK_RATE_USER="1/hour")
def test_the_page_and_quick_compare_spend_the_same_budget_and_say_so():
    user = make_user(roles.OPERATOR, "page-checker")
    target = TargetFactory(port=_closed_port())
    page = Client()
    page.force_login(user)
    first = page.post(f"/targets/{target.pk}/check/").content.decode()
    assert "connection refused" in first
    again = page.post(f"/targets/{target.pk}/check/").content.decode()
    assert "too many connection checks" in again
    quick = page.post("/quick/add-target/", {
        "new_name": "scan", "new_host": "127.0.0.1", "new_port": str(_closed_port()), "new_driver": "mysql",
        "new_database": "sbtest", "new_user": "root", "new_product_name": "Scan", "new_product_engine": "mysql",
        "tables": "4", "table_size": "10000", "threads": "1", "time_s": "10", "repetitions": "1"}).content.decode()
    assert "too many connection checks" in quick and not Target.objects.filter(name="scan").exists()
    assert client_for(user).post(f"/api/v1/targets/{target.pk}/check/").status_code == 429


@override_settings(BENCHAPP_CHECK_RATE_USER="3/hour")
def test_the_settings_check_of_variants_spends_the_same_budget(caplog):
    """The settings check of a campaign's variants spends the same budget: PATCHing a target's port and saving a
    campaign with a variant once probed that port with no limit."""
    user = make_user(roles.OPERATOR, "variant-scanner")
    api = client_for(user)
    target = TargetFactory(port=_closed_port())
    body = {"name": "probe", "targets": [target.pk], "variants": [{"name": "x", "mysql": {"sync_binlog": "0"}}]}
    with caplog.at_level(logging.INFO, logger="campaigns.services.variants"):
        for _ in range(2):
            answer = api.post("/api/v1/campaigns/", body, format="json")
            assert answer.status_code == 400 and "connection refused" in str(answer.json()["variants"])
    assert sum("settings check of variants by variant-scanner" in r.getMessage() for r in caplog.records) == 2
    assert api.post(f"/api/v1/targets/{target.pk}/check/").status_code == 400  # the third check: refused port
    answer = api.post("/api/v1/campaigns/", body, format="json")
    assert answer.status_code == 400
    assert "too many connection checks: the next one is allowed in" in str(answer.json()["variants"])
    assert api.post(f"/api/v1/targets/{target.pk}/check/").status_code == 429
