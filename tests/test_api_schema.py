"""Schemathesis against /api/schema/: every operation, a bounded number of generated requests each,
sent with an operator's token to the WSGI application in-process.

The checks: no 5xx, only documented status codes and content types, and every JSON body valid
against its schema. Generated requests are both valid (positive) and deliberately invalid
(negative) ones, so wrong types, huge numbers and odd characters are covered as well.

Safety: the run is one database transaction rolled back at the end, so a launch never reaches a
worker (the broker is only nudged on commit); and before any `targets/{id}/check/` call the
target is pointed at a closed local port, so fuzzed hosts are never connected to.
"""
from __future__ import annotations

import os
import random
import re
import socket
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from campaigns.models import ClientHost, IntervalSample, Target
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.test_api import JobFactory, JobResultFactory, make_user

# Per operation (65 of them); keeps the file within ~3 minutes on 2 cores. Raise it locally with
# BENCHAPP_SCHEMA_EXAMPLES=100 for a deeper search.
MAX_EXAMPLES = int(os.environ.get("BENCHAPP_SCHEMA_EXAMPLES", "8"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]



def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _application() -> Any:
    from benchapp.wsgi import application

    return application


# Loaded when the module is collected (pytest-django has set Django up by then); serving the
# schema touches no database. Each operation becomes a test of its own.
schema = schemathesis.openapi.from_wsgi("/api/schema/", _application())


# Schemathesis calls the WSGI application directly, not through Django's test client.
pytestmark = pytest.mark.usefixtures("requests_share_the_test_transaction")
SLOW = pytest.mark.slow


@pytest.fixture
def known_ids(db: Any) -> dict[str, list[int]]:
    """A few rows of every resource, so that generated ids sometimes hit a real object."""
    closed = _closed_port()
    targets = [TargetFactory(port=closed, password="fuzz-secret"), TargetFactory(port=closed)]
    scenario = ScenarioFactory(dataset=DatasetFactory(name="fuzz"))
    campaign = CampaignFactory(targets=targets, scenarios=[scenario])
    result = JobResultFactory(job=JobFactory(target=targets[0], scenario=scenario))
    job = result.job
    IntervalSample.objects.bulk_create([
        IntervalSample(job=job, t=t, threads=4, tps=1, qps=10, reads_per_s=7, writes_per_s=2, other_per_s=1,
                       latency_pct_ms=2.5, errors_per_s=0, reconnects_per_s=0) for t in range(1, 30)
    ])
    ClientHost.objects.create(hostname="fuzz-host", queue="host.fuzz-host")
    return {
        "products": [t.product_id for t in targets], "specs": [t.spec_id for t in targets],
        "targets": [t.pk for t in targets], "datasets": [scenario.dataset_id], "scenarios": [scenario.pk],
        "campaigns": [campaign.pk], "runs": [job.run_id], "jobs": [job.pk], "results": [result.pk],
        "client-hosts": list(ClientHost.objects.values_list("pk", flat=True)),
        "users": [], "closed_port": [closed],
    }


@pytest.fixture
def operator_headers(db: Any) -> dict[str, str]:
    token, _ = Token.objects.get_or_create(user=make_user("operator", "fuzz-operator"))
    return {"Authorization": f"Token {token.key}"}


_RESOURCE = re.compile(r"^/api/v1/([\w-]+)/\{id\}/")


@SLOW
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@pytest.mark.django_db
def test_every_operation_answers_within_its_schema(case: Any, operator_headers: dict[str, str],
                                                  known_ids: dict[str, list[int]]) -> None:
    match = _RESOURCE.match(case.operation.path)
    if match and case.path_parameters is not None:
        ids = known_ids.get(match.group(1)) or []
        # Half of the generated ids are replaced by a real one, so detail operations go past the 404.
        if ids and random.Random(str(case.path_parameters.get("id"))).random() < 0.5:
            case.path_parameters["id"] = random.Random(str(case.path_parameters)).choice(ids)
    if case.operation.path.endswith("/check/"):
        # Whatever earlier requests did to it, a target is only ever checked on a closed local port.
        pk = str((case.path_parameters or {}).get("id", ""))
        if pk.isdigit() and len(pk) < 19:
            Target.objects.filter(pk=int(pk)).update(host="127.0.0.1", port=known_ids["closed_port"][0],
                                                     driver="mysql")
    response = case.call_and_validate(headers=operator_headers, checks=CHECKS)
    assert "fuzz-secret" not in response.text
