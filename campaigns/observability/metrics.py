"""Prometheus series at /metrics.

Two kinds. Request latency by view is a histogram kept by each gunicorn worker process; with several workers
prometheus-client's multi-process mode (PROMETHEUS_MULTIPROC_DIR, set by scripts/web.sh) adds them up at scrape
time. Everything about benchapp's own work is read from PostgreSQL (and the broker's Redis) at scrape time, so
it is right whichever process answers and whatever restarted: runs and jobs by status, waiting jobs and why, queue
lengths, heartbeat ages, samples stored, phase durations, regression checks and notifications. The one event
PostgreSQL does not keep, a webhook's retry, is counted in the broker's Redis by the worker that retries it.
"""
from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max
from django.utils import timezone
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from benchapp.pulse import SENT_AT_HEADER
from campaigns.counters import counters_read, field
from campaigns.execution.hosts import server_queue
from campaigns.execution.outcomes import PHASE_BUCKETS_S
from campaigns.models import ClientHost, HostSample, IntervalSample, Job, PackedSeconds, Regression, Run, ServerSample

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_LATENCY = Histogram(
    "benchapp_http_request_duration_seconds", "Time to answer a request, by view (URL name), method and status",
    ["view", "method", "status"], registry=None,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
# Why a job waits, from its wait_reason (campaigns.execution.coordinator words them for people).
_WAIT_REASONS = (
    ("target_unreachable", re.compile(r"unreachable|refused|cannot reach|connect", re.IGNORECASE)),
    ("dataset_busy", re.compile(r"database is busy|dataset", re.IGNORECASE)),
    ("no_worker", re.compile(r"client host|online|worker", re.IGNORECASE)),
    ("previous_job", re.compile(r"finished measuring", re.IGNORECASE)),
)
# kombu's Redis transport keeps a queue's messages of priority n > 0 in "<queue>\x06\x16<n>".
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
WEBHOOK_RETRIES_KEY = "benchapp:metrics:{queue}:webhook_retries"


def _sent_at(raw: bytes | None) -> float | None:
    """When a queued message was sent (its benchapp_sent_at header, benchapp/pulse.py), None if it does not say."""
    if raw is None:
        return None
    try:
        sent = json.loads(raw).get("headers", {}).get(SENT_AT_HEADER)
        return float(sent) if sent is not None else None
    except (ValueError, AttributeError, TypeError):
        return None


def wait_reason_kind(reason: str) -> str:
    for kind, pattern in _WAIT_REASONS:
        if pattern.search(reason):
            return kind
    return "other"


def broker_redis() -> Any:
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=1, socket_timeout=2)


def webhook_retry_count() -> None:
    """One more retry of a webhook (campaigns.tasks.webhook_notify_task, from Celery's task_retry signal)."""
    try:
        broker_redis().incr(WEBHOOK_RETRIES_KEY.format(queue=settings.CELERY_TASK_DEFAULT_QUEUE))
    except Exception:  # a metric must never fail the task
        log.warning("could not count a webhook retry", exc_info=True)


def _by_status(name: str, doc: str, rows: dict[str, int], statuses: list[str]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=["status"])
    for status in statuses:
        family.add_metric([status], rows.get(status, 0))
    return family


class BenchappCollector(Collector):
    """benchapp's own series, read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        yield from self._runs_and_jobs()
        yield from self._hosts()
        yield from self._queues()
        yield from self._samples()
        yield from self._monitoring()

    def _runs_and_jobs(self) -> Iterator[Metric]:
        runs = dict(Run.objects.order_by().values_list("status").annotate(n=Count("id")))
        yield _by_status("benchapp_runs", "Runs by status", runs, list(Run.Status.values))
        jobs = dict(Job.objects.order_by().values_list("status").annotate(n=Count("id")))
        yield _by_status("benchapp_jobs", "Jobs by status", jobs, list(Job.Status.values))
        waiting = GaugeMetricFamily("benchapp_jobs_waiting", "Jobs waiting, by why (their wait_reason)",
                                    labels=["reason"])
        kinds = dict.fromkeys([kind for kind, _ in _WAIT_REASONS] + ["other"], 0)
        for reason, n in Job.objects.order_by().filter(status=Job.Status.WAITING).values_list(
                "wait_reason").annotate(n=Count("id")):
            kinds[wait_reason_kind(reason)] += n
        for kind, n in kinds.items():
            waiting.add_metric([kind], n)
        yield waiting
        # A running run's last sign of progress: its latest job heartbeat or job end, else its start. One series, the
        # run that has gone longest without (a label per run would make a new series with every run).
        progress = GaugeMetricFamily("benchapp_run_progress_age_max_seconds",
                                     "Seconds since the running run that has gone longest without progress (a job's "
                                     "heartbeat or end) made some; 0 when no run is running")
        now = timezone.now()
        ages = [0.0]
        for run in (Run.objects.filter(status=Run.Status.RUNNING).order_by()
                    .annotate(beat=Max("jobs__heartbeat_at"), done=Max("jobs__finished_at"))
                    .values("beat", "done", "started_at", "created_at")):
            moments = [m for m in (run["beat"], run["done"], run["started_at"] or run["created_at"]) if m]
            ages.append(max(0.0, (now - max(moments)).total_seconds()))
        progress.add_metric([], max(ages))
        yield progress

    def _hosts(self) -> Iterator[Metric]:
        age = GaugeMetricFamily("benchapp_client_host_heartbeat_age_seconds",
                                "Seconds since each client host's worker last sent its heartbeat",
                                labels=["host", "role"])
        online = GaugeMetricFamily("benchapp_client_hosts_online",
                                   "Client hosts whose heartbeat is fresh (BENCHAPP_HOST_OFFLINE_S), by role",
                                   labels=["role"])
        counts = {"all": 0, "client": 0}
        now = timezone.now()
        for host in ClientHost.objects.order_by("hostname").only("hostname", "role", "last_heartbeat", "offline_since"):
            role = host.role or "unknown"
            age.add_metric([host.hostname, role], max(0.0, (now - host.last_heartbeat).total_seconds()))
            if host.is_online():
                counts[role] = counts.get(role, 0) + 1
        for role, n in counts.items():
            online.add_metric([role], n)
        yield age
        yield online

    def _queues(self) -> Iterator[Metric]:
        shared = settings.CELERY_TASK_DEFAULT_QUEUE
        queues = [shared, server_queue(), *ClientHost.objects.order_by("queue").values_list("queue", flat=True)]
        length = GaugeMetricFamily("benchapp_celery_queue_length", "Messages waiting in each Celery queue (Redis)",
                                   labels=["queue"])
        retries = CounterMetricFamily("benchapp_webhook_retries", "Webhook deliveries retried after a failure")
        oldest = GaugeMetricFamily("benchapp_celery_queue_oldest_age_seconds",
                                   "Seconds the oldest message of each Celery queue has waited (0 when empty)",
                                   labels=["queue"])
        up = GaugeMetricFamily("benchapp_broker_up", "1 when the broker's Redis answered this scrape")
        try:
            client = broker_redis()
            pipe = client.pipeline(transaction=False)
            names = list(dict.fromkeys(queues))
            for queue in names:
                for suffix in _PRIORITY_SUFFIXES:
                    pipe.llen(queue + suffix)
                    pipe.lindex(queue + suffix, -1)  # kombu LPUSHes and BRPOPs: the right end waited longest
            pipe.get(WEBHOOK_RETRIES_KEY.format(queue=shared))
            answers = pipe.execute()
            now_s = time.time()
            width = 2 * len(_PRIORITY_SUFFIXES)
            for i, queue in enumerate(names):
                part = answers[i * width:(i + 1) * width]
                length.add_metric([queue], sum(part[0::2]))
                oldest.add_metric([queue], max([0.0, *(now_s - sent for sent in map(_sent_at, part[1::2])
                                                      if sent is not None)]))
            retries.add_metric([], int(answers[-1] or 0))
            up.add_metric([], 1)
        except Exception as exc:  # the scrape still answers: the queue series are missing, broker_up says why
            log.warning("metrics: broker unreachable: %s", type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        yield length
        yield oldest
        yield retries
        yield up

    def _samples(self) -> Iterator[Metric]:
        stored = CounterMetricFamily("benchapp_samples_stored",
                                     "Per-second rows stored (PostgreSQL's insert counter of each table)",
                                     labels=["kind"])
        # Rows now (PostgreSQL's estimate): the per-second tables hold the attempts not packed yet, so they stay
        # small while campaigns.seconds keeps up; "packed" counts packings (one per attempt, kind and client).
        rows = GaugeMetricFamily("benchapp_samples_rows",
                                 "Rows in the per-second tables and packings (PostgreSQL's estimate)", labels=["kind"])
        tables = {IntervalSample._meta.db_table: "interval", HostSample._meta.db_table: "host",
                  ServerSample._meta.db_table: "server", PackedSeconds._meta.db_table: "packed"}
        with connection.cursor() as cursor:
            cursor.execute("SELECT relname, n_tup_ins, n_live_tup FROM pg_stat_user_tables WHERE relname = ANY(%s)",
                           [list(tables)])
            found = {name: (inserted, live) for name, inserted, live in cursor.fetchall()}
        for table, kind in tables.items():
            inserted, live = found.get(table, (0, 0))
            if kind != "packed":
                stored.add_metric([kind], inserted)
            rows.add_metric([kind], live)
        yield stored
        yield rows

    def _phases(self, counted: dict[str, float]) -> Metric:
        """The phases of closed jobs, counted by their closer (execution.outcomes.job_phases_count): a few fields
        of one Redis hash, whatever the number of jobs stored."""
        family = HistogramMetricFamily("benchapp_job_phase_duration_seconds",
                                       "How long closed jobs spent in each phase", labels=["phase"])
        for phase in ("queued", "prepare", "dataset_prepare", "warmup", "run", "finalize"):
            labels = {"phase": phase}
            cumulative = [(str(float(b)), counted.get(field("job_phase_seconds_bucket",
                                                            {**labels, "le": str(float(b))}), 0.0))
                          for b in PHASE_BUCKETS_S]
            count = counted.get(field("job_phase_seconds_count", labels), 0.0)
            family.add_metric([phase], [*cumulative, ("+Inf", count)],
                              counted.get(field("job_phase_seconds_sum", labels), 0.0))
        return family

    def _monitoring(self) -> Iterator[Metric]:
        # Counted when they happen (campaigns/counters.py), so that they never go down when rows are deleted.
        try:
            counted = counters_read(broker_redis())
        except Exception as exc:  # the broker is away: benchapp_broker_up says so; these are missing meanwhile
            log.warning("metrics: counters unreadable: %s", type(exc).__name__)
            counted = None
        if counted is not None:
            yield self._phases(counted)
            checks = CounterMetricFamily("benchapp_regression_checks", "Finished runs checked for regressions")
            checks.add_metric([], counted.get(field("regression_checks"), 0.0))
            yield checks
            found = CounterMetricFamily("benchapp_regressions_found", "Regressions and improvements found, by kind",
                                        labels=["kind"])
            for kind in Regression.Kind.values:
                found.add_metric([kind], counted.get(field("regressions_found", {"kind": kind}), 0.0))
            yield found
            notes = CounterMetricFamily("benchapp_notifications",
                                        "Regression notifications (e-mail and webhook), by outcome", labels=["outcome"])
            for outcome in ("sent", "failed"):
                notes.add_metric([outcome], counted.get(field("notifications", {"outcome": outcome}), 0.0))
            yield notes
            swept = CounterMetricFamily("benchapp_retention_deleted", "Rows the daily retention sweep deleted, by kind",
                                        labels=["kind"])
            for kind in ("sessions", "access_logs", "access_failures", "access_attempts", "coarse_attempts"):
                swept.add_metric([kind], counted.get(field("retention_deleted", {"kind": kind}), 0.0))
            yield swept
            freed = CounterMetricFamily("benchapp_retention_freed_bytes",
                                        "Bytes of per-second samples freed by keeping old jobs' seconds coarser")
            freed.add_metric([], counted.get(field("retention_bytes_freed", {}), 0.0))
            yield freed
            yield tasks_family(counted)
        pending = GaugeMetricFamily("benchapp_notifications_pending", "Regressions not notified yet")
        pending.add_metric([], Regression.objects.filter(notified_at__isnull=True, notification_error="").count())
        yield pending
        up = GaugeMetricFamily("benchapp_database_up", "1 when PostgreSQL answered this scrape")
        up.add_metric([], 1)
        yield up


_COMMIT: list[str] = []


def _commit() -> str:
    """This checkout's commit (BENCHAPP_COMMIT when the image was built without .git), read once per process."""
    if not _COMMIT:
        value = os.environ.get("BENCHAPP_COMMIT", "")
        if not value:
            import subprocess

            try:
                value = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=settings.BASE_DIR,
                                       capture_output=True, text=True, timeout=2).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                value = ""
        _COMMIT.append(value or "unknown")
    return _COMMIT[0]


def build_info() -> Metric:
    import platform

    import django

    info = GaugeMetricFamily("benchapp_build_info", "benchapp's build: commit, version, Python and Django (value 1)",
                             labels=["commit", "version", "python", "django"])
    info.add_metric([_commit(), str(settings.SPECTACULAR_SETTINGS.get("VERSION", "")), platform.python_version(),
                     django.get_version()], 1)
    return info


def tasks_family(counted: dict[str, float]) -> Metric:
    """benchapp_tasks_total{task, outcome}: every Celery task that ended on a server worker (worker_signals)."""
    family = CounterMetricFamily("benchapp_tasks", "Celery tasks that ended, by task and outcome",
                                 labels=["task", "outcome"])
    for name, value in sorted(counted.items()):
        if not name.startswith("tasks|"):
            continue
        labels = dict(part.split("=", 1) for part in name.split("|")[1:] if "=" in part)
        family.add_metric([labels.get("task", ""), labels.get("outcome", "")], value)
    return family


# The programs of this installation, told by their command lines (processes whose working directory is the checkout).
_PROGRAMS = (("web", ("gunicorn",)), ("beat", ("celery", "beat")), ("worker", ("celery", "worker")),
             ("worker", ("benchapp.client_worker",)))


def _program(cmdline: list[str]) -> str | None:
    words = " ".join(cmdline)
    for program, needles in _PROGRAMS:
        if all(needle in words for needle in needles):
            return program
    return None


class ProcessCollector(Collector):
    """What prometheus_client's multiprocess mode leaves out: each program's processes, resident memory and CPU
    seconds, summed over its processes (master, workers, pool children) on this machine."""

    def collect(self) -> Iterator[Metric]:
        import psutil

        count: dict[str, int] = {}
        rss: dict[str, float] = {}
        cpu: dict[str, float] = {}
        root = str(settings.BASE_DIR)
        for proc in psutil.process_iter(["cmdline", "memory_info", "cpu_times"]):
            try:
                program = _program(proc.info["cmdline"] or [])
                if program is None or proc.cwd() != root:
                    continue
            except (psutil.Error, OSError):
                continue
            count[program] = count.get(program, 0) + 1
            if proc.info["memory_info"] is not None:
                rss[program] = rss.get(program, 0.0) + proc.info["memory_info"].rss
            if proc.info["cpu_times"] is not None:
                times = proc.info["cpu_times"]
                cpu[program] = cpu.get(program, 0.0) + times.user + times.system
        processes = GaugeMetricFamily("benchapp_processes", "Processes of each program of benchapp on this machine",
                                      labels=["program"])
        memory = GaugeMetricFamily("benchapp_process_resident_memory_bytes",
                                   "Resident memory of each program's processes together", labels=["program"])
        # A gauge: a pool child recycled takes its seconds along, so the sum is no counter (it would go down).
        seconds = GaugeMetricFamily("benchapp_process_cpu_seconds",
                                    "CPU seconds (user and system) used so far by each program's running processes",
                                    labels=["program"])
        for program in sorted(count):
            processes.add_metric([program], count[program])
            memory.add_metric([program], rss.get(program, 0.0))
            seconds.add_metric([program], cpu.get(program, 0.0))
        yield processes
        yield memory
        yield seconds


class BuildCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        yield build_info()


class BeatCollector(Collector):
    """How long ago beat sent a task (benchapp/liveness.py), from the broker's Redis."""

    def collect(self) -> Iterator[Metric]:
        from benchapp import liveness

        age = GaugeMetricFamily("benchapp_beat_last_sent_age_seconds", "Seconds since Celery beat last sent a task")
        try:
            raw = broker_redis().get(liveness.beat_key())
        except Exception:  # the broker is away: benchapp_broker_up says so
            return
        if raw is not None:
            age.add_metric([], max(0.0, time.time() - float(json.loads(raw)["at"])))
            yield age


def _registry(*, database: bool) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_LATENCY)
    registry.register(BuildCollector())
    registry.register(ProcessCollector())
    registry.register(BeatCollector())
    if database:
        registry.register(BenchappCollector())
    return registry


DATABASE_DOWN = (b"# HELP benchapp_database_up 1 when PostgreSQL answered this scrape\n"
                 b"# TYPE benchapp_database_up gauge\nbenchapp_database_up 0.0\n")


def scrape() -> bytes:
    """The text a Prometheus server reads."""
    return generate_latest(_registry(database=True))


def scrape_without_database() -> bytes:
    """What can be said while PostgreSQL is away: build, request latency, beat's age and benchapp_database_up 0 (the
    view answers it with a 503, still in the exposition format, which Prometheus parses and alerts on)."""
    return generate_latest(_registry(database=False)) + DATABASE_DOWN


def request_observe(*, view: str, method: str, status: int, duration_s: float) -> None:
    REQUEST_LATENCY.labels(view=view, method=method, status=str(status)).observe(duration_s)
