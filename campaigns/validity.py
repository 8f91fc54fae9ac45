"""Whether a job's figures can be believed: findings, each with its figure and a plain sentence, and a verdict.

Pure functions over what was measured (no ORM): campaigns.execution.verdict gathers the evidence of a job and
stores what comes out. A finding's level is `info` (said, not held against the job), `suspect` or `invalid`; the
verdict is the worst level found (`valid` when nothing worse than info).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

VALID, SUSPECT, INVALID = "valid", "suspect", "invalid"
INFO = "info"
_RANK = {"": -1, VALID: 0, INFO: 0, SUSPECT: 1, INVALID: 2}

CLIENT_BUSY_PCT = 90.0        # the CPUs sysbench may use, busy above this ...
CLIENT_STEAL_PCT = 10.0       # ... or steal above this ...
CLIENT_BOUND_SHARE = 0.2      # ... for more than this share of the run's seconds: client-bound
SERVER_DISAGREE_PCT = 5.0     # server's own rate vs sysbench's
SERVER_CHECK_MIN_S = 30.0     # shorter runs are not checked against the server
TREND_PCT = 5.0               # the last half of the run trends by more than this: not settled ...
TREND_T = 3.0                 # ... and the noise cannot explain it (|slope / its standard error|)
MIN_INTERVALS = 10            # fewer measured intervals: too short to judge
OVERRUN_PCT = 10.0            # sysbench ran longer than --time by more than this
FULL_CACHE_HIT_RATIO = 0.99
CLIENT_SUM_PCT = 0.5          # a multi-client job's figure vs the sum of its clients' own
STARVED_IDLE_PCT = 5.0        # a client host under this idle share in a second ...
STARVED_SHARE = 0.2           # ... for more than this share of the run's seconds was starved; then
OTHERS_HOST_SHARE = 0.2       # other processes above this share of the host took it (free the host); else
                              # sysbench took more of it than a local target server (add a client host)


@dataclass(frozen=True)
class Finding:
    code: str
    level: str
    figure: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "level": self.level, "figure": self.figure, "message": self.message}


@dataclass(frozen=True)
class Evidence:
    """What is known of one job. Per-second lists hold the measured intervals in order (the first, ramp-up,
    interval left out as the steady-state rule does); a list is empty when that measure is missing."""

    time_s: float | None = None
    duration_s: float | None = None                      # sysbench's own total time
    qps: list[float] = field(default_factory=list)
    errors_per_s: list[float] = field(default_factory=list)
    reconnects_per_s: list[float] = field(default_factory=list)
    noise_cv_pct: float = 5.0
    client_busy_pct: dict[str, list[float]] = field(default_factory=dict)   # per client host
    client_steal_pct: dict[str, list[float]] = field(default_factory=dict)
    same_host: bool = False
    server_measure: str = "queries"                       # or "transactions"
    server_total: float | None = None                     # the server's count over the window
    sysbench_total: float | None = None                   # sysbench's count of the same measure
    window_s: float | None = None
    # benchapp's server's own count of the target's work from the job's start to its close (Job.server_work, a
    # column no client host may write), and the clients' claim of the same measure.
    server_work_total: float | None = None
    server_work_claimed: float | None = None
    full_cache: bool = False
    cache_hit_ratio: float | None = None
    shared_with: list[str] = field(default_factory=list)       # other jobs on the same target (database)
    shared_host_with: list[str] = field(default_factory=list)  # other jobs on one of its client hosts
    # Ignored errors per second that are part of the workload (its declared rate × the job's TPS): within them a
    # job is not suspect for its errors. None: every error counts.
    expected_errors_per_s: float | None = None
    expected_errors_pct: float | None = None
    imported: bool = False
    # A multi-client job's merged throughput beside each client's own (sysbench's summaries), per measure.
    job_rates: dict[str, float | None] = field(default_factory=dict)          # "qps", "tps"
    client_rates: dict[str, list[float | None]] = field(default_factory=dict)
    # Per client host and second, who took its CPU (percent of one core): sysbench, the target server when it runs
    # there, every other process (and the busiest of them by name); and the host's idle share; its core count.
    client_idle_pct: dict[str, list[float]] = field(default_factory=dict)
    client_sysbench_pct: dict[str, list[float | None]] = field(default_factory=dict)
    client_server_pct: dict[str, list[float | None]] = field(default_factory=dict)
    client_others_pct: dict[str, list[float | None]] = field(default_factory=dict)
    client_top_other: dict[str, list[str]] = field(default_factory=dict)
    client_top_other_pct: dict[str, list[float | None]] = field(default_factory=dict)
    client_cores: dict[str, int] = field(default_factory=dict)
    # Each client's per-second rows against sysbench's own count, by host; seconds only some clients reported.
    seconds: dict[str, SecondsAccount] = field(default_factory=dict)
    partial_seconds: int = 0
    # A host test (cpu, memory, fileio, threads, mutex): it measures its client host, so the checks of a target
    # (TARGET_SIDE) say nothing of it; a cpu test is meant to saturate the host's CPUs.
    host_test: bool = False
    # The workload's check after the measurement (Workload.check_command): its name and outcome (Job.CheckOutcome).
    check_command: str = ""
    check_outcome: str = ""


# Each finding's cause in a few words, for a comparison's banner and its cells ("13 of 24 jobs invalid: the client
# host's CPU was saturated"); the finding's own message on the job page says the rest.
REASONS = {
    "client-bound": "the client host's CPU was saturated",
    "server-disagrees": "the server counted other work than sysbench sent",
    "server-contradicts-clients": "the clients reported more work than benchapp's server saw the target do",
    "not-settled": "throughput had not settled",
    "errors": "sysbench reported ignored errors",
    "errors-expected": "ignored errors within the workload's declared rate",
    "reconnects": "sysbench had to reconnect",
    "cache-cold": "the server's cache was cold",
    "overran": "sysbench ran past its time",
    "shared": "another job used the target at the same time",
    "shared-host": "another job used the client host at the same time",
    "client-sum": "the clients' own figures do not add up to the job's",
    "check-failed": "the workload's own check of the data failed",
    "check-not-run": "the workload's own check could not run",
}


def reason(code: str) -> str:
    """A finding's cause in a few words (its code where none is written)."""
    return REASONS.get(code, code.replace("-", " "))


def worst(levels: list[str]) -> str:
    """The worst verdict of several (a comparison cell's, from its jobs); "" when none was judged."""
    judged = [level for level in levels if level]
    return max(judged, key=lambda level: _RANK[level]) if judged else ""


def verdict_of(findings: list[Finding]) -> str:
    return {0: VALID, 1: SUSPECT, 2: INVALID}[max([0, *(_RANK[f.level] for f in findings)])]


def trend_t(values: list[float]) -> float:
    """The least-squares slope over `values` in standard errors: how far from "no trend" the noise leaves it
    (a noisy run's fitted slope is large by chance; 0 when there are too few points or no noise at all)."""
    n = len(values)
    if n < 3:
        return 0.0
    fit = statistics.linear_regression(range(n), values)
    residuals = sum((v - (fit.intercept + fit.slope * i)) ** 2 for i, v in enumerate(values))
    spread_x = sum((i - (n - 1) / 2) ** 2 for i in range(n))
    if residuals == 0:
        return 0.0 if fit.slope == 0 else float("inf")
    return fit.slope / (residuals / (n - 2) / spread_x) ** 0.5


def trend_pct(values: list[float]) -> float:
    """The change of the least-squares line over `values`, from its first point to its last, as a percentage of its
    first: a fall from 470 to 100 is −78.7 %, never below −100 % (as a share of the mean it read −191.9 %). A line
    that starts at or below zero (a rise from nothing) is measured against the mean instead."""
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2 or mean == 0:
        return 0.0
    slope = statistics.linear_regression(range(n), values).slope
    change = slope * (n - 1)
    start = mean - change / 2
    if start <= 0:
        return 100 * change / mean
    return max(-100.0, 100 * change / start)


# Findings about a database target and the client as its load generator: not judged for a host test.
TARGET_SIDE = frozenset({"client-bound", "same-host", "server-disagrees", "server-not-checked", "cache-cold",
                         "client-sum", "server-contradicts-clients"})


def judge(evidence: Evidence) -> tuple[list[Finding], str]:
    findings = [
        *_client_bound(evidence), *_same_host(evidence), *_server(evidence), *_server_own(evidence),
        *_settled(evidence),
        *_errors(evidence), *_cache(evidence), *_overran(evidence), *_shared(evidence), *_imported(evidence),
        *_client_sum(evidence), *_seconds(evidence), *_check(evidence),
    ]
    if evidence.host_test:
        findings = [f for f in findings if f.code not in TARGET_SIDE]
    return findings, verdict_of(findings)


def _mean(values: list[float | None]) -> float:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else 0.0


def _at(series: dict[str, list[Any]], host: str, seconds: list[int]) -> list[Any]:
    values = series.get(host, [])
    return [values[i] for i in seconds if i < len(values)]


def _host_busy_message(e: Evidence, host: str, seconds: list[int]) -> str | None:
    """"the host was busy with other processes (sysbench 35 %, others 140 %: `sysbench cpu`): free the host" when
    processes other than sysbench and the target server took more than OTHERS_HOST_SHARE of the host in those
    seconds; None otherwise (or when the sampler did not record them)."""
    others = _at(e.client_others_pct, host, seconds)
    if not others or all(v is None for v in others):
        return None
    cores = e.client_cores.get(host) or 1
    others_pct = _mean(others)
    if others_pct <= OTHERS_HOST_SHARE * 100 * cores:
        return None
    sysbench = _mean(_at(e.client_sysbench_pct, host, seconds))
    # The process that took the most CPU over those seconds (each second's busiest, by its CPU).
    taken: dict[str, float] = {}
    for name, pct in zip(_at(e.client_top_other, host, seconds), _at(e.client_top_other_pct, host, seconds),
                         strict=False):
        if name:
            taken[name] = taken.get(name, 0.0) + (pct or 0.0)
    top = max(taken, key=lambda n: taken[n]) if taken else ""
    return (f"the host was busy with other processes (sysbench {sysbench:.0f} %, others {others_pct:.0f} %"
            + (f": `{top}`" if top else "") + "): free the host")


def _starved(e: Evidence, stolen: set[str]) -> tuple[list[Finding], set[str]]:
    """Client hosts under STARVED_IDLE_PCT idle for more than STARVED_SHARE of the run, judged by who took the CPU;
    and the hosts so judged (the client-bound rule leaves them alone). A host in `stolen` (its steal over the
    limit) is judged here only when other processes crowded it; else by its steal."""
    out, judged = [], set()
    for host, idle in sorted(e.client_idle_pct.items()):
        if not idle or host not in e.client_others_pct:
            continue
        seconds = [i for i, v in enumerate(idle) if v < STARVED_IDLE_PCT]
        share = len(seconds) / len(idle)
        if share <= STARVED_SHARE:
            continue
        starved = f"Client {host} had under {STARVED_IDLE_PCT:.0f} % idle CPU for {share:.0%} of the run"
        busy = _host_busy_message(e, host, seconds)
        if busy is not None:
            judged.add(host)
            out.append(Finding("host-busy", INVALID, f"{share:.0%} of seconds",
                               f"{starved}: {busy}. The figures measure the crowded host, not the server."))
            continue
        if host in stolen:
            continue  # its idle time went to the hypervisor: said by its steal, never as sysbench's saturation
        cores = e.client_cores.get(host) or 1
        sysbench = _mean(_at(e.client_sysbench_pct, host, seconds))
        server = _mean(_at(e.client_server_pct, host, seconds))
        if sysbench > server:
            judged.add(host)
            out.append(Finding("client-bound", INVALID, f"{share:.0%} of seconds",
                               f"{starved}, sysbench itself using {sysbench:.0f} % of the "
                               f"{max(0.0, 100 * cores - server):.0f} % the target server left: the load generator "
                               "is saturated: add a client host."))
        # Else a local target server took most of the host beside sysbench: the shared-host rule says so.
    return out, judged


def _stolen(e: Evidence, host: str) -> Finding | None:
    """A virtual machine whose hypervisor gave its CPUs to others (steal above CLIENT_STEAL_PCT for more than
    CLIENT_BOUND_SHARE of the run): the load generator was slowed from outside, which neither another client host
    nor freeing this one cures; measuring again later may."""
    steal = e.client_steal_pct.get(host, [])
    if not steal:
        return None
    stolen = sum(1 for v in steal if v is not None and v > CLIENT_STEAL_PCT)
    share = stolen / len(steal)
    if share <= CLIENT_BOUND_SHARE:
        return None
    peak = max(v for v in steal if v is not None)
    mean = _mean([v for v in steal if v is not None])
    return Finding("host-busy", INVALID, f"{share:.0%} of seconds",
                   f"Client {host} lost its CPUs to the machine it runs on: steal above {CLIENT_STEAL_PCT:.0f} % for "
                   f"{share:.0%} of the run (mean {mean:.0f} %, up to {peak:.0f} %), the hypervisor running other "
                   "virtual machines on them. The figures measure a crowded host, not the server.")


def _client_bound(e: Evidence) -> list[Finding]:
    # Other processes on the host first (what its owner can free), then the hypervisor's steal.
    stolen = {host: f for host in sorted(e.client_steal_pct) if (f := _stolen(e, host)) is not None}
    out, judged = _starved(e, set(stolen))
    out.extend(f for host, f in stolen.items() if host not in judged)
    judged |= set(stolen)
    for host, busy in sorted(e.client_busy_pct.items()):
        if not busy or host in judged:
            continue
        hot_seconds = [i for i, b in enumerate(busy) if b > CLIENT_BUSY_PCT]
        share = len(hot_seconds) / len(busy)
        if share > CLIENT_BOUND_SHARE:
            crowded = _host_busy_message(e, host, hot_seconds)
            if crowded is not None:
                # The CPUs were busy, but not with sysbench: another client host would not help.
                out.append(Finding("host-busy", INVALID, f"{share:.0%} of seconds",
                                   f"Client {host}'s CPUs were over {CLIENT_BUSY_PCT:.0f} % busy for {share:.0%} of "
                                   f"the run: {crowded}. The figures measure the crowded host, not the server."))
                continue
            out.append(Finding(
                "client-bound", INVALID, f"{share:.0%} of seconds",
                f"Client {host} was the bottleneck (its CPUs over {CLIENT_BUSY_PCT:.0f} % busy for {share:.0%} of "
                "the run): the figures measure the client, not the server. Add a client host.",
            ))
    return out


def _same_host(e: Evidence) -> list[Finding]:
    if not e.same_host:
        return []
    return [Finding("same-host", INFO, "target on the client host",
                    "Client and server share a host: they compete for its CPUs, so absolute figures are lower "
                    "than on separate machines.")]


def _server(e: Evidence) -> list[Finding]:
    if e.server_total is None or e.sysbench_total is None or e.window_s is None:
        return []
    if e.window_s < SERVER_CHECK_MIN_S:
        return [Finding("server-not-checked", INFO, f"{e.window_s:.0f} s",
                        f"Runs under {SERVER_CHECK_MIN_S:.0f} s are not checked against the server's own count.")]
    if e.sysbench_total <= 0:
        return []
    diff = 100 * (e.server_total - e.sysbench_total) / e.sysbench_total
    if abs(diff) <= SERVER_DISAGREE_PCT:
        return []
    return [Finding(
        "server-disagrees", INVALID, f"{diff:+.1f} %",
        f"The server counted {e.server_total:,.0f} {e.server_measure} while sysbench sent {e.sysbench_total:,.0f} "
        f"({diff:+.1f} %): something else used the server, or sysbench's figures are wrong.",
    )]


# The server's own count spans more than the clients' run (the job's start to its close: prepare checks, the clients'
# gates, the samplers' reads), so it is never below an honest claim; only a claim above it by this much is a
# contradiction (a statistics flush that lags, a few statements) and not noise.
SERVER_WORK_SLACK_PCT = 10.0
SERVER_WORK_SLACK_ABS = 100.0


def _server_own(e: Evidence) -> list[Finding]:
    """The clients' figures against the count benchapp's server itself took of the target's work, in a column no
    client host can write: a compromised client host's forged figures are contradicted here, whatever else it
    forged (the per-second server samples and the server window are a client's own readings)."""
    if e.server_work_total is None or e.server_work_claimed is None or e.server_work_claimed <= 0:
        return []
    allowed = e.server_work_total * (1 + SERVER_WORK_SLACK_PCT / 100) + SERVER_WORK_SLACK_ABS
    if e.server_work_claimed <= allowed:
        return []
    over = 100 * (e.server_work_claimed - e.server_work_total) / max(e.server_work_total, 1.0)
    return [Finding(
        "server-contradicts-clients", INVALID, f"{over:+.0f} %",
        f"The clients reported {e.server_work_claimed:,.0f} {e.server_measure} but benchapp's server saw the target "
        f"do {e.server_work_total:,.0f} in all while the job ran ({over:+.0f} %): these figures are not this "
        "server's work (a client host's forged or mistaken report).",
    )]


def _settled(e: Evidence) -> list[Finding]:
    if len(e.qps) < MIN_INTERVALS:
        return [Finding("too-short", INFO, f"{len(e.qps)} intervals",
                        f"Too short to judge whether throughput settled (fewer than {MIN_INTERVALS} measured "
                        "intervals).")]
    half = e.qps[len(e.qps) // 2:]
    trend = trend_pct(half)
    mean = statistics.fmean(half)
    cv = 100 * statistics.stdev(half) / mean if mean and len(half) > 1 else 0.0
    out = []
    if abs(trend) > TREND_PCT and abs(trend_t(half)) >= TREND_T:
        out.append(Finding("not-settled", SUSPECT, f"{trend:+.1f} %",
                           f"Throughput still {'fell' if trend < 0 else 'rose'} by {abs(trend):.1f} % over the "
                           "last half of the run: it had not settled. Run longer, or warm up longer."))
    elif cv > e.noise_cv_pct:
        out.append(Finding("not-settled", SUSPECT, f"CV {cv:.1f} %",
                           f"Throughput over the last half of the run varied by {cv:.1f} % (coefficient of "
                           f"variation), above the campaign's noise setting of {e.noise_cv_pct:g} %."))
    return out


# Errors a workload declares are a rate of chance events: up to this many times the declared rate is that rate.
EXPECTED_ERRORS_MARGIN = 1.5


def _errors(e: Evidence) -> list[Finding]:
    out = []
    for code, values, what in (("errors", e.errors_per_s, "ignored errors"),
                               ("reconnects", e.reconnects_per_s, "reconnects")):
        total = sum(values)
        if total <= 0:
            continue
        rate = total / len(values)
        expected = e.expected_errors_per_s if code == "errors" else None
        declared = f"{e.expected_errors_pct:g} per 100 transactions" if e.expected_errors_pct is not None else ""
        if expected is not None and rate <= expected * EXPECTED_ERRORS_MARGIN:
            out.append(Finding("errors-expected", INFO, f"{rate:.2f}/s",
                               f"sysbench reported {rate:.2f} ignored errors per second, within the "
                               f"{expected:.2f}/s the workload declares as part of it ({declared}): counted, "
                               "not held against the job."))
            continue
        beyond = (f", above the {expected:.2f}/s the workload declares as part of it ({declared})"
                  if expected is not None else "")
        out.append(Finding(code, SUSPECT, f"{rate:.2f}/s",
                           f"sysbench reported {what} ({rate:.2f} per second on average{beyond}): the figures "
                           "include failed work."))
    return out


def _cache(e: Evidence) -> list[Finding]:
    if not e.full_cache or e.cache_hit_ratio is None or e.cache_hit_ratio >= FULL_CACHE_HIT_RATIO:
        return []
    return [Finding("cache-cold", SUSPECT, f"{e.cache_hit_ratio:.2%}",
                    f"Buffer-pool hit ratio {e.cache_hit_ratio:.2%} is below 99 % on a full-cache dataset: reads "
                    "went to disk, so this is not the in-memory figure it claims to be.")]


def _overran(e: Evidence) -> list[Finding]:
    if not e.time_s or e.duration_s is None:
        return []
    over = 100 * (e.duration_s - e.time_s) / e.time_s
    if over <= OVERRUN_PCT:
        return []
    return [Finding("overran", SUSPECT, f"{e.duration_s:.1f} s for {e.time_s:g} s",
                    f"sysbench ran {over:.0f} % longer than its --time: the last events waited on a stalled "
                    "server or client.")]


def _shared(e: Evidence) -> list[Finding]:
    """Other benchapp jobs beside this one: on its target ("shared"), on one of its client hosts ("shared-host");
    the banner names which (it said "the target" where the client host was shared)."""
    out = []
    for code, jobs, what in (("shared", e.shared_with, "target"), ("shared-host", e.shared_host_with, "client host")):
        if jobs:
            out.append(Finding(code, INVALID, f"{len(jobs)} job(s)",
                               f"Another benchapp job used the same {what} during this one: "
                               + "; ".join(jobs[:3]) + ("; ..." if len(jobs) > 3 else "")))
    return out


def _check(e: Evidence) -> list[Finding]:
    """The workload's own check after the run: data it finds inconsistent makes the figures suspect (they were
    measured on a database that lost or broke transactions); a check that could not run is said, no more."""
    if not e.check_command or e.check_outcome in ("", "passed"):
        return []
    if e.check_outcome == "failed":
        return [Finding("check-failed", SUSPECT, f"{e.check_command}: failed",
                        f"The workload's `{e.check_command}` found the data inconsistent after the run (its output is "
                        "on the job): the figures were measured on a database that did not keep every transaction.")]
    return [Finding("check-not-run", INFO, f"{e.check_command}: not run",
                    f"The workload's `{e.check_command}` could not run after the measurement (the job says why): "
                    "the data was not checked.")]


def _imported(e: Evidence) -> list[Finding]:
    if not e.imported:
        return []
    return [Finding("imported", INFO, "log only",
                    "Imported from a log: no host or server measurements, so only sysbench's own figures were "
                    "judged.")]


def client_sum_off_pct(job_rate: float | None, client_rates: list[float | None]) -> float | None:
    """How far (%) a job's rate is from the sum of its clients' rates; None when either is missing."""
    if not job_rate or not client_rates or any(rate is None for rate in client_rates):
        return None
    total = sum(rate for rate in client_rates if rate is not None)
    return abs(job_rate - total) / job_rate * 100


def _client_sum(e: Evidence) -> list[Finding]:
    out = []
    for measure, job_rate in sorted(e.job_rates.items()):
        rates = e.client_rates.get(measure, [])
        off = client_sum_off_pct(job_rate, rates) if len(rates) > 1 else None
        if off is not None and off > CLIENT_SUM_PCT:
            total = sum(rate for rate in rates if rate is not None)
            out.append(Finding(
                "client-sum", INVALID, f"{off:.1f} % off",
                f"The job's {measure.upper()} ({job_rate:.1f}) is not the sum of its {len(rates)} clients' "
                f"({total:.1f}): the job's figures do not stand for what its clients measured."))
    return out


def findings_from_dicts(rows: list[dict[str, Any]]) -> list[Finding]:
    return [Finding(**{k: str(row.get(k, "")) for k in ("code", "level", "figure", "message")}) for row in rows]


# ---------------------------------------------------------------- per-second figures that add up

SECONDS_SUM_PCT = 2.0         # a client's per-second rows vs sysbench's own transaction count


@dataclass(frozen=True)
class SecondsAccount:
    """One client's per-second rows held against sysbench's own count: each second counted once, weighted by its
    own interval (t minus the previous t: a report that came late covers the seconds it skipped, at the rate
    sysbench computed over them).

    sysbench may print no line for the interval that ends the run (its last second often goes unreported, and its
    rate is anyone's guess on a busy machine): up to one interval after the last report may hold anything from
    nothing to that interval at the run's fastest reported rate (`tail_max`); more than that is reports missing."""

    measure: str                    # "transactions", or "queries" where sysbench prints no tps (0.5, no COMMIT)
    counted: float                  # the rows' rate × interval, summed
    total: float | None             # sysbench's summary count
    tail_max: float = 0.0           # what the unreported end of the run may add to `counted`, at most
    missing: int = 0                # report intervals without a line (a stalled machine skipped them)
    duplicated: tuple[float, ...] = ()  # seconds sysbench printed twice (each stored once)
    lost: tuple[float, ...] = ()    # seconds sysbench printed that were not stored

    def off_pct(self) -> float | None:
        """How far sysbench's count lies outside what the rows allow (0 inside), in % of it."""
        if self.total is None or self.total <= 0:
            return None
        if self.total < self.counted:
            return 100 * (self.counted - self.total) / self.total
        if self.total > self.counted + self.tail_max:
            return 100 * (self.counted + self.tail_max - self.total) / self.total
        return 0.0


def seconds_account(*, seconds: list[tuple[float, float, float]], printed_t: list[float], interval_s: float,
                    transactions: float | None, queries: float | None,
                    duration_s: float | None) -> SecondsAccount:
    """`seconds`: one client's stored rows (t, tps, qps), each t once; `printed_t`: every t sysbench printed, in
    order (a t twice when it printed that second twice); `duration_s`: sysbench's total time."""
    rows = sorted(seconds)
    by_tps = any(tps > 0 for _, tps, _ in rows) or not any(qps > 0 for _, _, qps in rows)
    counted = 0.0
    missing = 0
    previous = 0.0
    step = interval_s if interval_s > 0 else 1.0
    for t, tps, qps in rows:
        span = t - previous
        counted += (tps if by_tps else qps) * span
        missing += max(0, round(span / step) - 1)
        previous = t
    seen: set[float] = set()
    twice = []
    for t in printed_t:
        if t in seen:
            twice.append(t)
        seen.add(t)
    stored = {t for t, _, _ in rows}
    total = transactions if by_tps else queries
    tail_max = 0.0
    if rows and duration_s and previous < duration_s:
        tail = duration_s - previous
        tail_max = max(tps if by_tps else qps for _, tps, qps in rows) * min(tail, step)
        missing += max(0, int(tail / step + 0.5) - 1)
    return SecondsAccount(measure="transactions" if by_tps else "queries", counted=counted, total=total,
                          tail_max=tail_max, missing=missing, duplicated=tuple(twice),
                          lost=tuple(sorted(seen - stored)))


def _seconds(e: Evidence) -> list[Finding]:
    out = []
    for host, account in sorted(e.seconds.items()):
        off = account.off_pct()
        twice = (f"sysbench printed {len(account.duplicated)} second(s) twice "
                 f"(t = {', '.join(f'{t:g}' for t in account.duplicated[:5])} s), each stored once" if account.duplicated
                 else "")
        skipped = f"{account.missing} report interval(s) without a line" if account.missing else ""
        why = "; ".join(filter(None, [twice, skipped]))
        if account.lost:
            out.append(Finding(
                "per-second-incomplete", INVALID, f"{len(account.lost)} second(s) not stored",
                f"Per-second figures incomplete on client {host}: sysbench printed {len(account.lost)} second(s) "
                f"that were not stored (t = {', '.join(f'{t:g}' for t in account.lost[:5])} s). The per-second "
                "figures and the steady state do not stand for the run."))
        elif off is not None and abs(off) > SECONDS_SUM_PCT:
            code, what = (("per-second-duplicated", "duplicated") if account.duplicated
                          else ("per-second-incomplete", "incomplete"))
            out.append(Finding(
                code, INVALID, f"{off:+.1f} %",
                f"Per-second figures {what} on client {host}: its seconds add up to {account.counted:,.0f} "
                f"{account.measure}" + (f" (+ at most {account.tail_max:,.0f} in the unreported end of the run)"
                                        if account.tail_max else "")
                + f", sysbench counted {account.total:,.0f} ({off:+.1f} %)"
                + (f"; {why}" if why else "") + ". The per-second figures and the steady state do not stand for "
                "the run."))
        elif why:
            out.append(Finding(
                "per-second-gaps", INFO, why,
                f"On client {host} {why}; its seconds still add up to sysbench's own count"
                + (f" ({off:+.1f} %)." if off is not None else ".")))
    if e.partial_seconds:
        out.append(Finding(
            "partial-seconds", INFO, f"{e.partial_seconds} second(s)",
            f"{e.partial_seconds} second(s) had a report from only some clients: they are left out of the steady "
            "figures (a second with only some clients is not the job's sum)."))
    return out


# ---------------------------------------------------------------- a run's verdicts, for its status


@dataclass(frozen=True)
class RunVerdicts:
    """How many of a run's succeeded jobs were judged valid, suspect and invalid: a run whose status says
    "succeeded" may still hold nothing to believe, and its status says so with it ("Succeeded · 24 of 24 jobs
    invalid"), wherever the status is shown."""

    valid: int = 0
    suspect: int = 0
    invalid: int = 0

    def judged(self) -> int:
        return self.valid + self.suspect + self.invalid

    def untrusted(self) -> int:
        return self.suspect + self.invalid

    def level(self) -> str:
        """"invalid" when any job is, else "suspect" when any is, else "" (nothing to say)."""
        return "invalid" if self.invalid else "suspect" if self.suspect else ""

    def text(self) -> str:
        """"24 of 24 jobs invalid", "3 of 24 jobs invalid, 2 suspect", "1 of 6 jobs suspect"; "" when every judged
        job is valid (or none was judged)."""
        total = self.judged()
        if not self.untrusted():
            return ""
        jobs = "job" if total == 1 else "jobs"
        if self.invalid:
            tail = f", {self.suspect} suspect" if self.suspect else ""
            return f"{self.invalid} of {total} {jobs} invalid{tail}"
        return f"{self.suspect} of {total} {jobs} suspect"

    def as_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "suspect": self.suspect, "invalid": self.invalid, "level": self.level(),
                "text": self.text()}
