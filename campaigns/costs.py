"""What each query cost the server and the client, and what bounded a measurement: figures from what a job stored.

A job keeps the server's own counters at the start and the end of its measurement (job.server_window), its
per-second host and server samples and the client→target round trip. From them, per job:

- rows_read_per_query: rows the storage engine read (MariaDB Rows_read or MySQL Innodb_rows_read; PostgreSQL
  tup_returned + tup_fetched) per statement (Questions; PostgreSQL: per transaction, its only count of work);
- bp_misses_per_1k_queries and bp_hit_pct: pages the buffer pool had to read from disk (Innodb_buffer_pool_reads;
  blks_read) per 1,000 queries, and the share of page requests it served itself;
- data_reads_per_txn, data_writes_per_txn: data-file reads and writes (Innodb_data_reads/_writes; PostgreSQL
  blks_read, writes not counted per database) per transaction (Com_commit + Com_rollback, or xact_*);
- row_lock_waits_per_s: row-lock waits (Innodb_row_lock_waits; none counted on PostgreSQL);
- threads_running against threads_asked: the server's mean of statements at work (Threads_running,
  backends_active) against the job's sysbench threads;
- server_cpu_ms_per_1k_queries: the target server's CPU, where its host is a client host that measured it;
- client_cpu_ms_per_1k_queries: sysbench's own CPU per 1,000 queries;
- rtt_ms and rtt_share_pct: the median `SELECT 1` round trip and the share of an event's mean latency that its
  queries' round trips take (one per query: an oltp_read_only event is 14 of them).

A figure whose inputs were not stored (a managed server measured from outside, an imported result) is None: never
a guess. `bound()` then names what ran out, with its evidence, or which figure would decide it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# What "ran out" means, each with the figure that says so.
SERVER_CPU_SATURATED_PCT = 85.0   # the server's threads use over 85 % of its host's cores
SHARED_HOST_BUSY_PCT = 90.0       # a host the server shares with sysbench, over 90 % busy (steal left out)
BP_HIT_IO_PCT = 99.0              # below this buffer-pool hit ratio ...
IO_READS_PER_TXN = 1.0            # ... with over one data-file read per transaction: I/O
LOCK_WAITS_PER_TXN = 0.01         # over one row-lock wait per 100 transactions: locks
NETWORK_RTT_SHARE_PCT = 50.0      # the round trip over half the mean latency: the network
CONCURRENCY_RUNNING_SHARE = 0.5   # statements at work under half the threads asked: the server waits on them

MYSQL_QUERIES = ("Questions",)
MYSQL_TRANSACTIONS = ("Com_commit", "Com_rollback")
PGSQL_TRANSACTIONS = ("xact_commit", "xact_rollback")


@dataclass(frozen=True)
class CostInputs:
    """What one job stored, as its costs need it."""

    driver: str
    threads: int
    window: dict[str, Any]
    queries: float | None = None           # sysbench's own count, where the server counts none
    transactions: float | None = None
    latency_avg_ms: float | None = None
    threads_running: float | None = None   # the server's mean over the job's seconds
    server_cpu_pct: float | None = None    # percent of one core, where the server's host was sampled
    server_cores: int | None = None
    sysbench_cpu_pct: float | None = None  # percent of one core
    client_busy_share: float | None = None  # share of seconds the client's CPUs were over 90 % busy
    host_busy_pct: float | None = None     # the first client host's whole CPU, busy, mean (steal left out)
    rtt_ms: float | None = None
    queries_per_event: float | None = None  # sysbench's queries per event: a latency is an event's, a trip a query's
    window_s: float | None = None


def _delta(window: dict[str, Any], *names: str) -> float | None:
    start, end = window.get("start") or {}, window.get("end") or {}
    if not all(name in start and name in end for name in names):
        return None
    return float(sum(max(0.0, float(end[name]) - float(start[name])) for name in names))


def _ratio(numerator: float | None, denominator: float | None, scale: float = 1.0) -> float | None:
    if numerator is None or not denominator:
        return None
    return round(scale * numerator / denominator, 4)


def job_costs(i: CostInputs) -> dict[str, float | None]:
    """The job's per-query costs (module docstring); None where an input was not stored."""
    w = i.window or {}
    window_s = i.window_s
    if window_s is None and w.get("end_t") is not None and w.get("start_t") is not None:
        window_s = float(w["end_t"]) - float(w["start_t"])
    if i.driver == "pgsql":
        transactions = _delta(w, *PGSQL_TRANSACTIONS) or i.transactions
        queries = i.queries or transactions
        rows = _delta(w, "tup_returned", "tup_fetched")
        misses, hits = _delta(w, "blks_read"), _delta(w, "blks_hit")
        requests = (misses + hits) if misses is not None and hits is not None else None
        reads, writes, lock_waits = misses, None, None
    else:
        queries = _delta(w, *MYSQL_QUERIES) or i.queries
        transactions = _delta(w, *MYSQL_TRANSACTIONS) or i.transactions
        rows = _delta(w, "Innodb_rows_read") or _delta(w, "Rows_read")
        misses, requests = _delta(w, "Innodb_buffer_pool_reads"), _delta(w, "Innodb_buffer_pool_read_requests")
        reads, writes = _delta(w, "Innodb_data_reads"), _delta(w, "Innodb_data_writes")
        lock_waits = _delta(w, "Innodb_row_lock_waits")
    qps = _ratio(queries, window_s)
    hit_pct = None if not requests or misses is None else round(100.0 * (1 - misses / requests), 3)

    def cpu_per_1k(pct: float | None) -> float | None:
        # percent of one core = pct/100 CPU-seconds per second; per 1,000 queries in milliseconds.
        return None if pct is None or not qps else round(pct / 100 / qps * 1000 * 1000, 4)

    return {
        "rows_read_per_query": _ratio(rows, queries),
        "bp_misses_per_1k_queries": _ratio(misses, queries, 1000),
        "bp_hit_pct": hit_pct,
        "data_reads_per_txn": _ratio(reads, transactions),
        "data_writes_per_txn": _ratio(writes, transactions),
        "row_lock_waits_per_s": _ratio(lock_waits, window_s),
        "lock_waits_per_txn": _ratio(lock_waits, transactions),
        "threads_running": None if i.threads_running is None else round(i.threads_running, 2),
        "threads_asked": float(i.threads),
        "server_cpu_ms_per_1k_queries": cpu_per_1k(i.server_cpu_pct),
        "server_cpu_share_pct": (None if i.server_cpu_pct is None or not i.server_cores
                                 else round(i.server_cpu_pct / i.server_cores, 1)),
        "client_cpu_ms_per_1k_queries": cpu_per_1k(i.sysbench_cpu_pct),
        "client_busy_share": None if i.client_busy_share is None else round(i.client_busy_share, 3),
        "host_busy_pct": None if i.host_busy_pct is None else round(i.host_busy_pct, 1),
        # The server's and sysbench's own share of a host they share (None unless the server's host was sampled).
        "shared_host_pct": (None if i.server_cpu_pct is None or not i.server_cores else
                            round((i.server_cpu_pct + (i.sysbench_cpu_pct or 0.0)) / i.server_cores, 1)),
        "rtt_ms": None if i.rtt_ms is None else round(i.rtt_ms, 4),
        # An event (oltp_read_only's transaction) is several queries, each a round trip at least.
        "rtt_share_pct": (None if i.rtt_ms is None or not i.latency_avg_ms else round(
            min(100.0, 100.0 * i.rtt_ms * (i.queries_per_event or 1.0) / i.latency_avg_ms), 1)),
    }


# The costs an explanation compares, in the words its sentence uses.
COST_WORDS: dict[str, str] = {
    "bp_misses_per_1k_queries": "buffer-pool misses per 1,000 queries",
    "data_reads_per_txn": "data-file reads per transaction",
    "data_writes_per_txn": "data-file writes per transaction",
    "rows_read_per_query": "rows read per query",
    "lock_waits_per_txn": "row-lock waits per transaction",
    "server_cpu_ms_per_1k_queries": "server CPU ms per 1,000 queries",
    "client_cpu_ms_per_1k_queries": "client CPU ms per 1,000 queries",
}


@dataclass(frozen=True)
class Bound:
    """What ran out in a measurement: "client", "server-cpu", "io", "locks", "network", "concurrency" or
    "undecided", with the evidence in a sentence (or, undecided, the figure that would decide it)."""

    resource: str
    evidence: str

    def to_dict(self) -> dict[str, str]:
        return {"resource": self.resource, "evidence": self.evidence}


def bound(costs: Mapping[str, float | None], *, client_findings: bool = False) -> Bound:
    """The resource that bounds a measurement (or a cell: its costs' medians), from its costs.

    Checked in this order, the first that holds: the client host (validity judged sysbench itself saturated:
    `client_findings`), the network (the round trip is most of a query's latency, whatever the CPUs did), I/O,
    locks, the server's CPU, the CPU of a host the server shares with sysbench, concurrency. A client host
    crowded by other processes is the verdict's to say (host-busy), not a bound of the server's."""
    busy = costs.get("client_busy_share")
    if client_findings:
        share = f"{busy:.0%} of the seconds" if busy is not None else "most of the run"
        return Bound("client", f"sysbench saturated the client host's CPUs ({share} over 90 % busy): the figures "
                               "are the client's, not the server's")
    rtt_share = costs.get("rtt_share_pct")
    if rtt_share is not None and rtt_share > NETWORK_RTT_SHARE_PCT:
        return Bound("network", f"the round trip to the server ({costs.get('rtt_ms') or 0:.2f} ms) is "
                                f"{rtt_share:.0f} % of a query's mean latency")
    hit, reads = costs.get("bp_hit_pct"), costs.get("data_reads_per_txn")
    if hit is not None and reads is not None and hit < BP_HIT_IO_PCT and reads > IO_READS_PER_TXN:
        return Bound("io", f"the buffer pool served {hit:.1f} % of page requests and each transaction read "
                           f"{reads:.1f} data-file pages from disk "
                           f"({costs.get('bp_misses_per_1k_queries') or 0:,.0f} misses per 1,000 queries)")
    waits = costs.get("lock_waits_per_txn")
    if waits is not None and waits > LOCK_WAITS_PER_TXN:
        return Bound("locks", f"{waits * 100:.1f} row-lock waits per 100 transactions "
                              f"({costs.get('row_lock_waits_per_s') or 0:,.1f} per second)")
    server = costs.get("server_cpu_share_pct")
    if server is not None and server > SERVER_CPU_SATURATED_PCT:
        return Bound("server-cpu", f"the server used {server:.0f} % of its host's cores "
                                   f"({costs.get('server_cpu_ms_per_1k_queries') or 0:.1f} ms per 1,000 queries)")
    shared = costs.get("shared_host_pct")
    if server is not None and shared is not None and shared > SHARED_HOST_BUSY_PCT:
        # The server's host was sampled because a client host runs on it: the server and sysbench together took
        # its CPUs (other processes are the verdict's host-busy, not counted here).
        return Bound("host-cpu", f"the server and sysbench together used {shared:.0f} % of the host they share "
                                 f"(the server {server:.0f} %, "
                                 f"{costs.get('server_cpu_ms_per_1k_queries') or 0:.1f} ms per 1,000 queries): "
                                 "its CPUs ran out, shared")
    running, asked = costs.get("threads_running"), costs.get("threads_asked")
    if running is not None and asked and running < CONCURRENCY_RUNNING_SHARE * asked:
        return Bound("concurrency", f"the server had {running:.1f} statements at work for {asked:.0f} threads "
                                    "asked: it waited for them, not they for it")
    missing = []
    if server is None:
        missing.append("the server host's CPU (run a client host on the server's host to sample it)")
    if hit is None:
        missing.append("the server's buffer-pool counters")
    if missing:
        return Bound("undecided", "nothing measured ran out; it would take " + " and ".join(missing))
    return Bound("undecided", "nothing measured ran out: no resource benchapp samples was at its limit")
