"""The one place where a Job, a JobClient, a Run or a PreparedDataset changes status or phase.

Every transition is a conditional UPDATE: it names the states it may start from and changes nothing
(returning False) when the row is elsewhere, so two workers, a reconciler and a user's cancel can all
try at once and exactly the legal one wins. A transition asked for a state it can never lead to raises
IllegalTransition: that is a bug in the caller, not a race. tests/test_transitions.py walks the tables
below, and tests/test_transition_owner.py fails when any other module writes one of these fields.

A job's status and its phase move separately: a job cancelled while measuring stays in phase "run"
until its last client has stopped, and its closer then moves it through "finalizing" to "done".
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, CharField, Count, F, Q, TextField, Value, When
from django.utils import timezone

from benchapp import requestid
from campaigns.models import Attempt, ClientSend, Job, JobClient, JobResult, PreparedDataset, Run, Scenario

JobStatus = Job.Status
ClientStatus = JobClient.Status
RunStatus = Run.Status
Phase = Job.Phase

ERROR_MAX = 5000


class StateConflict(Exception):
    """The requested change does not fit the current state (e.g. cancelling a finished run)."""


class IllegalTransition(StateConflict):
    """A transition that the state machine never allows, whatever the row's current state."""


# Which states each status may be entered from.
JOB_SOURCES: dict[str, frozenset[str]] = {
    # preparing | running → queued is a new attempt of a job the infrastructure spoiled (job_requeue).
    JobStatus.QUEUED: frozenset({JobStatus.PREPARING, JobStatus.RUNNING}),
    JobStatus.WAITING: frozenset({JobStatus.PREPARING}),
    JobStatus.PREPARING: frozenset({JobStatus.QUEUED, JobStatus.WAITING}),
    JobStatus.RUNNING: frozenset({JobStatus.PREPARING}),
    JobStatus.SUCCEEDED: frozenset({JobStatus.RUNNING}),
    JobStatus.FAILED: frozenset({JobStatus.QUEUED, JobStatus.WAITING, JobStatus.PREPARING, JobStatus.RUNNING}),
    JobStatus.CANCELLED: frozenset({JobStatus.QUEUED, JobStatus.WAITING, JobStatus.PREPARING, JobStatus.RUNNING}),
}
CLIENT_SOURCES: dict[str, frozenset[str]] = {
    # pending | ready → pending is a re-send to another host (client_resend), before the client started measuring.
    ClientStatus.PENDING: frozenset({ClientStatus.PENDING, ClientStatus.READY}),
    ClientStatus.READY: frozenset({ClientStatus.PENDING}),
    ClientStatus.RUNNING: frozenset({ClientStatus.READY}),
    ClientStatus.SUCCEEDED: frozenset({ClientStatus.RUNNING}),
    ClientStatus.FAILED: frozenset({ClientStatus.PENDING, ClientStatus.READY, ClientStatus.RUNNING}),
    ClientStatus.CANCELLED: frozenset({ClientStatus.PENDING, ClientStatus.READY, ClientStatus.RUNNING}),
}
RUN_SOURCES: dict[str, frozenset[str]] = {
    RunStatus.PENDING: frozenset(),
    RunStatus.RUNNING: frozenset({RunStatus.PENDING}),
    RunStatus.SUCCEEDED: frozenset({RunStatus.RUNNING}),
    RunStatus.PARTIALLY_SUCCEEDED: frozenset({RunStatus.RUNNING}),
    RunStatus.FAILED: frozenset({RunStatus.RUNNING}),
    RunStatus.CANCELLED: frozenset({RunStatus.PENDING, RunStatus.RUNNING}),
}
# Which phases each phase may be entered from ("" is a job nobody has claimed yet).
PHASE_SOURCES: dict[str, frozenset[str]] = {
    # Back to none: a new attempt (job_requeue), from the closer too when it found the attempt spoiled.
    Phase.NONE: frozenset({Phase.PREPARE, Phase.RUN, Phase.FINALIZING}),
    Phase.PREPARE: frozenset({Phase.NONE}),
    Phase.RUN: frozenset({Phase.PREPARE, Phase.FINALIZING}),
    Phase.FINALIZING: frozenset({Phase.RUN}),
    Phase.DONE: frozenset({Phase.NONE, Phase.PREPARE, Phase.RUN, Phase.FINALIZING}),
}
CLIENT_ACTIVE = (ClientStatus.PENDING, ClientStatus.READY, ClientStatus.RUNNING)
CLIENT_FINISHED = (ClientStatus.SUCCEEDED, ClientStatus.FAILED, ClientStatus.CANCELLED)


def _final(status: str, allowed: Iterable[str], what: str) -> None:
    if status not in allowed:
        raise IllegalTransition(f"a {what} cannot be closed as {status!r}")


def _error(text: str) -> str:
    return text[:ERROR_MAX]


@dataclass(frozen=True)
class LostClient:
    """The client whose loss spoils an attempt (job_requeue): it must still be active, still the same send
    of its share (send: JobClient.attempt), and, given heartbeat_before, silent since then."""

    client_id: int
    send: int | None = None
    heartbeat_before: datetime | None = None

    def still_active(self, *, job_id: int) -> bool:
        rows = JobClient.objects.select_for_update().filter(pk=self.client_id, job_id=job_id,
                                                            status__in=CLIENT_ACTIVE)
        if self.send is not None:
            rows = rows.filter(attempt=self.send)
        if self.heartbeat_before is not None:
            rows = rows.filter(heartbeat_at__lt=self.heartbeat_before)
        return rows.values_list("pk", flat=True).first() is not None


# ---------------------------------------------------------------- jobs


def job_claim(*, job_id: int, host: str) -> bool:
    """queued | waiting → preparing: a coordinator takes the job (one wins, whatever the duplicates)."""
    now = timezone.now()
    return bool(Job.objects.filter(pk=job_id, status__in=JOB_SOURCES[JobStatus.PREPARING]).update(
        status=JobStatus.PREPARING, phase=Phase.PREPARE, claimed_by=host, claimed_at=now, heartbeat_at=now,
    ))


def job_wait(*, job_id: int, reason: str) -> bool:
    """preparing → waiting: handed back with the reason shown; the reconciler sends it again later."""
    return bool(Job.objects.filter(pk=job_id, status__in=JOB_SOURCES[JobStatus.WAITING]).update(
        status=JobStatus.WAITING, phase=Phase.NONE, claimed_by="", wait_reason=reason[:300],
    ))


def job_wait_target(*, job_id: int, reason: str, since: datetime, next_try_at: datetime) -> bool:
    """preparing → waiting for its unreachable target (unreachable since `since`), trying again at next_try_at."""
    return bool(Job.objects.filter(pk=job_id, status__in=JOB_SOURCES[JobStatus.WAITING]).update(
        status=JobStatus.WAITING, phase=Phase.NONE, claimed_by="", wait_reason=reason[:300],
        unreachable_since=since, next_try_at=next_try_at,
    ))


def job_start(*, job_id: int, command_line: str, server_snapshot: dict[str, Any],
              server_work: dict[str, Any] | None = None) -> bool:
    """preparing → running (phase run): the clients are about to be sent. False if cancelled meanwhile.
    server_work: the server's own reading of the target's work counter ({driver, before})."""
    now = timezone.now()
    return bool(Job.objects.filter(pk=job_id, status__in=JOB_SOURCES[JobStatus.RUNNING]).update(
        status=JobStatus.RUNNING, phase=Phase.RUN, started_at=now, heartbeat_at=now, wait_reason="",
        unreachable_since=None, next_try_at=None, command_line=command_line, server_snapshot=server_snapshot,
        server_work=server_work or {},
    ))


def job_requeue(*, job_id: int, attempt: int, cause: str, t_s: float | None,
                      heartbeat_before: datetime | None = None, lost_client: LostClient | None = None,
                      closing: bool = False) -> bool:
    """preparing | running (attempt `attempt`) → queued as attempt + 1: the infrastructure spoiled the measurement.

    The spoiled attempt becomes an Attempt row (number, started_at, ended_at, cause, t_s); its clients and
    its result are removed (a client of it still alive then finds no row, stops its sysbench and writes nothing
    more), its per-second rows stay under their attempt number. Given heartbeat_before, only while the job's
    own heartbeat is older (a coordinator that stopped beating). Given lost_client, only while that client is
    still active (and, with its heartbeat_before, silent): the loss of a client and the new attempt are one
    change, so nobody sees the lost client closed while its job still runs the old attempt and closes that
    attempt as failed meanwhile. Never once a closer has begun finalizing the attempt: its outcome is the
    closer's (closing: the closer itself, which found the measurement spoiled from outside). False when the job
    had moved on or ended.
    """
    now = timezone.now()
    with transaction.atomic():
        rows = Job.objects.select_for_update(of=("self",)).filter(
            pk=job_id, attempt=attempt, status__in=JOB_SOURCES[JobStatus.QUEUED])
        rows = rows.filter(phase=Phase.FINALIZING) if closing else rows.exclude(phase=Phase.FINALIZING)
        if heartbeat_before is not None:
            rows = rows.filter(heartbeat_at__lt=heartbeat_before)
        job = rows.first()
        if job is None:
            return False
        if lost_client is not None and not lost_client.still_active(job_id=job_id):
            return False
        # The hosts whose sysbench nobody saw exit (a worker that saw it exit confirmed it gone): they, and the
        # server, stay the lost attempt's until its sysbench has run out (turns).
        running = sorted(set(JobClient.objects.filter(job_id=job_id, exited_at__isnull=True)
                             .values_list("host_name", flat=True)))
        Attempt.objects.create(job_id=job_id, number=attempt, started_at=job.started_at or job.claimed_at or now,
                               ended_at=now, cause=_error(cause)[:1000], t_s=t_s,
                               lease_until=_lease(job, now) if running else None, hosts=running)
        JobClient.objects.filter(job_id=job_id).delete()
        JobResult.objects.filter(job_id=job_id).delete()
        # Every column of the attempt starts again (Job.ATTEMPT_FIELDS); the lost one's cause is its Attempt row,
        # shown beside the attempt number.
        Job.objects.filter(pk=job_id).update(**Job.attempt_fresh(), attempt=attempt + 1)
        return True


# How long after its --time a lost attempt's sysbench is still thought to run (it closes its connections, prints).
LEASE_GRACE_S = 10


def _lease(job: Job, now: datetime) -> datetime | None:
    """Until when the lost attempt's sysbench may still run: its measuring start (the barrier's release, else the
    clients' send) plus its --time and a grace; None when it never began measuring."""
    began = job.release_at or job.started_at
    if began is None or job.phase not in (Phase.RUN, Phase.FINALIZING):
        return None
    run_s = job.time_s if job.time_s is not None else Scenario.objects.filter(pk=job.scenario_id).values_list(
        "time_s", flat=True).first() or 0
    until = began + timedelta(seconds=run_s + LEASE_GRACE_S)
    return until if until > now else None


def job_fail(*, job_id: int, cause: str, attempt: int | None = None) -> bool:
    """Any unfinished status → failed, keeping its phase (its clients notice and stop; its closer closes it).

    Given an attempt, only while the job is still at it: the failure of a lost attempt never fails the next one.
    False when the job had already ended (or moved to another attempt).
    """
    rows = Job.objects.filter(pk=job_id, status__in=JOB_SOURCES[JobStatus.FAILED])
    if attempt is not None:
        rows = rows.filter(attempt=attempt)
    return bool(rows.update(status=JobStatus.FAILED, error=_error(cause), wait_reason=""))


def job_lose_coordinator(*, job_id: int, heartbeat_before: datetime, cause: str) -> bool:
    """preparing with a heartbeat older than heartbeat_before → failed and done: its coordinator died."""
    return bool(Job.objects.filter(
        pk=job_id, status=JobStatus.PREPARING, heartbeat_at__lt=heartbeat_before,
    ).update(status=JobStatus.FAILED, phase=Phase.DONE, finished_at=timezone.now(), error=_error(cause),
             wait_reason=""))


def job_end(*, job_id: int, status: str, error: str = "", attempt: int | None = None) -> bool:
    """Ends a job: phase done and finished_at, and `status` when the job may enter it from where it is (a
    cancel or failure recorded meanwhile wins over a later "succeeded").

    Given an attempt, only while the job is still at it: the closer of a lost attempt never ends the new one
    (measured again while that closer ran), with the lost attempt's cause. One statement, so that nobody sees a
    finished job without its end or the reverse. False when the job had moved to another attempt.
    """
    _final(status, Job.FINISHED, "job")
    keeps = ~Q(status__in=JOB_SOURCES[status])
    rows = Job.objects.filter(pk=job_id)
    if attempt is not None:
        rows = rows.filter(attempt=attempt)
    return bool(rows.update(
        status=Case(When(keeps, then=F("status")), default=Value(status), output_field=CharField()),
        error=Case(When(keeps, then=F("error")), default=Value(_error(error)), output_field=TextField()),
        phase=Phase.DONE, finished_at=timezone.now(), wait_reason="",  # a finished job waits for nothing
    ))


def job_finalizing_begin(*, job_id: int, attempt: int | None = None) -> bool:
    """Phase run → finalizing: exactly one of the callers that arrive wins the closing of the job (given an
    attempt, only while the job is still that attempt: a client of a lost attempt never closes the next one)."""
    rows = Job.objects.filter(pk=job_id, phase__in=PHASE_SOURCES[Phase.FINALIZING])
    if attempt is not None:
        rows = rows.filter(attempt=attempt)
    return bool(rows.update(phase=Phase.FINALIZING, heartbeat_at=timezone.now()))


def job_finalizing_restart(*, job_id: int, heartbeat_before: datetime) -> bool:
    """Phase finalizing → run for a closer that stopped beating: closing is idempotent and starts over."""
    return bool(Job.objects.filter(pk=job_id, phase=Phase.FINALIZING, heartbeat_at__lt=heartbeat_before).update(
        phase=Phase.RUN,
    ))


def jobs_fail_pending(*, run_id: int, target_id: int, cause: str) -> list[int]:
    """The run's queued or waiting jobs on one target → failed and done with the cause (its target stayed away
    longer than the campaign waits). Returns their ids (locked first, so that the ids are the ones failed)."""
    with transaction.atomic():
        ids = list(Job.objects.select_for_update(of=("self",)).filter(
            run_id=run_id, target_id=target_id, status__in=Job.PENDING).values_list("pk", flat=True))
        Job.objects.filter(pk__in=ids).update(
            status=JobStatus.FAILED, phase=Phase.DONE, finished_at=timezone.now(), error=_error(cause),
            next_try_at=None,
        )
    return ids


def jobs_cancel(*, run: Run) -> int:
    """Cancels a run's unfinished jobs: queued or waiting ones end at once; active ones are marked and their
    workers stop within a poll interval, then close them. A job already closing keeps its outcome.

    Returns how many jobs were active.
    """
    now = timezone.now()
    jobs = Job.objects.filter(run=run)
    active = jobs.filter(status__in=Job.ACTIVE).count()
    jobs.filter(status__in=(JobStatus.QUEUED, JobStatus.WAITING)).update(
        status=JobStatus.CANCELLED, phase=Phase.DONE, finished_at=now, error="cancelled before it started",
        wait_reason="",
    )
    jobs.filter(status__in=Job.ACTIVE).exclude(phase=Phase.FINALIZING).update(
        status=JobStatus.CANCELLED, error="cancelled", wait_reason="",
    )
    return active


def jobs_create(*, jobs: list[Job]) -> list[Job]:
    """A launch's jobs, all queued (the model's default status and phase)."""
    for job in jobs:
        if job.status != JobStatus.QUEUED or job.phase != Phase.NONE:
            raise IllegalTransition("a new job starts queued")
    return Job.objects.bulk_create(jobs)


def job_create_imported(*, complete: bool, error: str, **fields: Any) -> Job:
    """A job whose figures come from a sysbench log made elsewhere: it is born finished."""
    now = timezone.now()
    return Job.objects.create(
        imported=True, phase=Phase.DONE, started_at=now, finished_at=now,
        status=JobStatus.SUCCEEDED if complete else JobStatus.FAILED, error=_error(error), **fields,
    )


def job_create_bundled(**fields: Any) -> Job:
    """A job of a run bundle made by another benchapp: born with the outcome it ended with there (a finished
    status; a bundle holding an active job is refused)."""
    status = fields.pop("status", None)
    if status not in Job.FINISHED:
        raise IllegalTransition(f"a bundled job must have finished (succeeded, failed or cancelled), not {status!r}")
    fields.pop("phase", None)
    return Job.objects.create(status=status, phase=Phase.DONE, **fields)


def clients_create_bundled(*, job: Job, clients: list[dict[str, Any]],
                           sends: list[list[dict[str, Any]]] | None = None) -> list[JobClient]:
    """The clients of a bundled job, with the statuses they ended with (an unfinished one counts as failed), and
    each one's earlier sends (sends[i] for clients[i])."""
    finished = {ClientStatus.SUCCEEDED, ClientStatus.FAILED, ClientStatus.CANCELLED}
    made = JobClient.objects.bulk_create([
        JobClient(job=job, **{**c, "status": c.get("status") if c.get("status") in finished else ClientStatus.FAILED})
        for c in clients])
    ClientSend.objects.bulk_create([ClientSend(client=client, **row)
                                    for client, rows in zip(made, sends or [[] for _ in made], strict=True)
                                    for row in rows])
    return made


def attempts_create_bundled(*, job: Job, attempts: list[dict[str, Any]]) -> list[Attempt]:
    """The earlier (lost) attempts of a bundled job, as the bundle recorded them."""
    return Attempt.objects.bulk_create([Attempt(job=job, **row) for row in attempts])


# ---------------------------------------------------------------- clients


def _own(client_id: int, attempt: int | None) -> Q:
    """The client row, and, given an attempt, only while it is still that send of the client's share (a host
    declared lost but still alive must not touch the row another host now runs)."""
    return Q(pk=client_id) if attempt is None else Q(pk=client_id, attempt=attempt)


def client_claim(*, client_id: int, attempt: int | None = None) -> bool:
    """pending → ready: the host's worker took its client task (one wins, whatever the duplicates)."""
    return bool(JobClient.objects.filter(_own(client_id, attempt),
                                         status__in=CLIENT_SOURCES[ClientStatus.READY]).update(
        status=ClientStatus.READY, heartbeat_at=timezone.now(),
    ))


def client_start(*, client_id: int, attempt: int | None = None, release_at: datetime | None = None) -> bool:
    """ready → running: past the barrier, sysbench starts now.

    Given the release time the client waited for, only while the job still has it: a re-send of a lost peer
    (client_resend) resets the barrier, and this client then waits at it again. The job's row is locked for
    the check, as client_resend locks it, so a client never starts measuring beside a peer being re-sent.
    """
    with transaction.atomic():
        if release_at is not None and not list(Job.objects.select_for_update(of=("self",)).filter(
                clients__pk=client_id, release_at=release_at).values_list("pk", flat=True)[:1]):
            return False
        return bool(JobClient.objects.filter(_own(client_id, attempt),
                                             status__in=CLIENT_SOURCES[ClientStatus.RUNNING]).update(
            status=ClientStatus.RUNNING,
        ))


def client_close(*, client_id: int, status: str, error: str = "", attempt: int | None = None, **fields: Any) -> bool:
    """An unfinished client → succeeded | failed | cancelled, with what its process left (output, summary…)."""
    _final(status, CLIENT_FINISHED, "client")
    fields.setdefault("finished_at", timezone.now())
    return bool(JobClient.objects.filter(_own(client_id, attempt), status__in=CLIENT_SOURCES[status]).update(
        status=status, error=_error(error), **fields,
    ))


def client_remeasure_ask(*, client_id: int, attempt: int | None, cause: str) -> bool:
    """A client host asks the server to measure its job again, on its own active client row (send `attempt`): the
    server's re-measure task acts only on such a request (results.job_measure_again_for_host). Under a client
    host's role, row-level security lets it write only its own clients' rows. False when the client ended."""
    return bool(JobClient.objects.filter(_own(client_id, attempt), status__in=CLIENT_ACTIVE).update(
        remeasure_cause=_error(cause) or "measured again"))


def client_resend(*, client_id: int, attempt: int, host_name: str, heartbeat_before: datetime,
                  earlier: dict[str, Any]) -> bool:
    """pending | ready → pending on another host, as send attempt + 1, for a client lost before measuring.

    Only while no client of the job has started measuring and the job is running; the job's barrier is reset
    (release_at cleared) in the same transaction, so the peers wait for the new host. `earlier` is the lost
    send's record {host, sent_at, ended_at, outcome, cause}, kept as a ClientSend row. False when the client beat meanwhile, was re-sent
    by someone else, or the job has started measuring or ended.
    """
    with transaction.atomic():
        job_id = next(iter(Job.objects.select_for_update(of=("self",)).filter(
            clients__pk=client_id, status=JobStatus.RUNNING).values_list("pk", flat=True)[:1]), None)
        if job_id is None or JobClient.objects.filter(job_id=job_id).filter(
                Q(status__in=(ClientStatus.RUNNING, ClientStatus.SUCCEEDED)) | Q(started_at__isnull=False)).exists():
            return False
        client = JobClient.objects.filter(pk=client_id, attempt=attempt, heartbeat_at__lt=heartbeat_before,
                                          status__in=CLIENT_SOURCES[ClientStatus.PENDING]).first()
        if client is None:
            return False
        ClientSend.objects.create(client_id=client_id, number=attempt, host=str(earlier.get("host", ""))[:255],
                                  sent_at=earlier.get("sent_at"), ended_at=earlier.get("ended_at") or timezone.now(),
                                  outcome=str(earlier.get("outcome", "lost"))[:12],
                                  cause=_error(str(earlier.get("cause", ""))))
        JobClient.objects.filter(pk=client_id, attempt=attempt).update(
            status=ClientStatus.PENDING, host_name=host_name, attempt=attempt + 1,
            heartbeat_at=timezone.now(), error="", sysbench_version="", same_host=False, pid=None, started_at=None,
            finished_at=None,
        )
        Job.objects.filter(pk=job_id).update(release_at=None)
        return True


def client_lose(*, client_id: int, heartbeat_before: datetime, cause: str) -> bool:
    """An unfinished client whose heartbeat is older than heartbeat_before → failed. False if it beat meanwhile."""
    return bool(JobClient.objects.filter(
        pk=client_id, status__in=CLIENT_ACTIVE, heartbeat_at__lt=heartbeat_before,
    ).update(status=ClientStatus.FAILED, error=_error(cause), finished_at=timezone.now()))


def client_create_imported(*, complete: bool, **fields: Any) -> JobClient:
    """The one client of an imported job, finished as its log ends."""
    return JobClient.objects.create(status=ClientStatus.SUCCEEDED if complete else ClientStatus.FAILED, **fields)


# ---------------------------------------------------------------- runs


def run_create(*, waits: bool, **fields: Any) -> Run:
    """A new run: pending when it waits for another run, else running from now, under the id of the request (or
    task) that launches it."""
    fields.setdefault("request_id", requestid.current())
    return Run.objects.create(
        status=RunStatus.PENDING if waits else RunStatus.RUNNING,
        started_at=None if waits else timezone.now(), **fields,
    )


def run_start(*, run: Run) -> bool:
    """pending → running, on a row locked by the caller."""
    if run.status not in RUN_SOURCES[RunStatus.RUNNING]:
        return False
    run.status, run.started_at = RunStatus.RUNNING, timezone.now()
    run.save(update_fields=["status", "started_at"])
    return True


def run_outcome(counts: dict[str, int]) -> tuple[str, str]:
    """A finished run's status and error from its jobs' statuses (status → count).

    cancelled when any job was cancelled; else succeeded when every job did, partially_succeeded when some
    did, failed when none did (a run with no job at all has nothing that failed: succeeded).
    """
    total = sum(counts.values())
    succeeded = counts.get(JobStatus.SUCCEEDED, 0)
    failed = counts.get(JobStatus.FAILED, 0)
    if counts.get(JobStatus.CANCELLED, 0):
        return RunStatus.CANCELLED, ""
    if failed == 0:
        return RunStatus.SUCCEEDED, ""
    error = f"{failed} of {total} jobs failed"
    return (RunStatus.PARTIALLY_SUCCEEDED if succeeded else RunStatus.FAILED), error


def run_close(*, run: Run) -> bool:
    """running → its outcome by run_outcome(), on a row locked by the caller, once every job has ended."""
    if run.status != RunStatus.RUNNING:
        return False
    # One row per status, counted by the database (a run may hold thousands of jobs).
    counts = dict(Job.objects.filter(run=run).values_list("status").annotate(n=Count("id")).order_by())
    if any(status not in Job.FINISHED for status in counts):
        return False
    run.status, run.error = run_outcome(counts)
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    return True


def run_cancel_now(*, run: Run) -> bool:
    """pending | running → cancelled, on a row locked by the caller (no job of it still active)."""
    if run.status not in RUN_SOURCES[RunStatus.CANCELLED]:
        return False
    run.status, run.finished_at = RunStatus.CANCELLED, timezone.now()
    run.save(update_fields=["status", "finished_at"])
    return True


def run_create_imported(**fields: Any) -> Run:
    """An imported run, running until its jobs are stored; close it with run_close() in the same transaction."""
    if not transaction.get_connection().in_atomic_block:
        raise IllegalTransition("an imported run is created and closed in one transaction")
    return Run.objects.create(status=RunStatus.RUNNING, started_at=timezone.now(), **fields)


# ---------------------------------------------------------------- prepared datasets

DatasetStatus = PreparedDataset.Status
# Which states a prepared dataset may be entered from. Preparing is entered from any state: a first prepare, a
# stopped one resumed or started over, a ready one prepared again ("always", or its tables found changed), a
# dropped one loaded again. Ready and failed only end a prepare; any state may be dropped (its tables gone).
DATASET_SOURCES: dict[str, frozenset[str]] = {
    DatasetStatus.PREPARING: frozenset(DatasetStatus.values),
    DatasetStatus.READY: frozenset({DatasetStatus.PREPARING}),
    DatasetStatus.FAILED: frozenset({DatasetStatus.PREPARING}),
    DatasetStatus.DROPPED: frozenset(DatasetStatus.values),
}


def dataset_record(*, target_id: int, signature: str, tables: int, table_size: int) -> PreparedDataset:
    """The target's record of the dataset with this signature, made (preparing, nothing loaded) when it has none."""
    prepared, _ = PreparedDataset.objects.get_or_create(
        target_id=target_id, signature=signature,
        defaults={"tables": tables, "table_size": table_size, "status": DatasetStatus.PREPARING},
    )
    return prepared


def dataset_prepare_begin(*, prepared: PreparedDataset, job_id: int) -> None:
    """Any state → preparing by this job; every other dataset of the target → dropped, in one transaction: they
    use the same table names, so they are gone once this prepare begins."""
    with transaction.atomic():
        PreparedDataset.objects.filter(pk=prepared.pk).update(status=DatasetStatus.PREPARING, prepared_by_id=job_id)
        PreparedDataset.objects.filter(target_id=prepared.target_id).exclude(pk=prepared.pk).update(
            status=DatasetStatus.DROPPED)
    prepared.status, prepared.prepared_by_id = DatasetStatus.PREPARING, job_id


def dataset_prepare_end(*, prepared_id: int, status: str, prepare_s: float | None = None) -> bool:
    """preparing → ready (with when and how long) or failed; False when the record was meanwhile dropped (another
    dataset prepared on the target) or had ended."""
    if status not in (DatasetStatus.READY, DatasetStatus.FAILED):
        raise IllegalTransition(f"a prepare cannot end as {status!r}")
    fields: dict[str, Any] = {"status": status}
    if status == DatasetStatus.READY:
        fields |= {"prepared_at": timezone.now(), "prepare_s": prepare_s}
    return bool(PreparedDataset.objects.filter(pk=prepared_id, status__in=DATASET_SOURCES[status]).update(**fields))


def dataset_dropped(*, target_id: int, signature: str) -> bool:
    """The dataset's tables are gone from the target (dropped, or found changed): → dropped."""
    return bool(PreparedDataset.objects.filter(target_id=target_id, signature=signature).update(
        status=DatasetStatus.DROPPED))
