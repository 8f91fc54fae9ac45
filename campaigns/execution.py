"""Executing a job: a coordinator that prepares and hands out the work, and one client per host.

The coordinator (any worker, shared queue) claims the job, checks the target, prepares the
dataset once, picks as many distinct online client hosts as the job needs, and sends each a
client task on that host's own queue. Clients wait at a barrier (all ready, then a common release
time) so their sysbench processes start together, stream their per-second samples, and record
their own output. The last client to finish merges the figures into the job's result, takes the
closing server snapshot, runs cleanup and lets the run go on.
"""
from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from campaigns.cache import results_changed
from campaigns.crypto import DecryptionError
from campaigns.models import ClientHost, IntervalSample, Job, JobClient, JobResult, Scenario
from campaigns.probes import ProbeError, cache_hit_ratio, server_info
from campaigns.services import (
    JobFailure,
    _dataset_ensure,
    _phase_argv,
    dataset_drop,
    dataset_signature,
    host_queue,
    job_warmup,
    run_advance,
    split_threads,
    target_connection,
)
from campaigns.sysbench import parser
from campaigns.sysbench.command import Connection, format_command, redact_text
from campaigns.sysbench.errors import explain_failure
from campaigns.sysbench.runner import ProcessOutcome, run_process, sysbench_version

log = logging.getLogger(__name__)

FULL_CACHE_HIT_RATIO = 0.99
LIVE_TAIL_LINES = 200
LIVE_TAIL_EVERY_S = 2.0
BARRIER_TIMEOUT_S = 60.0
BARRIER_POLL_S = 0.01
# Far enough ahead that every client has seen the release time before it comes.
RELEASE_LEAD_S = 0.3
_CLIENT_ACTIVE = (JobClient.Status.PENDING, JobClient.Status.READY, JobClient.Status.RUNNING)
_JOB_STOPPED = (Job.Status.CANCELLED, Job.Status.FAILED)


def _load(job_id: int) -> Job:
    return Job.objects.select_related("target", "target__spec", "scenario", "scenario__dataset", "run").get(pk=job_id)


def _job_fail(job_id: int, cause: str, secrets: list[str]) -> bool:
    """Fails an unfinished job (other clients notice and stop); False if it had already ended."""
    return bool(Job.objects.filter(pk=job_id).exclude(status__in=Job.FINISHED).update(
        status=Job.Status.FAILED, error=redact_text(cause, secrets)[:5000]
    ))


def _job_close(job: Job, *, status: str, error: str = "") -> None:
    """Records the end of a job; a cancel or failure recorded meanwhile wins over `status`."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).exclude(status__in=Job.FINISHED).update(status=status, error=error[:5000])
    Job.objects.filter(pk=job.pk).update(phase="done", finished_at=now)
    results_changed()  # a job that just succeeded joins the comparisons


# ---------------------------------------------------------------- coordinator


def job_execute(*, job_id: int, host: str | None = None) -> None:
    """Claims a queued job, prepares it and dispatches its clients (or records why it cannot)."""
    host = host or settings.BENCHAPP_HOSTNAME
    now = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status__in=(Job.Status.QUEUED, Job.Status.WAITING)).update(
        status=Job.Status.PREPARING, phase="prepare", claimed_by=host, claimed_at=now, heartbeat_at=now,
    )
    if not claimed:
        log.info("job %s already claimed or finished; ignoring this message", job_id)
        return
    job = _load(job_id)
    try:
        dispatched = _job_coordinate(job, host)
    except JobFailure as exc:
        secrets = [job.target.get_password()] if job.target.has_password() else []
        _job_close(job, status=Job.Status.FAILED, error=redact_text(str(exc), secrets))
        dispatched = False
    except Exception as exc:
        _job_close(job, status=Job.Status.FAILED, error=f"internal error: {type(exc).__name__}: {exc}")
        run_advance(run_id=job.run_id)
        raise
    if not dispatched:
        run_advance(run_id=job.run_id)


def _job_wait(job: Job, reason: str) -> None:
    """Hands a claimed job back as waiting, with the reason shown; the reconciler sends it again later."""
    Job.objects.filter(pk=job.pk).update(status=Job.Status.WAITING, phase="", claimed_by="", wait_reason=reason)


def _pick_hosts(job: Job, coordinator: str) -> list[str] | None:
    """Distinct online hosts for the job's clients, the coordinator's own first; None if too few."""
    needed = _client_count(job)
    if needed <= 1:
        return [coordinator]
    online = list(ClientHost.objects.online().values_list("hostname", flat=True))
    online.sort(key=lambda name: (name != coordinator, name))
    if len(online) < needed:
        names = ", ".join(online) or "none"
        _job_wait(job, f"needs {needed} client hosts online, {len(online)} are ({names})")
        return None
    return online[:needed]


def _client_count(job: Job) -> int:
    """Client processes the job runs: its client rule's count, but never more than its threads."""
    return max(1, min(job.clients_needed, job.threads))


def _target_busy(job: Job) -> Job | None:
    """Another run's job measuring the same database (same driver, host, port and database) that holds it.

    Two runs on one database would measure each other and drop each other's sbtest tables (two nightly
    schedules at 02:00, say). Among active jobs, the one claimed first keeps the database (ties by id), so
    of two jobs claimed at the same moment exactly one goes on; the other waits, and the reconciler sends
    it again every few seconds until the database is free.
    """
    target = job.target
    active = (Job.objects.filter(status__in=Job.ACTIVE, target__driver=target.driver, target__host=target.host,
                                 target__port=target.port, target__database=target.database)
              .exclude(run_id=job.run_id).select_related("run__campaign"))
    def order(j: Job) -> tuple[datetime, int]:
        return (j.claimed_at or datetime.min.replace(tzinfo=UTC), j.pk)

    earlier = [other for other in active if order(other) < order(job)]
    return min(earlier, key=order) if earlier else None


def _job_coordinate(job: Job, host: str) -> bool:
    scenario = job.scenario
    busy = _target_busy(job)
    if busy is not None:
        _job_wait(job, f"the database is busy with run #{busy.run_id} ({busy.run.campaign.name}); "
                       "starts when that job has finished")
        return True  # waiting, not finished: the reconciler sends it again later
    hosts = _pick_hosts(job, host)
    if hosts is None:
        return True  # waiting, not finished: the reconciler sends it again later
    Job.objects.filter(pk=job.pk).update(wait_reason="")
    try:
        conn = target_connection(target=job.target)
    except DecryptionError as exc:
        raise JobFailure(str(exc)) from None
    tables = [f"sbtest{i}" for i in range(1, job.tables + 1)]
    try:
        server_info(conn, tables=tables)  # fails fast, with a plain cause, on a dead target
    except ProbeError as exc:
        raise JobFailure(str(exc)) from None
    prepare_output = ""
    if scenario.prepare_mode != Scenario.PrepareMode.NEVER:
        prepare_output = _dataset_ensure(job, conn)
        if prepare_output is None:
            _job_close(job, status=Job.Status.CANCELLED)
            return False
    prepare_output = "\n".join(filter(None, [prepare_output, job_warmup(job=job, conn=conn)]))
    try:
        before = server_info(conn, tables=tables)
    except ProbeError as exc:
        raise JobFailure(str(exc)) from None
    shares = split_threads(job.threads, len(hosts))
    commands = [format_command(_phase_argv(job=job, conn=conn, command="run", threads=share)) for share in shares]
    now = timezone.now()
    started = Job.objects.filter(pk=job.pk, status=Job.Status.PREPARING).update(
        status=Job.Status.RUNNING, phase="run", started_at=now, heartbeat_at=now,
        command_line="\n".join(commands), server_snapshot={"before": before.to_dict()},
    )
    if not started:
        _job_close(job, status=Job.Status.CANCELLED)
        return False
    clients = [
        JobClient.objects.create(
            job=job, index=index, host_name=hostname, threads=share, command_line=command,
            prepare_output=prepare_output if index == 0 else "", heartbeat_at=now,
        )
        for index, (hostname, share, command) in enumerate(zip(hosts, shares, commands, strict=True))
    ]
    from campaigns.tasks import jobclient_execute_task

    for client in clients:
        jobclient_execute_task.apply_async(args=[client.pk], queue=host_queue(client.host_name))
    return True


# ---------------------------------------------------------------- clients


def _client_heartbeat(client_id: int) -> str:
    """Marks the client alive and returns its job's status, in one statement (plus, now and then,
    a look for lost clients: see clients_sweep_lost)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE campaigns_jobclient c SET heartbeat_at = now() FROM campaigns_job j"
            " WHERE c.id = %s AND j.id = c.job_id RETURNING j.status",
            [client_id],
        )
        row = cursor.fetchone()
    if row is None:
        return Job.Status.CANCELLED
    if clients_sweep_lost():
        # One of them may have been a peer of this client, which fails this job too.
        return Job.objects.filter(clients__pk=client_id).values_list("status", flat=True).first() or row[0]
    return row[0]


_next_sweep_at = 0.0


def clients_sweep_lost() -> int:
    """Declares lost every started client, of any job, whose worker stopped beating.

    Busy workers call this from their polling loops, at most every BENCHAPP_STALE_S / 3. The
    reconciler is a task and needs a free worker: while every worker is busy with a long job (as
    every host of a multi-client job is), a dead host's job would otherwise show as running until
    one of them is free. Closing the job (snapshot, cleanup, next job) is left to its surviving
    clients or to the reconciler: a measuring client must not stop reading its sysbench for that.
    """
    global _next_sweep_at
    now = time.monotonic()
    if now < _next_sweep_at:
        return 0
    stale_s = settings.BENCHAPP_STALE_S
    _next_sweep_at = now + stale_s / 3
    limit = timezone.now() - timedelta(seconds=stale_s)
    lost = 0
    for client in JobClient.objects.filter(
        status__in=(JobClient.Status.READY, JobClient.Status.RUNNING), heartbeat_at__lt=limit
    ):
        cause = f"client lost: no heartbeat from {client.host_name} for {stale_s:.0f} s"
        lost += jobclient_lose(client=client, heartbeat_before=limit, cause=cause)
    return lost


def jobclient_lose(*, client: JobClient, heartbeat_before: datetime, cause: str) -> bool:
    """Declares lost a client whose last heartbeat is older than heartbeat_before.

    The client and its job fail with the cause, and its host is taken offline unless that host
    still beats (a live worker with a stuck task), so the next job is not handed to a dead host.
    False when the client beat meanwhile or had already ended.
    """
    now = timezone.now()
    if not JobClient.objects.filter(
        pk=client.pk, status__in=_CLIENT_ACTIVE, heartbeat_at__lt=heartbeat_before
    ).update(status=JobClient.Status.FAILED, error=cause, finished_at=now):
        return False
    Job.objects.filter(pk=client.job_id).exclude(status__in=Job.FINISHED).update(
        status=Job.Status.FAILED, error=cause
    )
    host_mark_offline(hostname=client.host_name, heartbeat_before=heartbeat_before)
    log.warning("job %s: %s", client.job_id, cause)
    return True


def host_mark_offline(*, hostname: str, heartbeat_before: datetime) -> None:
    """Takes a host offline now rather than after BENCHAPP_HOST_OFFLINE_S, if it has stopped beating."""
    offline_since = timezone.now() - timedelta(seconds=settings.BENCHAPP_HOST_OFFLINE_S + 1)
    ClientHost.objects.filter(hostname=hostname, last_heartbeat__lt=heartbeat_before).update(
        last_heartbeat=offline_since
    )


def _barrier_wait(client: JobClient, needed: int) -> float:
    """Blocks until every client of the job is ready; returns the common release time (epoch s)."""
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    next_beat = 0.0
    while True:
        now = time.monotonic()
        if now >= next_beat:
            next_beat = now + 1.0
            if _client_heartbeat(client.pk) in _JOB_STOPPED:
                raise _Stopped()
        job = Job.objects.filter(pk=client.job_id).values("release_at").get()
        if job["release_at"] is not None:
            return job["release_at"].timestamp()
        ready = JobClient.objects.filter(job_id=client.job_id, status=JobClient.Status.READY).count()
        if ready >= needed:
            release = timezone.now() + timedelta(seconds=RELEASE_LEAD_S)
            Job.objects.filter(pk=client.job_id, release_at__isnull=True).update(release_at=release)
            continue
        if now > deadline:
            raise JobFailure(
                f"client barrier timed out after {BARRIER_TIMEOUT_S:.0f} s: only {ready} of {needed} clients were ready"
            )
        time.sleep(BARRIER_POLL_S)


class _Stopped(Exception):
    """The job was cancelled or failed elsewhere while this client waited."""


def jobclient_execute(*, client_id: int) -> None:
    """Runs one client's sysbench for its job, then closes the job if it was the last one."""
    claimed = JobClient.objects.filter(pk=client_id, status=JobClient.Status.PENDING).update(
        status=JobClient.Status.READY, heartbeat_at=timezone.now(),
    )
    if not claimed:
        return
    client = JobClient.objects.get(pk=client_id)
    job = _load(client.job_id)
    secrets = [job.target.get_password()] if job.target.has_password() else []
    try:
        _client_run(job, client)
    except _Stopped:
        JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.CANCELLED, finished_at=timezone.now())
    except JobFailure as exc:
        cause = redact_text(str(exc), secrets)
        JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.FAILED, error=cause,
                                                      finished_at=timezone.now())
        _job_fail(job.pk, _client_prefix(job, client) + cause, secrets)
    except Exception as exc:
        JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.FAILED, finished_at=timezone.now(),
                                                      error=f"internal error: {type(exc).__name__}: {exc}")
        _job_fail(job.pk, f"internal error on client {client.host_name}: {exc}", secrets)
        job_finalize(job_id=job.pk)
        raise
    job_finalize(job_id=job.pk)


def _client_prefix(job: Job, client: JobClient) -> str:
    return f"client {client.host_name}: " if job.clients_needed > 1 else ""


def _client_run(job: Job, client: JobClient) -> None:
    try:
        conn = target_connection(target=job.target)
    except DecryptionError as exc:
        raise JobFailure(str(exc)) from None
    argv = _phase_argv(job=job, conn=conn, command="run", threads=client.threads)
    JobClient.objects.filter(pk=client.pk).update(sysbench_version=sysbench_version(settings.BENCHAPP_SYSBENCH))
    release_at = _barrier_wait(client, _client_count(job))
    delay = release_at - time.time()
    if delay > 0:
        time.sleep(delay)
    JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.RUNNING)
    outcome = _client_process(job, client, argv, conn)
    parsed = parser.parse_output(outcome.output)
    output = redact_text(outcome.output, [conn.password])
    summary = parsed.to_dict()["summary"] or {}
    fields: dict[str, Any] = {
        "raw_output": output, "exit_code": outcome.exit_code, "wall_time_s": outcome.wall_time_s,
        "finished_at": timezone.now(), "summary": summary,
        "histogram": [list(b) for b in parsed.histogram] if parsed.histogram else None,
    }
    if outcome.cancelled:
        JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.CANCELLED, **fields)
        return
    if not outcome.succeeded() or not parsed.complete:
        if outcome.start_error:
            cause = outcome.start_error
        elif outcome.timed_out:
            cause = f"sysbench run exceeded its time-out of {_run_timeout_s(job):.0f} s and was stopped"
        else:
            cause = explain_failure(output, outcome.exit_code, phase="run")
        JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.FAILED, error=cause, **fields)
        raise _AlreadyRecorded(cause)
    JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.SUCCEEDED, **fields)


class _AlreadyRecorded(JobFailure):
    """A client failure whose row is already written; only the job still needs failing."""


def _run_timeout_s(job: Job) -> float:
    return job.run_time_s() + job.warmup_time_s() + settings.BENCHAPP_RUN_SLACK_S


def _client_process(job: Job, client: JobClient, argv: list[str], conn: Connection) -> ProcessOutcome:
    """Runs sysbench, storing each interval the moment it is printed, and a live output tail."""
    tail: list[str] = []
    last_tail_save = [time.monotonic()]
    secrets = [conn.password]

    def on_line(line: str) -> None:
        tail.append(line)
        if len(tail) > LIVE_TAIL_LINES:
            del tail[: len(tail) - LIVE_TAIL_LINES]
        interval = parser.parse_interval_line(line)
        if interval is not None:
            IntervalSample.objects.create(
                job_id=job.pk, client_index=client.index, t=interval.t, threads=interval.threads,
                tps=interval.tps, qps=interval.qps, reads_per_s=interval.reads_per_s,
                writes_per_s=interval.writes_per_s, other_per_s=interval.other_per_s,
                latency_pct_ms=interval.latency_pct_ms, errors_per_s=interval.errors_per_s,
                reconnects_per_s=interval.reconnects_per_s,
            )
        now = time.monotonic()
        if now - last_tail_save[0] >= LIVE_TAIL_EVERY_S:
            last_tail_save[0] = now
            JobClient.objects.filter(pk=client.pk).update(raw_output=redact_text("\n".join(tail), secrets))

    def on_start(pid: int) -> None:
        JobClient.objects.filter(pk=client.pk).update(pid=pid, started_at=timezone.now())

    def should_cancel() -> bool:
        return _client_heartbeat(client.pk) in _JOB_STOPPED

    return run_process(
        argv, on_line=on_line, on_start=on_start, should_cancel=should_cancel,
        timeout_s=_run_timeout_s(job), poll_s=settings.BENCHAPP_CANCEL_POLL_S,
    )


# ---------------------------------------------------------------- closing a job


def job_finalize(*, job_id: int) -> bool:
    """Merges the clients' figures into the job once all have finished; True if this call did it."""
    if JobClient.objects.filter(job_id=job_id, status__in=_CLIENT_ACTIVE).exists():
        return False
    # Exactly one caller wins the move out of the "run" phase, whoever else arrives. The heartbeat
    # (kept up by the cleanup below) tells the reconciler this closer is alive.
    if not Job.objects.filter(pk=job_id, phase="run").update(phase="finalizing", heartbeat_at=timezone.now()):
        return False
    job = _load(job_id)
    clients = list(job.clients.order_by("index"))
    starts = [c.started_at for c in clients if c.started_at is not None]
    skew_ms = (max(starts) - min(starts)).total_seconds() * 1000 if len(starts) == len(clients) and starts else None
    result = result_store_merged(job=job, clients=clients, source=JobResult.Source.MEASURED)
    snapshot = dict(job.server_snapshot)
    ratio = None
    warning = ""
    try:
        conn = target_connection(target=job.target)
        after = server_info(conn, tables=[f"sbtest{i}" for i in range(1, job.tables + 1)])
        snapshot["after"] = after.to_dict()
        before_status = (snapshot.get("before") or {}).get("status") or {}
        ratio = cache_hit_ratio(before_status, after.status)
        if ratio is not None and ratio < FULL_CACHE_HIT_RATIO and "cache" in job.scenario.dataset.name.lower():
            warning = f"buffer-pool hit ratio {ratio:.2%} is below 99% on a full-cache dataset"
    except (ProbeError, DecryptionError) as exc:
        snapshot["after"] = {"error": str(exc)}
    else:
        if job.scenario.cleanup == Scenario.Cleanup.AFTER_JOB:
            dataset_drop(job=job, signature=dataset_signature(
                scenario=job.scenario, tables=job.tables, table_size=job.table_size))
    wall = [c.wall_time_s for c in clients if c.wall_time_s is not None]
    Job.objects.filter(pk=job.pk).update(
        server_snapshot=snapshot, cache_hit_ratio=ratio, cache_warning=warning, start_skew_ms=skew_ms,
        wall_time_s=max(wall) if wall else None,
    )
    failed = [c for c in clients if c.status == JobClient.Status.FAILED]
    if failed:
        _job_close(job, status=Job.Status.FAILED, error=_client_prefix(job, failed[0]) + failed[0].error)
    elif any(c.status == JobClient.Status.CANCELLED for c in clients):
        _job_close(job, status=Job.Status.CANCELLED)
    elif result is None:
        _job_close(job, status=Job.Status.FAILED, error="sysbench printed no results")
    else:
        _job_close(job, status=Job.Status.SUCCEEDED)
    run_advance(run_id=job.run_id)
    return True


_SUMMED = ("tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "transactions", "queries",
           "ignored_errors", "reconnects", "events")


def merge_summaries(summaries: list[dict[str, Any]], histograms: list[list[list[float]] | None]) -> dict[str, Any]:
    """One job-level summary from its clients: rates and counts add up; latency percentiles come
    from the merged histograms (percentiles cannot be averaged); the average is events-weighted."""
    summaries = [s for s in summaries if s]
    if not summaries:
        return {}
    if len(summaries) == 1:
        return summaries[0]
    merged: dict[str, Any] = {}
    for key in _SUMMED:
        values = [s.get(key) for s in summaries]
        merged[key] = sum(v for v in values if v is not None) if any(v is not None for v in values) else None
    merged["duration_s"] = max((s.get("duration_s") or 0) for s in summaries)
    lats = [s.get("latency_ms") or {} for s in summaries]
    events = [s.get("events") or 0 for s in summaries]
    total_events = sum(events)
    pct = next((lat.get("pct") for lat in lats if lat.get("pct") is not None), None)
    usable = [h for h in histograms if h]
    if pct is not None and len(usable) == len(summaries):
        percentile = parser.histogram_percentile(parser.merge_histograms([[tuple(b) for b in h] for h in usable]), pct)
    else:
        percentile = max((lat.get("percentile") or 0 for lat in lats), default=None)
    merged["latency_ms"] = {
        "min": min((lat["min"] for lat in lats if lat.get("min") is not None), default=None),
        "max": max((lat["max"] for lat in lats if lat.get("max") is not None), default=None),
        "avg": (sum((lat.get("avg") or 0) * e for lat, e in zip(lats, events, strict=True)) / total_events
                if total_events else None),
        "sum": sum(lat.get("sum") or 0 for lat in lats),
        "pct": pct,
        "percentile": percentile,
    }
    return merged


def result_store_merged(*, job: Job, clients: list[JobClient], source: str,
                        steady: dict[str, float | None] | None = None) -> JobResult | None:
    """The job's JobResult from its clients' summaries (one client's comes back unchanged).

    Steady-state figures are the stored samples' unless given: an imported log passes the parser's,
    which knows where that log's own warm-up ends. Without summaries or steady figures, no result.
    """
    summary = merge_summaries([c.summary for c in clients], [c.histogram for c in clients])
    if not summary and steady is None:
        return None
    summary = summary or {}
    latency = summary.get("latency_ms") or {}
    if steady is None:
        steady = _steady_from_samples(job)
    fields = {key: summary.get(key) for key in _SUMMED}
    fields.update({
        "source": source, "duration_s": summary.get("duration_s"),
        "latency_min_ms": latency.get("min"), "latency_avg_ms": latency.get("avg"),
        "latency_max_ms": latency.get("max"), "latency_pct": latency.get("pct"),
        "latency_pct_ms": latency.get("percentile"), "latency_sum_ms": latency.get("sum"),
        **steady,
    })
    result, _ = JobResult.objects.update_or_create(job=job, defaults=fields)
    return result


def _steady_from_samples(job: Job) -> dict[str, float | None]:
    """Mean per-second figures of the measured run (the warm-up is a run of its own), summed over
    clients at each t; the first interval is left out as the ramp-up of connections."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT avg(tps), avg(qps), avg(lat) FROM (SELECT t, sum(tps) tps, sum(qps) qps,"
            " max(latency_pct_ms) lat FROM campaigns_intervalsample WHERE job_id = %s AND t > %s GROUP BY t) s",
            [job.pk, float(job.scenario.report_interval_s)],
        )
        tps, qps, lat = cursor.fetchone()
    return {"steady_tps": tps, "steady_qps": qps, "steady_latency_pct_ms": lat}
