"""API tokens are stored as SHA-256 only, expire, and can be revoked."""
from __future__ import annotations

import hashlib
import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns import roles
from campaigns.models import ApiToken
from tests.helpers.users import make_user

API = "/api/v1"


def _token_for(username: str) -> str:
    make_user(roles.VIEWER, username)
    response = APIClient().post(f"{API}/auth/token/", {"username": username, "password": "pw-12345678"},
                                format="json")
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"token", "username", "role"}  # the README quick-start's answer, unchanged
    return response.json()["token"]


def _get(key: str) -> object:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get(f"{API}/products/")


@pytest.mark.django_db
def test_the_database_holds_only_a_hash_of_a_token_and_the_token_works():
    key = _token_for("hash-only")
    stored = ApiToken.objects.get(user__username="hash-only")
    assert stored.key_hash == hashlib.sha256(key.encode()).hexdigest() and stored.prefix == key[:8]
    # Whatever column a dump of every table holds, the token is not in it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(t)::text FROM campaigns_apitoken t")
        rows = [r[0] for r in cursor.fetchall()]
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0
    assert rows and not any(key in row for row in rows)
    assert _get(key).status_code == 200
    assert _get(key[:-1] + ("A" if key[-1] != "A" else "B")).status_code == 401


@pytest.mark.django_db
def test_an_expired_token_is_refused_saying_so(settings):
    settings.BENCHAPP_TOKEN_TTL_DAYS = 90
    key = _token_for("expiring")
    stored = ApiToken.objects.get(user__username="expiring")
    assert timedelta(days=89) < stored.expires_at - timezone.now() <= timedelta(days=90)
    ApiToken.objects.filter(pk=stored.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _get(key)
    assert response.status_code == 401 and "expired" in response.json()["detail"]
    settings.BENCHAPP_TOKEN_TTL_DAYS = 0  # until revoked
    forever = _token_for_again("expiring")
    assert ApiToken.objects.get(key_hash=hashlib.sha256(forever.encode()).hexdigest()).expires_at is None
    assert _get(forever).status_code == 200


def _token_for_again(username: str) -> str:
    response = APIClient().post(f"{API}/auth/token/", {"username": username, "password": "pw-12345678"},
                                format="json")
    return response.json()["token"]


@pytest.mark.django_db
def test_a_revoked_token_is_refused_and_only_a_token_request_can_revoke():
    key = _token_for("revoking")
    other = _token_for_again("revoking")  # a second token of the same user keeps working
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.post(f"{API}/auth/token/revoke/").status_code == 204
    response = _get(key)
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    assert _get(other).status_code == 200
    session = APIClient()
    session.force_login(ApiToken.objects.get(prefix=other[:8]).user)
    assert session.post(f"{API}/auth/token/revoke/").status_code == 400
    assert APIClient().post(f"{API}/auth/token/revoke/").status_code == 401


@pytest.mark.django_db
def test_tokens_stored_in_clear_before_are_hashed_by_the_migration_and_keep_working():
    user = make_user(roles.VIEWER, "old-token")
    old = Token.objects.create(user=user)
    migration = importlib.import_module("campaigns.migrations.0014_api_token_hashed")
    migration.hash_clear_tokens(apps, None)
    assert not Token.objects.exists()
    assert ApiToken.objects.get(user=user).key_hash == hashlib.sha256(old.key.encode()).hexdigest()
    assert _get(old.key).status_code == 200
