"""Parallel launches of one campaign: one active run per campaign, held by a row lock and by the database, and one
run per idempotency key however many requests carry it at once."""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from campaigns import roles, services
from campaigns.models import Run
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

API = "/api/v1"
PARALLEL = 20


def _campaign() -> Any:
    return CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory(test="oltp_point_select")],
                           threads=[1, 2])


def _all_at_once(call: Callable[[int], Any]) -> list[Any]:
    """Runs call(i) for i in range(PARALLEL) in as many threads, released together; each thread has its own
    database connection, closed at its end. Returns the results (or the exceptions raised) in order."""
    barrier = threading.Barrier(PARALLEL)
    results: list[Any] = [None] * PARALLEL

    def one(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = call(i)
        except Exception as exc:  # noqa: BLE001 (kept and asserted on by the test)
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a launch hung"
    return results


def _operator_client() -> APIClient:
    user = get_user_model().objects.create_user("race-operator", password="pw-12345678")
    user.groups.add(Group.objects.get_or_create(name=roles.OPERATOR)[0])
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_launches_without_a_key_make_one_run_and_nineteen_conflicts():
    campaign = _campaign()
    results = _all_at_once(lambda i: services.campaign_launch(campaign=campaign))
    runs = [r for r in results if isinstance(r, Run)]
    conflicts = [r for r in results if isinstance(r, services.StateConflict)]
    assert len(runs) == 1 and len(conflicts) == PARALLEL - 1, results
    assert "already has a run in progress" in str(conflicts[0])
    assert Run.objects.filter(campaign=campaign).count() == 1
    assert runs[0].jobs.count() == 2


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_api_requests_with_one_key_all_return_that_one_run():
    campaign = _campaign()
    client = _operator_client()
    responses = _all_at_once(lambda i: client.post(f"{API}/campaigns/{campaign.pk}/launch/", {"label": "ci"},
                                                   format="json", HTTP_IDEMPOTENCY_KEY="build-4711"))
    statuses = Counter(getattr(r, "status_code", repr(r)) for r in responses)
    assert statuses == {202: PARALLEL}, statuses
    assert len({r.json()["id"] for r in responses}) == 1
    assert Run.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_api_requests_with_twenty_keys_make_one_run():
    campaign = _campaign()
    client = _operator_client()
    responses = _all_at_once(lambda i: client.post(f"{API}/campaigns/{campaign.pk}/launch/", {}, format="json",
                                                   HTTP_IDEMPOTENCY_KEY=f"build-{i}"))
    statuses = Counter(getattr(r, "status_code", repr(r)) for r in responses)
    assert statuses == {202: 1, 409: PARALLEL - 1}, statuses
    assert Run.objects.filter(campaign=campaign).count() == 1
    conflict = next(r for r in responses if r.status_code == 409)
    assert "already has a run in progress" in conflict.content.decode()


@pytest.mark.django_db
def test_the_database_refuses_a_second_active_run_of_a_campaign_whoever_writes_it():
    campaign = _campaign()
    Run.objects.create(campaign=campaign, status=Run.Status.RUNNING)
    for status in Run.ACTIVE:
        with pytest.raises(IntegrityError, match="run_one_active_per_campaign"), transaction.atomic():
            Run.objects.create(campaign=campaign, status=status)
    # Finished runs and an import (created and closed in one transaction, measuring nothing) sit beside it.
    for status in Run.FINISHED:
        Run.objects.create(campaign=campaign, status=status)
    Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, trigger=Run.Trigger.IMPORT)
    assert Run.objects.filter(campaign=campaign).count() == 2 + len(Run.FINISHED)


@pytest.mark.django_db
def test_a_run_queued_behind_another_campaigns_run_is_still_one_active_run_of_its_own_campaign():
    first, second = _campaign(), _campaign()
    running = services.campaign_launch(campaign=first)
    queued = services.campaign_launch(campaign=second, after=running)
    assert queued.status == Run.Status.PENDING
    with pytest.raises(services.StateConflict, match="already has a run in progress"):
        services.campaign_launch(campaign=second)


@pytest.mark.django_db
def test_a_launch_refused_by_another_constraint_says_so_rather_than_a_run_in_progress():
    """A job id sequence set back behind its table (`setval`, which no rollback undoes) made every launch
    answer "already has a run in progress" with none active. Now the refusal names the constraint."""
    from campaigns.execution.transitions import StateConflict
    from tests.factories import JobFactory

    taken = JobFactory()
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_value, is_called FROM campaigns_job_id_seq")
        last_value, is_called = cursor.fetchone()
        cursor.execute("SELECT setval('campaigns_job_id_seq', %s, false)", [taken.pk])
    try:
        campaign = _campaign()
        with pytest.raises(StateConflict) as refused:
            services.campaign_launch(campaign=campaign)
    finally:
        with connection.cursor() as cursor:  # the sequence is the session's, not this test's transaction
            cursor.execute("SELECT setval('campaigns_job_id_seq', %s, %s)", [last_value, is_called])
    message = str(refused.value)
    assert "campaigns_job_pkey" in message and "not because of a run in progress" in message
    assert not Run.objects.filter(campaign=campaign).exists()
