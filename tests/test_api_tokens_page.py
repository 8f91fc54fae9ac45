"""API tokens and getting started: a page to create, name, list and revoke one's own tokens
(a new one shown once), `Authorization: Bearer` accepted, a getting-started page linked from the docs and the app,
and a schema whose descriptions name no internal module or setting."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from campaigns import roles
from campaigns.models import ApiToken
from tests.helpers.users import make_user

pytestmark = pytest.mark.django_db


def _logged_in(role: str, name: str) -> tuple[Client, object]:
    user = make_user(role, name)
    client = Client()
    client.force_login(user)
    return client, user


def test_a_user_creates_names_uses_and_revokes_a_token_shown_once():
    client, user = _logged_in(roles.VIEWER, "token-owner")
    assert "No tokens yet." in client.get("/tokens/").content.decode()
    refused = client.post("/tokens/", {"name": ""}).content.decode()
    assert 'id="id_name_error1"' in refused and not ApiToken.objects.exists()
    created = client.post("/tokens/", {"name": "nightly CI"})
    assert created.status_code == 200 and created["Cache-Control"] == "no-store"
    key = re.search(r'id="new-token-value" class="token-value" value="([^"]+)"', created.content.decode()).group(1)
    token = ApiToken.objects.get(user=user)
    assert token.name == "nightly CI" and key.startswith(token.prefix) and key not in token.key_hash
    # Shown once: the list names it by its name and first characters only.
    listed = client.get("/tokens/").content.decode()
    assert key not in listed and "nightly CI" in listed and f"<code>{token.prefix}…</code>" in listed
    api = APIClient()
    assert api.get("/api/v1/runs/", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200
    assert api.get("/api/v1/runs/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    answer = api.get("/api/v1/runs/", HTTP_AUTHORIZATION=f"Bearer {key} extra")
    assert answer.status_code == 401 and "Authorization: Bearer <token>" in answer.json()["detail"]
    # Another user cannot revoke it (as if it did not exist).
    other, _ = _logged_in(roles.OPERATOR, "token-other")
    assert other.post(f"/tokens/{token.pk}/revoke/").status_code == 404
    assert client.post(f"/tokens/{token.pk}/revoke/").status_code == 302
    answer = api.get("/api/v1/runs/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.status_code == 401 and "revoked" in answer.json()["detail"]
    assert "revoked" in client.get("/tokens/").content.decode()


def test_getting_started_is_linked_from_the_menu_and_the_api_docs_and_the_schema_speaks_to_users():
    client, _ = _logged_in(roles.VIEWER, "docs-reader")
    home = client.get("/").content.decode()
    assert 'href="/tokens/">API tokens</a>' in home and 'href="/help/api/">API: getting started</a>' in home
    page = client.get("/help/api/").content.decode()
    assert 'Authorization: Bearer $BENCHAPP_TOKEN' in page and 'href="/tokens/"' in page
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "(/api/quick-start/)" not in schema["info"]["description"]
    assert "[getting started](/help/api/)" in schema["info"]["description"]
    text = str(schema)
    assert not re.search(r"campaigns\.(api|execution|validity|models)", text)
    assert "BENCHAPP_" not in text
    assert "Authorization: Bearer" in schema["paths"]["/api/v1/auth/token/"]["post"]["description"]


def test_the_api_docs_group_operations_by_resource_with_a_line_on_each():
    client, _ = _logged_in(roles.VIEWER, "docs-browser")
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    described = [tag["name"] for tag in schema["tags"]]
    assert described[:4] == ["auth", "products", "specs", "targets"] and all(t["description"] for t in schema["tags"])
    used = {tag for path in schema["paths"].values() for operation in path.values() for tag in operation["tags"]}
    # Every operation sits under a resource that has its line, none under the version ("v1") or "api".
    assert used <= set(described) and "v1" not in used and "api" not in used
    assert schema["paths"]["/api/v1/targets/"]["get"]["tags"] == ["targets"]
    assert schema["paths"]["/api/v1/comparisons/cell-histogram/"]["get"]["tags"] == ["comparisons"]


def test_every_operation_is_described_for_users_and_swagger_offers_the_token_first():
    # Earlier, half the operations carried the base viewset's notes on savepoints; the session cookie came first in
    # Swagger's Authorize dialog, so a pasted token landed there; `files` had no type.
    client, _ = _logged_in(roles.VIEWER, "schema-reader")
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operations = {(method, path): op for path, ops in schema["paths"].items() for method, op in ops.items()}
    undescribed = [key for key, op in operations.items() if not op.get("description")]
    internal = [key for key, op in operations.items()
                if re.search(r"savepoint|Role permissions|numeric ids in URLs", op.get("description", ""))]
    assert not undescribed and not internal, (undescribed, internal)
    assert operations[("get", "/api/v1/targets/")]["description"].startswith("The targets you may read")
    assert "Needs the admin role" in operations[("delete", "/api/v1/targets/{id}/")]["description"]
    schemes = schema["components"]["securitySchemes"]
    assert list(schemes)[0] == "tokenAuth" and schemes["tokenAuth"]["type"] == "http"
    assert schemes["tokenAuth"]["scheme"] == "bearer"
    assert all(list(op["security"][0]) == ["tokenAuth"] for op in operations.values() if op.get("security"))
    files = schema["components"]["schemas"]["WorkloadUploadRequest"]["properties"]["files"]
    assert files["type"] == "object" and files["additionalProperties"] == {"type": "string"}
    job = schema["components"]["schemas"]["Job"]["properties"]["prepare_wall_s"]
    assert job["type"] == "number" and job["nullable"] is True


def test_the_token_page_the_quick_start_and_the_docs_spell_the_header_alike():
    client, _ = _logged_in(roles.OPERATOR, "header-reader")
    for page in ("/tokens/", "/help/api/"):
        text = client.get(page).content.decode()
        assert "Authorization: Bearer" in text and "Authorization: Token" in text and 'href="/api/docs/"' in text
    docs = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    assert "`Authorization: Bearer …`" in docs and "Authorization: Token $" not in docs


def test_redoc_loads_nothing_from_another_host():
    client, _ = _logged_in(roles.VIEWER, "redoc-reader")
    page = client.get("/api/redoc/").content.decode()
    assert "/api/docs/assets/redoc/" in page and ("Redoc.init" in page or "<redoc" in page)
    assert not re.search(r"""(?:href|src)=["']?(?:https?:)?//""", page), page
