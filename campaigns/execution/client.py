"""One client of a job: its sysbench process on one host, started together with its peers.

Clients wait at a barrier (all ready, then a common release time) so their processes start together,
stream their per-second samples, and record their own output. The last one to finish closes the job.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Sum
from django.db.models.functions import Now
from django.utils import timezone

from campaigns.execution import attempts, transitions
from campaigns.execution.client_writes import DRAIN_PATIENCE_S, ClientWrites
from campaigns.execution.dbretry import connection_wait, db_retry
from campaigns.execution.dispatch import job_stage_next
from campaigns.execution.metrics import Samplers, round_trip_measure, target_is_local
from campaigns.execution.phases import (
    JobFailure,
    JobLost,
    JobStopped,
    TargetUnreachable,
    client_count,
    job_connection,
    job_secrets,
    phase_argv,
    run_timeout_s,
    sysbench_gate,
)
from campaigns.execution.resend import clients_sweep_lost
from campaigns.execution.results import client_prefix, job_finalize, job_load
from campaigns.execution.selfmeasure import host_self_measure_wait
from campaigns.models import ClientHost, Job, JobClient
from campaigns.probes import ProbeError, blocked_sessions, server_info
from campaigns.sysbench import parser
from campaigns.sysbench.command import Connection, redact_text
from campaigns.sysbench.errors import explain_failure, forced_shutdown, killed_by_signal, target_unreachable
from campaigns.sysbench.runner import ProcessOutcome, run_process, sysbench_version

LIVE_TAIL_LINES = 200
LIVE_TAIL_EVERY_S = 2.0
BARRIER_TIMEOUT_S = 60.0
BARRIER_POLL_S = 0.01
# A ready client counts at the barrier only while it beats (every second there): a peer that died waiting is not
# released with the others, so that it can be declared lost and its share sent to another host (resend).
BARRIER_FRESH_S = 5.0
# Far enough ahead that every client has seen the release time before it comes.
RELEASE_LEAD_S = 0.3
_JOB_STOPPED = (Job.Status.CANCELLED, Job.Status.FAILED)

log = logging.getLogger(__name__)


def client_heartbeat(client_id: int, attempt: int) -> str:
    """Marks the client alive and returns its job's status, in one statement (plus, now and then,
    a look for lost clients: see resend.clients_sweep_lost). A client whose share was sent to another host
    meanwhile (declared lost, yet alive) sees "cancelled" and stops."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE campaigns_jobclient c SET heartbeat_at = now() FROM campaigns_job j"
            " WHERE c.id = %s AND c.attempt = %s AND j.id = c.job_id RETURNING j.status",
            [client_id, attempt],
        )
        row = cursor.fetchone()
    if row is None:
        return Job.Status.CANCELLED
    if clients_sweep_lost():
        # One of them may have been a peer of this client, which fails this job too.
        return Job.objects.filter(clients__pk=client_id).values_list("status", flat=True).first() or row[0]
    return row[0]


def _barrier_beat(client: JobClient) -> str:
    """The client's heartbeat at the barrier, again on a new connection while benchapp's database restarts (as
    long as a client may stay silent before it is declared lost)."""
    return db_retry(lambda: client_heartbeat(client.pk, client.attempt), patience_s=settings.BENCHAPP_STALE_S,
                    what=f"job {client.job_id} client {client.index}'s heartbeat")


def _barrier_timeout_s() -> float:
    """How long a client waits for its peers: long enough for a lost peer to be noticed (its host offline, or
    its heartbeat stale) and its share to reach another host."""
    return BARRIER_TIMEOUT_S + max(settings.BENCHAPP_HOST_OFFLINE_S, settings.BENCHAPP_STALE_S)


def barrier_wait(client: JobClient, needed: int) -> datetime | None:
    """Blocks until every client of the job is ready; returns the common release time, or None for a lone
    client, which has no one to wait for and starts now (one statement: its heartbeat, the job's status)."""
    if needed <= 1:
        if _barrier_beat(client) in _JOB_STOPPED:
            raise JobStopped()
        return None
    deadline = time.monotonic() + _barrier_timeout_s()
    next_beat = 0.0
    sends = None
    while True:
        now = time.monotonic()
        if now >= next_beat:
            next_beat = now + 1.0
            if _barrier_beat(client) in _JOB_STOPPED:
                raise JobStopped()
            # A peer's share sent to another host starts the wait over.
            total = JobClient.objects.filter(job_id=client.job_id).aggregate(n=Sum("attempt"))["n"]
            if sends is not None and total != sends:
                deadline = now + _barrier_timeout_s()
            sends = total
        job = Job.objects.filter(pk=client.job_id).values("release_at").get()
        if job["release_at"] is not None:
            release_at: datetime = job["release_at"]
            return release_at
        ready = JobClient.objects.filter(job_id=client.job_id, status=JobClient.Status.READY,
                                         heartbeat_at__gte=Now() - timedelta(seconds=BARRIER_FRESH_S)).count()
        if ready >= needed:
            release = timezone.now() + timedelta(seconds=RELEASE_LEAD_S)
            Job.objects.filter(pk=client.job_id, release_at__isnull=True).update(release_at=release)
            continue
        if now > deadline:
            raise JobFailure(
                f"client barrier timed out after {_barrier_timeout_s():.0f} s: only {ready} of {needed} clients were ready"
            )
        time.sleep(BARRIER_POLL_S)


def jobclient_execute(*, client_id: int, attempt: int = 1) -> None:
    """Runs one client's sysbench for its job, then closes the job if it was the last one.

    `attempt` is the send of the client's share this message is for: a message of an earlier send (its host
    declared lost, its share now on another host) claims nothing.
    """
    if not transitions.client_claim(client_id=client_id, attempt=attempt):
        return
    client = JobClient.objects.get(pk=client_id)
    job = job_load(client.job_id)
    secrets = job_secrets(job)
    try:
        _client_run(job, client)
    except JobStopped:
        transitions.client_close(client_id=client.pk, status=JobClient.Status.CANCELLED, attempt=attempt)
    except (JobLost, TargetUnreachable) as exc:
        # Not the job's fault: its target went away, or sysbench was killed by someone else. It is measured
        # again (after its target is back) while the campaign's job_tries last.
        cause = client_prefix(job, client) + redact_text(str(exc), secrets)
        transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, error=cause, attempt=attempt)
        if _still_own(client):
            measured = attempts.job_measure_again(job_id=job.pk, attempt=job.attempt, cause=cause)
            if measured == "no try left":
                transitions.job_fail(job_id=job.pk, cause=attempts.no_try_left(
                    cause, attempt=job.attempt, tries=job.run.campaign.job_tries))
    except JobFailure as exc:
        cause = redact_text(str(exc), secrets)
        # A failed sysbench has closed its client row already, with its output; this only closes the others.
        transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, error=cause, attempt=attempt)
        if _still_own(client):
            transitions.job_fail(job_id=job.pk, cause=client_prefix(job, client) + cause)
    except Exception as exc:
        transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, attempt=attempt,
                                 error=f"internal error: {type(exc).__name__}: {exc}")
        if _still_own(client):
            transitions.job_fail(job_id=job.pk, cause=redact_text(
                f"internal error on client {client.host_name}: {exc}", secrets))
        job_finalize(job_id=job.pk, attempt=job.attempt)
        raise
    job_finalize(job_id=job.pk, attempt=job.attempt)


def _still_own(client: JobClient) -> bool:
    """Whether the client's row is still this send's (not handed to another host since)."""
    return JobClient.objects.filter(pk=client.pk, attempt=client.attempt).exists()


def _client_run(job: Job, client: JobClient) -> None:
    if job.target.is_client_host():  # a host test: no database (campaigns.execution.hostjobs)
        from campaigns.execution.hostjobs import hostclient_run

        hostclient_run(job, client)
        return
    # Never beside the host's own measurement (execution.selfmeasure).
    host_self_measure_wait(client.host_name, beat=lambda: client_heartbeat(client.pk, client.attempt))
    conn = job_connection(job)
    argv = phase_argv(job=job, conn=conn, command="run", threads=client.threads)
    sysbench_gate(conn)  # before the barrier, so that the check adds nothing to the start skew
    same_host = target_is_local(conn.host)
    host = ClientHost.objects.filter(hostname=client.host_name).first()
    JobClient.objects.filter(pk=client.pk, attempt=client.attempt).update(
        sysbench_version=sysbench_version(settings.BENCHAPP_SYSBENCH), same_host=same_host,
        host_facts=host.facts() if host else {})
    while True:
        release_at = barrier_wait(client, client_count(job))
        if release_at is None:  # a lone client
            if transitions.client_start(client_id=client.pk, attempt=client.attempt):
                break
            raise JobStopped()
        delay = release_at.timestamp() - time.time()
        if delay > 0:
            time.sleep(delay)
        if transitions.client_start(client_id=client.pk, attempt=client.attempt, release_at=release_at):
            break
        # The barrier was reset (a lost peer's share went to another host), or this client's own share did.
        if not _still_own(client):
            raise JobStopped()
    samplers = Samplers(job_id=job.pk, client_index=client.index, conn=conn, sample_server=client.index == 0,
                        same_host=same_host, attempt=job.attempt)
    stall: list[str] = []  # what the target's sessions waited for when throughput fell to zero
    try:
        outcome = client_process(job, client, argv, conn, samplers, stall)
    except BaseException:
        samplers.stop()
        raise
    exited_at = timezone.now()
    samplers.last_read()
    parsed = parser.parse_output(outcome.output)
    if outcome.succeeded() and parsed.complete:
        # After the measurement, before the next job may start: it never shares the target with sysbench.
        round_trip_measure(run_id=job.run_id, target_id=job.target_id, host_name=client.host_name, conn=conn)
    _measurement_end(job, client, exited_at, conn)
    samplers.stop()  # their last rows (job.server_window) are written before the job is closed
    output = redact_text(outcome.output, [conn.password])
    summary = parsed.to_dict()["summary"] or {}
    fields = run_close_fields(outcome, output, parsed, summary, exited_at)
    if outcome.cancelled:
        transitions.client_close(client_id=client.pk, status=JobClient.Status.CANCELLED, attempt=client.attempt,
                                 **fields)
        return
    if not outcome.succeeded() or not parsed.complete:
        cause = run_failure_cause(job, outcome, output)
        lost = "" if outcome.start_error or outcome.timed_out else _lost_cause(job, output, outcome.exit_code, cause)
        if not lost and (outcome.timed_out or forced_shutdown(output)):
            # A hung target: named from what its sessions wait for (the server's own words). Blocked by someone
            # else's lock (a backup's FLUSH TABLES WITH READ LOCK, a LOCK TABLE), the measurement is lost, not
            # the job's fault: it is measured again once writes go through (coordinator's write probe).
            blocked = blocked_sessions(conn) or next(filter(None, stall), "")
            if blocked:
                lost = f"{blocked_what(job)} blocked on the target: {blocked}; {cause}"
        transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, error=lost or cause,
                                 attempt=client.attempt, **fields)
        raise JobLost(lost) if lost else JobFailure(cause)
    transitions.client_close(client_id=client.pk, status=JobClient.Status.SUCCEEDED, attempt=client.attempt,
                             **fields)


def run_close_fields(outcome: ProcessOutcome, output: str, parsed: parser.ParsedOutput, summary: dict[str, Any],
                     exited_at: datetime) -> dict[str, Any]:
    """What a client's row keeps of its sysbench run when it is closed (a database test's or a host test's)."""
    return {
        "raw_output": output, "exit_code": outcome.exit_code, "wall_time_s": outcome.wall_time_s,
        "exited_at": exited_at, "finished_at": timezone.now(), "summary": summary,
        # Only a histogram of the whole run (not of the time after the last --report-checkpoints checkpoint).
        "histogram": [list(b) for b in parsed.histogram] if parsed.histogram and parsed.histogram_whole_run else None,
    }


def run_failure_cause(job: Job, outcome: ProcessOutcome, output: str) -> str:
    """Why a sysbench run that did not complete failed: it did not start, it overran its time-out, or its own
    words (explain_failure)."""
    if outcome.start_error:
        return outcome.start_error
    if outcome.timed_out:
        return f"sysbench run exceeded its time-out of {run_timeout_s(job):.0f} s and was stopped"
    return explain_failure(output, outcome.exit_code, phase="run")


def _measurement_end(job: Job, client: JobClient, exited_at: datetime, conn: Connection) -> None:
    """Records this client's sysbench exit; the last client of the job to exit then takes the server snapshot
    after the run and marks the job measured, which lets the run's next job start (coordinator.measuring_before)
    while this one is still being closed."""
    if client_count(job) > 1:
        JobClient.objects.filter(pk=client.pk).update(exited_at=exited_at)
        if JobClient.objects.filter(job_id=job.pk, status__in=transitions.CLIENT_ACTIVE,
                                    exited_at__isnull=True).exists():
            return  # a peer still measures; it takes the snapshot when it exits
    # (A lone client's exit is stored when it closes: measured_at alone tells the next job.)
    try:
        after = server_info(conn, tables=[f"sbtest{i}" for i in range(1, job.tables + 1)]).to_dict()
    except ProbeError as exc:
        after = {"error": str(exc)}
    Job.objects.filter(pk=job.pk, attempt=job.attempt, measured_at__isnull=True).update(
        server_snapshot={**job.server_snapshot, "after": after}, measured_at=timezone.now())


# Signals that benchapp never sends to a measuring sysbench (it stops one with SIGTERM then SIGKILL only when
# cancelled or past its time-out, which the outcome says): someone else's, so the measurement is lost, not failed.
# SIGSEGV and SIGABRT are sysbench's own end (a crash, or its --forced-shutdown of a hung run).
LOST_SIGNALS = frozenset({"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGPIPE", "SIGUSR1", "SIGUSR2"})


def _lost_cause(job: Job, output: str, exit_code: int | None, cause: str) -> str:
    """Why the measurement was lost to the infrastructure rather than failed ("" when it failed)."""
    signal_name = killed_by_signal(exit_code)
    if signal_name in LOST_SIGNALS:
        return f"sysbench was killed by {signal_name}, a signal benchapp did not send, while measuring"
    if target_unreachable(output):
        return f"target {job.target.name} went away mid-run: {cause}"
    return ""


def blocked_what(job: Job) -> str:
    """What a lock on the target holds up for the job's test: "writes" (a write test) or "queries"."""
    test = job.scenario.test
    return "writes" if any(word in test for word in ("write", "insert", "update", "delete")) else "queries"


# Throughput this low for a second, after the first, sends one look at what the target's sessions wait for.
STALL_QPS = 0.0
STALL_LOOKS = 3


def client_process(job: Job, client: JobClient, argv: list[str], conn: Connection,
                   samplers: Samplers, stall: list[str], *,
                   interval_of: Callable[[str], parser.Interval | None] = parser.parse_interval_line,
                   cwd: str | None = None) -> ProcessOutcome:
    """Runs sysbench, storing each interval the moment it is printed, and a live output tail. The first second
    without any query after the first one records, in `stall`, what the target's sessions wait for.

    The writes go through a thread of their own (client_writes): a database that goes away for a few seconds
    delays them, never sysbench. Once sysbench has exited, its last seconds are written before the client closes.
    """
    tail: list[str] = []
    last_tail_save = [time.monotonic()]
    secrets = [conn.password]
    writes = ClientWrites(job_id=job.pk, client_id=client.pk, client_index=client.index,
                          client_attempt=client.attempt, attempt=job.attempt,
                          beat=lambda: client_heartbeat(client.pk, client.attempt))
    stop_cause: list[str] = []

    def on_line(line: str) -> None:
        tail.append(line)
        if len(tail) > LIVE_TAIL_LINES:
            del tail[: len(tail) - LIVE_TAIL_LINES]
        interval = interval_of(line)
        if interval is not None:
            if (conn.driver and interval.qps <= STALL_QPS and interval.t > 1 and len(stall) < STALL_LOOKS
                    and not any(stall)):
                stall.append(blocked_sessions(conn))
            writes.put(interval)
        now = time.monotonic()
        if now - last_tail_save[0] >= LIVE_TAIL_EVERY_S:
            last_tail_save[0] = now
            writes.put_tail(redact_text("\n".join(tail), secrets))

    def on_start(pid: int) -> None:
        started_at = timezone.now()
        samplers.start(pid)
        writes.start()
        # (Again on a new connection if benchapp's database is restarting: sysbench runs meanwhile.)
        db_retry(lambda: JobClient.objects.filter(pk=client.pk).update(pid=pid, started_at=started_at),
                 patience_s=settings.BENCHAPP_STALE_S, what=f"job {job.pk} client {client.index}'s start")
        if client.index == 0:
            # Every client of this job holds its worker slot by now: the next job's coordinator can only take a
            # free one (on a one-slot host it waits in the queue rather than block a peer that has yet to start).
            db_retry(lambda: job_stage_next(job=job), patience_s=settings.BENCHAPP_STALE_S,
                     what=f"job {job.pk}'s next job")

    def should_cancel() -> bool:
        cause = writes.should_stop()
        if cause and not stop_cause:
            stop_cause.append(cause)
            log.warning("job %s client %s stops its sysbench: %s", job.pk, client.index, cause)
        return bool(cause)

    try:
        outcome = run_process(
            argv, on_line=on_line, on_start=on_start, should_cancel=should_cancel,
            timeout_s=run_timeout_s(job), poll_s=min(settings.BENCHAPP_CANCEL_POLL_S, 0.5), cwd=cwd,
        )
    finally:
        if writes.is_alive():
            complete = writes.finish()
        else:
            complete = True
        # The rest of the client's closing runs on this thread's own connection, which the outage may have
        # dropped too: wait for the database (as long as the writes did) before going on.
        connection_wait(patience_s=DRAIN_PATIENCE_S, what=f"job {job.pk} client {client.index}")
    if not complete:
        log.error("job %s client %s: some of its seconds could not be written", job.pk, client.index)
    return outcome
