"""A workload declares the errors that are part of it: through the API, the page and a run
bundle, one service (workload_save) stores the rate on the workload; a value out of range is refused naming the
field."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client as PageClient

from campaigns import roles
from campaigns.models import Workload
from campaigns.services.workloads import workload_export
from tests.factories import ScenarioFactory
from tests.helpers.users import API, client_for, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # each upload runs sysbench on the entry script

KV = Path(__file__).resolve().parent / "data" / "workloads" / "kv"


def _files() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(KV.glob("*.lua"))}


def test_the_api_and_the_page_store_the_expected_error_rate_and_refuse_a_bad_one():
    user = make_user(roles.OPERATOR, "rollback-operator")
    client = client_for(user)
    bad = client.post(f"{API}/workloads/", {"name": "tpcc-like", "entry": "kv.lua", "files": _files(),
                                            "expected_errors_pct": 150}, format="json")
    assert bad.status_code == 400 and "expected_errors_pct" in bad.json()
    assert not Workload.objects.exists()
    created = client.post(f"{API}/workloads/", {"name": "tpcc-like", "entry": "kv.lua", "files": _files(),
                                                "expected_errors_pct": 1.0}, format="json")
    assert created.status_code == 201, created.content
    workload = Workload.objects.get(name="tpcc-like")
    assert workload.expected_errors_pct == 1.0
    assert client.get(f"{API}/workloads/{workload.pk}/").json()["expected_errors_pct"] == 1.0
    # The same files again with another rate: the same version, the workload's rate changed.
    again = client.post(f"{API}/workloads/{workload.pk}/versions/", {"entry": "kv.lua", "files": _files(),
                                                                    "expected_errors_pct": 2.5}, format="json")
    assert again.status_code == 200 and Workload.objects.get(pk=workload.pk).expected_errors_pct == 2.5
    page = PageClient()
    page.force_login(user)
    detail = page.get(f"/workloads/{workload.pk}/").content.decode()
    assert "2.5 per 100 transactions" in detail
    assert 'name="expected_errors_pct"' in page.get("/workloads/new/").content.decode()
    # A run bundle carries it with the files.
    version = Workload.objects.get(pk=workload.pk).versions.get()
    exported = workload_export(ScenarioFactory(test=version.label(), workload_version=version, options={}))
    assert exported["workload"]["expected_errors_pct"] == 2.5
