"""A job's validity verdict: the evidence gathered from what was stored, judged by campaigns.validity."""
from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.db.models import Q
from django.utils import timezone

from campaigns import validity
from campaigns.cache import results_changed
from campaigns.endpoints import same_server
from campaigns.execution.jobcosts import job_costs_store
from campaigns.models import Job, JobClient, JobResult, Scenario
from campaigns.seconds import Kind, seconds_rows
from campaigns.server_status import RATE_COUNTERS
from campaigns.sysbench import parser

# Tests whose events are explicit transactions (BEGIN ... COMMIT) unless skip-trx is set: on PostgreSQL the
# server's transactions then compare with sysbench's; otherwise every statement is its own transaction.
_TRANSACTIONAL = {"oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp"}

SecondRow = tuple[float, float, float, float, float]  # one client's stored second: t, tps, qps, errors, reconnects

log = logging.getLogger(__name__)


def job_seconds(job: Job) -> tuple[dict[int, list[SecondRow]], list[float], int]:
    """The job's stored seconds of its current attempt: each client's rows (t, tps, qps, errors, reconnects) in
    time order; the seconds that count (every client reported them, zero-throughput seconds after --time left out:
    a hung target waiting for --forced-shutdown is not measurement); and how many seconds only some clients had."""
    by_client: dict[int, list[SecondRow]] = defaultdict(list)
    for stored in seconds_rows(Kind.INTERVAL, {job.pk: job.attempt},
                               fields=("t", "tps", "qps", "errors_per_s", "reconnects_per_s")):
        by_client[stored["client_index"]].append(
            (stored["t"], stored["tps"], stored["qps"], stored["errors_per_s"], stored["reconnects_per_s"]))
    clients_at: dict[float, int] = defaultdict(int)
    for rows in by_client.values():
        for row in rows:
            clients_at[row[0]] += 1
    time_s = job.time_s or job.scenario.time_s
    complete = sorted(t for t, n in clients_at.items() if n == len(by_client))
    partial = len(clients_at) - len(complete)
    if time_s:
        busy_at = {row[0] for rows in by_client.values() for row in rows if row[1] > 0 or row[2] > 0}
        complete = [t for t in complete if t <= time_s or t in busy_at]
    return dict(by_client), complete, partial


def _per_second(job: Job) -> tuple[dict[str, list[float]], dict[int, list[SecondRow]], int]:
    """The job's per-second sums over clients over the seconds that count (job_seconds), all but the first (the
    steady-state rule); each client's rows; and the seconds only some clients reported."""
    by_client, complete, partial = job_seconds(job)
    first = min((rows[0][0] for rows in by_client.values() if rows), default=None)
    counted = {t for t in complete if first is not None and t > first}
    rows: dict[float, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for client_rows in by_client.values():
        for t, _tps, qps, errors, reconnects in client_rows:
            if t in counted:
                row = rows[t]
                row[0] += qps
                row[1] += errors
                row[2] += reconnects
    seconds = sorted(rows)
    return ({"qps": [rows[t][0] for t in seconds], "errors": [rows[t][1] for t in seconds],
             "reconnects": [rows[t][2] for t in seconds]}, by_client, partial)


def _seconds_accounts(job: Job, clients: list[JobClient], by_client: dict[int, list[SecondRow]]
                      ) -> dict[str, validity.SecondsAccount]:
    """Each client's stored seconds against sysbench's own count (and the seconds its output printed twice)."""
    accounts = {}
    for client in clients:
        summary = client.summary or {}
        if not summary or client.status != JobClient.Status.SUCCEEDED:
            continue
        printed = [i.t for i in parser.parse_output(client.raw_output or "").intervals]
        accounts[client.host_name or str(client.index)] = validity.seconds_account(
            seconds=[(row[0], row[1], row[2]) for row in by_client.get(client.index, [])], printed_t=printed,
            interval_s=float(job.scenario.report_interval_s or 1), transactions=summary.get("transactions"),
            queries=summary.get("queries"), duration_s=summary.get("duration_s"))
    return accounts


def _shared_with(job: Job, hosts: list[str]) -> tuple[list[str], list[str]]:
    """Other benchapp jobs that used this job's server (any database on it), and those that used one of its client
    hosts (and not its server), while it measured."""
    spans = list(job.clients.exclude(started_at=None).values_list("started_at", "exited_at", "finished_at"))
    starts = [s for s, _, _ in spans if s is not None]
    if not starts:
        return [], []
    start = min(starts)
    ends = [e or f for _, e, f in spans]
    end = max((e for e in ends if e is not None), default=timezone.now())
    target = job.target
    # The same server, whatever database or name (turns.target_busy keeps other runs off it unless both share).
    same_port = Q(target__driver=target.driver, target__port=target.port)
    # Another job loads the target and its client hosts from its claim (another run's) or its first sysbench
    # (this run's next job is claimed while this one measures, and waits for its end: turns.previous_wait)
    # until its snapshot after the run (measured_at), or until it is closed when it drops its tables then.
    after_job = Q(scenario__cleanup=Scenario.Cleanup.AFTER_JOB)
    began = (~Q(run_id=job.run_id) & Q(claimed_at__lt=end)
             | Q(run_id=job.run_id) & (Q(warmup_started_at__lt=end) | Q(clients__started_at__lt=end)))
    still = (Q(measured_at__gt=start) & ~after_job
             | (Q(measured_at__isnull=True) | after_job) & (Q(finished_at__isnull=True) | Q(finished_at__gt=start)))
    overlapping = Job.objects.exclude(pk=job.pk).exclude(claimed_at=None).filter(began).filter(still)
    on_server = [pk for pk, host in overlapping.filter(same_port).values_list("pk", "target__host")
                 if same_server(host, target.host, target.port)]
    on_hosts = overlapping.filter(clients__host_name__in=hosts, clients__started_at__lt=end).filter(
        Q(clients__finished_at__isnull=True) | Q(clients__finished_at__gt=start))
    def named(jobs: Any) -> list[str]:
        return [f"job #{other.pk} of run #{other.run_id} ({other.run.campaign.name})"
                for other in jobs.distinct().select_related("run__campaign").order_by("pk")[:10]]

    on_target = named(overlapping.filter(pk__in=on_server))
    return on_target, named(on_hosts.exclude(pk__in=on_server))


def job_evidence(job: Job) -> validity.Evidence:
    result = JobResult.objects.filter(job=job).first()
    seconds, by_client, partial = _per_second(job)
    clients = list(job.clients.all())
    hosts = {c.index: c.host_name for c in clients}
    busy: dict[str, list[float]] = defaultdict(list)
    steal: dict[str, list[float]] = defaultdict(list)
    idle: dict[str, list[float]] = defaultdict(list)
    sysbench: dict[str, list[float | None]] = defaultdict(list)
    server: dict[str, list[float | None]] = defaultdict(list)
    others: dict[str, list[float | None]] = defaultdict(list)
    top: dict[str, list[str]] = defaultdict(list)
    top_pct: dict[str, list[float | None]] = defaultdict(list)
    cores: dict[str, int] = {}
    recorded: set[str] = set()
    host_rows = seconds_rows(Kind.HOST, {job.pk: job.attempt}, fields=(
        "t", "client_cpus_busy_pct", "cpu_steal_pct", "cpu_busy_pct", "sysbench_cpu_pct", "server_cpu_pct",
        "others_cpu_pct", "top_other_name", "top_other_cpu_pct", "per_core_busy_pct"))
    for row in (r for r in host_rows if r["t"] > 1):
        host = hosts.get(row["client_index"], str(row["client_index"]))
        busy[host].append(row["client_cpus_busy_pct"])
        steal[host].append(row["cpu_steal_pct"])
        idle[host].append(100 - row["cpu_busy_pct"])
        sysbench[host].append(row["sysbench_cpu_pct"])
        server[host].append(row["server_cpu_pct"])
        others[host].append(row["others_cpu_pct"])
        top[host].append(row["top_other_name"])
        top_pct[host].append(row["top_other_cpu_pct"])
        cores[host] = max(cores.get(host, 1), len(row["per_core_busy_pct"] or []))
        if row["others_cpu_pct"] is not None:
            recorded.add(host)
    window = job.server_window or {}
    server_total = sysbench_total = window_s = None
    measure = "queries"
    # Whether each sysbench transaction is one server transaction (BEGIN ... COMMIT) rather than one per statement.
    transactional = job.scenario.test in _TRANSACTIONAL and \
        str(job.scenario.options.get("skip-trx", "off")).lower() not in ("on", "true", "1")
    if window.get("start") and window.get("end") and result is not None:
        names = RATE_COUNTERS.get(window.get("driver", ""), ())
        server_total = float(sum(window["end"].get(n, 0) - window["start"].get(n, 0) for n in names))
        window_s = float(window["end_t"]) - float(window["start_t"])
        if window.get("driver") == "pgsql" and transactional:
            measure, sysbench_total = "transactions", float(result.transactions or 0)
        else:
            measure, sysbench_total = "queries", float(result.queries or 0)
            if window.get("driver") == "pgsql":
                measure = "transactions (one per statement)"
    work = job.server_work or {}
    work_total = work_claimed = None
    if result is not None and work.get("before") is not None and work.get("after") is not None \
            and float(work["after"]) >= float(work["before"]):  # (lower: the server restarted meanwhile)
        work_total = float(work["after"]) - float(work["before"])
        claimed = result.transactions if work.get("driver") == "pgsql" and transactional else result.queries
        work_claimed = float(claimed or 0)
    time_s = job.time_s or job.scenario.time_s
    shared = _shared_with(job, list(hosts.values())) if not job.imported else ([], [])
    version = job.scenario.workload_version
    expected_pct = version.workload.expected_errors_pct if version is not None else None
    return validity.Evidence(
        time_s=float(time_s) if time_s else None,
        duration_s=result.duration_s if result is not None else None,
        qps=seconds["qps"], errors_per_s=seconds["errors"], reconnects_per_s=seconds["reconnects"],
        noise_cv_pct=float(job.run.campaign.noise_cv_pct),
        client_busy_pct=dict(busy), client_steal_pct=dict(steal),
        # Hosts whose sampler recorded who took the CPU (rows stored before it did say nothing of it).
        client_idle_pct={h: v for h, v in idle.items() if h in recorded},
        client_sysbench_pct=dict(sysbench), client_server_pct=dict(server),
        client_others_pct={h: v for h, v in others.items() if h in recorded}, client_top_other=dict(top),
        client_top_other_pct=dict(top_pct),
        client_cores=cores,
        same_host=any(c.same_host for c in clients),
        server_measure=measure, server_total=server_total, sysbench_total=sysbench_total, window_s=window_s,
        server_work_total=work_total, server_work_claimed=work_claimed,
        full_cache="cache" in job.scenario.dataset.name.lower(), cache_hit_ratio=job.cache_hit_ratio,
        shared_with=shared[0], shared_host_with=shared[1],
        expected_errors_per_s=(expected_pct / 100 * result.tps
                               if expected_pct is not None and result is not None and result.tps else None),
        expected_errors_pct=expected_pct,
        imported=job.imported,
        job_rates={"qps": result.qps, "tps": result.tps} if result is not None and len(clients) > 1 else {},
        client_rates={measure: [(c.summary or {}).get(measure) for c in clients] for measure in ("qps", "tps")},
        seconds=_seconds_accounts(job, clients, by_client), partial_seconds=partial,
        host_test=job.target.is_client_host(),
        check_command=version.workload.check_command if version is not None else "",
        check_outcome=job.check_outcome,
    )


def job_judge(*, job_id: int) -> str:
    """Judges a job from what it stored and records its findings and verdict; returns the verdict."""
    job = Job.objects.select_related("target", "scenario__dataset", "run__campaign").get(pk=job_id)
    findings, verdict = validity.judge(job_evidence(job))
    Job.objects.filter(pk=job_id).update(verdict=verdict, findings=[f.to_dict() for f in findings])
    try:
        job_costs_store(job)  # what each query cost, from the same stored seconds
    except Exception:  # an addition to the verdict: a job never fails for it, the log says why it has none
        log.exception("job %s: its per-query costs could not be computed", job_id)
    results_changed()  # comparisons show the verdict: cached ones are outdated (an UPDATE sends no signal)
    return verdict

