"""One client of a job: its sysbench process on one host, started together with its peers.

Clients wait at a barrier (all ready, then a common release time) so their processes start together,
stream their per-second samples, and record their own output. The last one to finish closes the job.
"""
from __future__ import annotations

import time
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from campaigns.execution import results, transitions
from campaigns.execution.hostjobs import hostclient_run
from campaigns.execution.measuring import (
    barrier_wait,
    client_heartbeat,
    client_process,
    run_close_fields,
    run_failure_cause,
)
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
    sysbench_gate,
)
from campaigns.execution.results import client_prefix, job_finalize, job_load
from campaigns.execution.selfmeasure import host_self_measure_wait
from campaigns.execution.workload_check import job_check
from campaigns.models import ClientHost, Job, JobClient
from campaigns.probes import ProbeError, blocked_sessions, server_info
from campaigns.sysbench import parser
from campaigns.sysbench.command import Connection, redact_text
from campaigns.sysbench.errors import forced_shutdown, killed_by_signal, target_unreachable
from campaigns.sysbench.runner import sysbench_version


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
        # The new attempt first, with this client still active: closed before it, this client would let a
        # closer end the old attempt as failed meanwhile (transitions.LostClient).
        cause = client_prefix(job, client) + redact_text(str(exc), secrets)
        # Whatever spoiled it, this worker's sysbench has exited (or never started) by now: said before the new
        # attempt, so that the lost attempt holds no lease on the server and this host for a sysbench that is gone.
        exited_at = (exc.client_fields or {}).get("exited_at") if isinstance(exc, JobLost) else None
        JobClient.objects.filter(pk=client.pk, attempt=attempt, exited_at__isnull=True).update(
            exited_at=exited_at or timezone.now())
        measured = results.job_measure_again(
            job_id=job.pk, attempt=job.attempt, cause=cause,
            lost_client=transitions.LostClient(client_id=client.pk, send=attempt))
        if measured != "again":
            closing = {"error": cause, **(exc.client_fields if isinstance(exc, JobLost) else {})}
            transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, attempt=attempt,
                                     **closing)
        if measured == "no try left" and _still_own(client):
            transitions.job_fail(job_id=job.pk, attempt=job.attempt, cause=results.no_try_left(
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
                        same_host=same_host, attempt=job.attempt,
                        # The server's profile, where asked, by the first client on the server's own host.
                        profile_time_s=job.run_time_s() if job.run.campaign.profile_server and same_host
                        and not JobClient.objects.filter(job_id=job.pk, same_host=True, index__lt=client.index).exists()
                        else 0)
    stall: list[str] = []  # what the target's sessions waited for when throughput fell to zero
    try:
        outcome = client_process(job, client, argv, conn, samplers, stall)
    except BaseException:
        samplers.stop()
        raise
    exited_at = timezone.now()
    samplers.last_read()
    # perf's window ended before sysbench did; its report is read before the next job may start measuring.
    profile = samplers.profile_end()
    parsed = parser.parse_output(outcome.output)
    if outcome.succeeded() and parsed.complete:
        # After the measurement, before the next job may start: it never shares the target with sysbench.
        round_trip_measure(run_id=job.run_id, target_id=job.target_id, host_name=client.host_name, conn=conn)
    _measurement_end(job, client, exited_at, conn, complete=outcome.succeeded() and parsed.complete)
    samplers.stop()  # their last rows (job.server_window) are written before the job is closed
    output = redact_text(outcome.output, [conn.password])
    summary = parsed.to_dict()["summary"] or {}
    version = job.scenario.workload_version
    if summary and version is not None and version.workload.counted_function:
        counted = parser.counted_calls(outcome.output, version.workload.counted_function)
        # No call seen among events that ran: the wrapper did not see the function (an event() keeping a local
        # reference of its own), so nothing was counted, which is not "none happened".
        summary["counted"] = None if counted == 0 and (summary.get("events") or 0) > 0 else counted
    fields = run_close_fields(outcome, output, parsed, summary, exited_at)
    if profile:
        fields["profile"] = profile
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
        if lost:  # closed by jobclient_execute, once it knows whether the job is measured again
            raise JobLost(lost, client_fields={"error": lost, **fields})
        transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, error=cause,
                                 attempt=client.attempt, **fields)
        raise JobFailure(cause)
    transitions.client_close(client_id=client.pk, status=JobClient.Status.SUCCEEDED, attempt=client.attempt,
                             **fields)


def _measurement_end(job: Job, client: JobClient, exited_at: datetime, conn: Connection, *,
                     complete: bool = False) -> None:
    """Records this client's sysbench exit; the last client of the job to exit then takes the server snapshot
    after the run, runs the workload's check after a complete one (workload_check), and marks the job measured,
    which lets the run's next job start (turns.measuring_before) while this one is still being closed."""
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
    checked = job_check(job, conn, beat=lambda: client_heartbeat(client.pk, client.attempt)) if complete else {}
    Job.objects.filter(pk=job.pk, attempt=job.attempt, measured_at__isnull=True).update(
        server_snapshot={**job.server_snapshot, "after": after}, measured_at=timezone.now(), **checked)


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
