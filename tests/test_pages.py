"""Server-rendered pages that exist so far: login, dashboard, admin."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from campaigns import roles
from tests.factories import TargetFactory

pytestmark = pytest.mark.django_db


def test_the_dashboard_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_a_logged_in_viewer_sees_the_dashboard(client):
    user = get_user_model().objects.create_user("viewer1", password="pw-123456")
    user.groups.add(Group.objects.get(name=roles.VIEWER))
    client.force_login(user)
    response = client.get("/")
    assert response.status_code == 200
    assert b"Client hosts" in response.content


def test_the_admin_target_form_never_renders_the_stored_password(admin_client):
    target = TargetFactory(password="Very-Secret-77")
    response = admin_client.get(f"/admin/campaigns/target/{target.pk}/change/")
    assert response.status_code == 200
    assert b"Very-Secret-77" not in response.content
    assert target.get_password() == "Very-Secret-77"
    assert "Very-Secret-77" not in target.password_encrypted
