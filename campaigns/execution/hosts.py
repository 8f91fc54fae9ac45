"""Client hosts: their heartbeat and facts, taking a silent one offline, and which started clients stopped beating
and why (stale_clients, worker_lost_cause; campaigns.execution.resend declares them lost)."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from campaigns.execution.sandboxcheck import sandbox_fact
from campaigns.models import ClientHost, JobClient, Run
from campaigns.models.core import hosts_allowed
from campaigns.sysbench.runner import sysbench_version


def host_queue(hostname: str) -> str:
    """A client host's own queue, under the shared queue's name so that separate installations
    (or test sessions) on one Redis never consume each other's client tasks."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.host.{hostname}"


def server_queue() -> str:
    """The queue of the tasks only the server's own worker runs (regression checks, notifications): they
    import numpy and scipy, which a client host's worker (BENCHAPP_WORKER_ROLE=client) never loads."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.server"


@dataclass(frozen=True)
class CpuBusy:
    """How busy a host's CPUs were over a span: the share of time not idle, waiting for I/O or stolen by the
    hypervisor, in percent (steal is the neighbours', not this host's processes': validity says so apart)."""

    pct: float
    since: datetime
    until: datetime


def cpu_busy_pct(before: Any, after: Any) -> float:
    """The busy share of a host's CPUs between two psutil.cpu_times() readings, in percent (see CpuBusy)."""
    def spare(times: Any) -> float:
        return times.idle + getattr(times, "iowait", 0.0) + getattr(times, "steal", 0.0)

    total = (sum(after) - getattr(after, "steal", 0.0)) - (sum(before) - getattr(before, "steal", 0.0))
    if total <= 0:
        return 0.0
    busy = (sum(after) - spare(after)) - (sum(before) - spare(before))
    return min(100.0, max(0.0, 100.0 * busy / total))


def host_heartbeat(*, hostname: str, cores: int | None = None, memory_gb: float | None = None,
                   version: str | None = None, labels: list[str] | None = None,
                   facts: dict[str, Any] | None = None, role: str | None = None,
                   public_key: str | None = None, busy: CpuBusy | None = None) -> ClientHost:
    """Marks the host alive; with cores (at join), also stores its facts: those given, and its address and
    clock as seen from here (join_facts_measure), and the public key its worker made (campaigns.sealing); with
    busy, how busy its CPUs were since its last heartbeat."""
    defaults: dict[str, Any] = {"last_heartbeat": timezone.now(), "queue": host_queue(hostname), "offline_since": None}
    if busy is not None:
        defaults.update(cpu_busy_pct=round(busy.pct, 1), cpu_busy_from=busy.since, cpu_busy_to=busy.until)
    if cores is not None:
        defaults.update(cores=cores, memory_gb=memory_gb or 0, sysbench_version=version or "",
                        started_at=timezone.now())
        given = facts or {}
        defaults.update({name: given[name] for name in ("cpu_model", "kernel", "client_versions") if name in given})
        defaults.update(join_facts_measure())
    if role is not None:
        defaults["role"] = role
    if public_key is not None:
        defaults["public_key"] = public_key
    if labels:  # announced at join; without any, the labels an operator gave the host stay
        defaults["labels"] = sorted({label.strip() for label in labels if label.strip()})
    host, _ = ClientHost.objects.update_or_create(hostname=hostname, defaults=defaults)
    return host


def host_mark_offline(*, hostname: str, heartbeat_before: datetime) -> None:
    """Takes a host offline now rather than after BENCHAPP_HOST_OFFLINE_S, if it has stopped beating. Its
    last_heartbeat stays the time it really beat (pages say "since" it); offline_since says benchapp took it off."""
    ClientHost.objects.filter(hostname=hostname, last_heartbeat__lt=heartbeat_before,
                              offline_since__isnull=True).update(offline_since=timezone.now())


def local_host_facts() -> dict[str, Any]:
    """This machine's facts that need no server: name, CPUs, memory, kernel, sysbench and client libraries."""
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"hostname": settings.BENCHAPP_HOSTNAME or socket.gethostname(), "cores": os.cpu_count() or 1,
            "memory_gb": round(pages / 2**30, 1), "version": sysbench_version(settings.BENCHAPP_SYSBENCH),
            "cpu_model": cpu_model()[:200], "kernel": f"{platform.system()} {platform.release()}"[:200],
            # (The sandbox in a line, and a warning for each of benchapp's services it still reaches: logged too.)
            "client_versions": {**client_versions(), "sandbox": sandbox_fact()}}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(("model name", "Model")):  # x86; ARM
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def client_versions() -> dict[str, str]:
    """The libraries through which this host's probes reach a target (sysbench's own are in its version)."""
    import MySQLdb
    import psycopg

    libpq = psycopg.pq.version()  # 180006 for 18.6
    return {"python": platform.python_version(), "mysqlclient": importlib.metadata.version("mysqlclient"),
            "libmysqlclient": MySQLdb._mysql.get_client_info(), "psycopg": psycopg.__version__,
            "libpq": f"{libpq // 10000}.{libpq % 10000}"}


CLOCK_SAMPLES = 5


def join_facts_measure() -> dict[str, Any]:
    """This host's address towards benchapp's PostgreSQL, and its clock against that server's.

    The offset is this host's clock minus the server's (positive: the host is ahead), from the reading with the
    shortest round trip among a few, assuming the server read its clock halfway through: exact to rtt / 2.
    """
    best: tuple[float, float] | None = None
    with connection.cursor() as cursor:
        for _ in range(CLOCK_SAMPLES):
            sent_s, sent_mono = time.time(), time.monotonic()
            cursor.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
            server_s = cursor.fetchone()[0]
            rtt_s = time.monotonic() - sent_mono
            if best is None or rtt_s < best[1]:
                best = (sent_s + rtt_s / 2 - server_s, rtt_s)
        assert best is not None
        sock = connection.connection.pgconn.socket if connection.connection is not None else -1
        address = _local_address(sock)
    return {"clock_offset_ms": round(best[0] * 1000, 3), "clock_rtt_ms": round(best[1] * 1000, 3),
            "address": address}


def _local_address(fd: int) -> str | None:
    """The local address of the connection to the server: the one this host reaches it from."""
    if fd < 0:
        return None
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            name = sock.getsockname()
    except OSError:
        return None
    return name[0] if isinstance(name, tuple) else None  # a Unix socket has no address


def client_doing(client: JobClient) -> str:
    """Where a client was when it was lost, for its cause."""
    if client.status == JobClient.Status.RUNNING:
        return "while measuring"
    return "at the start barrier" if client.status == JobClient.Status.READY else "before starting its client"


def worker_lost_cause(host_name: str, *, stale_s: float, doing: str = "while measuring",
                      last_beat: datetime | None = None) -> str:
    """Which process went away, in words: the whole worker, brought back since (a supervisor restarted it: the
    host's worker joined again after the task fell silent), the task's own worker process (a pool child killed,
    WorkerLostError) while its host's worker still beats, or the whole worker or host (no heartbeat from either).

    With the task's own last heartbeat (`last_beat`), "still beats" means the host beat on for at least half the
    stale time after the task fell silent: a worker killed whole stops both within a beat or two of each other,
    however late the task's last beats were written on a loaded machine. A restarted worker beats too, but its
    start (ClientHost.started_at, written when a worker joins) is later than the task's last beat, and it beats now."""
    if not host_name:
        return f"worker lost {doing}: no heartbeat for {stale_s:.0f} s"
    host = ClientHost.objects.filter(hostname=host_name).values_list("last_heartbeat", "started_at").first()
    now = timezone.now()
    silent_since = last_beat if last_beat is not None else now - timedelta(seconds=stale_s)
    since = (last_beat + timedelta(seconds=stale_s / 2) if last_beat is not None
             else now - timedelta(seconds=stale_s))
    beat_at, joined_at = host if host is not None else (None, None)
    beats = beat_at is not None and beat_at >= since
    # Restarted: the host's worker beats now and joined after the task fell silent (a host that stopped beating
    # was not brought back, whenever its row says it joined).
    if beats and joined_at is not None and joined_at > silent_since:
        return (f"worker restarted on {host_name} {doing}: the job's process went with the old worker (killed or "
                f"stopped); the new one started at {_clock(joined_at, now)}")
    if beats:
        return (f"worker process lost on {host_name} {doing}: no heartbeat from its task for {stale_s:.0f} s while "
                "the host's worker still beats (its pool process was killed or hung)")
    return (f"client host {host_name} lost {doing}: no heartbeat from its worker for {stale_s:.0f} s "
            "(the worker was killed or stopped, or the host is down or cut off)")


def _clock(moment: datetime, now: datetime) -> str:
    """A moment as the pages show it: the time of day when it is today, else the date too."""
    local = timezone.localtime(moment)
    return local.strftime("%H:%M:%S") if local.date() == timezone.localtime(now).date() else local.strftime(
        "%Y-%m-%d %H:%M:%S")


def stale_clients(*, heartbeat_before: datetime) -> Any:
    """Started clients of this queue's runs whose worker stopped beating before that time."""
    return JobClient.objects.filter(
        status__in=(JobClient.Status.READY, JobClient.Status.RUNNING), heartbeat_at__lt=heartbeat_before,
        job__run__queue__in=own_queues(),
    ).select_related("job")


def own_queues() -> tuple[str, str]:
    """The run queues this process looks after: its own, and "" for runs launched before runs had one."""
    return (settings.CELERY_TASK_DEFAULT_QUEUE, "")


# ---------------------------------------------------------------- nobody to run a run's next job


@dataclass(frozen=True)
class NoWorker:
    """No worker able to take a run's next job has beaten for BENCHAPP_NO_WORKER_S: since is the last heartbeat of
    the freshest one (None: none ever joined)."""

    since: datetime | None

    def message(self) -> str:
        if self.since is None:
            return "no worker has joined: start one, see the Hosts page"
        local = timezone.localtime(self.since)
        shown = local.strftime("%H:%M:%S") if local.date() == timezone.localdate() else local.strftime("%Y-%m-%d %H:%M")
        return f"no worker alive since {shown}: start one, see the Hosts page"

    def as_dict(self) -> dict[str, Any]:
        return {"since": self.since.isoformat() if self.since else None, "message": self.message()}


HostBeat = tuple[str, str, list[str], datetime, bool]  # hostname, queue, labels, last heartbeat, taken offline


def host_heartbeats() -> list[HostBeat]:
    """Every client host's name, queue, labels, last heartbeat and whether benchapp took it offline since (one
    query, for many runs)."""
    return [(name, queue, labels or [], beat, off is not None) for name, queue, labels, beat, off in
            ClientHost.objects.values_list("hostname", "queue", "labels", "last_heartbeat", "offline_since")]


def run_no_worker(*, run: Run, hosts: list[HostBeat] | None = None, now: datetime | None = None) -> NoWorker | None:
    """NoWorker when the run has work left and no client host that may take it has beaten for BENCHAPP_NO_WORKER_S.

    Hosts that may take it: those the campaign allows (client_hosts, by name or label) among the workers of the
    run's queue (a host's own queue is named under the shared one). A run queued behind another run waits for
    that run, not for a worker. A worker busy with a long job still beats (a thread of its main process), so
    only a dead or stopped worker goes silent; a cleanly stopped one is taken offline at once.
    """
    if run.is_finished() or (run.status == Run.Status.PENDING and run.waits_for_id is not None):
        return None
    now = now or timezone.now()
    hosts = host_heartbeats() if hosts is None else hosts
    choice = run.campaign.client_hosts
    prefix = f"{run.queue}.host." if run.queue else ""
    allowed = [(beat, off) for name, queue, labels, beat, off in hosts
               if queue.startswith(prefix) and hosts_allowed(choice, name, labels)]
    # A host taken offline (a clean stop, a drain) beats no more, however recent its last beat: not alive.
    alive = max((beat for beat, off in allowed if not off), default=None)
    if alive is not None and alive >= now - timedelta(seconds=settings.BENCHAPP_NO_WORKER_S):
        return None
    return NoWorker(since=max((beat for beat, _ in allowed), default=None))
