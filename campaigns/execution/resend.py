"""Lost clients. A client whose worker stopped beating is declared lost (jobclient_lose), by the reconciler or by a
busy worker's own look (clients_sweep_lost).

A client host lost before its sysbench started measuring costs the job nothing: its share of the threads is
sent to another eligible host (the campaign's choice of client hosts, none that this job has lost, none that
already runs one of its clients), up to the campaign's client_tries sends in all, and the job's barrier starts
over. Once any client of the job has started measuring, a lost client fails the job, or has it measured again
(results.job_measure_again).

The lost send stays as a ClientSend row: host, when it was sent and lost, and why.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from campaigns.execution import results, transitions
from campaigns.execution.dispatch import jobclient_dispatch
from campaigns.execution.hosts import client_doing, host_mark_offline, stale_clients, worker_lost_cause
from campaigns.execution.sealed import holds_field_key
from campaigns.models import ClientHost, ClientSend, Job, JobClient, SealedPassword
from campaigns.models.core import hosts_allowed

log = logging.getLogger(__name__)


def resend_host(*, job: Job, client: JobClient) -> tuple[str | None, str]:
    """The host to send a lost client's share to next, or None and why there is none."""
    campaign = job.run.campaign
    tries = campaign.client_tries
    lost = list(ClientSend.objects.filter(client__job_id=job.pk).values_list("host", flat=True))
    tried = [*ClientSend.objects.filter(client_id=client.pk).values_list("host", flat=True), client.host_name]
    if client.attempt >= tries:
        return None, f"its {tries} {'try is' if tries == 1 else 'tries are'} used ({', '.join(tried)})"
    taken = {c.host_name for c in job.clients.exclude(pk=client.pk)} | set(lost) | {client.host_name}
    online = ClientHost.objects.online().values_list("hostname", "labels")
    eligible = sorted(name for name, labels in online
                      if name not in taken and hosts_allowed(campaign.client_hosts, name, labels or []))
    if not eligible:
        among = f" among {', '.join(campaign.client_hosts)}" if campaign.client_hosts else ""
        return None, f"no other client host{among} is online (tried {', '.join(tried)})"
    return eligible[0], ""


def client_resend_lost(*, client: JobClient, heartbeat_before: datetime, cause: str) -> tuple[bool, str]:
    """Sends a lost client's share to another host when the job allows it.

    Returns (True, host) when it was sent again; (False, why) when not: why is "" when the job has started
    measuring (or ended), so that the loss is an ordinary one, else the reason no host could take it.
    """
    job = Job.objects.select_related("run__campaign").get(pk=client.job_id)
    host, why = resend_host(job=job, client=client)
    if host is None:
        return False, why
    earlier = {"attempt": client.attempt, "host": client.host_name,
               "sent_at": _sent_at(job, client), "ended_at": timezone.now(),
               "outcome": "lost", "cause": cause}
    if not transitions.client_resend(client_id=client.pk, attempt=client.attempt, host_name=host,
                                     heartbeat_before=heartbeat_before, earlier=earlier):
        return False, ""
    # The lost host's copy of the password goes: the job is no longer its (nor are its rows: client_access).
    SealedPassword.objects.filter(job_id=job.pk, host_name=client.host_name).delete()
    jobclient_dispatch(client_id=client.pk, hostname=host, attempt=client.attempt + 1, job=job)
    log.warning("job %s: %s; its share (client %s) sent again to %s, try %s of %s", job.pk, cause, client.index,
                host, client.attempt + 1, job.run.campaign.client_tries)
    return True, host


def _sent_at(job: Job, client: JobClient) -> datetime | None:
    """When this send went out: when the send before it was lost, or (the first) when the job started."""
    before = ClientSend.objects.filter(client_id=client.pk).order_by("-number").values_list("ended_at", flat=True)
    return next(iter(before[:1]), None) or job.started_at


def jobclient_lose(*, client: JobClient, heartbeat_before: datetime, cause: str) -> bool:
    """Declares lost a client whose last heartbeat is older than heartbeat_before.

    Lost before its sysbench started measuring (pending, or ready at the barrier), while no peer has started
    either, its share is sent to another eligible host (client_resend_lost). Otherwise the client and
    its job fail with the cause (saying why it was not sent again, when it could not be). Either way its host is
    taken offline unless that host still beats (a live worker with a stuck task), so the next job is not handed
    to a dead host. False when the client beat meanwhile or had already ended.
    """
    why = ""
    if client.status in (JobClient.Status.PENDING, JobClient.Status.READY):
        resent, why = client_resend_lost(client=client, heartbeat_before=heartbeat_before, cause=cause)
        if resent:
            host_mark_offline(hostname=client.host_name, heartbeat_before=heartbeat_before)
            return True
        if why:
            when = "" if " before " in cause else " before it started measuring"
            cause = f"{cause}{when}; not sent again: {why}"
    # Lost while measuring, or at the barrier once a peer had started (why is "" then): the job's measurement is
    # spoiled, and it is measured again while the campaign's job_tries last. The loss and the new attempt are one
    # change (LostClient): declared apart, a closer (the reconciler's, a peer's) could see the lost client closed
    # and end the old attempt as failed while the new one was being made, and end the new one with the old cause.
    measuring = client.status == JobClient.Status.RUNNING or not why
    row = JobClient.objects.filter(pk=client.pk).values_list("job__attempt", "job__run__campaign__job_tries").first()
    if row is None:
        return False  # the attempt it belonged to was measured again meanwhile: its clients went with it
    attempt, tries = row
    if measuring:
        measured = results.job_measure_again(
            job_id=client.job_id, attempt=attempt, cause=cause,
            lost_client=transitions.LostClient(client_id=client.pk, send=client.attempt,
                                               heartbeat_before=heartbeat_before))
        if measured == "again":
            host_mark_offline(hostname=client.host_name, heartbeat_before=heartbeat_before)
            return True
        if measured == "no try left":
            cause = results.no_try_left(cause, attempt=attempt, tries=tries)
    if not transitions.client_lose(client_id=client.pk, heartbeat_before=heartbeat_before, cause=cause):
        return False  # it beat meanwhile, or ended
    host_mark_offline(hostname=client.host_name, heartbeat_before=heartbeat_before)
    # Only the attempt the client belonged to fails: a job measured again meanwhile keeps its new attempt.
    if transitions.job_fail(job_id=client.job_id, cause=cause, attempt=attempt):
        log.warning("job %s: %s", client.job_id, cause)
    return True


_next_sweep_at = 0.0


def clients_sweep_lost() -> int:
    """Declares lost every started client, of any job of this queue, whose worker stopped beating.

    Busy workers call this from their polling loops, at most every BENCHAPP_STALE_S / 3. The
    reconciler is a task and needs a free worker: while every worker is busy with a long job (as
    every host of a multi-client job is), a dead host's job would otherwise show as running until
    one of them is free. Closing the job (snapshot, cleanup, next job) is left to its surviving
    clients or to the reconciler: a measuring client must not stop reading its sysbench for that.
    """
    global _next_sweep_at
    if not holds_field_key():
        return 0  # a client host's worker: the server's reconciler does it (it may seal for the next host)
    now = time.monotonic()
    if now < _next_sweep_at:
        return 0
    stale_s = settings.BENCHAPP_STALE_S
    _next_sweep_at = now + stale_s / 3
    limit = timezone.now() - timedelta(seconds=stale_s)
    lost = 0
    for client in stale_clients(heartbeat_before=limit):
        cause = worker_lost_cause(client.host_name, stale_s=stale_s, doing=client_doing(client),
                                  last_beat=client.heartbeat_at)
        lost += jobclient_lose(client=client, heartbeat_before=limit, cause=cause)
    return lost
