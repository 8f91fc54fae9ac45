"""Only superusers edit superusers: an admin (the admin role and staff access to
Django's admin, but not a superuser) tries to take a superuser's login, through the API and through
Django's admin, and to make themselves a superuser; every attempt fails and changes nothing."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from campaigns import roles
from tests.helpers.users import API, client_for

pytestmark = pytest.mark.django_db

ROOT_PASSWORD = "root-password-1"
STOLEN_PASSWORD = "taken-over-pw-1"


@pytest.fixture
def root() -> Any:
    return get_user_model().objects.create_superuser("root", password=ROOT_PASSWORD)


@pytest.fixture
def admin_user() -> Any:
    """An in-app admin who also has staff access and every permission on logins and groups."""
    user = get_user_model().objects.create_user("chief", password="chief-password-1", is_staff=True)
    user.groups.add(Group.objects.get(name=roles.ADMIN))
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="auth",
                                                         content_type__model__in=["user", "group"]))
    return user


def _admin_site(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _root_unchanged(root: Any) -> None:
    root.refresh_from_db()
    assert root.check_password(ROOT_PASSWORD) and not root.check_password(STOLEN_PASSWORD)
    assert root.is_active and root.is_superuser
    # Logging in as them with the password they tried to set fails (the login page shows itself again).
    response = Client().post("/accounts/login/", {"username": "root", "password": STOLEN_PASSWORD})
    assert response.status_code == 200 and "_auth_user_id" not in response.wsgi_request.session


def test_an_admin_cannot_set_a_superusers_password_through_the_api(root, admin_user):
    api = client_for(admin_user)
    response = api.patch(f"{API}/users/{root.pk}/", {"password": STOLEN_PASSWORD}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "only a superuser can change or delete a superuser"
    for attempt in (api.patch(f"{API}/users/{root.pk}/", {"is_active": False}, format="json"),
                    api.put(f"{API}/users/{root.pk}/", {"username": "root", "password": STOLEN_PASSWORD},
                            format="json"),
                    api.patch(f"{API}/users/{root.pk}/", {"role": roles.VIEWER}, format="json"),
                    api.delete(f"{API}/users/{root.pk}/")):
        assert attempt.status_code == 403
    _root_unchanged(root)
    # Reading the login stays allowed, and the admin still manages everybody else.
    assert api.get(f"{API}/users/{root.pk}/").status_code == 200
    other = get_user_model().objects.create_user("worker", password="worker-password-1")
    assert api.patch(f"{API}/users/{other.pk}/", {"password": "worker-password-2"}, format="json").status_code == 200


def test_a_superuser_still_manages_superusers_through_the_api(root):
    other_root = get_user_model().objects.create_superuser("root2", password="root2-password-1")
    response = client_for(root).patch(f"{API}/users/{other_root.pk}/", {"password": "root2-password-2"},
                                      format="json")
    assert response.status_code == 200
    other_root.refresh_from_db()
    assert other_root.check_password("root2-password-2")


def test_an_admin_cannot_set_a_superusers_password_in_djangos_admin(root, admin_user):
    site = _admin_site(admin_user)
    password_url = f"/admin/auth/user/{root.pk}/password/"
    assert site.get(password_url).status_code == 403
    response = site.post(password_url, {"password1": STOLEN_PASSWORD, "password2": STOLEN_PASSWORD,
                                        "usable_password": "true"})
    assert response.status_code == 403
    # The change page is read-only for them and a forged POST is refused; deleting too.
    change_url = f"/admin/auth/user/{root.pk}/change/"
    page = site.get(change_url)
    assert page.status_code == 200 and 'name="username"' not in page.content.decode()
    assert site.post(change_url, {"username": "root", "is_active": "", "is_superuser": "on"}).status_code == 403
    assert site.post(f"/admin/auth/user/{root.pk}/delete/", {"post": "yes"}).status_code == 403
    site.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [root.pk], "post": "yes"})
    _root_unchanged(root)


def test_an_admin_cannot_make_themselves_superuser_or_widen_a_group(admin_user):
    site = _admin_site(admin_user)
    page = site.get(f"/admin/auth/user/{admin_user.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="is_superuser"' not in html and 'name="is_staff"' not in html and 'name="user_permissions"' not in html
    response = site.post(f"/admin/auth/user/{admin_user.pk}/change/", {
        "username": "chief", "is_active": "on", "is_staff": "on", "is_superuser": "on",
        "groups": [Group.objects.get(name=roles.ADMIN).pk],
        "user_permissions": list(Permission.objects.values_list("pk", flat=True)),
        "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
    })
    assert response.status_code == 302  # saved, without the fields they may not set
    admin_user.refresh_from_db()
    assert not admin_user.is_superuser
    assert admin_user.user_permissions.count() == Permission.objects.filter(
        content_type__app_label="auth", content_type__model__in=["user", "group"]).count()
    # Renaming a group would hand its members another role: groups are a superuser's business.
    viewer_group = Group.objects.get(name=roles.VIEWER)
    assert site.post(f"/admin/auth/group/{viewer_group.pk}/change/", {"name": roles.ADMIN}).status_code == 403
    assert Group.objects.filter(name=roles.VIEWER).exists()


def test_a_superuser_can_still_do_all_of_it_in_djangos_admin(root, admin_user):
    site = _admin_site(root)
    response = site.post(f"/admin/auth/user/{admin_user.pk}/password/", {
        "password1": "chief-password-2", "password2": "chief-password-2", "usable_password": "true"})
    assert response.status_code == 302
    admin_user.refresh_from_db()
    assert admin_user.check_password("chief-password-2")
    assert 'name="is_superuser"' in site.get(f"/admin/auth/user/{admin_user.pk}/change/").content.decode()
