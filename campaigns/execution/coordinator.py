"""The coordinator of a job: claims it, checks the target, prepares the dataset once, warms up, picks
as many distinct online client hosts as the job needs, and sends each its client task.

Any of the server's workers may coordinate (the shared queue, which client hosts' workers do not consume); the
database claim makes duplicate messages harmless. Only a host test's job is coordinated on a client host: the one
it measures.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

import psutil
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.execution.attempts import job_wait_for_target
from campaigns.execution.client import blocked_what, jobclient_execute
from campaigns.execution.datasets import (
    dataset_mismatch,
    dataset_table_ddl,
    job_dataset_signature,
    job_note,
    loader_prepare_argv,
    table_ddl_statements,
    tables_create,
)
from campaigns.execution.dbretry import connection_drop, connection_lost
from campaigns.execution.dispatch import job_forward, jobclient_dispatch, run_advance
from campaigns.execution.hostjobs import hostjob_coordinate
from campaigns.execution.metrics import target_is_local
from campaigns.execution.phases import (
    JobFailure,
    JobStopped,
    TargetUnreachable,
    cancel_check,
    client_count,
    job_connection,
    job_heartbeat,
    job_secrets,
    job_warmup,
    phase_argv,
    split_threads,
    sysbench_phase,
)
from campaigns.execution.prepare_progress import PrepareProgress
from campaigns.execution.resend import clients_sweep_lost
from campaigns.execution.results import job_close, job_load
from campaigns.execution.selfmeasure import host_self_measure_wait
from campaigns.execution.turns import hosts_busy, previous_wait, target_busy
from campaigns.execution.variants import variant_apply
from campaigns.execution.workloads import scenario_runs_command
from campaigns.models import ClientHost, Job, JobClient, PreparedDataset, Scenario, Target
from campaigns.models.core import hosts_allowed
from campaigns.probes import ProbeError, connections_in_use, server_info, server_work_count, writes_blocked
from campaigns.sysbench.command import Connection, format_command, redact_text
from campaigns.sysbench.runner import sysbench_version

log = logging.getLogger(__name__)


def job_execute(*, job_id: int, host: str | None = None) -> float | None:
    """Claims a queued job, prepares it and dispatches its clients (or records why it cannot).

    Returns the seconds after which the job wants to be tried again when its target is unreachable (the task
    retries itself then, Celery's own retry), else None.
    """
    host = host or settings.BENCHAPP_HOSTNAME
    if _turn_not_come(job_id):
        return None
    if _handed_on(job_id, host):
        return None
    if not transitions.job_claim(job_id=job_id, host=host):
        log.info("job %s already claimed or finished; ignoring this message", job_id)
        return None
    job = job_load(job_id)
    try:
        own_client = _job_coordinate(job, host)
    except TargetUnreachable as exc:
        retry_in_s = job_wait_for_target(job=job, cause=redact_text(str(exc), job_secrets(job)))
        run_advance(run_id=job.run_id)  # the run's jobs on other targets go on meanwhile
        return retry_in_s
    except JobStopped:
        job_close(job, status=Job.Status.CANCELLED)
        run_advance(run_id=job.run_id)
        return None
    except JobFailure as exc:
        job_close(job, status=Job.Status.FAILED, error=redact_text(str(exc), job_secrets(job)))
        run_advance(run_id=job.run_id)
        return None
    except Exception as exc:
        job_close(job, status=Job.Status.FAILED, error=f"internal error: {type(exc).__name__}: {exc}")
        run_advance(run_id=job.run_id)
        raise
    if own_client is not None:
        # This host's own client runs here, in this task: no trip through the broker between the coordinator's
        # go and sysbench's start. A worker that dies meanwhile leaves a client the reconciler declares lost.
        jobclient_execute(client_id=own_client)
    return None


def _turn_not_come(job_id: int) -> bool:
    """True for a job waiting for its target whose try comes while another job of its run is active (a job on
    another target, sent meanwhile): it is not claimed now; run_advance sends it when that job has ended."""
    row = Job.objects.filter(pk=job_id, status=Job.Status.WAITING, unreachable_since__isnull=False).values(
        "run_id").first()
    return row is not None and Job.objects.filter(run_id=row["run_id"]).unsettled().exclude(pk=job_id).exists()


def _eligible_online(choice: list[str]) -> list[str]:
    """The online client hosts a campaign's choice allows, by name."""
    return sorted(name for name, labels in ClientHost.objects.online().values_list("hostname", "labels")
                  if hosts_allowed(choice, name, labels or []))


def _handed_on(job_id: int, host: str) -> bool:
    """True when this host may not coordinate the job (its campaign chose other client hosts): the job goes to
    an eligible online host's own queue, or, with none online, waits with the reason (the reconciler sends it
    again). Before the claim, so that no part of the job, the prepare and warm-up included, runs here."""
    found = (Job.objects.filter(pk=job_id, status__in=[Job.Status.QUEUED, Job.Status.WAITING])
             .values_list("target__kind", "target__host").first())
    # A database test's job is coordinated here, on the server (the shared queue is only the server's workers'),
    # its clients sent to the campaign's hosts (_pick_hosts): a client host holds only its clients' rows and
    # passwords. A host test runs on its target, the client host it measures, whatever the campaign chose.
    if found is None or found[0] != Target.Kind.CLIENT_HOST:
        return False
    row = [found[1]]
    labels = ClientHost.objects.filter(hostname=host).values_list("labels", flat=True).first() or []
    if hosts_allowed(row, host, labels):
        return False
    eligible = _eligible_online(row)
    if eligible:
        job_forward(job_id=job_id, hostname=eligible[0])
        log.info("job %s may not run on %s (campaign's hosts: %s): sent to %s", job_id, host, row, eligible[0])
    elif transitions.job_claim(job_id=job_id, host=host):
        transitions.job_wait(job_id=job_id, reason=f"waits for a client host among {', '.join(row)}: none is online")
    return True


def _pick_hosts(job: Job, coordinator: str) -> list[str] | None:
    """Distinct online hosts for the job's clients, among the campaign's chosen ones, the coordinator's own
    first; None if too few."""
    needed = client_count(job)
    choice = job.run.campaign.client_hosts
    labels = ClientHost.objects.filter(hostname=coordinator).values_list("labels", flat=True).first() or []
    if needed <= 1 and hosts_allowed(choice, coordinator, labels):
        return [coordinator]
    online = _eligible_online(choice)
    online.sort(key=lambda name: (name != coordinator, name))
    if not online and needed == 1:
        transitions.job_wait(job_id=job.pk, reason=f"waits for a client host among {', '.join(choice)}: none is "
                                                   "online")
        return None
    if len(online) < needed:
        names = ", ".join(online) or "none"
        among = f" among {', '.join(choice)}" if choice else ""
        transitions.job_wait(job_id=job.pk, reason=f"needs {needed} client hosts{among} online, {len(online)} are "
                                                   f"({names})")
        return None
    return online[:needed]


# Quiet before measuring: a server that runs more queries (or transactions) per second than this from others, or a
# coordinating host whose CPUs are busier than this, is not quiet; a job waits for quiet at most QUIET_WAIT_MAX_S.
QUIET_QPS = 20.0
QUIET_CPU_PCT = 25.0
QUIET_WAIT_MAX_S = 60.0
# The statements one look at the server's counter costs it (the SELECT and the session's own set-up).
_QUIET_OWN_QUERIES = 4


def _host_busy_pct(before: Any, after: Any) -> float:
    """The share of the host's CPUs busy between two psutil.cpu_times() readings, in percent."""
    idle = (after.idle + getattr(after, "iowait", 0.0)) - (before.idle + getattr(before, "iowait", 0.0))
    total = sum(after) - sum(before)
    return 0.0 if total <= 0 else max(0.0, 100.0 * (1 - idle / total))


def _quiet_wait(job: Job, conn: Connection) -> None:
    """Before the job measures (its warm-up done, its sysbench not started): its server and its coordinating host
    are watched for the campaign's quiet_s seconds, and the job waits while the server runs others' queries or
    the host's CPUs are busy, the reason on its run page ("waits for quiet: the server ran 1,234 queries/s from
    others"), at most QUIET_WAIT_MAX_S; then it measures anyway, and its verdict says what it met (a measurement
    spoiled from outside is measured again). JobStopped when the job is cancelled meanwhile."""
    window_s = float(job.run.campaign.quiet_s)
    if window_s <= 0 or not settings.BENCHAPP_QUIET_CHECK:
        return
    started = time.monotonic()
    while True:
        first, cpu_first = server_work_count(conn), psutil.cpu_times()
        slept = 0.0
        while slept < window_s:
            time.sleep(min(1.0, window_s - slept))
            slept += 1.0
            if job_heartbeat(job.pk) not in ("", Job.Status.PREPARING):
                raise JobStopped()
        last, cpu_last = server_work_count(conn), psutil.cpu_times()
        noise = []
        if first is not None and last is not None:
            foreign = max(0.0, last - first - _QUIET_OWN_QUERIES) / window_s
            if foreign > QUIET_QPS:
                noise.append(f"the server ran {foreign:,.0f} {'queries' if conn.driver == 'mysql' else 'transactions'}"
                             "/s from others")
        busy = _host_busy_pct(cpu_first, cpu_last)
        if busy > QUIET_CPU_PCT:
            noise.append(f"this client host's CPUs were {busy:.0f} % busy")
        if not noise:
            Job.objects.filter(pk=job.pk, status=Job.Status.PREPARING).update(wait_reason="")
            return
        waited_s = time.monotonic() - started
        if waited_s >= QUIET_WAIT_MAX_S:
            log.warning("job %s of run %s on target %s measures without quiet after %.0f s: %s", job.pk, job.run_id,
                        job.target.name, waited_s, "; ".join(noise))
            Job.objects.filter(pk=job.pk, status=Job.Status.PREPARING).update(wait_reason="")
            return
        Job.objects.filter(pk=job.pk, status=Job.Status.PREPARING).update(
            wait_reason=f"waits for quiet ({waited_s:.0f} s of at most {QUIET_WAIT_MAX_S:.0f}): " + "; ".join(noise))


# Connections benchapp itself opens beside sysbench's while a job measures: the server sampler and a probe.
SERVER_CONNECTIONS_OWN = 2


def _connections_wait(job: Job, conn: Connection) -> None:
    """A server without a free connection for each of sysbench's threads (its max_connections taken by others) is a
    server that is away: the job waits for it with back-off (TargetUnreachable), its cause the server's own figures,
    instead of starting sysbench to fail on "Too many connections" and spend the job's tries in seconds. After the
    run's previous job has ended, whose connections are this run's own."""
    room = connections_in_use(conn)
    if room is None:
        return
    used, limit = room
    free = limit - (used - 1)  # the probe's own connection is closed by now
    needed = job.threads + SERVER_CONNECTIONS_OWN
    if free < needed:
        raise TargetUnreachable(
            f"the server is full: {used - 1} of its {limit} connections are in use by others, and the job needs "
            f"{needed} ({job.threads} for sysbench's threads, {SERVER_CONNECTIONS_OWN} for benchapp's samplers)")


def dataset_ensure(job: Job, conn: Connection) -> str:
    """Prepares the job's dataset on its target unless an identical one is ready.

    Returns the prepare output ("" when skipped); JobStopped when the job was cancelled meanwhile.
    A prepare with benchapp's own tables that stopped (failed, cancelled, timed out, its worker lost) is
    resumed where it stopped when the scenario prepares only when needed (prepare mode "auto"); "always"
    drops the tables and loads them again.
    """
    scenario = job.scenario
    ddl, wide = dataset_table_ddl(scenario=scenario, table_size=job.table_size, driver=conn.driver)
    # A refused DDL fails the job before anything changes, on the target or in our records of it.
    ddl_statements = table_ddl_statements(ddl=ddl, tables=job.tables, driver=conn.driver) if ddl else []
    signature = job_dataset_signature(job)
    prepared, _ = PreparedDataset.objects.get_or_create(
        target=job.target, signature=signature,
        defaults={"tables": job.tables, "table_size": job.table_size},
    )
    if scenario.prepare_mode == Scenario.PrepareMode.AUTO and prepared.status == PreparedDataset.Status.READY:
        mismatch = dataset_mismatch(job=job, conn=conn, prepared=prepared)
        if not mismatch:
            return ""
        # Checked, not assumed: tables dropped or emptied behind benchapp's back are prepared again.
        log.warning("job %s: %s", job.pk, mismatch)
        job_note(job_id=job.pk, note=f"{mismatch}: the dataset was prepared again")
        PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.DROPPED)
        prepared.status = PreparedDataset.Status.DROPPED
    resume = (bool(ddl) and scenario.prepare_mode == Scenario.PrepareMode.AUTO
              and prepared.status in (PreparedDataset.Status.FAILED, PreparedDataset.Status.PREPARING)
              and (prepared.rows_loaded or 0) > 0)
    PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.PREPARING, prepared_by=job)
    # Other signatures on this target use the same table names: they are gone after this.
    PreparedDataset.objects.filter(target=job.target).exclude(pk=prepared.pk).update(
        status=PreparedDataset.Status.DROPPED
    )
    is_cancelled = cancel_check(job.pk)
    progress = PrepareProgress(job=job, conn=conn, prepared=prepared, wide=wide)
    loading = False

    def should_cancel() -> bool:
        try:
            clients_sweep_lost()  # a long prepare keeps an eye on other jobs' clients too
            if loading:
                progress.poll()
        except (OperationalError, InterfaceError) as exc:
            # benchapp's database restarting is no reason to stop a prepare: the next poll tries again.
            if not connection_lost(exc):
                raise
            connection_drop()
        return is_cancelled()

    outputs = []
    started = time.monotonic()
    for command in ("cleanup", "prepare"):
        if not scenario_runs_command(scenario, command):
            outputs.append(f"-- the workload's entry script defines no {command} command: skipped")
            continue
        if command == "cleanup" and resume:
            outputs.append(f"-- resuming the prepare that stopped at {prepared.rows_loaded:,} of "
                           f"{job.tables * job.table_size:,} rows: each table goes on from its MAX(id) + 1")
            continue
        if command == "prepare" and ddl:
            if not resume:
                outputs.append(tables_create(job, conn, ddl_statements, wide=wide))
            argv = loader_prepare_argv(job=job, conn=conn, start_id=0 if resume else 1, create_secondary=wide)
        else:
            argv = phase_argv(job=job, conn=conn, command=command)
        loading = command == "prepare"
        if loading:
            progress.poll(force=True)
        try:
            transcript, cancelled = sysbench_phase(
                argv=argv, conn=conn, phase=command, should_cancel=should_cancel,
                timeout_s=settings.BENCHAPP_PREPARE_TIMEOUT_S, timeout_setting="BENCHAPP_PREPARE_TIMEOUT_S",
            )
        except JobFailure as exc:
            reached = progress.poll(force=True) if loading else None
            PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.FAILED)
            if ddl and reached and reached["rows_loaded"]:
                raise type(exc)(f"{exc} ({reached['rows_loaded']:,} of {reached['rows_total']:,} rows were loaded: "
                                 "launched again with its tables kept, the prepare resumes from there)") from None
            raise
        if cancelled:
            if loading:
                progress.poll(force=True)
            PreparedDataset.objects.filter(pk=prepared.pk).update(status=PreparedDataset.Status.FAILED)
            raise JobStopped()
        outputs.append(transcript)
    progress.poll(force=True, done=True)
    PreparedDataset.objects.filter(pk=prepared.pk).update(
        status=PreparedDataset.Status.READY, prepared_at=timezone.now(),
        prepare_s=time.monotonic() - started,
    )
    return "\n".join(outputs)


def _warmup(job: Job, conn: Connection) -> str:
    """The job's warm-up (if any), its start and length recorded."""
    if job.warmup_time_s() <= 0:
        return ""
    started: list[tuple[datetime, float]] = []
    transcript = job_warmup(job=job, conn=conn,
                            on_start=lambda pid: started.append((timezone.now(), time.monotonic())))
    if started:
        Job.objects.filter(pk=job.pk).update(warmup_started_at=started[0][0],
                                             warmup_wall_s=time.monotonic() - started[0][1])
    return transcript


def _job_coordinate(job: Job, host: str) -> int | None:
    """Prepares and starts the job, or leaves it waiting; returns the id of the job's client on this host, which
    the caller runs, if any. JobStopped when the job was cancelled meanwhile (the caller closes it)."""
    if job.target.is_client_host():  # a host test: no database (campaigns.execution.hostjobs)
        return hostjob_coordinate(job, host)
    # Never beside the host's own measurement (execution.selfmeasure).
    host_self_measure_wait(host, beat=lambda: job_heartbeat(job.pk))
    busy = target_busy(job)
    if busy is not None:
        transitions.job_wait(job_id=job.pk, reason=busy.reason)
        return None  # waiting, not finished: the reconciler sends it again later
    hosts = _pick_hosts(job, host)
    if hosts is None:
        return None  # waiting, not finished: the reconciler sends it again later
    busy = hosts_busy(job, hosts)
    if busy is not None:
        transitions.job_wait(job_id=job.pk, reason=busy.reason)
        return None  # waiting: its hosts measure another run's job
    Job.objects.filter(pk=job.pk).update(wait_reason="")
    conn = job_connection(job)
    # The argv is checked against the catalogue before anything connects: a forged scenario row naming where to
    # connect or as whom fails here, and the target is not contacted either.
    phase_argv(job=job, conn=conn, command="run")
    tables = [f"sbtest{i}" for i in range(1, job.tables + 1)]
    try:
        server_info(conn, tables=tables)  # fails fast, with a plain cause, on a dead target
    except ProbeError as exc:
        raise (TargetUnreachable if exc.unreachable else JobFailure)(str(exc)) from None
    if blocked_what(job) == "writes" and tables:
        # A write test on a target whose writes are held up (a backup's global read lock) would only hang: it
        # waits for the target like an unreachable one, and goes on by itself once writes go through.
        blocked = writes_blocked(conn, table=tables[0])
        if blocked:
            raise TargetUnreachable(f"writes blocked on the target: {blocked}")
    previous = previous_wait(job)
    _connections_wait(job, conn)
    prepare_output = ""
    if job.scenario.prepare_mode != Scenario.PrepareMode.NEVER:
        started = time.monotonic()
        prepare_output = dataset_ensure(job, conn)
        if prepare_output:  # "" when the dataset was ready
            Job.objects.filter(pk=job.pk).update(prepare_wall_s=time.monotonic() - started)
    # The settings variant before the warm-up, which warms the server as it will be measured.
    variant = variant_apply(job, conn)
    warmup_output = _warmup(job, conn)
    prepare_output = "\n".join(filter(None, [prepare_output, warmup_output]))
    _quiet_wait(job, conn)
    # The previous job's snapshot after its run was taken as it ended: when nothing ran on the target since,
    # it is this job's snapshot before (one connection less between the two measurements).
    before_dict = (previous.snapshot_after if previous.target_id == job.target_id and previous.tables == job.tables
                   and not prepare_output and not job.variant and not previous.variant else None)
    if before_dict is None:
        try:
            before_dict = server_info(conn, tables=tables).to_dict()
        except ProbeError as exc:
            raise (TargetUnreachable if exc.unreachable else JobFailure)(str(exc)) from None
    snapshot: dict[str, Any] = {"before": before_dict}
    if variant is not None:
        # What was in force: the variant's settings as read back join the snapshot's settings.
        snapshot["variant"] = variant
        before_dict.setdefault("settings", {}).update({k: v["got"] for k, v in variant["settings"].items()})
    shares = split_threads(job.threads, len(hosts))
    commands = [format_command(phase_argv(job=job, conn=conn, command="run", threads=share)) for share in shares]
    if not transitions.job_start(job_id=job.pk, command_line="\n".join(commands), server_snapshot=snapshot):
        raise JobStopped()
    now = timezone.now()
    own_facts = {"sysbench_version": sysbench_version(settings.BENCHAPP_SYSBENCH),
                 "same_host": target_is_local(conn.host)}
    clients = [
        JobClient.objects.create(
            job=job, index=index, host_name=hostname, threads=share, command_line=command,
            prepare_output=prepare_output if index == 0 else "", heartbeat_at=now,
            **(own_facts if hostname == host else {}),
        )
        for index, (hostname, share, command) in enumerate(zip(hosts, shares, commands, strict=True))
    ]
    own = next((client.pk for client in clients if client.host_name == host), None)
    for client in clients:
        if client.pk != own:
            jobclient_dispatch(client_id=client.pk, hostname=client.host_name, job=job, password=conn.password)
    return own
