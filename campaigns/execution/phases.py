"""The pieces every stage of a job uses: its connection, the sysbench command of a phase, running an
unmeasured phase (prepare, cleanup, warm-up) to its end, and the job's heartbeat and cancel check."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from campaigns.crypto import DecryptionError
from campaigns.execution.dbretry import connection_drop, connection_lost
from campaigns.execution.sealed import NotSealed, job_password
from campaigns.execution.workloads import WorkloadUnavailable, scenario_test
from campaigns.models import Job, Target
from campaigns.probes import ProbeError, connection_guard, connection_verify
from campaigns.sysbench.catalogue import OptionError, validate_options
from campaigns.sysbench.command import Connection, build_argv, format_command, redact_text
from campaigns.sysbench.errors import explain_failure, target_unreachable
from campaigns.sysbench.runner import run_process


class JobFailure(Exception):
    """A job cannot go on; the message is the cause shown to the user."""


class TargetUnreachable(JobFailure):
    """The job's target cannot be reached now (refused, reset, timed out, too many connections, read-only): the
    job waits for it and tries again (campaigns.execution.attempts.job_wait_for_target)."""


class JobStopped(Exception):
    """The job was cancelled (or failed elsewhere) while this worker prepared it or waited with one of its clients:
    it ends here, as cancelled. Not a JobFailure: nothing went wrong, and no cause is recorded."""


class JobLost(JobFailure):
    """The infrastructure spoiled the job's measurement (its target went away mid-run, sysbench was killed by a
    signal benchapp did not send): the job is measured again as a new attempt (results.job_measure_again).

    client_fields: what the client's row is closed with (its output, exit code …) when the job is not measured
    again; the client stays active until that is decided, so that no closer ends the attempt meanwhile."""

    def __init__(self, message: str, *, client_fields: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.client_fields = client_fields or {}


def target_connection(*, target: Target, password: str | None = None) -> Connection:
    """The target's endpoint, with `password` or else the one stored (decrypted with the field key: the server's)."""
    return Connection(
        driver=target.driver, host=target.host, port=target.port or 0, database=target.database,
        user=target.user, password=target.get_password() if password is None else password,
    )


def job_target_connection(job: Job) -> Connection:
    """The job's target endpoint with the password this process may have: decrypted on the server, opened from the
    copy sealed for it on a client host (execution.sealed; DecryptionError when there is none)."""
    return target_connection(target=job.target, password=job_password(job))


def job_connection(job: Job) -> Connection:
    """The job's target connection; an undecryptable password (or none sealed for this client host), or an
    endpoint that is benchapp's own database or Redis (resolved now, not only when the target was saved), is the
    job's failure, said plainly."""
    try:
        conn = job_target_connection(job)
        connection_guard(conn)
    except NotSealed as exc:
        # The host's worker restarted (a new key) after its client was sent, or the send sealed nothing for it:
        # not the job's fault. Measured again, it is sent and sealed again for the worker's current key.
        raise JobLost(f"{exc}; measured again, sealed for this worker's current key") from None
    except (DecryptionError, ProbeError) as exc:
        raise JobFailure(str(exc)) from None
    return conn


def sysbench_gate(conn: Connection) -> None:
    """Connects to the target the way sysbench is about to, right before it starts.

    sysbench's libraries (Debian's libpq 15, libmariadb without a restricted-auth list) would answer a server
    that asks for the password in clear text; our own connection refuses it (campaigns.probes), so a target
    that asks fails here, with that cause, and sysbench never starts.
    """
    try:
        connection_verify(conn)
    except ProbeError as exc:
        raise (TargetUnreachable if exc.unreachable else JobFailure)(str(exc)) from None


def job_secrets(job: Job) -> list[str]:
    """What must never reach an error, an output or a log of this job."""
    try:
        password = job_password(job)
    except DecryptionError:
        return []
    return [password] if password else []


def split_threads(threads: int, clients: int) -> list[int]:
    """Threads per client: an even split, the remainder going to the first clients."""
    clients = max(1, min(clients, threads))
    base, extra = divmod(threads, clients)
    return [base + (1 if i < extra else 0) for i in range(clients)]


def client_count(job: Job) -> int:
    """Client processes the job runs: its client rule's count, but never more than its threads."""
    return max(1, min(job.clients_needed, job.threads))


def forced_shutdown_s() -> int:
    # sysbench can overrun --time (SYSBENCH-NOTES); this bounds it from the inside.
    return max(5, int(settings.BENCHAPP_RUN_SLACK_S // 2))


def phase_argv(*, job: Job, conn: Connection, command: str, threads: int | None = None) -> list[str]:
    """The sysbench command of one phase of the job (prepare and cleanup use the scenario's prepare threads).

    The scenario's stored options are checked again against the catalogue here, on the worker: a row written
    past the forms and the API (a connection option, an unknown or unsafe one) fails the job with that cause
    before sysbench starts."""
    scenario = job.scenario
    try:
        validate_options(scenario.test_spec(), scenario.options)
        return _phase_argv(job=job, conn=conn, command=command, threads=threads)
    except OptionError as exc:
        raise JobFailure(f"the scenario's options are refused, nothing was run: {exc}") from None
    except WorkloadUnavailable as exc:
        raise JobFailure(str(exc)) from None


def _phase_argv(*, job: Job, conn: Connection, command: str, threads: int | None) -> list[str]:
    scenario = job.scenario
    return build_argv(
        sysbench=settings.BENCHAPP_SYSBENCH,
        test=scenario_test(scenario),
        command=command,
        connection=conn,
        tables=job.tables,
        table_size=job.table_size,
        options=scenario.options,
        threads=threads if threads is not None else (job.threads if command == "run" else scenario.prepare_threads),
        time_s=job.run_time_s(),
        report_interval_s=scenario.report_interval_s,
        percentile=scenario.percentile,
        # sysbench refuses --histogram with --percentile=0 ("FATAL: --histogram cannot be used with
        # --percentile=0"): such a job runs without one and says so.
        histogram=scenario.percentile != 0,
        forced_shutdown_s=forced_shutdown_s(),
    )


def run_timeout_s(job: Job) -> float:
    return job.run_time_s() + job.warmup_time_s() + settings.BENCHAPP_RUN_SLACK_S


def sysbench_phase(*, argv: list[str], conn: Connection, phase: str, should_cancel: Callable[[], bool],
                   timeout_s: float, timeout_setting: str = "",
                   on_start: Callable[[int], None] | None = None) -> tuple[str, bool]:
    """Runs one unmeasured sysbench phase (prepare, cleanup, warm-up) to its end.

    Returns the transcript ("$ <command>" and the output, the password redacted; the bare output when
    cancelled) and whether it was cancelled. Raises JobFailure with the cause when sysbench fails, or
    when it overran `timeout_s` and the setting `timeout_setting` bounds that phase.
    """
    sysbench_gate(conn)
    outcome = run_process(argv, should_cancel=should_cancel, timeout_s=timeout_s, on_start=on_start,
                          poll_s=settings.BENCHAPP_CANCEL_POLL_S)
    output = redact_text(outcome.output, [conn.password])
    if outcome.cancelled:
        return output, True
    if not outcome.succeeded():
        if outcome.timed_out and timeout_setting:
            raise JobFailure(f"sysbench {phase} exceeded its time-out of {timeout_s:.0f} s ({timeout_setting})"
                             " and was stopped")
        cause = explain_failure(output, outcome.exit_code, phase=phase)
        raise (TargetUnreachable if target_unreachable(output) else JobFailure)(cause)
    return f"$ {format_command(argv)}\n{output}", False


def job_heartbeat(job_id: int) -> str:
    """Marks the job alive and returns its current status, in one statement; "" (unknown: go on, the next beat
    tries again on a new connection) while benchapp's database is away, so that a restart never stops sysbench."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE campaigns_job SET heartbeat_at = now() WHERE id = %s RETURNING status", [job_id]
            )
            row = cursor.fetchone()
    except (OperationalError, InterfaceError) as exc:
        if not connection_lost(exc) or connection.in_atomic_block:
            raise
        connection_drop()
        return ""
    return row[0] if row else Job.Status.CANCELLED


def cancel_check(job_id: int) -> Callable[[], bool]:
    """A should_cancel for a job's phases: beats, and says whether the job was cancelled or failed meanwhile."""
    def should_cancel() -> bool:
        return job_heartbeat(job_id) in (Job.Status.CANCELLED, Job.Status.FAILED)

    return should_cancel


def job_warmup(*, job: Job, conn: Connection, on_start: Callable[[int], None] | None = None) -> str:
    """The warm-up: the job's workload for warmup_s seconds, unmeasured, before the clients start.

    sysbench 1.0.20 has no --warmup-time, so the warm-up is a run of its own whose figures are
    kept only as text; it fills the buffer pool so the measured run starts on a warm cache.
    """
    if job.warmup_time_s() <= 0:
        return ""
    try:
        test = scenario_test(job.scenario)
    except WorkloadUnavailable as exc:
        raise JobFailure(str(exc)) from None
    argv = build_argv(
        sysbench=settings.BENCHAPP_SYSBENCH, test=test, command="run", connection=conn,
        tables=job.tables, table_size=job.table_size, options=job.scenario.options, threads=job.threads,
        time_s=job.warmup_time_s(), percentile=job.scenario.percentile, forced_shutdown_s=forced_shutdown_s(),
    )
    transcript, _ = sysbench_phase(argv=argv, conn=conn, phase="warm-up", should_cancel=cancel_check(job.pk),
                                   timeout_s=job.warmup_time_s() + settings.BENCHAPP_RUN_SLACK_S, on_start=on_start)
    return transcript
