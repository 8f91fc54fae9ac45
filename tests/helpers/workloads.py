"""A workload of a test's own, uploaded through the API as an operator makes it and approved by an admin, so that
its scenarios may run (services.workloads: a version runs only once approved)."""
from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from campaigns import roles
from tests.helpers.users import API, client_for, make_user


def workload_approved(api: APIClient, body: dict[str, Any], *, admin: str) -> dict[str, Any]:
    """Uploads `body` with `api` (an operator's client), has the admin user `admin` approve the version; its JSON."""
    uploaded = api.post(f"{API}/workloads/", body, format="json")
    assert uploaded.status_code == 201, uploaded.content
    approved = client_for(make_user(roles.ADMIN, admin)).post(f"{API}/workload-versions/{uploaded.json()['id']}/approve/")
    assert approved.status_code == 200, approved.content
    return uploaded.json()
