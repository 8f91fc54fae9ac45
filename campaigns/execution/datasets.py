"""A job's dataset on its target: its signature, preparing it once, the scenario's own table DDL, and
dropping it (after the job, after the run, or before a different dataset takes the same table names)."""
from __future__ import annotations

import hashlib
import logging
import time

from django.conf import settings
from django.utils import timezone

from campaigns.crypto import DecryptionError
from campaigns.execution.hosts import clients_sweep_lost
from campaigns.execution.phases import (
    JobFailure,
    cancel_check,
    job_heartbeat,
    phase_argv,
    sysbench_phase,
    target_connection,
)
from campaigns.models import Job, PreparedDataset, Run, Scenario
from campaigns.probes import ProbeError, connection_guard, execute_ddl
from campaigns.sysbench.catalogue import TESTS
from campaigns.sysbench.command import Connection, build_argv
from campaigns.sysbench.ddl import DdlError
from campaigns.sysbench.ddl import table_ddl_statements as ddl_render_all

log = logging.getLogger(__name__)

# Options that change what prepare creates: two scenarios that differ only in other options
# share their prepared tables.
SHAPE_OPTIONS = frozenset({
    "auto-inc", "secondary", "create-secondary", "mysql-storage-engine", "pgsql-variant",
    "oltp-secondary", "oltp-auto-inc", "mysql-table-engine",
})


def dataset_signature(*, scenario: Scenario, tables: int, table_size: int) -> str:
    spec = TESTS[scenario.test]
    family = "legacy" if spec.legacy else ("bulk" if scenario.test == "bulk_insert" else "oltp")
    shape = ",".join(f"{k}={v}" for k, v in sorted(scenario.options.items()) if k in SHAPE_OPTIONS)
    ddl = hashlib.sha256(scenario.table_ddl.encode()).hexdigest()[:12] if scenario.table_ddl else "-"
    return f"{family}:{tables}x{table_size}:{shape}:{ddl}"


def job_dataset_signature(job: Job) -> str:
    return dataset_signature(scenario=job.scenario, tables=job.tables, table_size=job.table_size)


def dataset_ensure(job: Job, conn: Connection) -> str | None:
    """Prepares the job's dataset on its target unless an identical one is ready.

    Returns the prepare output ("" when skipped), or None when the job was cancelled meanwhile.
    """
    scenario = job.scenario
    # A refused DDL fails the job before anything changes, on the target or in our records of it.
    ddl_statements = (table_ddl_statements(ddl=scenario.table_ddl, tables=job.tables, driver=conn.driver)
                      if scenario.table_ddl else [])
    signature = job_dataset_signature(job)
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
    is_cancelled = cancel_check(job.pk)

    def should_cancel() -> bool:
        clients_sweep_lost()  # a long prepare keeps an eye on other jobs' clients too
        return is_cancelled()

    outputs = []
    started = time.monotonic()
    for command in ("cleanup", "prepare"):
        if command == "prepare" and scenario.table_ddl:
            outputs.append(_tables_create(job, conn, ddl_statements))
            argv = _custom_ddl_prepare_argv(job=job, conn=conn)
        else:
            argv = phase_argv(job=job, conn=conn, command=command)
        try:
            transcript, cancelled = sysbench_phase(
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


def dataset_drop(*, job: Job, signature: str) -> None:
    """Drops a dataset's tables (sysbench cleanup), bounded by BENCHAPP_CLEANUP_TIMEOUT_S.

    It runs even for a cancelled job, so it is never cancelled itself; it keeps the job's heartbeat
    up meanwhile, so that the reconciler does not take a long cleanup for a dead worker.
    """
    try:
        conn = target_connection(target=job.target)
        connection_guard(conn)
    except (DecryptionError, ProbeError) as exc:
        log.warning("cleanup of %s on %s skipped: %s", signature, job.target, exc)
        return

    def keep_alive() -> bool:
        job_heartbeat(job.pk)
        return False

    argv = phase_argv(job=job, conn=conn, command="cleanup")
    try:
        sysbench_phase(argv=argv, conn=conn, phase="cleanup", should_cancel=keep_alive,
                       timeout_s=settings.BENCHAPP_CLEANUP_TIMEOUT_S, timeout_setting="BENCHAPP_CLEANUP_TIMEOUT_S")
    except JobFailure as exc:
        log.warning("cleanup of %s on %s failed: %s", signature, job.target, exc)
        return
    PreparedDataset.objects.filter(target=job.target, signature=signature).update(
        status=PreparedDataset.Status.DROPPED
    )


def run_cleanup_data(*, run: Run) -> None:
    """Drops the tables of datasets this run prepared whose scenarios ask for cleanup after the run."""
    jobs = run.jobs.select_related("target", "scenario").filter(
        scenario__cleanup=Scenario.Cleanup.AFTER_RUN
    )
    seen: set[tuple[int, str]] = set()
    for job in jobs:
        signature = job_dataset_signature(job)
        if (job.target_id, signature) in seen:
            continue
        seen.add((job.target_id, signature))
        dataset_drop(job=job, signature=signature)


def table_ddl_statements(*, ddl: str, tables: int, driver: str) -> list[str]:
    """The scenario's own CREATE TABLE for each sbtest table ("{table}" stands for the name), as checked and
    rendered for the target's driver by campaigns.sysbench.ddl: never the text as the user wrote it."""
    try:
        return ddl_render_all(ddl, tables=tables, driver=driver)
    except DdlError as exc:
        raise JobFailure(f"the scenario's table DDL is refused: {exc}") from None


def _tables_create(job: Job, conn: Connection, statements: list[str]) -> str:
    """Creates the tables with the scenario's checked DDL (seed 002's sharded table, say) before loading rows."""
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
