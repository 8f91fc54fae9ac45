"""The coordinator of a job: claims it, checks the target, prepares the dataset once, warms up, picks
as many distinct online client hosts as the job needs, and sends each its client task.

Any of the server's workers may coordinate (the shared queue, which client hosts' workers do not consume); the
database claim makes duplicate messages harmless. Only a host test's job is coordinated on a client host: the one
it measures.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
from campaigns.execution.hosts import cpu_busy_pct
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
from campaigns.execution.turns import Previous, hosts_busy, previous_wait, target_busy
from campaigns.execution.variants import variant_apply
from campaigns.execution.workloads import scenario_runs_command, workload_refusal
from campaigns.models import ClientHost, Job, JobClient, PreparedDataset, Scenario, Target
from campaigns.models.core import hosts_allowed
from campaigns.probes import (
    ProbeError,
    ServerInfo,
    connections_in_use,
    server_info,
    server_work_count,
    writes_blocked,
)
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
    if _forward_or_park(job_id, host):
        return None
    if not transitions.job_claim(job_id=job_id, host=host):
        log.info("job %s already claimed or finished; ignoring this message", job_id)
        return None
    job = job_load(job_id)
    try:
        own_client = _job_coordinate(job, host)
    except Exception as exc:
        outcome, reraise = next((outcome, reraise) for kind, outcome, reraise in OUTCOMES if isinstance(exc, kind))
        retry_in_s = outcome(job, exc)
        run_advance(run_id=job.run_id)  # the run's jobs on other targets go on meanwhile
        if reraise:
            raise
        return retry_in_s
    if own_client is not None:
        # This host's own client runs here, in this task: no trip through the broker between the coordinator's
        # go and sysbench's start. A worker that dies meanwhile leaves a client the reconciler declares lost.
        jobclient_execute(client_id=own_client)
    return None


def _wait_for_target(job: Job, exc: Exception) -> float | None:
    return job_wait_for_target(job=job, cause=redact_text(str(exc), job_secrets(job)))


def _cancelled(job: Job, exc: Exception) -> None:
    job_close(job, status=Job.Status.CANCELLED)


def _failed(job: Job, exc: Exception) -> None:
    job_close(job, status=Job.Status.FAILED, error=redact_text(str(exc), job_secrets(job)))


def _internal_error(job: Job, exc: Exception) -> None:
    job_close(job, status=Job.Status.FAILED, error=f"internal error: {type(exc).__name__}: {exc}")


# What a step's exception does to the job, the first match wins: an unreachable target makes it wait (and returns
# the seconds until its next try), a cancel closes it cancelled, a failure of the job's own closes it failed with
# the cause (its secrets redacted); anything else is a bug: the job fails naming it, and the task re-raises it.
# (exception, outcome, re-raised)
OUTCOMES: tuple[tuple[type[Exception], Callable[[Job, Exception], float | None], bool], ...] = (
    (TargetUnreachable, _wait_for_target, False),
    (JobStopped, _cancelled, False),
    (JobFailure, _failed, False),
    (Exception, _internal_error, True),
)


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


def _forward_or_park(job_id: int, host: str) -> bool:
    """When this host may not coordinate the job (a host test of another client host): forwards the job to an
    eligible online host's own queue, or, with none online, parks it waiting with the reason (the reconciler sends
    it again), and returns True. Before the claim, so that no part of the job, the prepare and warm-up included,
    runs here. False: the job is this host's to coordinate."""
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


def _hosts_pick(job: Job, coordinator: str) -> list[str] | str:
    """Distinct online hosts for the job's clients, among the campaign's chosen ones, the coordinator's own first;
    or, when too few are online, the reason the job waits."""
    needed = client_count(job)
    choice = job.run.campaign.client_hosts
    labels = ClientHost.objects.filter(hostname=coordinator).values_list("labels", flat=True).first() or []
    if needed <= 1 and hosts_allowed(choice, coordinator, labels):
        return [coordinator]
    online = _eligible_online(choice)
    online.sort(key=lambda name: (name != coordinator, name))
    if not online and needed == 1:
        return f"waits for a client host among {', '.join(choice)}: none is online"
    if len(online) < needed:
        names = ", ".join(online) or "none"
        among = f" among {', '.join(choice)}" if choice else ""
        return f"needs {needed} client hosts{among} online, {len(online)} are ({names})"
    return online[:needed]


# Quiet before measuring: a server that runs more queries (or transactions) per second than this from others, or a
# coordinating host whose CPUs are busier than this, is not quiet; a job waits for quiet at most QUIET_WAIT_MAX_S.
QUIET_QPS = 20.0
QUIET_CPU_PCT = 25.0
QUIET_WAIT_MAX_S = 60.0
# The statements one look at the server's counter costs it (the SELECT and the session's own set-up).
_QUIET_OWN_QUERIES = 4


def _remote_busy(hosts: list[str], *, window_from: datetime) -> list[str]:
    """What the job's other client hosts' heartbeats say about quiet over the window that began at window_from:
    each host whose CPUs were busier than QUIET_CPU_PCT between its last two heartbeats, when that reading is at
    most one of its own beats older than the window (a host that beats every 10 s tells about the last 10 s; a
    staler reading, or none yet, says nothing either way)."""
    noise = []
    rows = ClientHost.objects.filter(hostname__in=hosts, cpu_busy_pct__isnull=False, cpu_busy_from__isnull=False,
                                     cpu_busy_to__isnull=False).order_by("hostname")
    for host in rows.only("hostname", "cpu_busy_pct", "cpu_busy_from", "cpu_busy_to"):
        assert host.cpu_busy_from is not None and host.cpu_busy_to is not None  # filtered above
        fresh = host.cpu_busy_to >= window_from - (host.cpu_busy_to - host.cpu_busy_from)
        if fresh and (host.cpu_busy_pct or 0.0) > QUIET_CPU_PCT:
            noise.append(f"client host {host.hostname}'s CPUs were {host.cpu_busy_pct:.0f} % busy")
    return noise


def _quiet_wait(job: Job, conn: Connection, *, hosts: list[str], here: str) -> None:
    """Before the job measures (its warm-up done, its sysbench not started): its server and its client hosts are
    watched for the campaign's quiet_s seconds, and the job waits while the server runs others' queries or a
    host's CPUs are busy, the reason on its run page ("waits for quiet: the server ran 1,234 queries/s from
    others"), at most QUIET_WAIT_MAX_S; then it measures anyway, and its verdict says what it met (a measurement
    spoiled from outside is measured again). This host (`here`, the coordinator), when it is one of `hosts`, is
    read directly; the others by what their heartbeats report (_remote_busy). JobStopped when the job is
    cancelled meanwhile."""
    window_s = float(job.run.campaign.quiet_s)
    if window_s <= 0 or not settings.BENCHAPP_QUIET_CHECK:
        return
    others = [name for name in hosts if name != here]
    started = time.monotonic()
    while True:
        window_from = timezone.now()
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
        busy = cpu_busy_pct(cpu_first, cpu_last)
        if here in hosts and busy > QUIET_CPU_PCT:
            noise.append(f"this client host's CPUs were {busy:.0f} % busy")
        noise += _remote_busy(others, window_from=window_from)
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
    prepared = transitions.dataset_record(target_id=job.target_id, signature=signature, tables=job.tables,
                                          table_size=job.table_size)
    if scenario.prepare_mode == Scenario.PrepareMode.AUTO and prepared.status == PreparedDataset.Status.READY:
        mismatch = dataset_mismatch(job=job, conn=conn, prepared=prepared)
        if not mismatch:
            return ""
        # Checked, not assumed: tables dropped or emptied behind benchapp's back are prepared again.
        log.warning("job %s: %s", job.pk, mismatch)
        job_note(job_id=job.pk, note=f"{mismatch}: the dataset was prepared again")
        transitions.dataset_dropped(target_id=job.target_id, signature=signature)
        prepared.refresh_from_db(fields=["status"])
    resume = (bool(ddl) and scenario.prepare_mode == Scenario.PrepareMode.AUTO
              and prepared.status in (PreparedDataset.Status.FAILED, PreparedDataset.Status.PREPARING)
              and (prepared.rows_loaded or 0) > 0)
    transitions.dataset_prepare_begin(prepared=prepared, job_id=job.pk)
    is_cancelled = cancel_check(job.pk)
    progress = PrepareProgress(job=job, conn=conn, prepared=prepared, wide=wide,
                               counted=scenario.workload_version_id is None)
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
            transitions.dataset_prepare_end(prepared_id=prepared.pk, status=PreparedDataset.Status.FAILED)
            if ddl and reached and reached.get("rows_loaded"):
                raise type(exc)(f"{exc} ({reached['rows_loaded']:,} of {reached['rows_total']:,} rows were loaded: "
                                 "launched again with its tables kept, the prepare resumes from there)") from None
            raise
        if cancelled:
            if loading:
                progress.poll(force=True)
            transitions.dataset_prepare_end(prepared_id=prepared.pk, status=PreparedDataset.Status.FAILED)
            raise JobStopped()
        outputs.append(transcript)
    progress.poll(force=True, done=True)
    transitions.dataset_prepare_end(prepared_id=prepared.pk, status=PreparedDataset.Status.READY,
                                    prepare_s=time.monotonic() - started)
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


@dataclass
class Coordination:
    """What the steps of one job's coordination hand on to each other, in the order they fill it."""

    job: Job
    host: str  # the coordinating host
    hosts: list[str] = field(default_factory=list)  # the client hosts, the coordinator's own first
    conn: Connection | None = None
    tables: list[str] = field(default_factory=list)
    previous: Previous = field(default_factory=Previous)
    prepare_output: str = ""  # the prepare's and warm-up's transcripts, for the first client
    variant: dict[str, Any] | None = None  # the settings variant as applied and read back
    snapshot: dict[str, Any] = field(default_factory=dict)
    own_client: int | None = None  # the job's client on this host, which the caller runs

    def connection(self) -> Connection:
        if self.conn is None:
            raise RuntimeError("a step that needs the target ran before step_target")
        return self.conn


# A step returns False when it left the job waiting (the reconciler sends it again later): the steps after it do
# not run. Its exceptions are the job's outcome (OUTCOMES).
Step = Callable[[Coordination], bool]


def step_self_measure(c: Coordination) -> bool:
    """Never beside the host's own measurement (execution.selfmeasure)."""
    host_self_measure_wait(c.host, beat=lambda: job_heartbeat(c.job.pk))
    return True


def step_server_turn(c: Coordination) -> bool:
    """Waits while another run's job holds the job's server (turns.target_busy)."""
    busy = target_busy(c.job)
    if busy is not None:
        transitions.job_wait(job_id=c.job.pk, reason=busy.reason)
        return False
    return True


def step_hosts(c: Coordination) -> bool:
    """The job's client hosts: enough of them online and none measuring another run's job."""
    hosts = _hosts_pick(c.job, c.host)
    if isinstance(hosts, str):
        transitions.job_wait(job_id=c.job.pk, reason=hosts)
        return False
    busy = hosts_busy(c.job, hosts)
    if busy is not None:
        transitions.job_wait(job_id=c.job.pk, reason=busy.reason)
        return False
    Job.objects.filter(pk=c.job.pk).update(wait_reason="")
    c.hosts = hosts
    return True


def step_target(c: Coordination) -> bool:
    """The target answers, takes writes when the test writes, has a connection free for each thread, and the
    run's previous job no longer loads it. The argv is checked against the catalogue before anything connects:
    a forged scenario row naming where to connect or as whom fails here, and the target is not contacted."""
    job = c.job
    # Checked again as the job starts, not only at launch: a scenario pointed at another workload version since
    # (or a target whose owner withdrew uploaded workloads) runs nothing of that code.
    refused = workload_refusal(target=job.target, scenario=job.scenario)
    if refused:
        raise JobFailure(f"nothing was run: {refused}")
    c.conn = conn = job_connection(job)
    phase_argv(job=job, conn=conn, command="run")
    c.tables = [f"sbtest{i}" for i in range(1, job.tables + 1)]
    _server_probe(conn, c.tables)  # fails fast, with a plain cause, on a dead target
    if blocked_what(job) == "writes" and c.tables:
        # A write test on a target whose writes are held up (a backup's global read lock) would only hang: it
        # waits for the target like an unreachable one, and goes on by itself once writes go through.
        blocked = writes_blocked(conn, table=c.tables[0])
        if blocked:
            raise TargetUnreachable(f"writes blocked on the target: {blocked}")
    c.previous = previous_wait(job)
    _connections_wait(job, conn)
    return True


def step_dataset(c: Coordination) -> bool:
    """The dataset prepared on the target, unless an identical one is ready (or the scenario never prepares)."""
    if c.job.scenario.prepare_mode != Scenario.PrepareMode.NEVER:
        started = time.monotonic()
        c.prepare_output = dataset_ensure(c.job, c.connection())
        if c.prepare_output:  # "" when the dataset was ready
            Job.objects.filter(pk=c.job.pk).update(prepare_wall_s=time.monotonic() - started)
    return True


def step_variant(c: Coordination) -> bool:
    """The settings variant, before the warm-up, which warms the server as it will be measured."""
    c.variant = variant_apply(c.job, c.connection())
    return True


def step_warmup(c: Coordination) -> bool:
    c.prepare_output = "\n".join(filter(None, [c.prepare_output, _warmup(c.job, c.connection())]))
    return True


def step_quiet(c: Coordination) -> bool:
    _quiet_wait(c.job, c.connection(), hosts=c.hosts, here=c.host)
    return True


def step_snapshot(c: Coordination) -> bool:
    """The server's state before the run. The previous job's snapshot after its run was taken as it ended: when
    nothing ran on the target since, it is this one (one connection less between the two measurements)."""
    job, previous = c.job, c.previous
    before = (previous.snapshot_after if previous.target_id == job.target_id and previous.tables == job.tables
              and not c.prepare_output and not job.variant and not previous.variant else None)
    if before is None:
        before = _server_probe(c.connection(), c.tables).to_dict()
    c.snapshot = {"before": before}
    if c.variant is not None:
        # What was in force: the variant's settings as read back join the snapshot's settings.
        c.snapshot["variant"] = c.variant
        before.setdefault("settings", {}).update({k: v["got"] for k, v in c.variant["settings"].items()})
    return True


def step_send(c: Coordination) -> bool:
    """The job starts: one client row per host with its share of the threads, each sent to its host but this
    host's own (the caller runs it). JobStopped when the job was cancelled meanwhile."""
    job, conn, host = c.job, c.connection(), c.host
    shares = split_threads(job.threads, len(c.hosts))
    commands = [format_command(phase_argv(job=job, conn=conn, command="run", threads=share)) for share in shares]
    # The server's own count of the target's work, before any client runs (a column no client host may write):
    # what the clients then report is checked against it when the job closes (validity: server-contradicts-clients).
    work = server_work_count(conn)
    if not transitions.job_start(job_id=job.pk, command_line="\n".join(commands), server_snapshot=c.snapshot,
                                 server_work={} if work is None else {"driver": conn.driver, "before": work}):
        raise JobStopped()
    now = timezone.now()
    own_facts = {"sysbench_version": sysbench_version(settings.BENCHAPP_SYSBENCH),
                 "same_host": target_is_local(conn.host)}
    clients = [
        JobClient.objects.create(
            job=job, index=index, host_name=hostname, threads=share, command_line=command,
            prepare_output=c.prepare_output if index == 0 else "", heartbeat_at=now,
            **(own_facts if hostname == host else {}),
        )
        for index, (hostname, share, command) in enumerate(zip(c.hosts, shares, commands, strict=True))
    ]
    c.own_client = next((client.pk for client in clients if client.host_name == host), None)
    for client in clients:
        if client.pk != c.own_client:
            jobclient_dispatch(client_id=client.pk, hostname=client.host_name, job=job, password=conn.password)
    return True


# A database job's coordination, in order.
STEPS: tuple[Step, ...] = (step_self_measure, step_server_turn, step_hosts, step_target, step_dataset, step_variant,
                           step_warmup, step_quiet, step_snapshot, step_send)


def _server_probe(conn: Connection, tables: list[str]) -> ServerInfo:
    """The server's state (probes.server_info); an unreachable server is a target to wait for, any other probe
    error the job's failure."""
    try:
        return server_info(conn, tables=tables)
    except ProbeError as exc:
        raise (TargetUnreachable if exc.unreachable else JobFailure)(str(exc)) from None


def _job_coordinate(job: Job, host: str) -> int | None:
    """Walks the job's STEPS until one leaves it waiting; returns the id of the job's client on this host, which
    the caller runs, if any. A host test has steps of its own (execution.hostjobs)."""
    if job.target.is_client_host():
        return hostjob_coordinate(job, host)
    coordination = Coordination(job=job, host=host)
    for step in STEPS:
        if not step(coordination):
            return None
    return coordination.own_client
