"""Users with a role and API clients that carry their token."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from campaigns import services

API = "/api/v1"


def make_user(role: str | None, username: str | None = None, *, password: str = "pw-12345678") -> Any:
    user = get_user_model().objects.create_user(username=username or f"user-{role or 'none'}", password=password)
    if role:  # get_or_create: a transactional test's database may have been flushed, its role groups with it
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def client_for(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {services.token_issue(user=user)}")
    return client


def body_text(response: Any) -> str:
    if hasattr(response, "streaming_content"):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()

