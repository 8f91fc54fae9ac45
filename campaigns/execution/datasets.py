"""A job's dataset on its target: its signature, the scenario's own table DDL, benchapp's loader, checking a
ready dataset's tables, and dropping it (after the job, after the run, or before a different dataset takes the
same table names). Preparing it once is the coordinator's step (coordinator.dataset_ensure), which keeps an eye
on lost clients meanwhile: this module stays below the ones that move a run on (dispatch drops a run's data).

A table of more rows than sysbench's `id INTEGER` holds (2,147,483,647) is created by benchapp with BIGINT
columns (campaigns.sysbench.ddl.wide_table_ddl) and loaded by benchapp's loader (our oltp_legacy Lua, which
takes a start id): a prepare of such a dataset that stopped resumes from each table's MAX(id) + 1."""
from __future__ import annotations

import hashlib
import json
import logging

from django.conf import settings
from django.db import connection

from campaigns.crypto import DecryptionError
from campaigns.execution import transitions
from campaigns.execution.phases import (
    JobFailure,
    TargetUnreachable,
    job_heartbeat,
    job_target_connection,
    phase_argv,
    sysbench_phase,
)
from campaigns.execution.workloads import scenario_runs_command
from campaigns.models import Job, PreparedDataset, Run, Scenario, Target
from campaigns.models.workloads import WORKLOAD_PREFIX
from campaigns.probes import ProbeError, connection_guard, execute_ddl, tables_max_id
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_TABLE_ROWS_REASON, TESTS
from campaigns.sysbench.command import Connection, build_argv
from campaigns.sysbench.ddl import DdlError, table_names, wide_table_ddl, wide_table_needed
from campaigns.sysbench.ddl import table_ddl_statements as ddl_render_all

log = logging.getLogger(__name__)

# Options that change what prepare creates: two scenarios that differ only in other options
# share their prepared tables.
SHAPE_OPTIONS = frozenset({
    "auto-inc", "secondary", "create-secondary", "mysql-storage-engine", "pgsql-variant",
    "oltp-secondary", "oltp-auto-inc", "mysql-table-engine",
})


def dataset_signature(*, scenario: Scenario, tables: int, table_size: int) -> str:
    if scenario.test.startswith(WORKLOAD_PREFIX):
        # What a workload's prepare makes depends on code benchapp does not know: its version (the label names
        # exactly one) and every option.
        family = scenario.test.replace(":", "-")
        shape = ",".join(f"{k}={v}" for k, v in sorted(scenario.options.items()))
        return f"{family}:{tables}x{table_size}:{shape}:-"
    spec = TESTS[scenario.test]
    family = "legacy" if spec.legacy else ("bulk" if scenario.test == "bulk_insert" else "oltp")
    shape = ",".join(f"{k}={v}" for k, v in sorted(scenario.options.items()) if k in SHAPE_OPTIONS)
    ddl = hashlib.sha256(scenario.table_ddl.encode()).hexdigest()[:12] if scenario.table_ddl else "-"
    return f"{family}:{tables}x{table_size}:{shape}:{ddl}"


def job_dataset_signature(job: Job) -> str:
    return dataset_signature(scenario=job.scenario, tables=job.tables, table_size=job.table_size)


def dataset_table_ddl(*, scenario: Scenario, table_size: int, driver: str) -> tuple[str, bool]:
    """The CREATE TABLE template ("{table}" for each name) benchapp runs before the rows are loaded: the
    scenario's own, or sysbench's table with BIGINT id and k when its INTEGER id cannot hold `table_size` rows
    (then True: the loader builds the secondary index after the rows, as sysbench does); "" when sysbench
    creates the tables itself."""
    if scenario.workload_version_id is not None:
        return "", False  # its own prepare creates its tables (a scenario DDL is refused for it)
    if table_size > MAX_TABLE_ROWS:
        raise JobFailure(f"{table_size:,} rows per table: at most {MAX_TABLE_ROWS:,} ({MAX_TABLE_ROWS_REASON})")
    if scenario.table_ddl:
        return scenario.table_ddl, False
    if wide_table_needed(table_size):
        try:
            return wide_table_ddl(driver=driver, options=dict(scenario.options)), True
        except DdlError as exc:
            raise JobFailure(f"a table of {table_size:,} rows cannot be created here: {exc}") from None
    return "", False


# A ready dataset whose table ends below this share of its prepared rows (MAX(id)) was emptied behind benchapp's
# back; a write test's deletes take at most a few ids off the top.
DATASET_ROWS_KEPT = 0.99


def dataset_mismatch(*, job: Job, conn: Connection, prepared: PreparedDataset) -> str:
    """What differs between a "ready" dataset and its tables on the target ("" when they match): a table missing, or
    one whose MAX(id) (cheap: the primary key's last entry) is short of the rows prepared."""
    if job.scenario.workload_version_id is not None:
        return ""  # a workload's tables are its own: benchapp cannot tell which they are
    names = table_names(prepared.tables)
    try:
        found = tables_max_id(conn, names)
    except ProbeError as exc:
        # A target restarting since the job's check waits for it like any unreachable target (it is not failed).
        kind = TargetUnreachable if exc.unreachable else JobFailure
        raise kind(f"the prepared tables could not be checked: {exc}") from None
    missing = [name for name in names if name not in found]
    if missing:
        listed = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        were = "were" if len(missing) > 1 else "was"
        return (f"table{'s' if len(missing) > 1 else ''} {listed} of the prepared dataset {were} missing on the "
                f"target ({conn.database}), dropped outside benchapp")
    if job.scenario.test == "bulk_insert":
        return ""  # its tables start empty: only their presence is prepared
    short = [(name, found[name]) for name in names if found[name] < prepared.table_size * DATASET_ROWS_KEPT]
    if short:
        name, top = short[0]
        more = f" (and {len(short) - 1} more table{'s' if len(short) > 2 else ''})" if len(short) > 1 else ""
        return (f"table {name} of the prepared dataset ends at id {top:,} of the {prepared.table_size:,} rows "
                f"prepared{more}: rows were deleted outside benchapp")
    return ""


def job_note(*, job_id: int, note: str) -> None:
    """Adds a sentence to the job's notes (the job page and the API show them)."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE campaigns_job SET notes = notes || %s::jsonb WHERE id = %s",
                       [json.dumps([note]), job_id])


def dataset_drop(*, job: Job, signature: str) -> None:
    """Drops a dataset's tables (sysbench cleanup), bounded by BENCHAPP_CLEANUP_TIMEOUT_S.

    It runs even for a cancelled job, so it is never cancelled itself; it keeps the job's heartbeat
    up meanwhile, so that the reconciler does not take a long cleanup for a dead worker.
    """
    try:
        conn = job_target_connection(job)
        connection_guard(conn)
    except (DecryptionError, ProbeError) as exc:
        log.warning("cleanup of %s on %s skipped: %s", signature, job.target, exc)
        return

    def keep_alive() -> bool:
        job_heartbeat(job.pk)
        return False

    if not scenario_runs_command(job.scenario, "cleanup"):
        transitions.dataset_dropped(target_id=job.target_id, signature=signature)
        return
    argv = phase_argv(job=job, conn=conn, command="cleanup")
    try:
        sysbench_phase(argv=argv, conn=conn, phase="cleanup", should_cancel=keep_alive,
                       timeout_s=settings.BENCHAPP_CLEANUP_TIMEOUT_S, timeout_setting="BENCHAPP_CLEANUP_TIMEOUT_S")
    except JobFailure as exc:
        log.warning("cleanup of %s on %s failed: %s", signature, job.target, exc)
        return
    transitions.dataset_dropped(target_id=job.target_id, signature=signature)


def run_cleanup_data(*, run: Run) -> None:
    """Drops the tables of datasets this run prepared whose scenarios ask for cleanup after the run."""
    jobs = run.jobs.select_related("target", "scenario").filter(
        scenario__cleanup=Scenario.Cleanup.AFTER_RUN
    ).exclude(target__kind=Target.Kind.CLIENT_HOST)  # a host test has no tables (its files go with its job)
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


def tables_create(job: Job, conn: Connection, statements: list[str], *, wide: bool = False) -> str:
    """Creates the tables with the scenario's checked DDL (seed 002's sharded table, say) before loading rows."""
    source = ("sysbench's table with BIGINT id and k (more rows than its INTEGER id holds)" if wide
              else "the scenario's DDL")
    try:
        execute_ddl(conn, statements)
    except ProbeError as exc:
        raise JobFailure(f"creating the tables with {source} failed: {exc}") from None
    return f"-- tables created with {source}:\n" + ";\n".join(statements) + ";"


def loader_prepare_argv(*, job: Job, conn: Connection, start_id: int = 1, create_secondary: bool = False,
                        tables: int | None = None, table_size: int | None = None) -> list[str]:
    """benchapp's loader: rows into tables that already exist, ids from `start_id` to the table size (0: from
    each table's MAX(id) + 1, to resume), with explicit ids unless it starts at 1 and ids are auto-increment.

    The legacy scripts can skip their CREATE TABLE; the 1.0 scripts cannot, so for them our legacy
    oltp.lua loads the rows: both use the same sbtest columns (id, k, c, pad), row format and id sequence.
    The secondary index on k is left to a scenario's DDL; on benchapp's wide table the loader creates it
    after the rows, as sysbench does.
    """
    scenario = job.scenario
    legacy = TESTS[scenario.test].legacy
    test = scenario.test if legacy else "oltp_legacy/oltp.lua"
    options: dict[str, object] = dict(scenario.options) if legacy else {}
    options.update({"skip-create-table": True, "oltp-create-secondary": create_secondary})
    if start_id != 1:
        options["start-id"] = start_id
    return build_argv(
        sysbench=settings.BENCHAPP_SYSBENCH, test=test, command="prepare", connection=conn,
        tables=tables or job.tables, table_size=table_size or job.table_size, options=options,
        threads=scenario.prepare_threads,
    )
