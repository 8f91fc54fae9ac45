"""State changes: launching campaigns, executing jobs, cancelling, reconciling.

Every function here is keyword-only and named <noun>_<verb>. PostgreSQL is the source of truth:
a Celery message only nudges a worker to look at a job, and a job is claimed with a single
conditional UPDATE, so duplicated or replayed messages cannot run it twice.
"""
from __future__ import annotations

import hashlib
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from campaigns import cache as _cache  # noqa: F401 - connects the signals that outdate cached comparisons
from campaigns.crypto import DecryptionError
from campaigns.models import (
    Campaign,
    ClientHost,
    Job,
    JobClient,
    JobResult,
    PreparedDataset,
    Run,
    Scenario,
    Target,
)
from campaigns.probes import ProbeError, server_info
from campaigns.sysbench import parser
from campaigns.sysbench.catalogue import TESTS
from campaigns.sysbench.command import Connection, build_argv, format_command, redact_text
from campaigns.sysbench.errors import explain_failure
from campaigns.sysbench.runner import run_process, sysbench_version

log = logging.getLogger(__name__)

# Options that change what prepare creates: two scenarios that differ only in other options
# share their prepared tables.
_SHAPE_OPTIONS = frozenset({
    "auto-inc", "secondary", "create-secondary", "mysql-storage-engine", "pgsql-variant",
    "oltp-secondary", "oltp-auto-inc", "mysql-table-engine",
})
WAITING_RETRY_S = 5.0


class JobFailure(Exception):
    """A job cannot go on; the message is the cause shown to the user."""


class StateConflict(Exception):
    """The requested change does not fit the current state (e.g. cancelling a finished run)."""


# ---------------------------------------------------------------- targets


def target_connection(*, target: Target) -> Connection:
    return Connection(
        driver=target.driver, host=target.host, port=target.port, database=target.database,
        user=target.user, password=target.get_password(),
    )


def target_check(*, target: Target) -> dict[str, Any]:
    """Connects to the target and returns its version and the settings that decide results."""
    try:
        info = server_info(target_connection(target=target))
    except DecryptionError as exc:
        raise ProbeError(str(exc)) from None
    return {"version": info.version, "settings": info.settings}


# ---------------------------------------------------------------- campaigns and runs


@dataclass(slots=True)
class PlannedJob:
    position: int
    target: Target
    scenario: Scenario
    threads: int
    repetition: int
    tables: int
    table_size: int
    clients: int
    time_s: int
    warmup_s: int


def campaign_expand(*, campaign: Campaign) -> list[PlannedJob]:
    """The campaign's jobs in execution order: per target, per scenario, per threads, per repetition.

    Targets outermost so that each target's dataset is prepared once and reused by every job on it.
    """
    planned: list[PlannedJob] = []
    targets = list(campaign.targets.select_related("spec", "product").order_by("name"))
    scenarios = list(campaign.scenarios.select_related("dataset").order_by("name"))
    for target in targets:
        for scenario in scenarios:
            tables, table_size = campaign.dataset_size(scenario.dataset, target.spec)
            for threads in campaign.threads_for(target, scenario):
                for repetition in range(1, campaign.repetitions + 1):
                    planned.append(PlannedJob(
                        position=len(planned), target=target, scenario=scenario, threads=threads,
                        repetition=repetition, tables=tables, table_size=table_size,
                        clients=campaign.clients_for(threads),
                        time_s=campaign.run_time_s or scenario.time_s,
                        warmup_s=scenario.warmup_s if campaign.warmup_override_s is None else campaign.warmup_override_s,
                    ))
    return planned


# Rough costs for the plan's estimates, from runs on a 2-core machine (SYSBENCH-NOTES.md):
# prepare loads about 100,000 rows/s; an InnoDB sbtest row with its secondary index takes about
# 230 bytes on disk; each job spends about a second on snapshots, process start and closing
# (seed 001's quick run: 4 s measured + 1 s warm-up took 4-6 s per job, 1 client, quiet machine);
# 2 s leaves room for the client barrier of multi-client jobs.
PREPARE_ROWS_PER_S = 100_000
BYTES_PER_ROW = 230
JOB_OVERHEAD_S = 2


def split_threads(threads: int, clients: int) -> list[int]:
    """Threads per client: an even split, the remainder going to the first clients."""
    clients = max(1, min(clients, threads))
    base, extra = divmod(threads, clients)
    return [base + (1 if i < extra else 0) for i in range(clients)]


def campaign_plan(*, campaign: Campaign) -> dict[str, Any]:
    """What a launch would do, before it does it: jobs in order, exact commands, time and size."""
    jobs = []
    total_s = 0.0
    prepared: set[tuple[int, str]] = set()
    datasets: dict[tuple[int, str], int] = {}
    for p in campaign_expand(campaign=campaign):
        scenario = p.scenario
        shell_job = Job(target=p.target, scenario=scenario, threads=p.threads, tables=p.tables, table_size=p.table_size,
                        time_s=p.time_s, warmup_s=p.warmup_s)
        conn = Connection(driver=p.target.driver, host=p.target.host, port=p.target.port,
                          database=p.target.database, user=p.target.user,
                          password="***" if p.target.has_password() else "")
        signature = dataset_signature(scenario=scenario, tables=p.tables, table_size=p.table_size)
        key = (p.target.pk, signature)
        rows = p.tables * p.table_size
        prepare_s = 0.0
        if scenario.prepare_mode != Scenario.PrepareMode.NEVER and (
            key not in prepared or scenario.prepare_mode == Scenario.PrepareMode.ALWAYS
        ):
            prepare_s = rows / PREPARE_ROWS_PER_S
            prepared.add(key)
        datasets[key] = rows * BYTES_PER_ROW
        duration_s = prepare_s + p.warmup_s + p.time_s + JOB_OVERHEAD_S
        total_s += duration_s
        shares = split_threads(p.threads, p.clients)
        jobs.append({
            "position": p.position, "target": p.target.name, "target_id": p.target.pk,
            "scenario": scenario.name, "scenario_id": scenario.pk, "test": scenario.test,
            "threads": p.threads, "repetition": p.repetition, "tables": p.tables, "table_size": p.table_size,
            "clients": p.clients, "threads_per_client": shares,
            "prepare_command": format_command(_phase_argv(job=shell_job, conn=conn, command="prepare")) if prepare_s else None,
            "commands": [format_command(_phase_argv(job=shell_job, conn=conn, command="run", threads=share))
                         for share in shares],
            "estimated_prepare_s": round(prepare_s, 1),
            "estimated_duration_s": round(duration_s, 1),
            "estimated_dataset_bytes": rows * BYTES_PER_ROW,
        })
    return {
        "campaign": campaign.name, "campaign_id": campaign.pk, "jobs": jobs, "job_count": len(jobs),
        "estimated_duration_s": round(total_s, 1), "estimated_duration": format_duration(total_s),
        "estimated_dataset_bytes": sum(datasets.values()),
        "max_clients": max((j["clients"] for j in jobs), default=0),
    }


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h {minutes} min"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def campaign_launch(
    *,
    campaign: Campaign,
    user: Any = None,
    trigger: str = Run.Trigger.MANUAL,
    idempotency_key: str | None = None,
    label: str = "",
    after: Run | None = None,
) -> Run:
    """Creates a run with all its jobs and dispatches the first one after commit.

    The same idempotency key returns the run it created the first time. With `after`, a run that
    has not finished yet, the new run stays pending (its jobs queued) and starts when that one ends.
    """
    if idempotency_key:
        existing = Run.objects.filter(campaign=campaign, idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing
    if Run.objects.filter(campaign=campaign).active().exists():
        raise StateConflict(f"campaign '{campaign.name}' already has a run in progress")
    planned = campaign_expand(campaign=campaign)
    if not planned:
        raise StateConflict("the campaign has no jobs: add targets, scenarios and thread counts")
    try:
        with transaction.atomic():
            waits = after is not None and not Run.objects.get(pk=after.pk).is_finished()
            run = Run.objects.create(
                campaign=campaign, trigger=trigger, idempotency_key=idempotency_key or None,
                label=label, created_by=user if getattr(user, "is_authenticated", False) else None,
                status=Run.Status.PENDING if waits else Run.Status.RUNNING,
                started_at=None if waits else timezone.now(), waits_for=after if waits else None,
            )
            Job.objects.bulk_create([
                Job(run=run, target=p.target, scenario=p.scenario, threads=p.threads,
                    repetition=p.repetition, position=p.position, tables=p.tables,
                    table_size=p.table_size, clients_needed=p.clients, time_s=p.time_s, warmup_s=p.warmup_s)
                for p in planned
            ])
            transaction.on_commit(lambda: run_advance(run_id=run.pk))
    except IntegrityError:
        # A concurrent request with the same key won the race: return its run.
        return Run.objects.get(campaign=campaign, idempotency_key=idempotency_key)
    return run


def job_dispatch(*, job: Job) -> None:
    from campaigns.tasks import job_execute_task

    Job.objects.filter(pk=job.pk).update(
        dispatched_at=timezone.now(), dispatch_count=job.dispatch_count + 1
    )
    job_execute_task.apply_async(args=[job.pk], queue=settings.CELERY_TASK_DEFAULT_QUEUE)


def run_advance(*, run_id: int) -> None:
    """Dispatches the run's next job, or closes the run when none is left.

    Jobs of one run execute one at a time: two benchmarks on the same target at once would
    measure each other.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_finished():
            return
        if run.status == Run.Status.PENDING:
            if run.waits_for is not None and not run.waits_for.is_finished():
                return
            run.status, run.started_at = Run.Status.RUNNING, timezone.now()
            run.save(update_fields=["status", "started_at"])
        jobs = run.jobs.all()
        if jobs.filter(status__in=Job.ACTIVE).exists():
            return
        next_job = jobs.filter(status__in=(Job.Status.QUEUED, Job.Status.WAITING)).order_by("position").first()
        if next_job is not None:
            transaction.on_commit(lambda: job_dispatch(job=next_job))
            return
        keep = run.campaign.keep_data
    # Every job is done. The data goes before the run is marked finished: a run queued behind this
    # one starts then, on the same targets, and must not find its tables dropped under it. Dropping
    # twice (the reconciler may get here too meanwhile) is harmless.
    if not keep:
        run_cleanup_data(run=run)
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_finished():
            return
        jobs = run.jobs.all()
        if jobs.filter(status__in=(*Job.ACTIVE, Job.Status.QUEUED, Job.Status.WAITING)).exists():
            return
        failed = jobs.filter(status=Job.Status.FAILED).count()
        cancelled = jobs.filter(status=Job.Status.CANCELLED).count()
        if cancelled:
            run.status = Run.Status.CANCELLED
        elif failed:
            run.status = Run.Status.FAILED
            run.error = f"{failed} of {jobs.count()} jobs failed"
        else:
            run.status = Run.Status.SUCCEEDED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        # Regression checks and notifications run as a task of their own: a slow webhook must
        # never hold up the next run.
        transaction.on_commit(lambda: _run_finished_dispatch(run.pk))
        transaction.on_commit(lambda: _followers_start(run.pk))


def _followers_start(run_id: int) -> None:
    """Starts the runs that were queued behind this one (it has just finished)."""
    for follower_id in Run.objects.filter(waits_for_id=run_id, status=Run.Status.PENDING).values_list("pk", flat=True):
        run_advance(run_id=follower_id)


def _run_finished_dispatch(run_id: int) -> None:
    from campaigns.tasks import run_finished_task

    run_finished_task.apply_async(args=[run_id], queue=settings.CELERY_TASK_DEFAULT_QUEUE)


def run_cancel(*, run: Run) -> Run:
    """Cancels every unfinished job; running sysbench processes notice within a second.

    Each client polls its job's status every BENCHAPP_CANCEL_POLL_S and then kills its process
    group (SIGTERM, SIGKILL a second later), keeps the samples stored so far, and the job's closer
    still runs the scenario's cleanup. A job already past its measurement (closing) keeps its outcome.
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished():
            raise StateConflict(f"run #{run.pk} is already {locked.status}")
        now = timezone.now()
        active = run.jobs.filter(status__in=Job.ACTIVE).count()
        run.jobs.filter(status__in=(Job.Status.QUEUED, Job.Status.WAITING)).update(
            status=Job.Status.CANCELLED, finished_at=now, error="cancelled before it started"
        )
        # Active jobs keep their process until the worker notices (within a poll interval); the
        # worker then records what was measured, runs cleanup and closes the run.
        run.jobs.filter(status__in=Job.ACTIVE).exclude(phase="finalizing").update(
            status=Job.Status.CANCELLED, error="cancelled"
        )
        if not active:
            locked.status = Run.Status.CANCELLED
            locked.finished_at = now
            locked.save(update_fields=["status", "finished_at"])
            transaction.on_commit(lambda: _followers_start(run.pk))
    run.refresh_from_db()
    return run


def run_cleanup_data(*, run: Run) -> None:
    """Drops the tables of datasets this run prepared whose scenarios ask for cleanup after the run."""
    jobs = run.jobs.select_related("target", "scenario").filter(
        scenario__cleanup=Scenario.Cleanup.AFTER_RUN
    )
    seen: set[tuple[int, str]] = set()
    for job in jobs:
        signature = dataset_signature(scenario=job.scenario, tables=job.tables, table_size=job.table_size)
        if (job.target_id, signature) in seen:
            continue
        seen.add((job.target_id, signature))
        dataset_drop(job=job, signature=signature)


# ---------------------------------------------------------------- datasets


def dataset_signature(*, scenario: Scenario, tables: int, table_size: int) -> str:
    spec = TESTS[scenario.test]
    family = "legacy" if spec.legacy else ("bulk" if scenario.test == "bulk_insert" else "oltp")
    shape = ",".join(f"{k}={v}" for k, v in sorted(scenario.options.items()) if k in _SHAPE_OPTIONS)
    ddl = hashlib.sha256(scenario.table_ddl.encode()).hexdigest()[:12] if scenario.table_ddl else "-"
    return f"{family}:{tables}x{table_size}:{shape}:{ddl}"


def dataset_drop(*, job: Job, signature: str) -> None:
    """Drops a dataset's tables (sysbench cleanup), bounded by BENCHAPP_CLEANUP_TIMEOUT_S.

    It runs even for a cancelled job, so it is never cancelled itself; it keeps the job's heartbeat
    up meanwhile, so that the reconciler does not take a long cleanup for a dead worker.
    """
    try:
        conn = target_connection(target=job.target)
    except DecryptionError:
        return

    def keep_alive() -> bool:
        _job_heartbeat(job.pk)
        return False

    argv = _phase_argv(job=job, conn=conn, command="cleanup")
    try:
        _sysbench_phase(argv=argv, conn=conn, phase="cleanup", should_cancel=keep_alive,
                        timeout_s=settings.BENCHAPP_CLEANUP_TIMEOUT_S, timeout_setting="BENCHAPP_CLEANUP_TIMEOUT_S")
    except JobFailure as exc:
        log.warning("cleanup of %s on %s failed: %s", signature, job.target, exc)
        return
    PreparedDataset.objects.filter(target=job.target, signature=signature).update(
        status=PreparedDataset.Status.DROPPED
    )


def _sysbench_phase(*, argv: list[str], conn: Connection, phase: str, should_cancel: Callable[[], bool],
                    timeout_s: float, timeout_setting: str = "") -> tuple[str, bool]:
    """Runs one unmeasured sysbench phase (prepare, cleanup, warm-up) to its end.

    Returns the transcript ("$ <command>" and the output, the password redacted; the bare output when
    cancelled) and whether it was cancelled. Raises JobFailure with the cause when sysbench fails, or
    when it overran `timeout_s` and the setting `timeout_setting` bounds that phase.
    """
    outcome = run_process(argv, should_cancel=should_cancel, timeout_s=timeout_s,
                          poll_s=settings.BENCHAPP_CANCEL_POLL_S)
    output = redact_text(outcome.output, [conn.password])
    if outcome.cancelled:
        return output, True
    if not outcome.succeeded():
        if outcome.timed_out and timeout_setting:
            raise JobFailure(f"sysbench {phase} exceeded its time-out of {timeout_s:.0f} s ({timeout_setting})"
                             " and was stopped")
        raise JobFailure(explain_failure(output, outcome.exit_code, phase=phase))
    return f"$ {format_command(argv)}\n{output}", False


# ---------------------------------------------------------------- executing a job


def _phase_argv(*, job: Job, conn: Connection, command: str, threads: int | None = None) -> list[str]:
    scenario = job.scenario
    return build_argv(
        sysbench=settings.BENCHAPP_SYSBENCH,
        test=scenario.test,
        command=command,
        connection=conn,
        tables=job.tables,
        table_size=job.table_size,
        options=scenario.options,
        threads=threads if threads is not None else (job.threads if command == "run" else scenario.prepare_threads),
        time_s=job.run_time_s(),
        report_interval_s=scenario.report_interval_s,
        percentile=scenario.percentile,
        histogram=True,
        # sysbench can overrun --time (SYSBENCH-NOTES); this bounds it from the inside.
        forced_shutdown_s=max(5, int(settings.BENCHAPP_RUN_SLACK_S // 2)),
    )


def _job_heartbeat(job_id: int) -> str:
    """Marks the job alive and returns its current status, in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE campaigns_job SET heartbeat_at = now() WHERE id = %s RETURNING status", [job_id]
        )
        row = cursor.fetchone()
    return row[0] if row else Job.Status.CANCELLED


def _cancel_check(job_id: int) -> Callable[[], bool]:
    def should_cancel() -> bool:
        return _job_heartbeat(job_id) in (Job.Status.CANCELLED, Job.Status.FAILED)

    return should_cancel


def _dataset_ensure(job: Job, conn: Connection) -> str | None:
    """Prepares the job's dataset on its target unless an identical one is ready.

    Returns the prepare output ("" when skipped), or None when the job was cancelled meanwhile.
    """
    scenario = job.scenario
    signature = dataset_signature(scenario=scenario, tables=job.tables, table_size=job.table_size)
    prepared, _ = PreparedDataset.objects.get_or_create(
        target=job.target, signature=signature,
        defaults={"tables": job.tables, "table_size": job.table_size},
    )
    if scenario.prepare_mode == Scenario.PrepareMode.AUTO and prepared.status == PreparedDataset.Status.READY:
        return ""
    PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.PREPARING, prepared_by=job)
    # Other signatures on this target use the same table names: they are gone after this.
    PreparedDataset.objects.filter(target=job.target).exclude(pk=prepared.pk).update(
        status=PreparedDataset.Status.DROPPED
    )
    from campaigns.execution import clients_sweep_lost

    is_cancelled = _cancel_check(job.pk)

    def should_cancel() -> bool:
        clients_sweep_lost()  # a long prepare keeps an eye on other jobs' clients too
        return is_cancelled()

    outputs = []
    started = time.monotonic()
    for command in ("cleanup", "prepare"):
        if command == "prepare" and scenario.table_ddl:
            outputs.append(_tables_create(job, conn))
            argv = _custom_ddl_prepare_argv(job=job, conn=conn)
        else:
            argv = _phase_argv(job=job, conn=conn, command=command)
        try:
            transcript, cancelled = _sysbench_phase(
                argv=argv, conn=conn, phase=command, should_cancel=should_cancel,
                timeout_s=settings.BENCHAPP_PREPARE_TIMEOUT_S, timeout_setting="BENCHAPP_PREPARE_TIMEOUT_S",
            )
        except JobFailure:
            PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.FAILED)
            raise
        if cancelled:
            PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.FAILED)
            return None
        outputs.append(transcript)
    PreparedDataset.objects.filter(pk=prepared.pk).update(
        status=PreparedDataset.Status.READY, prepared_at=timezone.now(),
        prepare_s=time.monotonic() - started,
    )
    return "\n".join(outputs)


def table_ddl_statements(*, ddl: str, tables: int) -> list[str]:
    """The scenario's own CREATE TABLE for each sbtest table: "{table}" stands for the name."""
    if "{table}" not in ddl and tables > 1:
        raise JobFailure("the scenario's table DDL must contain {table} when the dataset has several tables")
    statements = []
    for i in range(1, tables + 1):
        text = ddl.replace("{table}", f"sbtest{i}")
        statements.extend(part.strip() for part in text.split(";") if part.strip())
    return statements


def _tables_create(job: Job, conn: Connection) -> str:
    """Creates the tables with the scenario's DDL (seed 002's sharded table, say) before loading rows."""
    from campaigns.probes import execute_ddl

    statements = table_ddl_statements(ddl=job.scenario.table_ddl, tables=job.tables)
    try:
        execute_ddl(conn, statements)
    except ProbeError as exc:
        raise JobFailure(f"the scenario's table DDL failed: {exc}") from None
    return "-- tables created with the scenario's DDL:\n" + ";\n".join(statements) + ";"


def _custom_ddl_prepare_argv(*, job: Job, conn: Connection) -> list[str]:
    """Loads rows into tables that already exist.

    The legacy scripts can skip their CREATE TABLE; the 1.0 scripts cannot, so for them our legacy
    oltp.lua loads the rows: both use the same sbtest columns (id, k, c, pad) and id sequence.
    The secondary index is left to the DDL.
    """
    scenario = job.scenario
    legacy = TESTS[scenario.test].legacy
    test = scenario.test if legacy else "oltp_legacy/oltp.lua"
    options: dict[str, object] = dict(scenario.options) if legacy else {}
    options.update({"skip-create-table": True, "oltp-create-secondary": False})
    return build_argv(
        sysbench=settings.BENCHAPP_SYSBENCH, test=test, command="prepare", connection=conn,
        tables=job.tables, table_size=job.table_size, options=options, threads=scenario.prepare_threads,
    )


# ---------------------------------------------------------------- hosts and reconciliation


def host_heartbeat(*, hostname: str, cores: int | None = None, memory_gb: float | None = None,
                   version: str | None = None) -> ClientHost:
    defaults: dict[str, Any] = {"last_heartbeat": timezone.now(), "queue": host_queue(hostname)}
    if cores is not None:
        defaults.update(cores=cores, memory_gb=memory_gb or 0, sysbench_version=version or "",
                        started_at=timezone.now())
    host, _ = ClientHost.objects.update_or_create(hostname=hostname, defaults=defaults)
    return host


def host_queue(hostname: str) -> str:
    """A client host's own queue, under the shared queue's name so that separate installations
    (or test sessions) on one Redis never consume each other's client tasks."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.host.{hostname}"


def jobs_reconcile(*, stale_after_s: float | None = None, redispatch_after_s: float | None = None) -> dict[str, int]:
    """Repairs what a lost worker or a lost broker message left behind; safe to run anywhere, any time.

    - A job preparing without a heartbeat, or a started client without one, lost its worker: it
      fails as "client lost" (its host goes offline) and the run goes on with its next job.
    - A running job that nobody is closing (its closer died, or its coordinator died before the
      clients started) is closed here.
    - A client whose task message was never picked up is sent again while its host is online, and
      given up when its host is offline or its job has stopped.
    - A running run with no active job gets its next queued job sent again once the last message
      is older than redispatch_after_s: Redis may have lost it (restart, flush). The atomic claims
      make duplicates harmless, so no job runs twice.
    """
    from campaigns.execution import host_mark_offline, job_finalize, jobclient_lose
    from campaigns.tasks import jobclient_execute_task

    stale_after_s = settings.BENCHAPP_STALE_S if stale_after_s is None else stale_after_s
    redispatch_after_s = settings.BENCHAPP_REDISPATCH_S if redispatch_after_s is None else redispatch_after_s
    lost = closed = redispatched = 0
    now = timezone.now()
    limit_stale = now - timedelta(seconds=stale_after_s)
    limit_redispatch = now - timedelta(seconds=redispatch_after_s)
    # A coordinator that died while preparing leaves a job whose own heartbeat stopped.
    for job in Job.objects.filter(status=Job.Status.PREPARING, heartbeat_at__lt=limit_stale):
        updated = Job.objects.filter(pk=job.pk, status=Job.Status.PREPARING, heartbeat_at__lt=limit_stale).update(
            status=Job.Status.FAILED, phase="done", finished_at=now,
            error=f"client lost: no heartbeat from {job.claimed_by or 'its worker'} for {stale_after_s:.0f} s",
        )
        lost += updated
        if updated:
            host_mark_offline(hostname=job.claimed_by, heartbeat_before=limit_stale)
            run_advance(run_id=job.run_id)
    # A started client whose worker died stops beating; the job fails with that cause.
    for client in JobClient.objects.filter(
        status__in=(JobClient.Status.READY, JobClient.Status.RUNNING), heartbeat_at__lt=limit_stale,
    ):
        cause = f"client lost: no heartbeat from {client.host_name} for {stale_after_s:.0f} s"
        if jobclient_lose(client=client, heartbeat_before=limit_stale, cause=cause):
            lost += 1
            job_finalize(job_id=client.job_id)
    # A client that was never picked up: its message may be gone, or its host may be.
    for client in JobClient.objects.filter(
        status=JobClient.Status.PENDING, heartbeat_at__lt=limit_redispatch,
    ).select_related("job"):
        host = ClientHost.objects.filter(hostname=client.host_name).first()
        if client.job.status != Job.Status.RUNNING:
            if JobClient.objects.filter(pk=client.pk, status=JobClient.Status.PENDING).update(
                status=JobClient.Status.CANCELLED, finished_at=now, error="never started: the job had stopped"
            ):
                job_finalize(job_id=client.job_id)
        elif host is None or not host.is_online():
            cause = f"client lost: host {client.host_name} went offline before starting its client"
            if jobclient_lose(client=client, heartbeat_before=limit_redispatch, cause=cause):
                lost += 1
                job_finalize(job_id=client.job_id)
        elif JobClient.objects.filter(pk=client.pk, status=JobClient.Status.PENDING).update(heartbeat_at=now):
            jobclient_execute_task.apply_async(args=[client.pk], queue=host_queue(client.host_name))
            redispatched += 1
    # A job past its start with no client left running and no live closer: close it. That covers a
    # job whose lost client a busy worker declared (execution.clients_sweep_lost) and a closer that
    # died mid-way ("finalizing" without heartbeat), which is started over: closing is idempotent.
    for job in Job.objects.filter(
        status__in=(Job.Status.RUNNING, Job.Status.FAILED, Job.Status.CANCELLED),
        phase__in=("run", "finalizing"), heartbeat_at__lt=limit_stale,
    ).exclude(clients__status__in=(JobClient.Status.PENDING, JobClient.Status.READY, JobClient.Status.RUNNING)):
        if job.phase == "finalizing" and not Job.objects.filter(
            pk=job.pk, phase="finalizing", heartbeat_at__lt=limit_stale
        ).update(phase="run"):
            continue
        if not job.clients.exists():
            Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
                status=Job.Status.FAILED,
                error=f"client lost: {job.claimed_by or 'its coordinator'} stopped before starting the clients",
            )
        closed += int(job_finalize(job_id=job.pk))
    # A pending run whose predecessor finished (or was deleted) while nobody started it: a lost message.
    for run_id in Run.objects.filter(
        Q(waits_for__isnull=True) | Q(waits_for__in=Run.objects.finished()), status=Run.Status.PENDING,
    ).values_list("pk", flat=True):
        run_advance(run_id=run_id)
    for run in Run.objects.filter(status=Run.Status.RUNNING):
        if run.jobs.filter(status__in=Job.ACTIVE).exists():
            continue
        job = run.jobs.filter(status__in=(Job.Status.QUEUED, Job.Status.WAITING)).order_by("position").first()
        if job is None:
            run_advance(run_id=run.pk)
            continue
        waiting_retry = job.status == Job.Status.WAITING and (
            job.dispatched_at is None or job.dispatched_at < now - timedelta(seconds=WAITING_RETRY_S))
        # A job never sent counts from its run's start: the launch sends it just after its commit, and
        # sending it from here in that moment would put a second message on the queue for nothing.
        last_sent = job.dispatched_at or run.started_at
        if waiting_retry or last_sent is None or last_sent < limit_redispatch:
            job_dispatch(job=job)
            redispatched += 1
    return {"lost": lost, "closed": closed, "redispatched": redispatched}


def local_host_facts() -> dict[str, Any]:
    import os

    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"hostname": settings.BENCHAPP_HOSTNAME or socket.gethostname(), "cores": os.cpu_count() or 1,
            "memory_gb": round(pages / 2**30, 1), "version": sysbench_version(settings.BENCHAPP_SYSBENCH)}



# ---------------------------------------------------------------- demo data


# The targets demo_load() creates for this machine's own MariaDB and PostgreSQL.
DEMO_TARGET_NAMES = ("demo-mariadb", "demo-postgresql")


def demo_load() -> list[str]:
    """Demo products, a local spec, targets for the local MariaDB and PostgreSQL, a smoke scenario.

    Hosts and ports come from DEMO_MYSQL_HOST/PORT and DEMO_PGSQL_HOST/PORT (docker-compose sets
    them); re-running updates rather than duplicates.
    """
    import os

    from campaigns.models import Dataset, InstanceSpec, Product

    facts = local_host_facts()
    spec, _ = InstanceSpec.objects.get_or_create(
        label=f"local {facts['cores']}-core {facts['memory_gb']:.0f} GB",
        defaults={"cpu_cores": facts["cores"], "memory_gb": facts["memory_gb"], "storage_type": "local disk"},
    )
    lines = []
    demos = [
        ("demo-mariadb", "MariaDB (local)", Product.Engine.MARIADB, Target.Driver.MYSQL,
         os.environ.get("DEMO_MYSQL_HOST", "127.0.0.1"), int(os.environ.get("DEMO_MYSQL_PORT", "3306")),
         os.environ.get("DEMO_MYSQL_USER", "root"), os.environ.get("DEMO_MYSQL_PASSWORD", "")),
        ("demo-postgresql", "PostgreSQL (local)", Product.Engine.POSTGRESQL, Target.Driver.PGSQL,
         os.environ.get("DEMO_PGSQL_HOST", "127.0.0.1"), int(os.environ.get("DEMO_PGSQL_PORT", "5432")),
         os.environ.get("DEMO_PGSQL_USER", "postgres"), os.environ.get("DEMO_PGSQL_PASSWORD", "")),
    ]
    for name, product_name, engine, driver, host, port, user, password in demos:
        product, _ = Product.objects.get_or_create(name=product_name, defaults={"engine": engine, "vendor": "local"})
        target, _ = Target.objects.update_or_create(
            name=name,
            defaults={"product": product, "spec": spec, "driver": driver, "host": host, "port": port,
                      "database": "sbtest", "user": user, "is_demo": True},
        )
        target.set_password(password)
        target.save()
        try:
            version = server_info(target_connection(target=target)).version
            if version and product.version != version:
                product.version = version[:100]
                product.save(update_fields=["version"])
            lines.append(f"demo target {name}: {target.endpoint_label()} (server {version})")
        except ProbeError as exc:
            lines.append(f"demo target {name}: {target.endpoint_label()} — not reachable now: {exc}")
    dataset, _ = Dataset.objects.get_or_create(
        name="smoke", defaults={"tables": 4, "table_size": 10000, "description": "4 × 10,000 rows: quick checks"}
    )
    Scenario.objects.get_or_create(
        name="point select (smoke)",
        defaults={"test": "oltp_point_select", "dataset": dataset, "time_s": 10, "percentile": 95.0,
                  "cleanup": Scenario.Cleanup.KEEP},
    )
    return lines


# ---------------------------------------------------------------- importing logs made elsewhere


class ImportRejected(ValueError):
    """An uploaded file is not usable sysbench output; the message names the file and why."""


def results_import(*, files: list[tuple[str, str]], target: Target, scenario: Scenario, user: Any = None) -> Run:
    """Stores sysbench logs produced outside benchapp as an imported run, one job per file.

    Every file is checked first; if any is refused, nothing at all is stored.
    """
    from campaigns.execution import result_store_merged

    parsed_files = []
    for name, text in files:
        if "\x00" in text:
            raise ImportRejected(f"{name}: binary data, not sysbench output")
        if not parser.looks_like_sysbench_output(text):
            raise ImportRejected(f"{name}: not sysbench output (no sysbench banner, report lines or statistics)")
        parsed = parser.parse_output(text)
        if parsed.summary is None and not parsed.intervals:
            raise ImportRejected(f"{name}: sysbench output without any figures (no report lines, no final statistics)")
        parsed_files.append((name, text, parsed))
    campaign, _ = Campaign.objects.get_or_create(
        name=f"Imported logs: {target.name} / {scenario.name}",
        defaults={"description": "Results imported from sysbench logs made outside benchapp."},
    )
    campaign.targets.add(target)
    campaign.scenarios.add(scenario)
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.create(
            campaign=campaign, trigger=Run.Trigger.IMPORT, status=Run.Status.SUCCEEDED,
            label=", ".join(name for name, _, _ in parsed_files)[:200], started_at=now, finished_at=now,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        for position, (name, text, parsed) in enumerate(parsed_files):
            threads = parsed.threads or (parsed.intervals[0].threads if parsed.intervals else 1)
            tables, table_size = scenario.dataset.size_for(target.spec)
            job = Job.objects.create(
                run=run, target=target, scenario=scenario, threads=max(1, threads), position=position,
                tables=tables, table_size=table_size, imported=True, phase="done",
                status=Job.Status.SUCCEEDED if parsed.complete else Job.Status.FAILED,
                error="" if parsed.complete else "; ".join(parsed.errors)[:2000] or "the log ends before the final statistics",
                started_at=now, finished_at=now,
            )
            client = JobClient.objects.create(
                job=job, index=0, host_name="imported", threads=job.threads, raw_output=text,
                status=JobClient.Status.SUCCEEDED if parsed.complete else JobClient.Status.FAILED,
                sysbench_version=parsed.sysbench_version or "", summary=parsed.to_dict()["summary"] or {},
                histogram=[list(b) for b in parsed.histogram] if parsed.histogram else None,
                command_line=f"(imported from {name})",
            )
            samples_bulk_store(job_id=job.pk, client_index=0, intervals=parsed.intervals)
            steady = parsed.steady
            result_store_merged(job=job, clients=[client], source=JobResult.Source.IMPORTED, steady={
                "steady_tps": getattr(steady, "tps", None), "steady_qps": getattr(steady, "qps", None),
                "steady_latency_pct_ms": getattr(steady, "latency_pct_ms", None),
            } if parsed.summary is not None or parsed.intervals else None)
    return run


def samples_bulk_store(*, job_id: int, client_index: int, intervals: list[parser.Interval]) -> int:
    """Stores many interval samples at once with PostgreSQL COPY (a 1-hour, 6-client log in well under a second)."""
    if not intervals:
        return 0
    columns = ("job_id", "client_index", "t", "threads", "tps", "qps", "reads_per_s", "writes_per_s",
               "other_per_s", "latency_pct_ms", "errors_per_s", "reconnects_per_s")
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg 3 cursor underneath Django's wrapper
        with raw.copy(f"COPY campaigns_intervalsample ({', '.join(columns)}) FROM STDIN") as copy:
            for i in intervals:
                copy.write_row((job_id, client_index, i.t, i.threads, i.tps, i.qps, i.reads_per_s, i.writes_per_s,
                                i.other_per_s, i.latency_pct_ms, i.errors_per_s, i.reconnects_per_s))
    return len(intervals)


def job_warmup(*, job: Job, conn: Connection) -> str:
    """The warm-up: the job's workload for warmup_s seconds, unmeasured, before the clients start.

    sysbench 1.0.20 has no --warmup-time, so the warm-up is a run of its own whose figures are
    kept only as text; it fills the buffer pool so the measured run starts on a warm cache.
    """
    if job.warmup_time_s() <= 0:
        return ""
    argv = build_argv(
        sysbench=settings.BENCHAPP_SYSBENCH, test=job.scenario.test, command="run", connection=conn,
        tables=job.tables, table_size=job.table_size, options=job.scenario.options, threads=job.threads,
        time_s=job.warmup_time_s(), percentile=job.scenario.percentile,
        forced_shutdown_s=max(5, int(settings.BENCHAPP_RUN_SLACK_S // 2)),
    )
    transcript, _ = _sysbench_phase(argv=argv, conn=conn, phase="warm-up", should_cancel=_cancel_check(job.pk),
                                    timeout_s=job.warmup_time_s() + settings.BENCHAPP_RUN_SLACK_S)
    return transcript
