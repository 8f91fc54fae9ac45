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
    full_cache: bool = False
    cache_hit_ratio: float | None = None
    shared_with: list[str] = field(default_factory=list)
    imported: bool = False
    # A multi-client job's merged throughput beside each client's own (sysbench's summaries), per measure.
    job_rates: dict[str, float | None] = field(default_factory=dict)          # "qps", "tps"
    client_rates: dict[str, list[float | None]] = field(default_factory=dict)


# Each finding's cause in a few words, for a comparison's banner and its cells ("13 of 24 jobs invalid: the client
# host's CPU was saturated"); the finding's own message on the job page says the rest.
REASONS = {
    "client-bound": "the client host's CPU was saturated",
    "server-disagrees": "the server counted other work than sysbench sent",
    "not-settled": "throughput had not settled",
    "errors": "sysbench reported ignored errors",
    "reconnects": "sysbench had to reconnect",
    "cache-cold": "the server's cache was cold",
    "overran": "sysbench ran past its time",
    "shared": "another job used the target at the same time",
    "client-sum": "the clients' own figures do not add up to the job's",
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
    """The least-squares slope over `values`, times their span, as a percentage of their mean."""
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2 or mean == 0:
        return 0.0
    slope = statistics.linear_regression(range(n), values).slope
    return 100 * slope * (n - 1) / mean


def judge(evidence: Evidence) -> tuple[list[Finding], str]:
    findings = [
        *_client_bound(evidence), *_same_host(evidence), *_server(evidence), *_settled(evidence),
        *_errors(evidence), *_cache(evidence), *_overran(evidence), *_shared(evidence), *_imported(evidence),
        *_client_sum(evidence),
    ]
    return findings, verdict_of(findings)


def _client_bound(e: Evidence) -> list[Finding]:
    out = []
    for host, busy in sorted(e.client_busy_pct.items()):
        steal = e.client_steal_pct.get(host, [])
        if not busy:
            continue
        hot = sum(1 for i, b in enumerate(busy)
                  if b > CLIENT_BUSY_PCT or (i < len(steal) and steal[i] > CLIENT_STEAL_PCT))
        share = hot / len(busy)
        if share > CLIENT_BOUND_SHARE:
            peak_steal = max(steal, default=0.0)
            cause = f"steal up to {peak_steal:.0f} %" if peak_steal > CLIENT_STEAL_PCT else \
                f"its CPUs over {CLIENT_BUSY_PCT:.0f} % busy"
            out.append(Finding(
                "client-bound", INVALID, f"{share:.0%} of seconds",
                f"Client {host} was the bottleneck ({cause} for {share:.0%} of the run): the figures measure the "
                "client, not the server. Add a client host.",
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
                           f"Throughput still moved by {trend:+.1f} % over the last half of the run: it had not "
                           "settled. Run longer, or warm up longer."))
    elif cv > e.noise_cv_pct:
        out.append(Finding("not-settled", SUSPECT, f"CV {cv:.1f} %",
                           f"Throughput over the last half of the run varied by {cv:.1f} % (coefficient of "
                           f"variation), above the campaign's noise setting of {e.noise_cv_pct:g} %."))
    return out


def _errors(e: Evidence) -> list[Finding]:
    out = []
    for code, values, what in (("errors", e.errors_per_s, "ignored errors"),
                               ("reconnects", e.reconnects_per_s, "reconnects")):
        total = sum(values)
        if total > 0:
            out.append(Finding(code, SUSPECT, f"{total / len(values):.2f}/s",
                               f"sysbench reported {what} ({total / len(values):.2f} per second on average): "
                               "the figures include failed work."))
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
    if not e.shared_with:
        return []
    return [Finding("shared", INVALID, f"{len(e.shared_with)} job(s)",
                    "Another benchapp job used the same target or client host during this one: "
                    + "; ".join(e.shared_with[:3]) + ("; ..." if len(e.shared_with) > 3 else ""))]


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
