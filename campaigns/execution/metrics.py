"""Per-second measurements beside a running sysbench: the client host (psutil) and the target server (SQL).

Each sampler is a thread of the client task, started when sysbench has started and stopped when it has
exited; a reading is taken on whole seconds of sysbench's own clock, so row t of a HostSample or ServerSample
lines up with sysbench's `[ t s ]` interval. Rows are written a few at a time by a writer thread of the sampler's
own (its own database connection), so a write that hangs (a cut network) never delays a reading: the rows wait,
an hour of them at most, and no second is skipped. A sampler that fails stops quietly (with a log line): it never
fails the measurement it watches.

The client task of client 0 (on the coordinating host) also samples the server, over one light connection per
job, and keeps exact readings at the start and the end of the measurement (job.server_window); after the run,
each client host measures its round trip to the target once per run (RoundTrip).
"""
from __future__ import annotations

import logging
import os
import socket
import statistics
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psutil
from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection

from campaigns.execution.dbretry import RETRY_FIRST_S, backoff_s, connection_drop, connection_lost, db_retry
from campaigns.execution.profiles import ServerProfiler, profile_window
from campaigns.models import HostSample, Job, RoundTrip, ServerSample
from campaigns.probes import ProbeError
from campaigns.seconds import Kind, seconds_rows
from campaigns.server_status import StatusReader, counter_rates
from campaigns.sysbench.command import Connection

log = logging.getLogger(__name__)

FLUSH_EVERY_S = 5
MAX_WAITING_ROWS = 3600       # rows kept while benchapp's database is away (an hour of seconds)
LAST_FLUSH_PATIENCE_S = 120.0
# Below this idle share of the host in a second, the sampler looks for who took the CPU (a scan of every process,
# about 10 ms of CPU): a starved host is judged by it (campaigns.validity, "host-busy").
SCAN_IDLE_PCT = 25.0
ROUND_TRIPS = 200
PGSQL_FLUSH_S = 1.0
PGSQL_POLL_S = 0.02


class _RowWriter(threading.Thread):
    """Writes a sampler's rows on a thread (and database connection) of its own, so that a write that hangs (a cut
    network: the connection neither answers nor fails until TCP gives up) never delays a reading: the seconds are
    taken on time and wait here, up to MAX_WAITING_ROWS (the oldest given up first), until the database answers."""

    def __init__(self, name: str) -> None:
        super().__init__(name=f"{name}-writer", daemon=True)
        self.owner = name
        self._pending: list[Any] = []
        self._lock = threading.Condition()
        self._closing = False
        self._abandoned = False  # finish() gave up waiting: what is still unwritten is dropped, not retried
        self._busy = False
        self.cpu_s = 0.0  # this thread's CPU time: writing is part of what sampling costs

    def put(self, rows: list[Any]) -> None:
        with self._lock:
            self._pending.extend(rows)
            del self._pending[:-MAX_WAITING_ROWS]
            self._lock.notify()

    def finish(self, patience_s: float) -> int:
        """Waits (at most `patience_s`) for every row handed over to be written; returns how many were not."""
        deadline = time.monotonic() + patience_s
        with self._lock:
            self._closing = True
            self._lock.notify()
            while (self._pending or self._busy) and time.monotonic() < deadline:
                self._lock.wait(timeout=min(0.5, max(0.0, deadline - time.monotonic())))
            left = len(self._pending)
            self._pending = []
            self._abandoned = bool(left or self._busy)
            self._lock.notify()
        return left

    def run(self) -> None:
        delay = RETRY_FIRST_S
        try:
            while True:
                with self._lock:
                    while not self._pending and not self._closing:
                        self._lock.wait()
                    if not self._pending:
                        return
                    batch, self._pending, self._busy = self._pending, [], True
                cpu = time.thread_time()
                try:
                    type(batch[0]).objects.bulk_create(batch, ignore_conflicts=True)
                    delay = RETRY_FIRST_S
                    written = True
                except (OperationalError, InterfaceError) as exc:
                    if not connection_lost(exc):
                        log.exception("%s: %d rows not written", self.owner, len(batch))
                        written = True  # a bad row: given up, never retried
                    else:
                        connection_drop()
                        written = False
                        log.warning("%s: benchapp's database is away; %d rows wait", self.owner, len(batch))
                except Exception:
                    log.exception("%s: %d rows not written", self.owner, len(batch))
                    written = True
                self.cpu_s += time.thread_time() - cpu
                with self._lock:
                    self._busy = False
                    if self._abandoned:
                        return
                    if not written:
                        self._pending[:0] = batch
                        del self._pending[:-MAX_WAITING_ROWS]
                    self._lock.notify_all()
                if not written:
                    time.sleep(delay)
                    delay = backoff_s(delay)
        finally:
            connection.close()


class _Sampler(threading.Thread):
    """Calls take(t) at start + t seconds for t = 1, 2, ... until stop(); take() returns rows to store, which its
    writer (_RowWriter) writes a few at a time, apart from the readings."""

    def __init__(self, name: str, started_at: float) -> None:
        super().__init__(name=name, daemon=True)
        self.started_at = started_at
        self._stop_event = threading.Event()
        self._rows: list[Any] = []
        self._writer = _RowWriter(name)
        self._read_cpu_s = 0.0  # the reading thread's own CPU time
        self.samples = 0
        # Set once the sampler has taken its last reading (its rows may still be on their way to the database).
        self.last_read = threading.Event()

    @property
    def cpu_s(self) -> float:
        """What sampling costs (bench/sampler_cost.py): the CPU time of the reading thread and of its writer."""
        return self._read_cpu_s + self._writer.cpu_s

    def signal_stop(self) -> None:
        self._stop_event.set()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)

    def run(self) -> None:
        self._writer.start()
        try:
            self.begin()
            t = 1
            while not self._stop_event.wait(max(0.0, self.started_at + t - time.monotonic())):
                cpu = time.thread_time()
                row = self.take(t)
                if row is not None:
                    self._rows.append(row)
                    self.samples += 1
                if len(self._rows) >= FLUSH_EVERY_S:
                    self.flush()
                self._read_cpu_s += time.thread_time() - cpu
                t = max(t + 1, int(time.monotonic() - self.started_at) + 1)  # a late wake-up skips, never bunches
            self.end(time.monotonic() - self.started_at)
            self.flush_last()
        except Exception:
            log.exception("%s stopped", self.name)
            self.flush_last()  # what it took before it stopped is still written
        finally:
            self.last_read.set()
            self.close()
            connection.close()

    def begin(self) -> None:
        pass

    def take(self, t: int) -> Any:
        raise NotImplementedError

    def end(self, elapsed_s: float) -> None:
        pass

    def close(self) -> None:
        pass

    def flush(self) -> None:
        """Hands the rows taken so far to the writer, at once: while benchapp's database is away (or a write hangs)
        they wait there, up to MAX_WAITING_ROWS."""
        if self._rows:
            self._writer.put(self._rows)
            self._rows = []

    def flush_last(self, patience_s: float = LAST_FLUSH_PATIENCE_S) -> None:
        """The last rows, and the wait (at most `patience_s`) for every row to be written."""
        self.flush()
        left = self._writer.finish(patience_s)
        if left:
            log.error("%s: %d rows not written (benchapp's database away)", self.name, left)


# ---------------------------------------------------------------- the client host

def _busy(times: Any) -> float:
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle


def _listening_pids(port: int) -> set[int]:
    """Processes of this host listening on `port`: the target server, when it runs here."""
    try:
        return {c.pid for c in psutil.net_connections(kind="inet")
                if c.pid and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}
    except (psutil.Error, OSError):
        return set()


def _server_pid_asked(conn: Connection) -> set[int]:
    try:
        reader = StatusReader(conn)
    except ProbeError:
        return set()
    try:
        pid = reader.server_pid()
    finally:
        reader.close()
    return {pid} if pid else set()


def target_is_local(host: str) -> bool:
    """Whether `host` resolves to an address of this machine."""
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    own = {a.address for addrs in psutil.net_if_addrs().values() for a in addrs
           if a.family in (socket.AF_INET, socket.AF_INET6)}
    return any(a.startswith("127.") or a == "::1" or a in own for a in addresses)


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _threads_cpu(pids: set[int]) -> dict[int, tuple[float, int]]:
    """Every thread of `pids`: (CPU seconds so far, the CPU it last ran on), from /proc/PID/task/TID/stat."""
    found: dict[int, tuple[float, int]] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            # After the ")" ending the command name: field 3 is fields[0]; utime, stime are 14, 15; processor 39.
            found[int(tid)] = ((int(fields[11]) + int(fields[12])) / _CLOCK_TICKS, int(fields[36]))
    return found


class HostSampler(_Sampler):
    """CPU (total, per core, of sysbench, of the CPUs sysbench may use), load, context switches, network and
    memory of this client host."""

    def __init__(self, *, job_id: int, client_index: int, pid: int, started_at: float, server_port: int | None,
                 conn: Connection | None = None, attempt: int = 1):
        super().__init__(f"host-sampler-{job_id}-{client_index}", started_at)
        self.job_id, self.client_index, self.pid, self.attempt = job_id, client_index, pid, attempt
        self.server_port, self.conn = server_port, conn
        self.scan: tuple[int, dict[int, tuple[float, int]]] | None = None  # (t, {pid: (CPU s, parent pid)})

    def begin(self) -> None:
        try:
            self.process: psutil.Process | None = psutil.Process(self.pid)
            self.cpus = self.process.cpu_affinity() or list(range(psutil.cpu_count() or 1))
        except (psutil.Error, AttributeError):
            self.process, self.cpus = None, list(range(psutil.cpu_count() or 1))
        self.server_pids = _listening_pids(self.server_port) if self.server_port else set()
        if self.server_port and not self.server_pids and self.conn is not None:
            # An unprivileged worker (the user benchapp) cannot see who owns the socket: the server says who it is.
            self.server_pids = _server_pid_asked(self.conn)
        self.last = self._read()
        self.last_at = time.monotonic()

    def _read(self) -> dict[str, Any]:
        return {
            "total": psutil.cpu_times(), "cores": psutil.cpu_times(percpu=True),
            "sysbench": processes_cpu_s([self.process]) if self.process else None,
            "server": _threads_cpu(self.server_pids), "stats": psutil.cpu_stats(), "net": psutil.net_io_counters(),
        }

    def take(self, t: int) -> HostSample | None:
        now, at = self._read(), time.monotonic()
        before, elapsed = self.last, at - self.last_at
        self.last, self.last_at = now, at
        if elapsed <= 0:
            return None
        total = sum(now["total"]) - sum(before["total"]) or 1e-9

        def share(field: str) -> float:
            return round(100 * (getattr(now["total"], field, 0.0) - getattr(before["total"], field, 0.0)) / total, 2)

        per_core = []
        for new, old in zip(now["cores"], before["cores"], strict=False):
            span = sum(new) - sum(old) or 1e-9
            per_core.append(round(max(0.0, min(100.0, 100 * (_busy(new) - _busy(old)) / span)), 1))
        # The target server's own CPU on this host is not the client's load: each of its threads' CPU time is
        # taken off the core it last ran on.
        server_by_core = [0.0] * len(per_core)
        for tid, (cpu_s, core) in now["server"].items():
            if tid in before["server"] and core < len(server_by_core):
                server_by_core[core] += 100 * max(0.0, cpu_s - before["server"][tid][0]) / elapsed
        cores = [c for c in self.cpus if c < len(per_core)] or list(range(len(per_core)))
        client_cpus = sum(max(0.0, per_core[c] - server_by_core[c]) for c in cores) / len(cores)
        sysbench = None
        if now["sysbench"] is not None and before["sysbench"] is not None:
            sysbench = round(100 * (now["sysbench"] - before["sysbench"]) / elapsed, 1)
        busy_pct = 100 * (_busy(now["total"]) - _busy(before["total"])) / total
        # Who took the host: its busy CPU in percent of one core, less sysbench and the target server's own.
        server = sum(server_by_core)
        top_name, top_pct = "", None
        if 100 - busy_pct < SCAN_IDLE_PCT:
            tree_server, top_name, top_pct = self._who(t, elapsed)
            if tree_server is not None:
                server = max(server, tree_server)  # PostgreSQL's backends are processes of their own
        # Steal is time the hypervisor gave to other virtual machines: no process of this host took it.
        steal_pct = share("steal")
        others = max(0.0, (busy_pct - steal_pct) * len(per_core) - (sysbench or 0.0) - server)
        net_new, net_old = now["net"], before["net"]
        return HostSample(
            job_id=self.job_id, client_index=self.client_index, attempt=self.attempt, t=t,
            server_cpu_pct=round(server, 1) if self.server_pids else None, others_cpu_pct=round(others, 1),
            top_other_name=top_name, top_other_cpu_pct=top_pct,
            cpu_user_pct=share("user"), cpu_system_pct=share("system"), cpu_iowait_pct=share("iowait"),
            cpu_steal_pct=steal_pct,
            cpu_busy_pct=round(busy_pct, 2),
            per_core_busy_pct=per_core, client_cpus_busy_pct=round(min(100.0, client_cpus), 2),
            sysbench_cpu_pct=sysbench, load_1m=round(os.getloadavg()[0], 2),
            context_switches_per_s=round((now["stats"].ctx_switches - before["stats"].ctx_switches) / elapsed, 1),
            net_bytes_in_per_s=round((net_new.bytes_recv - net_old.bytes_recv) / elapsed, 1),
            net_bytes_out_per_s=round((net_new.bytes_sent - net_old.bytes_sent) / elapsed, 1),
            net_packets_in_per_s=round((net_new.packets_recv - net_old.packets_recv) / elapsed, 1),
            net_packets_out_per_s=round((net_new.packets_sent - net_old.packets_sent) / elapsed, 1),
            memory_used_pct=psutil.virtual_memory().percent,
        )


    def _who(self, t: int, elapsed: float) -> tuple[float | None, str, float | None]:
        """A scan of every process: the target server's CPU with its child processes, and the busiest process that
        is neither sysbench nor the server (its name, its CPU in percent of one core) since the scan of the second
        before (none for the first second of a starved stretch)."""
        found: dict[int, tuple[float, int]] = {}
        names: dict[int, str] = {}
        for proc in psutil.process_iter(["name", "cpu_times", "ppid"]):
            times = proc.info["cpu_times"]
            if times is None:
                continue
            found[proc.pid] = (times.user + times.system, proc.info["ppid"] or 0)
            names[proc.pid] = proc.info["name"] or "?"
        previous, self.scan = self.scan, (t, found)
        if previous is None or previous[0] != t - 1:
            return None, "", None
        server_tree = set(self.server_pids)
        for pid, (_, ppid) in sorted(found.items()):
            if ppid in server_tree:
                server_tree.add(pid)
        mine = {self.pid}
        server = 0.0
        top_pid, top = 0, 0.0
        for pid, (cpu_s, _) in found.items():
            if pid not in previous[1]:
                continue
            pct = 100 * max(0.0, cpu_s - previous[1][pid][0]) / elapsed
            if pid in server_tree:
                server += pct
            elif pid not in mine and pct > top:
                top_pid, top = pid, pct
        if not top_pid:
            return server, "", None
        return server, process_label(top_pid, names.get(top_pid, "?")), round(top, 1)


def process_label(pid: int, name: str) -> str:
    """A process as a person would name it: its name and its first plain argument (`sysbench cpu`), never an
    option or anything that may hold a secret (a password in someone else's command line stays there)."""
    try:
        args = psutil.Process(pid).cmdline()[1:]
    except psutil.Error:
        args = []
    # (An interpreter's first argument is its script, named like the process: the one after it says more.)
    plain = next((a for a in args if a and not a.startswith("-") and len(a) <= 80 and "=" not in a
                  and "pass" not in a.lower() and all(c.isalnum() or c in "._/-" for c in a)
                  and os.path.basename(a) != name), "")
    label = f"{name} {os.path.basename(plain)}" if plain else name
    return label[:100]


# ---------------------------------------------------------------- the target server


class ServerSampler(_Sampler):
    """The server's counters each second, and exact readings at the start and at the end of the measurement."""

    def __init__(self, *, job_id: int, conn: Connection, started_at: float, attempt: int = 1):
        super().__init__(f"server-sampler-{job_id}", started_at)
        self.job_id, self.conn, self.attempt = job_id, conn, attempt
        self.reader: StatusReader | None = None

    def begin(self) -> None:
        self.reader = StatusReader(self.conn)
        self.first, _ = self.reader.read()
        self.first_at = time.monotonic() - self.started_at
        self.last, self.last_at = self.first, self.first_at

    def take(self, t: int) -> ServerSample | None:
        assert self.reader is not None
        counters, gauges = self.reader.read()
        at = time.monotonic() - self.started_at
        rates = counter_rates(self.last, counters, at - self.last_at)
        self.last, self.last_at = counters, at
        return ServerSample(job_id=self.job_id, attempt=self.attempt, t=t, rates=rates, gauges=gauges)

    def end(self, elapsed_s: float) -> None:
        """The exact reading after sysbench exited, stored with the first one (job.server_window)."""
        assert self.reader is not None
        counters, gauges = self.reader.read()
        # sysbench's PostgreSQL backends report their last counters as they exit, before they leave
        # pg_stat_activity (PostgreSQL's before_shmem_exit, then on_shmem_exit): read again until no other client
        # backend is connected to the database, at most PGSQL_FLUSH_S (a peer client's backends keep it waiting).
        deadline = time.monotonic() + PGSQL_FLUSH_S
        while (self.conn.driver == "pgsql" and gauges.get("backends_connected", 0) > 0
               and time.monotonic() < deadline):
            time.sleep(PGSQL_POLL_S)
            counters, gauges = self.reader.read()
        at = time.monotonic() - self.started_at
        self.last_read.set()
        window = {"driver": self.conn.driver, "start_t": round(self.first_at, 3), "end_t": round(at, 3),
                  "start": self.first, "end": counters}
        db_retry(lambda: Job.objects.filter(pk=self.job_id, attempt=self.attempt).update(server_window=window),
                 patience_s=LAST_FLUSH_PATIENCE_S, what=f"job {self.job_id}'s server window")

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


# ---------------------------------------------------------------- both, around one sysbench process



def processes_cpu_s(processes: Iterable[psutil.Process]) -> float:
    """The CPU seconds (user + system) these processes have used so far; one that has ended adds nothing."""
    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total

@dataclass
class Samplers:
    """The samplers of one client; start() once sysbench runs, stop() once it has exited."""

    job_id: int
    client_index: int
    conn: Connection
    sample_server: bool
    same_host: bool = False
    attempt: int = 1  # the job's attempt (Job.attempt) these rows belong to
    host: HostSampler | None = None
    server: ServerSampler | None = None
    # The measured seconds when the campaign profiles the server (a local target's only), 0 otherwise.
    profile_time_s: int = 0
    profiler: ServerProfiler | None = None

    def start(self, pid: int) -> None:
        if self.profile_time_s and self.same_host:
            pids = _listening_pids(self.conn.port) if self.conn.port else set()
            delay, length = profile_window(self.profile_time_s)
            self.profiler = ServerProfiler(pids=pids or _server_pid_asked(self.conn), delay_s=delay, length_s=length,
                                           name=f"server-profile-{self.job_id}")
            self.profiler.start()
        if not settings.BENCHAPP_METRICS_SAMPLING:
            return
        started_at = time.monotonic()
        port = self.conn.port if self.same_host else None
        self.host = HostSampler(job_id=self.job_id, client_index=self.client_index, pid=pid,
                                started_at=started_at, server_port=port, conn=self.conn, attempt=self.attempt)
        self.host.start()
        if self.sample_server:
            self.server = ServerSampler(job_id=self.job_id, conn=self.conn, started_at=started_at,
                                        attempt=self.attempt)
            self.server.start()

    def stop(self) -> None:
        self.last_read()
        for sampler in (self.host, self.server):
            if sampler is not None:
                sampler.stop()
        self.profile_end()

    def profile_end(self) -> dict[str, Any]:
        """The server's profile ({} when none was taken), once perf has reported; a window sysbench ended before
        is cut short."""
        if self.profiler is None:
            return {}
        if self.profiler.is_alive():
            self.profiler.cancel()
            self.profiler.join(timeout=60)
        return self.profiler.result

    def last_read(self) -> None:
        """Tells both samplers to stop, and returns once the server's reading after the run is taken (before
        anything else touches the target), without waiting for their rows to be written (stop() does)."""
        for sampler in (self.host, self.server):
            if sampler is not None:
                sampler.signal_stop()
        if self.server is not None:
            self.server.last_read.wait(timeout=10)


def round_trip_measure(*, run_id: int, target_id: int, host_name: str, conn: Connection,
                       count: int = ROUND_TRIPS) -> RoundTrip | None:
    """`count` SELECT 1 round trips from this host to the target, once per run, host and target."""
    if RoundTrip.objects.filter(run_id=run_id, target_id=target_id, host_name=host_name).exists():
        return None
    try:
        reader = StatusReader(conn)
    except ProbeError as exc:
        log.warning("round trips to %s:%s not measured: %s", conn.host, conn.port, exc)
        return None
    try:
        timings = sorted(reader.round_trips(count))
    except ProbeError as exc:
        log.warning("round trips to %s:%s not measured: %s", conn.host, conn.port, exc)
        return None
    finally:
        reader.close()
    p99 = timings[min(len(timings) - 1, int(round(0.99 * (len(timings) - 1))))]
    try:
        return RoundTrip.objects.create(run_id=run_id, target_id=target_id, host_name=host_name, count=len(timings),
                                        median_ms=round(statistics.median(timings), 4), p99_ms=round(p99, 4))
    except IntegrityError:
        return None  # another client of this host measured it meanwhile


# ---------------------------------------------------------------- reading them back

HOST_SERIES = ("cpu_busy_pct", "client_cpus_busy_pct", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct",
               "cpu_steal_pct", "sysbench_cpu_pct", "load_1m", "context_switches_per_s", "net_bytes_in_per_s",
               "net_bytes_out_per_s", "net_packets_in_per_s", "net_packets_out_per_s", "memory_used_pct",
               "server_cpu_pct", "others_cpu_pct", "top_other_name", "top_other_cpu_pct")


def job_metrics(job: Job) -> dict[str, Any]:
    """A job's host and server seconds as series on sysbench's time axis (one list per figure), its exact
    server readings and the round trips of its run to its target."""
    hosts: dict[int, dict[str, Any]] = {}
    for row in seconds_rows(Kind.HOST, {job.pk: job.attempt}, fields=("t", "per_core_busy_pct", *HOST_SERIES)):
        host = hosts.setdefault(row["client_index"], {"client_index": row["client_index"], "t": [],
                                                      "per_core_busy_pct": [], **{n: [] for n in HOST_SERIES}})
        host["t"].append(row["t"])
        host["per_core_busy_pct"].append(row["per_core_busy_pct"])
        for name in HOST_SERIES:
            host[name].append(row[name])
    names = dict(job.clients.values_list("index", "host_name"))
    for index, host in hosts.items():
        host["host_name"] = names.get(index, "")
    server: dict[str, Any] = {"t": [], "rates": {}, "gauges": {}}
    samples = [(r["t"], r["rates"], r["gauges"])
               for r in seconds_rows(Kind.SERVER, {job.pk: job.attempt}, fields=("t", "rates", "gauges"))]
    rate_names = sorted({name for _, rates, _ in samples for name in rates})
    gauge_names = sorted({name for _, _, gauges in samples for name in gauges})
    server["rates"] = {name: [] for name in rate_names}
    server["gauges"] = {name: [] for name in gauge_names}
    for t, rates, gauges in samples:
        server["t"].append(t)
        for name in rate_names:
            server["rates"][name].append(rates.get(name))
        for name in gauge_names:
            server["gauges"][name].append(gauges.get(name))
    trips = RoundTrip.objects.filter(run_id=job.run_id, target_id=job.target_id).order_by("host_name")
    return {
        "job": job.pk, "verdict": job.verdict, "findings": job.findings,
        "hosts": [hosts[i] for i in sorted(hosts)], "server": server, "server_window": job.server_window,
        "round_trips": [{"host_name": r.host_name, "count": r.count, "median_ms": r.median_ms, "p99_ms": r.p99_ms}
                        for r in trips],
    }
