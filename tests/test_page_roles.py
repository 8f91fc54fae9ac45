"""Pages follow the API's roles: every URL of the HTML side, read from the URLconf
so that a page added later is walked too, answers a user without a role with the 403 page, refuses a
viewer's writes and an operator's deletes."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter

from campaigns import roles
from campaigns.views.base import required_role
from tests.helpers.ui import make_user

pytestmark = pytest.mark.django_db

# Not pages of the app: the API (its own permissions, tests/test_api.py), Django's admin (staff only) and
# login, logout and password pages, which a user without a role must reach. Static files are served by
# WhiteNoise before any URL is resolved.
EXEMPT_NAMESPACES = {"api", "admin"}
EXEMPT_PREFIXES = ("accounts/",)
# Share links open without a login: their token is the key (tests/test_share_links.py). Health and metrics answer
# probes and scrapers without a login, secret-free (tests/test_observability.py guards /metrics by address or token).
EXEMPT_ROUTES = ("s/<str:token>/", "healthz", "readyz", "metrics")


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace in EXEMPT_NAMESPACES or route.startswith(EXEMPT_PREFIXES):
                continue
            yield from _walk(entry.url_patterns, route)
        elif not route.startswith(EXEMPT_ROUTES):
            yield route, entry


def pages() -> list[tuple[str, Any]]:
    """(URL with made-up ids, view) of every page: the role gate answers before any row is looked up."""
    found = []
    for route, pattern in _walk(get_resolver().url_patterns):
        url = "/" + route
        for name, converter in pattern.pattern.converters.items():
            value = "1" if isinstance(converter, IntConverter) else "x"
            url = re.sub(rf"<(\w+:)?{name}>", value, url)
        assert "<" not in url, f"cannot fill in {route}"
        found.append((url, pattern.callback))
    assert len(found) > 30, found  # the walk found the app's pages
    return found


def test_every_page_declares_the_role_it_needs():
    undeclared = [url for url, view in pages() if required_role(view) not in roles.ROLES]
    assert undeclared == []


def test_a_user_without_a_role_gets_the_403_page_everywhere_and_is_told_whom_to_ask_without_admin_names(
        role_client):
    make_user("chief", roles.ADMIN)
    nobody = role_client(None)
    wrong = []
    for url, _view in pages():
        for method in ("get", "post"):
            response = getattr(nobody, method)(url)
            text = response.content.decode()
            # Whom to ask, but not the admins' user names.
            if (response.status_code != 403 or "no role yet" not in text or "Ask an administrator to" not in text
                    or "chief" in text):
                wrong.append((method, url, response.status_code))
    assert wrong == []
    # Nothing links to pages they cannot open.
    assert 'aria-label="Main"' not in nobody.get("/").content.decode()


def test_anonymous_users_are_sent_to_the_login_page():
    client = Client()
    for url, _view in pages():
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_a_viewer_reads_but_every_write_page_refuses(role_client):
    viewer = role_client(roles.VIEWER)
    wrong = []
    for url, view in pages():
        get, post = viewer.get(url).status_code, viewer.post(url).status_code
        if getattr(view, "own_account", False):
            # The user's own rows (API tokens): a viewer writes them as they change their own password. The
            # POST is a form error (200) or a 404 for the made-up id of a token that is not theirs.
            ok = get in (200, 404, 405) and post in (200, 404)
        elif required_role(view) == roles.VIEWER:
            # Reading: the page (or 404 for the made-up id, 400 for an export without a selection);
            # a write to a reading page is not a thing.
            ok = get in (200, 400, 404) and post == 405
        else:
            ok = get in (403, 405) and post == 403
        if not ok:
            wrong.append((url, required_role(view), get, post))
    assert wrong == []


def test_only_an_admin_opens_delete_pages(role_client):
    operator, admin = role_client(roles.OPERATOR), role_client(roles.ADMIN)
    deletes = [url for url, view in pages() if required_role(view) == roles.ADMIN]
    # Deletes, and revoking a client host's credentials.
    assert deletes and all(url.endswith(("/delete/", "/revoke/")) for url in deletes)
    for url in deletes:
        assert operator.get(url).status_code == 403, url
        assert operator.post(url).status_code == 403, url
        # Past the gate: there is no row 1 (or, for a POST-only delete such as a schedule's, GET is not allowed).
        assert admin.get(url).status_code in (404, 405), url
        assert admin.post(url).status_code == 404, url


def test_page_roles_match_the_api_for_the_same_actions():
    """Writes the API lets an operator make are operator pages here; deletes are admin's."""
    declared = {url: required_role(view) for url, view in pages()}
    assert declared["/campaigns/1/launch/"] == roles.OPERATOR
    assert declared["/runs/1/cancel/"] == roles.OPERATOR
    assert declared["/targets/1/check/"] == roles.OPERATOR
    assert declared["/schedules/1/delete/"] == roles.ADMIN  # as the API's ScheduleViewSet
    assert declared["/compare/comparison.csv"] == roles.VIEWER
    assert declared["/campaigns/1/delete/"] == roles.ADMIN
