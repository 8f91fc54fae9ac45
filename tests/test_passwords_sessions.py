"""Django's full password validators wherever a password is chosen; API tokens revoked when a password
changes, by any way; a login session ends after BENCHAPP_SESSION_IDLE_S without a request and lives on while used."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns import roles, services
from campaigns.logins import SESSION_REFRESH_S
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db
GOOD = "Quiet-Harbour-Lantern-93"


@pytest.mark.parametrize("password, reason", [
    ("password", "too common"), ("11111111", "too common"), ("83920174", "entirely numeric"),
    ("short1!", "too short"), ("alice.sanders", "too similar"),
])
def test_the_users_api_refuses_weak_passwords_naming_the_field(password, reason):
    admin = client_for(make_user(roles.ADMIN))
    created = admin.post(f"{API}/users/", {"username": "alice.sanders", "password": password, "role": "viewer"},
                         format="json")
    assert created.status_code == 400, created.content
    assert any(reason in message for message in created.json()["password"]), created.json()
    assert not get_user_model().objects.filter(username="alice.sanders").exists()
    assert admin.post(f"{API}/users/", {"username": "alice.sanders", "password": GOOD, "role": "viewer"},
                      format="json").status_code == 201


def _works(token: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get(f"{API}/products/").status_code == 200


def test_a_password_changed_on_the_page_the_api_or_in_code_ends_every_api_token():
    user = make_user(roles.OPERATOR, "token-holder")
    tokens = [services.token_issue(user=user) for _ in range(2)]
    other = services.token_issue(user=make_user(roles.VIEWER, "bystander"))
    assert all(_works(t) for t in tokens)
    # The password change page.
    page = Client()
    page.force_login(user)
    changed = page.post("/accounts/password_change/", {"old_password": "pw-12345678", "new_password1": GOOD,
                                                        "new_password2": GOOD})
    assert changed.status_code == 302, changed.content.decode()[:2000]
    assert not any(_works(t) for t in tokens) and _works(other)
    # The API (an admin setting it).
    fresh = services.token_issue(user=user)
    admin = client_for(make_user(roles.ADMIN, "the-admin"))
    assert admin.patch(f"{API}/users/{user.pk}/", {"password": GOOD + "x"}, format="json").status_code == 200
    assert not _works(fresh)
    # Code (manage.py changepassword, the admin, a reset): set_password and save.
    fresh = services.token_issue(user=user)
    user.refresh_from_db()
    user.set_password(GOOD + "y")
    user.save()
    assert not _works(fresh) and _works(other)
    # Saving a user without a new password keeps their tokens.
    kept = services.token_issue(user=user)
    user.refresh_from_db()
    user.first_name = "Token"
    user.save()
    assert _works(kept)


def test_the_password_change_page_refuses_a_common_password():
    user = make_user(roles.VIEWER, "page-changer")
    page = Client()
    page.force_login(user)
    answer = page.post("/accounts/password_change/", {"old_password": "pw-12345678", "new_password1": "password1",
                                                       "new_password2": "password1"})
    assert answer.status_code == 200 and "too common" in answer.content.decode()


def _session() -> Session:
    return Session.objects.get()


def test_an_idle_session_ends_and_a_used_one_is_extended():
    assert settings.SESSION_COOKIE_AGE == 4 * 3600  # BENCHAPP_SESSION_IDLE_S' default
    user = make_user(roles.VIEWER, "session-user")
    page = Client()
    page.force_login(user)
    assert page.get("/").status_code == 200
    # Used a while ago, near its end: the next request pushes the expiry back by the whole idle time.
    session = _session()
    data = session.get_decoded()
    data["_benchapp_seen"] -= SESSION_REFRESH_S
    Session.objects.filter(pk=session.pk).update(
        session_data=Session.objects.encode(data), expire_date=timezone.now() + timedelta(seconds=30))
    assert page.get("/").status_code == 200
    assert _session().expire_date > timezone.now() + timedelta(seconds=settings.SESSION_COOKIE_AGE - 120)
    assert page.cookies["sessionid"]["max-age"] == settings.SESSION_COOKIE_AGE
    # Within the refresh interval the session is not written again.
    before = _session().expire_date
    assert page.get("/").status_code == 200 and _session().expire_date == before
    # Idle past its time-out: logged out.
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    answer = page.get("/")
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


def test_the_demo_refuses_a_weak_admin_password_chosen_in_the_environment(settings):
    from django.core.management import CommandError, call_command

    settings.BENCHAPP_ADMIN_PASSWORD = "password"
    with pytest.raises(CommandError, match="BENCHAPP_ADMIN_PASSWORD: .*too common"):
        call_command("load_demo")
    assert not get_user_model().objects.filter(username="admin").exists()
