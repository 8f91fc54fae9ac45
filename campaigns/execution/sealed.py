"""Which password a job's target has here: the server decrypts it (field key), a client host opens the copy the
server sealed for it (campaigns.sealing, SealedPassword), and nothing else.

The server seals a job's password for a host each time it sends that host the job (dispatch.job_forward) or one of
its clients (dispatch.jobclient_dispatch), always for the host's current key: a worker that restarted has a new one.
A seal lives as long as the attempt it was made for: job_passwords_forget() deletes a job's seals when the job is
closed (results.job_close) and when its attempt is lost (results.job_measure_again: the new attempt's sends seal
again, for the hosts it picks); and a host's role reads a seal only while its job is not closed
(services.client_access), whatever ended it.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from campaigns.crypto import DecryptionError
from campaigns.models import ClientHost, Job, SealedPassword
from campaigns.sealing import SealError, password_open, password_seal

log = logging.getLogger(__name__)


class NotSealed(DecryptionError):
    """No password was sealed for this client host for the job (or for another key than its worker's)."""


def holds_field_key() -> bool:
    """Whether this process reads target passwords at rest: every process but a client host's worker."""
    return settings.BENCHAPP_WORKER_ROLE != "client"


def job_password(job: Job) -> str:
    """The job's target password, in memory: decrypted on the server, opened from its sealed copy on a client host
    (NotSealed when none was sealed for this host, or for an earlier key of its worker)."""
    if holds_field_key():
        return job.target.get_password()
    token = SealedPassword.objects.filter(job_id=job.pk, host_name=settings.BENCHAPP_HOSTNAME).values_list(
        "token", flat=True).first()
    if token is None:
        raise NotSealed(f"no password of target {job.target.name} was sealed for client host "
                        f"{settings.BENCHAPP_HOSTNAME}: the server sends it with the job's client")
    try:
        return password_open(token)
    except SealError as exc:
        raise NotSealed(str(exc)) from None


def job_password_seal(*, job: Job, hostname: str, plain: str | None = None) -> bool:
    """Seals the job's target password for `hostname`'s current key (replacing an earlier copy); False when the
    host has registered no key (a worker of an older version), so that nothing can be sealed for it.

    `plain` is the password when the caller holds it already (a coordinator that opened its own copy)."""
    public_key = ClientHost.objects.filter(hostname=hostname).values_list("public_key", flat=True).first()
    if not public_key:
        log.warning("job %s: client host %s has no key: its target password cannot be sealed for it", job.pk,
                    hostname)
        return False
    token = password_seal(job_password(job) if plain is None else plain, public_key)
    SealedPassword.objects.update_or_create(job_id=job.pk, host_name=hostname, defaults={
        "token": token, "public_key": public_key, "sealed_at": timezone.now()})
    return True


def job_passwords_forget(*, job_id: int) -> int:
    """Deletes every password sealed for the job, for whichever hosts; returns how many.

    On the server only: a client host's role may not delete them (it reads its own, and only while the job is
    open), and its worker closes only the host tests of itself, for which nothing is sealed."""
    if not holds_field_key():
        return 0
    deleted, _ = SealedPassword.objects.filter(job_id=job_id).delete()
    return deleted
