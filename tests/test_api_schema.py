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

import json
import os
import random
import re
import socket
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from campaigns.models import ClientHost, IntervalSample, Regression, Run, Target
from tests.factories import (
    CampaignFactory,
    DatasetFactory,
    JobFactory,
    JobResultFactory,
    ScenarioFactory,
    TargetFactory,
)
from tests.helpers.users import make_user

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


def openapi_schema() -> Any:
    """The schema /api/schema/ serves (to a logged-in user), built without a request: no user exists yet when the
    module is collected. Its operations are called on the WSGI application."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
    loaded = schemathesis.openapi.from_dict(document)
    loaded.app = _application()
    return loaded


# Loaded when the module is collected (pytest-django has set Django up by then); building the
# schema touches no database. Each operation becomes a test of its own.
schema = openapi_schema()


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
    from campaigns.services import token_issue

    return {"Authorization": f"Token {token_issue(user=make_user('operator', 'fuzz-operator'))}"}


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


# ---------------------------------------------------------------- stateful: linked calls over realistic data


@pytest.fixture
def realistic_data(db: Any) -> dict[str, Any]:
    """What a database holds after some weeks of use: the seed templates, two products on two specs, three
    campaigns with finished runs (results and per-second samples, repetitions, a failed job), a nightly history
    with a regression, schedules, an imported run and a client host. Every target points at a closed port."""
    from django.utils import timezone

    from campaigns import monitoring
    from campaigns.models import CampaignSchedule, Job, JobResult, Run
    from campaigns.seeds.services import template_load_all
    from tests.factories import InstanceSpecFactory, ProductFactory

    template_load_all()
    closed = _closed_port()
    specs = [InstanceSpecFactory(label=f"{n}-core {4 * n} GB", cpu_cores=n, memory_gb=4 * n) for n in (4, 8)]
    products = [ProductFactory(name="MySQL 8.0"), ProductFactory(name="TDSQL-C")]
    targets = [TargetFactory(product=p, spec=s, port=closed, password="fuzz-secret") for p in products for s in specs]
    scenarios = [ScenarioFactory(name=f"{test} 10x100k", test=test,
                                 dataset=DatasetFactory(name=f"ds {test}", tables=10, table_size=100_000))
                 for test in ("oltp_read_only", "oltp_write_only", "oltp_point_select")]
    campaigns = [CampaignFactory(name=f"campaign {i}", targets=targets, scenarios=scenarios, threads=[8, 64])
                 for i in range(3)]
    now = timezone.now()
    for campaign in campaigns:
        for qps_base in (10_000, 10_300, 9_700, 10_150, 9_850, 9_000):  # the last run drops by about 10 %
            run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                                     started_at=now, finished_at=now)
            for target in targets:
                for scenario in scenarios[:2]:
                    for threads in (8, 64):
                        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads,
                                                 repetition=1, status=Job.Status.SUCCEEDED, tables=10,
                                                 table_size=100_000, started_at=now, finished_at=now)
                        qps = qps_base * threads / 8 * (1.4 if target.product == products[1] else 1.0)
                        JobResult.objects.create(job=job, qps=qps, tps=qps / 20, latency_avg_ms=8000 / qps,
                                                 latency_pct_ms=16000 / qps, latency_pct=95.0)
        failed = Job.objects.create(run=run, target=targets[0], scenario=scenarios[2], threads=8,
                                    status=Job.Status.FAILED, error="sysbench exited with 1", tables=10,
                                    table_size=100_000)
        IntervalSample.objects.bulk_create([
            IntervalSample(job=failed, t=t, threads=8, tps=50, qps=1000, reads_per_s=700, writes_per_s=200,
                           other_per_s=100, latency_pct_ms=2.5, errors_per_s=0, reconnects_per_s=0)
            for t in range(1, 61)
        ])
        monitoring.run_evaluate(run=run)
        CampaignSchedule.objects.create(campaign=campaign, cron="0 2 * * *", label="nightly")
    ClientHost.objects.create(hostname="fuzz-host", queue="host.fuzz-host")
    return {"closed_port": closed}


@SLOW
@pytest.mark.django_db
def test_linked_calls_over_realistic_data_never_give_a_server_error(operator_headers: dict[str, str],
                                                                   realistic_data: dict[str, Any]) -> None:
    """Schemathesis' state machine chains operations through the links it infers (a listed or created id fed to
    the detail, update, launch, plan, cancel and delete operations) over a database holding real-looking rows.
    Each scenario runs in a savepoint, rolled back after it, so every one starts from the same data."""
    from django.db import transaction

    closed = realistic_data["closed_port"]
    assert Regression.objects.exists() and Run.objects.count() >= 18  # the data really is there

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            self.savepoint = transaction.savepoint()

        def teardown(self) -> None:
            transaction.savepoint_rollback(self.savepoint)

        def before_call(self, case: Any) -> None:
            if case.operation.path.endswith("/check/"):
                pk = str((case.path_parameters or {}).get("id", ""))
                if pk.isdigit() and len(pk) < 19:
                    Target.objects.filter(pk=int(pk)).update(host="127.0.0.1", port=closed, driver="mysql")

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": operator_headers}

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)
            assert "fuzz-secret" not in response.text

    Workflow.run(settings=settings(max_examples=int(os.environ.get("BENCHAPP_STATEFUL_EXAMPLES", "50")),
                                   stateful_step_count=8, deadline=None, derandomize=True,
                                   suppress_health_check=list(HealthCheck)))


@SLOW
@pytest.mark.django_db
def test_comparisons_filtered_by_any_mix_of_real_ids_never_give_a_server_error(
        operator_headers: dict[str, str], realistic_data: dict[str, Any]) -> None:
    """Generated ids are random numbers that rarely name a row: here every filter of the comparison is drawn
    from the ids the database really holds (and a stranger, and the empty value), in each export format."""
    from django.test import Client
    from hypothesis import given
    from hypothesis import strategies as st

    from campaigns.models import Campaign, InstanceSpec, Product, Scenario

    pools = {
        "campaign": list(Campaign.objects.values_list("pk", flat=True)),
        "products": list(Product.objects.values_list("pk", flat=True)),
        "runs": list(Run.objects.values_list("pk", flat=True)[:12]),
        "scenarios": list(Scenario.objects.values_list("pk", flat=True)[:12]),
        "specs": list(InstanceSpec.objects.values_list("pk", flat=True)[:12]),
        "targets": list(Target.objects.values_list("pk", flat=True)[:12]),
        "threads": [8, 64, 1],
    }
    client = Client(HTTP_AUTHORIZATION=operator_headers["Authorization"])

    def values(pool: list[int]) -> st.SearchStrategy[str | None]:
        chosen = st.lists(st.sampled_from([*pool, 999_999_999]), max_size=3)
        return st.one_of(st.none(), st.just(""), chosen.map(lambda ids: ",".join(map(str, ids))))

    @given(st.fixed_dictionaries({name: values(pool) for name, pool in pools.items()}),
           st.sampled_from(["json", "csv"]))
    @settings(max_examples=int(os.environ.get("BENCHAPP_SCHEMA_EXAMPLES", "8")) * 10, deadline=None,
              derandomize=True, suppress_health_check=list(HealthCheck))
    def one(filters: dict[str, str | None], fmt: str) -> None:
        query = {name: value for name, value in filters.items() if value is not None}
        response = client.get("/api/v1/comparisons/", {**query, "format": fmt})
        assert response.status_code in (200, 400), (query, fmt, response.status_code, response.content[:300])

    one()
