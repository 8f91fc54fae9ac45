"""What every client's measurement does, a database test's (client.py) and a host test's (hostjobs.py) alike:
its heartbeat, the barrier where the clients of a job meet, its sysbench process with each second stored as it is
printed, and what its row keeps when it closes."""
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

from campaigns.execution.client_writes import DRAIN_PATIENCE_S, ClientWrites
from campaigns.execution.dbretry import connection_wait, db_retry
from campaigns.execution.dispatch import job_stage_next
from campaigns.execution.metrics import Samplers
from campaigns.execution.phases import JobFailure, JobStopped, run_timeout_s
from campaigns.execution.resend import clients_sweep_lost
from campaigns.models import Job, JobClient
from campaigns.probes import blocked_sessions
from campaigns.sysbench import parser
from campaigns.sysbench.command import Connection, redact_text
from campaigns.sysbench.errors import explain_failure
from campaigns.sysbench.runner import ProcessOutcome, run_process

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
