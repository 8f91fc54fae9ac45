"""A job of a host test (cpu, memory, fileio, threads, mutex) on a client-host target (docs/host-tests.md).

Its target is a registered client host, and the whole job runs there: the coordinator hands the job to that host's
own queue (coordinator._forward_or_park), which prepares fileio's files in a directory of the job's own under
BENCHAPP_HOSTTEST_DIR, runs the one client in the same task, and removes the files when the client ends. Nothing
connects to a database: no server snapshot, no server sampler, no round trips; the host's CPU is sampled as for
any client. The job's status, barrier, heartbeats, samples and closing are the database jobs' own
(transitions, measuring.barrier_wait, ClientWrites, results.job_finalize).
"""
from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.execution.measuring import (
    barrier_wait,
    client_heartbeat,
    client_process,
    run_close_fields,
    run_failure_cause,
)
from campaigns.execution.metrics import Samplers
from campaigns.execution.phases import JobFailure, JobStopped, cancel_check, forced_shutdown_s, job_heartbeat
from campaigns.execution.selfmeasure import host_self_measure_wait
from campaigns.execution.turns import hosts_busy, previous_wait, target_busy
from campaigns.models import ClientHost, Job, JobClient
from campaigns.sysbench import parser
from campaigns.sysbench.catalogue import OptionError, validate_options
from campaigns.sysbench.command import Connection, format_command
from campaigns.sysbench.errors import explain_failure
from campaigns.sysbench.hostcommand import build_host_argv
from campaigns.sysbench.hosttests import (
    host_bounds_problem,
    host_figures,
    host_options_problem,
    host_second,
    size_bytes,
    summary_fields,
)
from campaigns.sysbench.runner import run_process, sysbench_version
from campaigns.sysbench.sandbox import sandbox_unreachable, sandbox_workdir

log = logging.getLogger(__name__)

# A host test reaches no database: the samplers get an endpoint that names none (and sample no server).
NO_DATABASE = Connection(driver="", host="", port=0, database="", user="")


def host_phase_argv(*, job: Job, command: str, threads: int | None = None) -> list[str]:
    """One phase's argv of a host job; its stored options are checked again first, as phases.phase_argv does."""
    scenario = job.scenario
    try:
        options = validate_options(scenario.test, scenario.options)
        problem = host_options_problem(scenario.test, options, max_file_bytes=settings.BENCHAPP_HOSTTEST_MAX_BYTES)
        if problem is None:
            # This host's own RAM, now: the launch checked the memory it announced.
            problem = host_bounds_problem(scenario.test, options, threads=threads or job.threads,
                                          memory_bytes=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
                                          host=f"client host {settings.BENCHAPP_HOSTNAME}")
        if problem is not None:
            raise OptionError(*problem)
        return build_host_argv(
            sysbench=settings.BENCHAPP_SYSBENCH, test=scenario.test, command=command, options=options,
            threads=threads if threads is not None else job.threads, time_s=job.run_time_s(),
            report_interval_s=scenario.report_interval_s, percentile=scenario.percentile,
            histogram=scenario.percentile != 0, forced_shutdown_s=forced_shutdown_s())
    except (OptionError, ValueError) as exc:
        raise JobFailure(f"the scenario's options are refused, nothing was run: {exc}") from None


def job_dir(job_id: int) -> Path:
    return Path(settings.BENCHAPP_HOSTTEST_DIR) / f"job-{job_id}"


def job_dirs_sweep() -> int:
    """Removes the test-file directories of finished jobs (left by a worker that died mid-job); how many."""
    root = Path(settings.BENCHAPP_HOSTTEST_DIR)
    if not root.is_dir():
        return 0
    ids = {int(p.name[4:]): p for p in root.iterdir() if p.is_dir() and p.name.startswith("job-")
           and p.name[4:].isdigit()}
    active = set(Job.objects.filter(pk__in=ids).exclude(status__in=Job.FINISHED).values_list("pk", flat=True))
    removed = 0
    for job_id, path in ids.items():
        if job_id not in active:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _fileio_prepare(job: Job) -> str:
    """fileio's test files, in the job's own directory (within the size limit and the disk's free space); JobStopped
    when the job was cancelled meanwhile."""
    job_dirs_sweep()
    workdir = job_dir(job.pk)
    workdir.mkdir(parents=True, exist_ok=True)
    # sysbench writes there as the sandbox's user, and nowhere else (campaigns.sysbench.sandbox).
    sandbox_workdir(str(workdir))
    closed = sandbox_unreachable(str(workdir))
    if closed is not None:
        shutil.rmtree(workdir, ignore_errors=True)
        raise JobFailure(f"fileio's directory {workdir} is out of the sandbox's reach: its user cannot pass "
                         f"through {closed} (chmod o+x it, or set BENCHAPP_HOSTTEST_DIR elsewhere)")
    options = job.scenario.options
    total = size_bytes(str(options.get("file-total-size", "2G"))) or 0
    free = shutil.disk_usage(workdir).free
    if total > free:
        shutil.rmtree(workdir, ignore_errors=True)
        raise JobFailure(f"fileio needs {total / 2**20:,.0f} MiB of test files but {workdir} has "
                         f"{free / 2**20:,.0f} MiB free on {settings.BENCHAPP_HOSTNAME}")
    argv = host_phase_argv(job=job, command="prepare")
    outcome = run_process(argv, cwd=str(workdir), should_cancel=cancel_check(job.pk),
                          timeout_s=settings.BENCHAPP_PREPARE_TIMEOUT_S, poll_s=settings.BENCHAPP_CANCEL_POLL_S)
    if outcome.cancelled:
        _fileio_cleanup(job)
        raise JobStopped()
    if not outcome.succeeded():
        _fileio_cleanup(job)
        raise JobFailure(explain_failure(outcome.output, outcome.exit_code, phase="prepare"))
    return f"$ {format_command(argv)}\n{outcome.output}"


def _fileio_cleanup(job: Job) -> None:
    workdir = job_dir(job.pk)
    if not workdir.is_dir():
        return
    try:
        argv = host_phase_argv(job=job, command="cleanup")
        run_process(argv, cwd=str(workdir), timeout_s=settings.BENCHAPP_CLEANUP_TIMEOUT_S)
    except JobFailure:
        pass  # the directory goes anyway
    shutil.rmtree(workdir, ignore_errors=True)


def hostjob_coordinate(job: Job, host: str) -> int | None:
    """The coordinator's part of a host job, on the target host itself: as coordinator.STEPS, without a
    database. Returns the id of its one client, which the caller runs here (None: the job waits); JobStopped when
    the job was cancelled meanwhile."""
    if host != job.target.host:
        raise JobFailure(f"a host test of client host {job.target.host} reached {host}: it runs only there")
    argv = host_phase_argv(job=job, command="run")
    # The host, against another run's host test of it (target_busy) and any job whose clients run there.
    busy = target_busy(job) or hosts_busy(job, [host])
    if busy is not None:
        transitions.job_wait(job_id=job.pk, reason=busy.reason)
        return None  # waiting: the reconciler sends it again later
    Job.objects.filter(pk=job.pk).update(wait_reason="")
    host_self_measure_wait(host, beat=lambda: job_heartbeat(job.pk))
    previous_wait(job)  # JobStopped when the job was cancelled meanwhile
    prepare_output = ""
    if job.scenario.test == "fileio":
        started = time.monotonic()
        prepare_output = _fileio_prepare(job)
        Job.objects.filter(pk=job.pk).update(prepare_wall_s=time.monotonic() - started)
    command = format_command(argv)
    if not transitions.job_start(job_id=job.pk, command_line=command, server_snapshot={"before": {"host": host}}):
        if job.scenario.test == "fileio":
            _fileio_cleanup(job)
        raise JobStopped()
    client = JobClient.objects.create(job=job, index=0, host_name=host, threads=job.threads, command_line=command,
                                      prepare_output=prepare_output, heartbeat_at=timezone.now(),
                                      sysbench_version=sysbench_version(settings.BENCHAPP_SYSBENCH))
    return client.pk


def _interval(test: str, line: str, threads: int) -> parser.Interval | None:
    second = host_second(test, line)
    if second is None:
        return None
    return parser.Interval(second.t, threads, second.headline, second.headline, second.read_mib_per_s,
                           second.written_mib_per_s, second.fsyncs_per_s, second.latency_pct_ms, second.latency_pct,
                           0.0, 0.0)


def hostclient_run(job: Job, client: JobClient) -> None:
    """The one client of a host job: sysbench on this host, its seconds stored as they come, its figures kept."""
    test = job.scenario.test
    try:
        _hostclient_measure(job, client, test)
    finally:
        if test == "fileio":
            _fileio_cleanup(job)


def _hostclient_measure(job: Job, client: JobClient, test: str) -> None:
    argv = host_phase_argv(job=job, command="run", threads=client.threads)
    host_self_measure_wait(client.host_name, beat=lambda: client_heartbeat(client.pk, client.attempt))
    host = ClientHost.objects.filter(hostname=client.host_name).first()
    JobClient.objects.filter(pk=client.pk, attempt=client.attempt).update(
        sysbench_version=sysbench_version(settings.BENCHAPP_SYSBENCH), same_host=False,
        host_facts=host.facts() if host else {})
    barrier_wait(client, 1)  # a lone client: one heartbeat, and a stop if the job was cancelled meanwhile
    if not transitions.client_start(client_id=client.pk, attempt=client.attempt):
        raise JobStopped()
    samplers = Samplers(job_id=job.pk, client_index=client.index, conn=NO_DATABASE, sample_server=False,
                        attempt=job.attempt)
    workdir = str(job_dir(job.pk)) if test == "fileio" else None
    try:
        outcome = client_process(job, client, argv, NO_DATABASE, samplers, [],
                                  interval_of=lambda line: _interval(test, line, client.threads), cwd=workdir)
    except BaseException:
        samplers.stop()
        raise
    exited_at = timezone.now()
    samplers.stop()
    Job.objects.filter(pk=job.pk, attempt=job.attempt, measured_at__isnull=True).update(
        server_snapshot={**job.server_snapshot, "after": {"host": client.host_name}}, measured_at=timezone.now())
    parsed = parser.parse_output(outcome.output)
    summary: dict[str, Any] = parsed.to_dict()["summary"] or {}
    if parsed.summary is not None:
        figures = host_figures(test, outcome.output, events=parsed.summary.events,
                               duration_s=parsed.summary.duration_s)
        summary.update(summary_fields(test, figures))
    fields = run_close_fields(outcome, outcome.output, parsed, summary, exited_at)
    if outcome.cancelled:
        transitions.client_close(client_id=client.pk, status=JobClient.Status.CANCELLED, attempt=client.attempt,
                                 **fields)
        return
    if not outcome.succeeded() or not parsed.complete:
        cause = run_failure_cause(job, outcome, outcome.output)
        transitions.client_close(client_id=client.pk, status=JobClient.Status.FAILED, error=cause,
                                 attempt=client.attempt, **fields)
        raise JobFailure(cause)
    transitions.client_close(client_id=client.pk, status=JobClient.Status.SUCCEEDED, attempt=client.attempt,
                             **fields)
