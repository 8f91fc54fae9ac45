"""A workload's own check after its measurement (Workload.check_command: sysbench-tpcc's `check`).

The last client of a job to exit runs it, on its own host and in the same sandbox as the measurement, with the
job's options and dataset, after the server's snapshot and before the job counts as measured: the run's next job
never measures beside it. Its outcome (passed, failed, could not run) and the end of what it printed go on the job.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings

from campaigns.execution.phases import JobFailure, job_heartbeat, phase_argv, sysbench_gate
from campaigns.models import Job
from campaigns.sysbench.command import Connection, format_command, redact_text
from campaigns.sysbench.errors import explain_failure, target_unreachable
from campaigns.sysbench.runner import run_process

log = logging.getLogger(__name__)

# What the job keeps of the check's output: its end, where a script says what it found.
CHECK_OUTPUT_CHARS = 4000


def job_check(job: Job, conn: Connection, *, beat: Callable[[], object] | None = None) -> dict[str, str]:
    """Runs the job's workload check on the target; the Job fields to write (check_outcome, check_output), or
    nothing when the workload declares no check. `beat` keeps the measuring client's heartbeat up meanwhile."""
    version = job.scenario.workload_version
    command = version.workload.check_command if version is not None else ""
    if version is None or not command:
        return {}
    if command not in (version.commands or []):
        return _outcome(Job.CheckOutcome.NOT_RUN, f"{version} does not define the command {command!r}")
    try:
        argv = phase_argv(job=job, conn=conn, command=command)
        sysbench_gate(conn)
    except JobFailure as exc:
        return _outcome(Job.CheckOutcome.NOT_RUN, str(exc))

    def should_cancel() -> bool:  # beats for the job and its client; a cancelled, failed or re-measured job stops it
        if not Job.objects.filter(pk=job.pk, attempt=job.attempt).exists():
            return True
        status = job_heartbeat(job.pk)
        if beat is not None:
            beat()
        return status in (Job.Status.CANCELLED, Job.Status.FAILED)

    outcome = run_process(argv, should_cancel=should_cancel, timeout_s=settings.BENCHAPP_CHECK_TIMEOUT_S,
                          poll_s=settings.BENCHAPP_CANCEL_POLL_S)
    output = redact_text(outcome.output, [conn.password])
    transcript = f"$ {format_command(argv)}\n{output}"
    if outcome.start_error:
        return _outcome(Job.CheckOutcome.NOT_RUN, f"{outcome.start_error}\n{transcript}")
    if outcome.cancelled:
        return _outcome(Job.CheckOutcome.NOT_RUN, "stopped: the job was cancelled, failed or measured again "
                                                  f"meanwhile\n{transcript}")
    if outcome.timed_out:
        return _outcome(Job.CheckOutcome.NOT_RUN, f"sysbench {command} exceeded its time-out of "
                                                  f"{settings.BENCHAPP_CHECK_TIMEOUT_S:.0f} s "
                                                  f"(BENCHAPP_CHECK_TIMEOUT_S) and was stopped\n{transcript}")
    if outcome.succeeded():
        return _outcome(Job.CheckOutcome.PASSED, transcript)
    if target_unreachable(output):
        return _outcome(Job.CheckOutcome.NOT_RUN, f"{explain_failure(output, outcome.exit_code, phase=command)}\n"
                                                  f"{transcript}")
    log.warning("job %s: the workload's %s failed (exit code %s)", job.pk, command, outcome.exit_code)
    return _outcome(Job.CheckOutcome.FAILED, transcript)


def _outcome(outcome: str, output: str) -> dict[str, str]:
    text = output if len(output) <= CHECK_OUTPUT_CHARS else "…" + output[-CHECK_OUTPUT_CHARS:]
    return {"check_outcome": outcome, "check_output": text}
