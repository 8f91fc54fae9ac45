"""What a viewer or a login without a role no longer learns: campaigns' notify_emails and runs'
idempotency_key (operators and admins only, in lists, details and nested runs alike), and the admins' user names
on the 403 page (a login with some role still gets them). The schema and docs behind login:
tests/test_api.py::test_schema_and_docs_need_a_login."""
from __future__ import annotations

import pytest

from campaigns import roles
from tests.factories import CampaignFactory, JobFactory, RunFactory
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db


def test_viewers_get_no_notify_emails_nor_idempotency_key_and_operators_do():
    campaign = CampaignFactory(notify_emails="ops@example.com\ndev@example.com")
    run = RunFactory(campaign=campaign, idempotency_key="ci-build-secret-42")
    job = JobFactory(run=run)
    urls = [f"{API}/campaigns/", f"{API}/campaigns/{campaign.pk}/", f"{API}/runs/", f"{API}/runs/{run.pk}/",
            f"{API}/jobs/{job.pk}/"]
    viewer = client_for(make_user(roles.VIEWER))
    for url in urls:
        answer = viewer.get(url)
        assert answer.status_code == 200, url
        text = answer.content.decode()
        assert "ops@example.com" not in text and "ci-build-secret-42" not in text, url
        assert '"notify_emails"' not in text and '"idempotency_key"' not in text, url
    operator = client_for(make_user(roles.OPERATOR))
    assert operator.get(f"{API}/campaigns/{campaign.pk}/").json()["notify_emails"] == \
        "ops@example.com\ndev@example.com"
    assert operator.get(f"{API}/runs/{run.pk}/").json()["idempotency_key"] == "ci-build-secret-42"
    assert operator.get(f"{API}/runs/").json()["results"][0]["idempotency_key"] == "ci-build-secret-42"
    # The viewer's cached list is not the operator's, nor the other way round.
    assert "ci-build-secret-42" not in viewer.get(f"{API}/runs/").content.decode()


def test_the_403_page_names_the_admins_only_to_a_login_that_has_a_role(role_client):
    make_user(roles.ADMIN, "chief-admin")
    roleless = role_client(None).get("/campaigns/").content.decode()
    assert "Ask an administrator to give you one" in roleless and "chief-admin" not in roleless
    viewer = role_client(roles.VIEWER).get("/targets/new/").content.decode()
    assert "an administrator (chief-admin)" in viewer
