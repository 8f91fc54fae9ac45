"""A client host lost before its sysbench started measuring costs the job nothing: its share of the threads is
sent to another eligible host (the campaign's choice of client hosts, none that this job has lost, none that
already runs one of its clients), up to the campaign's client_tries sends in all, and the job's barrier starts
over. Once any client of the job has started measuring, a lost client fails the job (hosts.jobclient_lose).

The lost send stays in the client's earlier_attempts: host, when it was sent and lost, and why.
"""
from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from campaigns.execution import transitions
from campaigns.execution.dispatch import jobclient_dispatch
from campaigns.models import ClientHost, Job, JobClient
from campaigns.models.core import hosts_allowed

log = logging.getLogger(__name__)


def resend_host(*, job: Job, client: JobClient) -> tuple[str | None, str]:
    """The host to send a lost client's share to next, or None and why there is none."""
    campaign = job.run.campaign
    tries = campaign.client_tries
    lost = [row.get("host", "") for c in job.clients.all() for row in c.earlier_attempts or []]
    tried = [*(row.get("host", "") for row in client.earlier_attempts or []), client.host_name]
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
               "sent_at": _sent_at(job, client), "ended_at": timezone.now().isoformat(),
               "outcome": "lost", "cause": cause}
    if not transitions.client_resend(client_id=client.pk, attempt=client.attempt, host_name=host,
                                     heartbeat_before=heartbeat_before, earlier=earlier):
        return False, ""
    jobclient_dispatch(client_id=client.pk, hostname=host, attempt=client.attempt + 1)
    log.warning("job %s: %s; its share (client %s) sent again to %s, try %s of %s", job.pk, cause, client.index,
                host, client.attempt + 1, job.run.campaign.client_tries)
    return True, host


def _sent_at(job: Job, client: JobClient) -> str | None:
    """When this send went out: when the send before it was lost, or (the first) when the job started."""
    if client.earlier_attempts:
        return str(client.earlier_attempts[-1].get("ended_at") or "") or None
    return job.started_at.isoformat() if job.started_at else None
