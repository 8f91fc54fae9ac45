"""A password sealed for a client host lives as long as the attempt it was sealed for: closing a job
deletes its seals (results.job_close), a lost attempt takes its own (results.job_measure_again) and the new
attempt's sends seal again; and a host's role reads a seal only while its job is open, whatever ended it.

Sends go to a list (dispatch._send): what would reach the broker is recorded, not delivered.
"""
from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from nacl.public import PrivateKey

from campaigns import sealing
from campaigns.execution import dispatch, results, transitions
from campaigns.models import ClientHost, Job, JobClient, SealedPassword
from campaigns.services import client_access
from tests.factories import JobFactory, TargetFactory
from tests.helpers.client_roles import as_host, own_client_access

PASSWORD = "Seal-Cleanup-9c1e"


def _host(name: str, key: PrivateKey | None = None) -> PrivateKey:
    key = key or PrivateKey.generate()
    ClientHost.objects.create(hostname=name, queue=f"q.host.{name}", role="client",
                              public_key=sealing.public_key_text(key))
    return key


def _sent_to(job: Job, *hosts: str, status: str = JobClient.Status.RUNNING) -> None:
    """The job's clients, one per host, each sent to its host (which seals the job's password for it)."""
    for index, host in enumerate(hosts):
        client = JobClient.objects.create(job=job, index=index, host_name=host, threads=1, status=status)
        dispatch.jobclient_dispatch(client_id=client.pk, hostname=host)


def _sealed(job: Job) -> list[str]:
    return sorted(SealedPassword.objects.filter(job=job).values_list("host_name", flat=True))


@pytest.mark.django_db
def test_closing_a_job_deletes_the_passwords_sealed_for_each_of_its_hosts(sent_tasks):
    _host("clean-a")
    _host("clean-b")
    job = JobFactory(target=TargetFactory(password=PASSWORD), status="running", phase="run", attempt=1)
    other = JobFactory(target=job.target, status="running", phase="run", attempt=1)
    _sent_to(job, "clean-a", "clean-b")
    _sent_to(other, "clean-a")
    assert _sealed(job) == ["clean-a", "clean-b"]

    results.job_close(Job.objects.get(pk=job.pk), status=Job.Status.SUCCEEDED)

    job.refresh_from_db()
    assert (job.status, job.phase) == (Job.Status.SUCCEEDED, Job.Phase.DONE)
    assert _sealed(job) == []
    assert _sealed(other) == ["clean-a"], "another job's seal is that job's"


@pytest.mark.django_db
def test_a_closer_of_a_lost_attempt_leaves_the_new_attempts_seals(sent_tasks):
    _host("clean-c")
    job = JobFactory(target=TargetFactory(password=PASSWORD), status="running", phase="run", attempt=1)
    stale = Job.objects.get(pk=job.pk)  # what attempt 1's closer read
    _sent_to(job, "clean-c")
    assert results.job_measure_again(job_id=job.pk, attempt=1, cause="worker restarted on clean-c") == "again"
    _sent_to(job, "clean-c")  # attempt 2's client, sealed again
    results.job_close(stale, status=Job.Status.FAILED, error="lost")
    assert _sealed(job) == ["clean-c"]


@pytest.mark.django_db
def test_a_lost_attempt_takes_its_seals_and_the_new_attempts_send_seals_again(sent_tasks):
    key_a = _host("lost-a")
    _host("lost-b")
    job = JobFactory(target=TargetFactory(password=PASSWORD), status="running", phase="run", attempt=1)
    _sent_to(job, "lost-a", "lost-b")
    assert _sealed(job) == ["lost-a", "lost-b"]

    # Another looker that read an earlier attempt moves nothing, and deletes nothing.
    assert results.job_measure_again(job_id=job.pk, attempt=2, cause="late look") == "moved on"
    assert _sealed(job) == ["lost-a", "lost-b"]

    assert results.job_measure_again(job_id=job.pk, attempt=1, cause="worker restarted on lost-b") == "again"
    job.refresh_from_db()
    assert (job.status, job.attempt) == (Job.Status.QUEUED, 2)
    assert _sealed(job) == [], "no host holds a copy for an attempt that no longer runs"

    # Attempt 2 runs on lost-a alone: only it is sealed a copy, for its current key.
    _sent_to(job, "lost-a")
    (row,) = SealedPassword.objects.filter(job=job)
    assert row.host_name == "lost-a" and sealing.password_open(row.token, key_a) == PASSWORD


@pytest.fixture
def access(settings: Any, own_redis: Any) -> Iterator[Any]:
    with own_client_access(settings, own_redis) as redis_server:
        yield redis_server


@pytest.mark.django_db(transaction=True)
def test_a_client_hosts_role_reads_its_seal_only_while_the_job_is_open(access, sent_tasks):
    _host("open-a")
    target = TargetFactory(password=PASSWORD)
    running = JobFactory(target=target, status="running", phase="run", attempt=1)
    # A job whose coordinator died while it prepared: the reconciler ends it without job_close.
    orphaned = JobFactory(target=target, status="preparing", phase="prepare", attempt=1,
                          heartbeat_at=timezone.now() - timedelta(minutes=10))
    _sent_to(running, "open-a")
    _sent_to(orphaned, "open-a", status=JobClient.Status.PENDING)
    host = client_access.client_host_issue(hostname="open-a")
    seals = "SELECT job_id FROM campaigns_sealedpassword ORDER BY job_id"
    with as_host(host) as db:
        assert db.execute(seals).fetchall() == [(running.pk,), (orphaned.pk,)]

        assert transitions.job_lose_coordinator(job_id=orphaned.pk, heartbeat_before=timezone.now(),
                                                cause="its coordinator stopped beating")
        assert _sealed(orphaned) == ["open-a"], "this end does not pass through job_close: the row stays"
        # The job is still the host's (its client), its seal no longer: the policy hides a closed job's.
        assert db.execute("SELECT id FROM campaigns_job WHERE id = %s", [orphaned.pk]).fetchall() == [(orphaned.pk,)]
        assert db.execute(seals).fetchall() == [(running.pk,)]

        results.job_close(Job.objects.get(pk=running.pk), status=Job.Status.SUCCEEDED)
        assert _sealed(running) == []
        assert db.execute(seals).fetchall() == []
