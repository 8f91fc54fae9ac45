"""A job's target password reaches only the client host that runs it, sealed for that host.

The sealing itself (campaigns.sealing), what the server seals when it sends a job or a client to a host
(campaigns.execution.dispatch), and what a client host's worker can open (campaigns.execution.sealed): its own
job's password from the copy sealed for its key, nothing else; with its own in-memory field key it decrypts no
stored secret. A whole job on a client host that holds no field key: tests/test_netns_hosts.py and
tests/test_client_host_scripts.py.
"""
from __future__ import annotations

import time

import pytest
from django.test import override_settings
from nacl.public import PrivateKey

from campaigns import sealing
from campaigns.crypto import DecryptionError
from campaigns.execution import dispatch
from campaigns.execution.phases import JobLost, job_connection, job_secrets
from campaigns.execution.sealed import NotSealed, job_password
from campaigns.models import ClientHost, JobClient, SealedPassword
from tests.conftest import record_measurement
from tests.factories import JobFactory, TargetFactory

PASSWORD = "Tgt-Secret-7f3a"


def test_a_sealed_password_opens_only_with_the_hosts_own_key_and_costs_well_under_a_millisecond():
    mine, other = PrivateKey.generate(), PrivateKey.generate()
    token = sealing.password_seal(PASSWORD, sealing.public_key_text(mine))
    assert PASSWORD not in token and sealing.password_open(token, mine) == PASSWORD
    with pytest.raises(sealing.SealError):
        sealing.password_open(token, other)
    with pytest.raises(sealing.SealError):
        sealing.password_open("not a sealed box", mine)
    # Each seal is new (an ephemeral key per box): two copies of one password look nothing alike.
    assert sealing.password_seal(PASSWORD, sealing.public_key_text(mine)) != token
    assert sealing.public_key_valid(sealing.public_key_text(mine)) and not sealing.public_key_valid("abc")

    rounds = 2000
    public = sealing.public_key_text(mine)
    started = time.perf_counter()
    tokens = [sealing.password_seal(PASSWORD, public) for _ in range(rounds)]
    seal_ms = (time.perf_counter() - started) * 1000 / rounds
    started = time.perf_counter()
    assert all(sealing.password_open(t, mine) == PASSWORD for t in tokens)
    open_ms = (time.perf_counter() - started) * 1000 / rounds
    record_measurement(f"sealed box (PyNaCl): seal {seal_ms:.3f} ms, open {open_ms:.3f} ms per password "
                       f"({rounds} rounds)")
    assert seal_ms < 20 and open_ms < 20


def _host(name: str, key: PrivateKey | None = None) -> ClientHost:
    return ClientHost.objects.create(hostname=name, queue=f"q.host.{name}", role="client",
                                     public_key=sealing.public_key_text(key) if key else "")


@pytest.mark.django_db
def test_sending_a_client_seals_its_target_password_for_that_hosts_key_only():
    key_a, key_b = PrivateKey.generate(), PrivateKey.generate()
    _host("seal-a", key_a)
    _host("seal-b", key_b)
    job = JobFactory(target=TargetFactory(password=PASSWORD), status="running")
    client = JobClient.objects.create(job=job, index=0, host_name="seal-a", threads=1)
    dispatch.jobclient_dispatch(client_id=client.pk, hostname="seal-a")
    row = SealedPassword.objects.get(job=job)
    assert row.host_name == "seal-a" and PASSWORD not in row.token
    assert sealing.password_open(row.token, key_a) == PASSWORD
    with pytest.raises(sealing.SealError):
        sealing.password_open(row.token, key_b)

    # Sent again to another host (its first one lost): sealed for that one too, each copy for its own key.
    dispatch.jobclient_dispatch(client_id=client.pk, hostname="seal-b", attempt=2)
    copies = dict(SealedPassword.objects.filter(job=job).values_list("host_name", "token"))
    assert sealing.password_open(copies["seal-b"], key_b) == PASSWORD
    # A host that restarted (a new key) gets a copy for its new key when it is sent the client again.
    new_a = PrivateKey.generate()
    ClientHost.objects.filter(hostname="seal-a").update(public_key=sealing.public_key_text(new_a))
    dispatch.jobclient_dispatch(client_id=client.pk, hostname="seal-a")
    token = SealedPassword.objects.get(job=job, host_name="seal-a").token
    assert sealing.password_open(token, new_a) == PASSWORD
    assert SealedPassword.objects.filter(job=job).count() == 2

    # A host without a key (a worker of an older version) gets nothing: no copy it could open, none in clear.
    _host("seal-keyless")
    dispatch.jobclient_dispatch(client_id=client.pk, hostname="seal-keyless")
    assert not SealedPassword.objects.filter(job=job, host_name="seal-keyless").exists()


@pytest.mark.django_db
def test_forwarding_a_job_to_a_client_host_seals_its_password_for_that_host():
    key = PrivateKey.generate()
    _host("seal-fwd", key)
    job = JobFactory(target=TargetFactory(password=PASSWORD), status="queued")
    dispatch.job_forward(job_id=job.pk, hostname="seal-fwd")
    assert sealing.password_open(SealedPassword.objects.get(job=job, host_name="seal-fwd").token, key) == PASSWORD


@pytest.mark.django_db
def test_a_client_hosts_worker_opens_its_own_jobs_password_and_no_other(settings):
    # This process plays the client host "seal-me": its worker's key is this process's (campaigns.sealing.host_key).
    _host("seal-me", sealing.host_key())
    _host("seal-other", PrivateKey.generate())
    own = JobFactory(target=TargetFactory(password=PASSWORD), status="running")
    others = JobFactory(target=TargetFactory(password="Other-Secret-9"), status="running")
    for job, host in ((own, "seal-me"), (others, "seal-other")):
        client = JobClient.objects.create(job=job, index=0, host_name=host, threads=1)
        dispatch.jobclient_dispatch(client_id=client.pk, hostname=host)
    never_sent = JobFactory(target=TargetFactory(password="Never-Sent-3"), status="running")

    # A client host's settings: its role, its name, and a field key of its own that decrypts nothing stored.
    with override_settings(BENCHAPP_WORKER_ROLE="client", BENCHAPP_HOSTNAME="seal-me",
                           FIELD_ENCRYPTION_KEYS=["a-client-hosts-own-key-made-in-memory"],
                           FIELD_DECRYPTION_ONLY_KEYS=[]):
        own.refresh_from_db()
        assert job_password(own) == PASSWORD
        assert job_connection(own).password == PASSWORD and job_secrets(own) == [PASSWORD]
        for job in (others, never_sent):
            job.refresh_from_db()
            with pytest.raises(NotSealed):
                job_password(job)
            with pytest.raises(DecryptionError):  # the stored password itself: not with this host's key
                job.target.get_password()
            assert job_secrets(job) == []
        # Its copy sealed for an earlier key of its worker (before a restart) does not open: said as such.
        SealedPassword.objects.filter(job=own).update(token=sealing.password_seal(
            PASSWORD, sealing.public_key_text(PrivateKey.generate())))
        with pytest.raises(NotSealed, match="sealed for another key"):
            job_password(own)
        # Not the job's fault: it is measured again (sent and sealed anew), never failed for it (a netns host's
        # restart failed a job so, 2026-12-02).
        with pytest.raises(JobLost, match="sealed for another key.*measured again"):
            job_connection(own)
    # The server (role all) decrypts at rest as before.
    assert job_password(others) == "Other-Secret-9"
