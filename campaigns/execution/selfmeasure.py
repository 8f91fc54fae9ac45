"""A client host measures itself: `sysbench cpu` and `sysbench memory`, a few seconds each, when its worker joins
and every day, so that the Hosts page and every job's environment show how fast the host is.

A self-measurement and a job never overlap on one host. Both sides decide under one PostgreSQL advisory lock per
host name (host_lock): a self-measurement starts only when no job of this host is active (a coordinator's claim,
or a client row of the host that has not finished), and marks the host (ClientHost.self_measuring_until); a job's
coordinator and each of its clients, once their own row says they are there, wait while that mark stands
(host_self_measure_wait). Whichever takes the lock first, the other sees it.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.models import ClientHost, Job, JobClient
from campaigns.sysbench import parser
from campaigns.sysbench.hosttests import host_figures
from campaigns.sysbench.runner import run_process

log = logging.getLogger(__name__)

# The mark outlasts the measurement by this much: a worker killed mid-measurement frees its host by itself.
_MARK_SLACK_S = 30.0
WAIT_POLL_S = 0.2


def host_lock(hostname: str) -> None:
    """Takes the host's advisory lock until the end of the current transaction."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"benchapp-host:{hostname}"])


def host_busy(hostname: str) -> bool:
    """Whether a job is active on the host: coordinated there, or one of its clients not finished there."""
    return (JobClient.objects.filter(host_name=hostname, status__in=transitions.CLIENT_ACTIVE).exists()
            or Job.objects.filter(claimed_by=hostname, status__in=Job.ACTIVE).exists())


def self_measure_claim(*, hostname: str, seconds: float) -> bool:
    """Marks the host as measuring itself for about `seconds`; False when a job is active there (or another
    self-measurement is): then nothing is marked."""
    now = timezone.now()
    with transaction.atomic():
        host_lock(hostname)
        if host_busy(hostname):
            return False
        return bool(ClientHost.objects.filter(hostname=hostname).filter(
            Q(self_measuring_until__isnull=True) | Q(self_measuring_until__lt=now)).update(
            self_measuring_until=now + timedelta(seconds=seconds + _MARK_SLACK_S)))


def host_self_measure_wait(hostname: str, *, beat: Callable[[], object] | None = None,
                           patience_s: float = 120.0) -> float:
    """Called by a job's coordinator and clients once their row is active on the host: waits while the host
    measures itself, calling `beat` every second meanwhile (the job's or client's heartbeat, so that the reconciler
    does not take the wait for a dead worker); returns the seconds waited."""
    started = time.monotonic()
    next_beat = started + 1.0
    while time.monotonic() - started < patience_s:
        with transaction.atomic():
            host_lock(hostname)
            until = ClientHost.objects.filter(hostname=hostname).values_list("self_measuring_until", flat=True).first()
        if until is None or until <= timezone.now():
            break
        if beat is not None and time.monotonic() >= next_beat:
            next_beat = time.monotonic() + 1.0
            beat()
        time.sleep(WAIT_POLL_S)
    return time.monotonic() - started


def _measure(test: str, *, threads: int, seconds: int) -> dict[str, Any]:
    argv = [settings.BENCHAPP_SYSBENCH, test, f"--threads={threads}", f"--time={seconds}", "--percentile=0",
            "run"]
    outcome = run_process(argv, timeout_s=seconds + 30)
    parsed = parser.parse_output(outcome.output)
    summary = parsed.summary
    if not outcome.succeeded() or summary is None:
        raise RuntimeError(f"sysbench {test} failed (exit {outcome.exit_code}): {outcome.output[-300:]}")
    return host_figures(test, outcome.output, events=summary.events, duration_s=summary.duration_s).to_dict()


def host_self_measure(*, hostname: str | None = None) -> dict[str, Any] | None:
    """Measures this host (sysbench cpu and memory, BENCHAPP_SELF_MEASURE_S seconds each, one thread per core)
    and stores the figures on its ClientHost row; None, measuring nothing, while a job is active on it (the
    caller tries again later). Runs on the host itself: its own queue's task, never another host's."""
    hostname = hostname or settings.BENCHAPP_HOSTNAME
    if hostname != settings.BENCHAPP_HOSTNAME:
        raise ValueError(f"host {settings.BENCHAPP_HOSTNAME} cannot measure host {hostname}")
    seconds = max(1, int(settings.BENCHAPP_SELF_MEASURE_S))
    threads = ClientHost.objects.filter(hostname=hostname).values_list("cores", flat=True).first() or 1
    if not self_measure_claim(hostname=hostname, seconds=2.0 * seconds):
        log.info("host %s: self-measurement put off, a job is active here", hostname)
        return None
    try:
        cpu = _measure("cpu", threads=threads, seconds=seconds)
        memory = _measure("memory", threads=threads, seconds=seconds)
        measurement = {"cpu_events_per_s": cpu["events_per_s"], "memory_mib_per_s": memory["mib_per_s"],
                       "threads": threads, "seconds": seconds, "measured_at": timezone.now().isoformat()}
        ClientHost.objects.filter(hostname=hostname).update(self_measurement=measurement)
        log.info("host %s measured itself: %s", hostname, measurement)
        return measurement
    finally:
        ClientHost.objects.filter(hostname=hostname).update(self_measuring_until=None)


def hosts_self_measure_due() -> list[str]:
    """Online hosts whose last self-measurement is missing or older than BENCHAPP_SELF_MEASURE_EVERY_S."""
    limit = timezone.now() - timedelta(seconds=settings.BENCHAPP_SELF_MEASURE_EVERY_S)
    due = []
    for hostname, measurement in ClientHost.objects.online().values_list("hostname", "self_measurement"):
        when = (measurement or {}).get("measured_at")
        try:
            measured_at = datetime.fromisoformat(when) if when else None
        except ValueError:
            measured_at = None
        if measured_at is None or measured_at < limit:
            due.append(hostname)
    return due
