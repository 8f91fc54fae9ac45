"""Whose turn it is on a target: another run's job that holds the database or server (or a settings variant not
yet put back), and the earlier job of the same run that still loads it. A database test's coordinator
(coordinator.py) and a host test's (hostjobs.py) both wait on these before they start."""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from campaigns.endpoints import same_server
from campaigns.execution import transitions
from campaigns.execution.phases import JobStopped, job_heartbeat
from campaigns.execution.resend import clients_sweep_lost
from campaigns.execution.variants import open_on_server
from campaigns.models import Attempt, Job, JobClient, Scenario, Target

PREVIOUS_POLL_S = 0.01
# A previous job's snapshot after its run stands for this job's snapshot before only if it is this recent.
_FRESH = timedelta(seconds=2)


@dataclass(frozen=True)
class Busy:
    """Why a job cannot have its target now: the job that holds it (None: a settings change nobody holds) and the
    wait reason the run page shows."""

    job: Job | None
    reason: str


def _claim_order(job: Job) -> tuple[datetime, int]:
    """Among active jobs, the one claimed first keeps what both want (ties by id): of two jobs claimed at the same
    moment exactly one goes on, and neither waits for the other."""
    return (job.claimed_at or datetime.min.replace(tzinfo=UTC), job.pk)


def _holds_server(job: Job, other: Job) -> bool:
    """Whether another run's job on the same server keeps `job` from measuring there now.

    Any database of the server: two runs on one server measure each other (the CPU, the buffer pool, the redo log
    are the server's), whatever database or target name each uses; on one database they would also drop each
    other's tables. A settings variant changes server-wide settings, so a job with one, or beside one, always
    holds the server. Two campaigns that both share on purpose (share_server) measure side by side on other
    databases of one server, and only those."""
    target, theirs = job.target, other.target
    if not same_server(theirs.host, target.host, target.port):
        return False
    if theirs.database == target.database or job.variant or other.variant:
        return True
    return not (job.run.campaign.share_server and other.run.campaign.share_server)


def _lingering(job: Job, *, hosts: list[str] | None = None) -> Busy | None:
    """A lost attempt whose sysbench may still run (Attempt.lease_until) on the job's server, or on one of `hosts`:
    it holds them against every job, its own job's next attempt and the jobs of its own run included, until its
    --time has run out. Two runs that both share on purpose go on beside each other's lost attempts too."""
    now = timezone.now()
    target = job.target
    attempts = Attempt.objects.filter(lease_until__gt=now).select_related("job__target", "job__run__campaign")
    for lost in attempts.order_by("lease_until"):
        other = lost.job
        mine = other.run_id == job.run_id
        until = timezone.localtime(lost.lease_until).strftime("%H:%M:%S")
        where = f"attempt {lost.number} of job #{other.pk} (run #{other.run_id}), lost while measuring,"
        if hosts is not None:
            shared = sorted(set(lost.hosts) & set(hosts))
            if shared and (mine or not (job.run.campaign.share_server and other.run.campaign.share_server)):
                return Busy(job=other, reason=f"waits for client host {', '.join(shared)}: {where} may still run "
                                              f"sysbench there until {until}; starts then")
            continue
        if other.target.driver != target.driver or other.target.port != target.port:
            continue
        if mine and same_server(other.target.host, target.host, target.port) or (
                not mine and _holds_server(job, other)):
            return Busy(job=other, reason=f"waits for the server {target.host}:{target.port}: {where} may still "
                                          f"measure there until {until}; starts then")
    return None


def target_busy(job: Job) -> Busy | None:
    """Another run's job that holds the job's server (any database on it), or a settings variant not yet put back.

    Two nightly schedules at 02:00 on two targets of one MariaDB would measure each other; on one database they
    would also drop each other's sbtest tables. Among active jobs, the one claimed first keeps the server; the
    other waits with the reason on its run page, and the reconciler sends it again every few seconds until the
    server is free. A job without a variant also waits while a variant that has ended is still to be put back on
    its server (its restore failed: the reconciler tries again); a job with a variant puts such changes back
    itself (variants.variant_apply). Every job on a server waits while a change on it is held (a restore that
    failed on a server that answers: variants.change_hold) until a person confirms the settings were put back.
    """
    target = job.target
    if target.driver:
        held = next((c for c in open_on_server(target) if c.is_held()), None)
        if held is not None:  # a restore that failed: nobody goes on until a person has confirmed it
            return Busy(job=None, reason=(
                f"held: the settings variant {held.variant!r} of job #{held.job_id} could not be put back on "
                f"{target.host}:{target.port}; starts once a person has confirmed it was put back "
                f"(POST /api/v1/targets/{held.target_id}/settings-confirm/)"))
    lingering = _lingering(job)
    if lingering is not None:
        return lingering
    others = (Job.objects.unsettled().filter(target__driver=target.driver, target__port=target.port)
              .exclude(run_id=job.run_id).select_related("run__campaign", "target"))
    earlier = [other for other in others
               if _claim_order(other) < _claim_order(job) and _holds_server(job, other)]
    if earlier:
        holder = min(earlier, key=_claim_order)
        where = f"job #{holder.pk} of run #{holder.run_id} ({holder.run.campaign.name})"
        if not target.driver:  # a host test: its target is a client host
            return Busy(job=holder, reason=f"waits for client host {target.host}: {where} measures there; "
                                           "starts when that job has finished")
        if holder.target.database == target.database and holder.target.host == target.host:
            return Busy(job=holder, reason=f"waits for the database: {where} uses it; starts when that job has "
                                           "finished")
        why = (f" (its settings variant {holder.variant!r} changes server-wide settings)" if holder.variant
               else f" (this job's settings variant {job.variant!r} changes server-wide settings)" if job.variant
               else "")
        return Busy(job=holder, reason=(f"waits for the server {target.host}:{target.port}: {where} measures "
                                        f"there{why}; starts when that job has finished"))
    if target.driver and not job.variant:
        # Oldest last; a change whose job is still active is that job's to put back.
        ended = [c for c in open_on_server(target) if c.job is None or c.job.status not in Job.ACTIVE]
        if ended:
            left = ended[-1]
            return Busy(job=None, reason=(
                f"the settings variant {left.variant!r} of job #{left.job_id} is still to be put back on "
                f"{target.host}:{target.port} ({left.restore_error or 'not put back yet'}); starts once it is"))
    return None


def hosts_busy(job: Job, hosts: list[str]) -> Busy | None:
    """Another run's job that holds one of the client hosts this job would run on: a database job whose
    coordinator or a running client is there, or a host test of that host. A busy client host measures the
    load of the other job as much as its own (its CPU, its network), so a job takes its hosts only when no job
    of another run claimed before it holds them. Campaigns that both share on purpose (share_server) go on."""
    lost = _lingering(job, hosts=hosts)
    if lost is not None:
        return lost
    lingering = JobClient.objects.filter(job_id=OuterRef("pk"), status__in=transitions.CLIENT_ACTIVE,
                                         host_name__in=hosts)
    others = (Job.objects.unsettled().exclude(run_id=job.run_id)
              .filter(Q(claimed_by__in=hosts) | Exists(lingering)
                      | Q(target__kind=Target.Kind.CLIENT_HOST, target__host__in=hosts))
              .select_related("run__campaign", "target"))
    earlier = [other for other in others if _claim_order(other) < _claim_order(job)
               and not (job.run.campaign.share_server and other.run.campaign.share_server)]
    if not earlier:
        return None
    holder = min(earlier, key=_claim_order)
    held = sorted({holder.claimed_by, *holder.clients.filter(status__in=transitions.CLIENT_ACTIVE)
                   .values_list("host_name", flat=True),
                   *([holder.target.host] if holder.target.is_client_host() else [])} & set(hosts))
    return Busy(job=holder, reason=(
        f"waits for client host {', '.join(held) or ', '.join(hosts)}: job #{holder.pk} of run #{holder.run_id} "
        f"({holder.run.campaign.name}) measures there; starts when that job has finished"))


@dataclass(frozen=True)
class Previous:
    """The run's job that measured last before this one: its target, table count and snapshot after its run."""

    target_id: int | None = None
    tables: int = 0
    snapshot_after: dict[str, Any] | None = None
    variant: str = ""


def measuring_before(job: Job) -> Job | None:
    """A job of the job's run that may still load the target: an earlier one being prepared or warmed up, measuring
    (until its snapshot after the run is taken: Job.measured_at), or about to drop its tables (cleanup after
    each job), or whose client still runs sysbench although the job was cancelled or failed; or a later one
    measuring now (a job measured again after it was lost comes back behind jobs that went on meanwhile)."""
    lingering = JobClient.objects.filter(job_id=OuterRef("pk"), status__in=transitions.CLIENT_ACTIVE,
                                         exited_at__isnull=True)
    earlier = Q(position__lt=job.position) | Q(position=job.position, pk__lt=job.pk)
    # One query, asked every PREVIOUS_POLL_S while waiting.
    return (Job.objects.filter(run_id=job.run_id).exclude(pk=job.pk)
            .filter(earlier & (Q(status__in=(Job.Status.PREPARING, Job.Status.RUNNING))
                               & (Q(status=Job.Status.PREPARING) | Q(measured_at__isnull=True)
                                  | Q(scenario__cleanup=Scenario.Cleanup.AFTER_JOB))
                               | Q(measured_at__isnull=True) & Exists(lingering))
                    | Q(status=Job.Status.RUNNING, phase=Job.Phase.RUN, measured_at__isnull=True))
            .only("pk").first())


def previous_wait(job: Job) -> Previous:
    """Waits until no earlier job of the run loads the target (see measuring_before); JobStopped if this job was
    cancelled or failed meanwhile.

    Jobs of a run are sent one at a time, but the next one is sent once the current one measures
    (dispatch.job_stage_next), so that its checks overlap that measurement and only its start follows it.
    """
    next_beat = 0.0
    waiting_for = None
    while (blocking := measuring_before(job)) is not None:
        if blocking.pk != waiting_for:
            waiting_for = blocking.pk
            # Not on a job cancelled or failed meanwhile: a finished job waits for nothing.
            Job.objects.filter(pk=job.pk).exclude(status__in=Job.FINISHED).update(
                wait_reason=f"starts when job #{blocking.pk} has finished measuring")
        now = time.monotonic()
        if now >= next_beat:
            next_beat = now + 1.0
            if job_heartbeat(job.pk) in (Job.Status.CANCELLED, Job.Status.FAILED):
                raise JobStopped()
            # This slot may be its worker's only one, where the reconciler's task would otherwise wait behind
            # it: a client of the job it waits for that died is declared lost from here (which ends the wait).
            clients_sweep_lost()
        time.sleep(PREVIOUS_POLL_S)
    last = (Job.objects.filter(run_id=job.run_id, measured_at__isnull=False).exclude(pk=job.pk)
            .order_by("-measured_at").values("target_id", "tables", "server_snapshot", "measured_at", "variant").first())
    if last is None or last["measured_at"] is None or last["measured_at"] < timezone.now() - _FRESH:
        return Previous()
    after = (last["server_snapshot"] or {}).get("after")
    return Previous(target_id=last["target_id"], tables=last["tables"],
                    snapshot_after=after if after and "error" not in after else None, variant=last["variant"])
