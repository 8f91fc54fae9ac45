"""Turn the text that sysbench prints into dataclasses.

Pure on purpose: no Django, no database, only strings in and dataclasses out, so it can be
tested on captured real outputs (tests/data/sysbench/) and reused from a management command.

Two output formats are read:

* sysbench 1.0.x (``format == "1.0"``): ``[ 5s ] thds: 8 tps: ... qps: ... (r/w/o: ...)
  lat (ms,95%): ... err/s: ... reconn/s: ...`` report lines, then ``SQL statistics:``,
  ``General statistics:``, ``Latency (ms):`` and ``Threads fairness:``; optionally a
  ``--histogram=on`` block and ``--report-checkpoints`` blocks.
* sysbench 0.5 (``format == "0.5"``): ``[  10s] threads: 128, tps: ..., reads: ..., writes: ...,
  response time: ...ms (99%), errors: ..., reconnects: ...`` report lines (the earliest 0.5
  builds print ``reads/s:``/``writes/s:`` and no errors), then ``OLTP test statistics:`` and
  ``General statistics:``/``response time:`` (or the older ``Test execution summary:``/
  ``per-request statistics:``) with ``approx.  99 percentile:``.

``--report-checkpoints`` (1.0.20, checked on real outputs in tests/data/sysbench/*checkpoints*): every
checkpoint block, and the final block after them, covers only the time since the previous
checkpoint (sysbench resets its counters and its latency histogram at each checkpoint), while
"total time" keeps counting from the start. No histogram is printed at a checkpoint, only at the end,
and that one covers the last segment only. So `ParsedOutput.summary` is the whole run, combined from
the blocks: counts add up, rates are those counts over the final "total time", min/max/avg latency
combine exactly (avg = sum / events), and the latency percentile is None because no printed figure
gives it for the whole run; `last_segment` keeps the final block as printed and
`histogram_whole_run` is False.

Whatever the input, `parse_output` returns a result and never raises: an upload, a crashed
client (segfault, SIGKILL) or a lost server all leave partial text, and the intervals printed
before the failure are exactly what a user wants to see then.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Interval",
    "Latency",
    "ParsedOutput",
    "SteadyState",
    "Summary",
    "LATENCY_PERCENTILES",
    "histogram_percentile",
    "histogram_percentiles",
    "looks_like_sysbench_output",
    "merge_histograms",
    "parse_interval_line",
    "parse_output",
]

# Figures inside report lines are matched loosely (a character class is the fastest pattern)
# and a malformed one ("1.2.3") is caught by float()'s ValueError instead. Every digit run is
# bounded: a longer one would parse to inf (not valid JSON) or make int() refuse it (over 4,300
# digits), and no real figure needs that many.
_F = r"[\d.]{1,40}"
_NUM = r"\d{1,30}(?:\.\d{1,30})?"
_INT = r"\d{1,20}"

# sysbench 1.0: "[ %.0fs ] thds: %u tps: %4.2f qps: %4.2f (r/w/o: %4.2f/%4.2f/%4.2f)
# lat (ms,%u%%): %4.2f err/s: %4.2f reconn/s: %4.2f". The Lua report_default() hook prints
# "err/s %4.2f" without the colon, and non-SQL tests (cpu, memory...) print "eps:" instead of
# tps/qps and nothing after the latency, hence the alternatives and optional tail.
_INTERVAL_V1 = re.compile(
    rf"\[ ?({_F})s ?\] thds: (\d{{1,9}}) "
    rf"(?:tps: ({_F}) qps: ({_F}) \(r/w/o: ({_F})/({_F})/({_F})\)|eps: ({_F}))"
    rf" lat \(ms,({_F})%\): ({_F})"
    rf"(?: err/s:? ({_F}) reconn/s: ({_F}))?"
)
# sysbench 0.5: "[%4.0fs] threads: %d, tps: %4.2f, reads: %4.2f, writes: %4.2f,
# response time: %4.2fms (%u%%), errors: %4.2f, reconnects: %5.2f" (the %5.2f explains the
# double space before small reconnect figures).
_INTERVAL_V05 = re.compile(
    rf"\[ {{0,12}}({_F})s\] threads: (\d{{1,9}}), tps: ({_F}), reads(?:/s)?: ({_F}), "
    rf"writes(?:/s)?: ({_F}), response time: ({_F})ms \(({_F})%\)"
    rf"(?:, errors: ({_F}), reconnects: {{1,8}}({_F}))?"
)
_LEADING_NUM = re.compile(rf"[-+]?{_NUM}")
_PER_SEC = re.compile(rf"\(({_NUM}) per sec\.\)")
_HIST_ROW = re.compile(rf"({_NUM}) \|\**\s{{1,60}}({_INT})$")
_VERSION = re.compile(r"sysbench (\d{1,4}(?:\.\d{1,6}){1,3}(?:-[0-9A-Za-z.]{1,40})?)")
_PCT_KEY = re.compile(rf"(?:approx\.\s{{1,8}})?({_NUM})(?:th)? percentile")
_BANNER_LINE = re.compile(r"^sysbench \d{1,4}\.\d", re.MULTILINE)
_TOTAL_EVENTS_LINE = re.compile(r"^\s*total number of events:", re.MULTILINE)
_STATS_HEADER_LINE = re.compile(
    r"^(?:SQL statistics|OLTP test statistics|General statistics|Test execution summary):", re.MULTILINE
)

# Lines that report a failure. sysbench prefixes its own messages with FATAL/ALERT (and 0.5's
# Lua binding with PANIC); the others are what a shell or a wrapper adds when the process dies,
# and they are often pasted together with the output.
_ERROR_PREFIXES = (
    "FATAL:",
    "ALERT:",
    "PANIC:",
    "ERROR:",
    "Segmentation fault",
    "Killed",
    "Aborted",
    "Bus error",
    "invalid option",
)
# Words that end the argv of a sysbench command line; the word before one is the test name.
_COMMANDS = frozenset({"run", "prepare", "cleanup", "warmup", "prewarm", "help"})


@dataclass(slots=True)
class Interval:
    """One intermediate report line ("[ 5s ] thds: ..."): rates over the last interval."""

    t: float
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    # The percentile latency of the interval and its label (95.0 for "lat (ms,95%)"). With
    # --percentile=0 sysbench prints "(ms,0%): 0.00": the label is kept (0.0) but the value
    # is None, because 0.00 there means "not measured", not "zero latency".
    latency_pct_ms: float | None
    latency_pct: float | None
    errors_per_s: float
    reconnects_per_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "threads": self.threads,
            "tps": self.tps,
            "qps": self.qps,
            "reads_per_s": self.reads_per_s,
            "writes_per_s": self.writes_per_s,
            "other_per_s": self.other_per_s,
            "latency_pct_ms": self.latency_pct_ms,
            "errors_per_s": self.errors_per_s,
            "reconnects_per_s": self.reconnects_per_s,
        }


@dataclass(slots=True)
class Latency:
    """The "Latency (ms):" block (0.5: "response time:"); every value in milliseconds."""

    min: float | None = None
    avg: float | None = None
    max: float | None = None
    percentile: float | None = None
    # The percentile's label, e.g. 95.0; None when sysbench printed "percentile stats: disabled".
    pct: float | None = None
    # Sum of all event latencies (0.5 prints it in seconds as "total time taken by event
    # execution"; it is converted to ms here so both formats mean the same thing).
    sum: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {
            "min": self.min,
            "avg": self.avg,
            "max": self.max,
            "percentile": self.percentile,
            "pct": self.pct,
            "sum": self.sum,
        }


@dataclass(slots=True)
class Summary:
    """One statistics block: the final one, or one `--report-checkpoints` block.

    Rates are the ones sysbench printed. sysbench prints no per-second figure for reads,
    writes and other queries, so those are derived with the same time base sysbench used for
    the printed rates (transactions / tps): after a checkpoint the counters cover only the time
    since that checkpoint while "total time" keeps counting from the start, so dividing by
    duration_s would be wrong there.
    """

    tps: float | None = None
    qps: float | None = None
    reads_per_s: float | None = None
    writes_per_s: float | None = None
    other_per_s: float | None = None
    transactions: int | None = None
    queries: int | None = None
    # 0.5 builds before "ignored errors" existed printed "deadlocks:" there: same counter.
    ignored_errors: int | None = None
    reconnects: int | None = None
    events: int | None = None
    duration_s: float | None = None
    latency: Latency = field(default_factory=Latency)
    reads: int | None = None
    writes: int | None = None
    other: int | None = None
    # How many --report-checkpoints blocks were combined with the final block into this whole-run
    # summary (0 when sysbench printed none).
    checkpoints: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "tps": self.tps,
            "qps": self.qps,
            "reads_per_s": self.reads_per_s,
            "writes_per_s": self.writes_per_s,
            "other_per_s": self.other_per_s,
            "transactions": self.transactions,
            "queries": self.queries,
            "ignored_errors": self.ignored_errors,
            "reconnects": self.reconnects,
            "duration_s": self.duration_s,
            "events": self.events,
            "latency_ms": self.latency.to_dict(),
            "checkpoints": self.checkpoints,
        }


@dataclass(slots=True)
class SteadyState:
    """Means over the report intervals with t > warmup_s (the ramp-up is left out).

    latency_pct_ms is the mean of the per-interval percentile values: a fair figure to compare
    runs with equal intervals, but not itself a percentile of the whole run. Intervals whose
    percentile was not measured (--percentile=0) are left out of that mean only.
    """

    warmup_s: float
    intervals: int
    tps: float
    qps: float
    latency_pct_ms: float | None
    latency_pct: float | None
    errors_per_s: float
    # Spread of tps across intervals: a large stddev means the run never settled.
    tps_stddev: float
    tps_min: float
    tps_max: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class ParsedOutput:
    """Everything read from one sysbench output."""

    sysbench_version: str | None = None
    # The test name when the text shows it (a pasted command line, --test=...); the 1.0 banner
    # does not name the test, so it is usually None for raw captured stdout.
    test: str | None = None
    threads: int | None = None
    # True only when the final statistics block was read whole (down to "execution time
    # (avg/stddev)"); a checkpoint block never makes a run complete.
    complete: bool = False
    errors: list[str] = field(default_factory=list)
    summary: Summary | None = None
    intervals: list[Interval] = field(default_factory=list)
    # (bucket value in ms, count) rows of --histogram=on; [] when the block was printed empty.
    histogram: list[tuple[float, int]] | None = None
    steady: SteadyState | None = None
    format: str = "1.0"
    # --report-checkpoints blocks in order; each covers the time since the previous checkpoint.
    checkpoints: list[Summary] = field(default_factory=list)
    # With checkpoints, the final block as sysbench printed it (the time since the last checkpoint);
    # `summary` is then the whole run. None without checkpoints.
    last_segment: Summary | None = None

    @property
    def histogram_whole_run(self) -> bool:
        """Whether `histogram` covers the whole run (not only the time after the last checkpoint)."""
        return self.histogram is not None and not self.checkpoints

    def to_dict(self) -> dict[str, Any]:
        return {
            "sysbench_version": self.sysbench_version,
            "test": self.test,
            "threads": self.threads,
            "complete": self.complete,
            "errors": list(self.errors),
            "format": self.format,
            "summary": self.summary.to_dict() if self.summary is not None else None,
            "steady": self.steady.to_dict() if self.steady is not None else None,
            "intervals": [iv.to_dict() for iv in self.intervals],
            "histogram": [[v, c] for v, c in self.histogram] if self.histogram is not None else None,
        }


def parse_interval_line(line: str) -> Interval | None:
    """Parse one intermediate report line; None for any other line. Never raises.

    Called for every line of long outputs, so it rejects most lines on the first character
    and then tries one compiled pattern (the 0.5 pattern only for lines that say "threads:").
    """
    if not line or line[0] != "[":
        if not isinstance(line, str):
            return None
        line = line.strip()
        if not line or line[0] != "[":
            return None
    try:
        m = _INTERVAL_V1.match(line)
        if m is not None:
            t, thds, tps, qps, rd, wr, ot, eps, pct, lat, err, rec = m.groups()
            pct_f = float(pct)
            if tps is None:
                # Non-SQL tests report events/s: what 1.0 calls tps for SQL tests too.
                tps, qps, rd, wr, ot = eps, "0", "0", "0", "0"
            return Interval(
                float(t),
                int(thds),
                float(tps),
                float(qps),
                float(rd),
                float(wr),
                float(ot),
                float(lat) if pct_f > 0 else None,
                pct_f,
                float(err) if err is not None else 0.0,
                float(rec) if rec is not None else 0.0,
            )
        if "threads:" not in line:
            return None
        m = _INTERVAL_V05.match(line)
        if m is None:
            return None
        t, thds, tps, rd, wr, lat, pct, err, rec = m.groups()
        rd_f, wr_f = float(rd), float(wr)
        return Interval(
            float(t),
            int(thds),
            float(tps),
            # 0.5 reports no qps and no "other" rate; reads + writes is its "read/write
            # requests", which is what 0.5-era results call QPS.
            rd_f + wr_f,
            rd_f,
            wr_f,
            0.0,
            float(lat),
            float(pct),
            float(err) if err is not None else 0.0,
            float(rec) if rec is not None else 0.0,
        )
    except ValueError:
        # "1.2.3" matched [\d.]+ but is no number, or an absurdly long digit run.
        return None


# What benchapp's counting wrapper (campaigns.sysbench.workloads.counting_wrapper) prints as each thread ends: the
# completed calls of the workload's counted function in that thread.
_COUNT_LINE = re.compile(r"^benchapp-count (?P<name>[A-Za-z_][A-Za-z0-9_]{0,59}) (?P<n>\d{1,15})$", re.MULTILINE)


def counted_calls(text: str, function: str) -> int | None:
    """The calls of `function` that sysbench's threads completed, summed over the wrapper's lines; None when no
    thread printed one (no wrapper ran, or sysbench stopped before its threads ended)."""
    counts = [int(m["n"]) for m in _COUNT_LINE.finditer(text or "") if m["name"] == function]
    return sum(counts) if counts else None


def looks_like_sysbench_output(text: str) -> bool:
    """Whether `text` is plausibly sysbench output (to refuse other uploaded files).

    Needs a sysbench banner at the start of a line, a report line, or a statistics header
    together with "total number of events:"; a document that merely mentions sysbench fails.
    """
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str) or not text:
        return False
    if _BANNER_LINE.search(text):
        return True
    if _STATS_HEADER_LINE.search(text) and _TOTAL_EVENTS_LINE.search(text):
        return True
    for line in text.splitlines():
        if "[" in line and parse_interval_line(line.strip()) is not None:
            return True
    return False


def merge_histograms(histograms: list[list[tuple[float, int]]]) -> list[tuple[float, int]]:
    """Sum the counts of equal bucket values (e.g. the histograms of several clients).

    sysbench's buckets are fixed (1024 log-spaced values), so runs share bucket values and
    the merged histogram is exact. Returned sorted by value.
    """
    merged: dict[float, int] = {}
    for histogram in histograms:
        for value, count in histogram:
            # Printed with 3 decimals, so equal buckets parse to equal floats; rounding only
            # guards against values computed elsewhere with float noise.
            key = round(float(value), 6)
            merged[key] = merged.get(key, 0) + int(count)
    return sorted(merged.items())


def histogram_percentile(histogram: list[tuple[float, int]], pct: float) -> float | None:
    """The value of the bucket where the cumulative count reaches `pct` percent.

    Same rule as sysbench's sb_histogram: target = floor(total * pct / 100 + 0.5), then the
    first bucket (in value order) at which the running count is >= target. None for an empty
    histogram. Raises ValueError when pct is not within 0..100.
    """
    if not 0.0 <= pct <= 100.0:  # also refuses NaN
        raise ValueError(f"percentile must be within 0..100, not {pct!r}")
    rows = sorted((float(v), int(c)) for v, c in histogram if int(c) > 0)
    total = sum(c for _, c in rows)
    if total == 0:
        return None
    target = math.floor(total * pct / 100.0 + 0.5)
    running = 0
    for value, count in rows:
        running += count
        if running >= target:
            return value
    return rows[-1][0]


# The latency distribution benchapp reports for every job: (key, percentile). The keys are the
# labels users read ("99.9"), kept as strings so that they survive JSON unchanged.
LATENCY_PERCENTILES: tuple[tuple[str, float], ...] = (
    ("50", 50.0), ("90", 90.0), ("95", 95.0), ("99", 99.0), ("99.9", 99.9),
)


def histogram_percentiles(histogram: list[tuple[float, int]]) -> dict[str, float | None]:
    """p50, p90, p95, p99 and p99.9 of a histogram (keys of LATENCY_PERCENTILES), by sysbench's rule.

    Each value is a bucket value, so it is exact only to the bucket's width (about 1.8 % of the
    value: sysbench's 1,024 buckets are log-spaced from 0.001 ms to 100 s). All None for an empty histogram.
    """
    return {key: histogram_percentile(histogram, pct) for key, pct in LATENCY_PERCENTILES}


def parse_output(text: str, *, warmup_s: float = 0.0) -> ParsedOutput:
    """Parse the whole stdout of one sysbench run (1.0 or 0.5 format). Never raises.

    `warmup_s` only affects `steady`: intervals with t <= warmup_s are left out of its means.
    """
    state = _State()
    try:
        if isinstance(text, bytes | bytearray):
            text = bytes(text).decode("utf-8", "replace")
        if not isinstance(text, str):
            text = ""
        state.feed(text)
    except Exception:  # noqa: BLE001 - a partial result beats an exception for any input
        state.broken = True
    try:
        return state.result(warmup_s)
    except Exception:  # noqa: BLE001
        return ParsedOutput(errors=list(state.errors), intervals=list(state.intervals))


# --- internals ------------------------------------------------------------------------------


def _leading_float(value: str) -> float | None:
    m = _LEADING_NUM.match(value)
    return float(m.group()) if m is not None else None


def _leading_int(value: str) -> int | None:
    m = _LEADING_NUM.match(value)
    if m is None or "." in m.group():
        return None
    return int(m.group())


def _per_sec(value: str) -> float | None:
    m = _PER_SEC.search(value)
    return float(m.group(1)) if m is not None else None


def _seconds(value: str) -> float | None:
    """'2.0002s' -> 2.0002; a bare number is taken as seconds too (0.4/0.5 printed '%.4f')."""
    return _leading_float(value)


def _ms(value: str) -> float | None:
    """Latency figures: plain ms in 1.0, '3.63ms' in 0.5; a trailing 's' alone means seconds."""
    number = _leading_float(value)
    if number is None:
        return None
    unit = value[_LEADING_NUM.match(value).end() :].strip()  # type: ignore[union-attr]
    if unit == "s":
        return number * 1000.0
    if unit in ("us", "µs"):
        return number / 1000.0
    return number


class _Block:
    """A statistics block being read."""

    __slots__ = (
        "checkpoint",
        "seen_general",
        "in_queries",
        "in_latency",
        "closed",
        "reads",
        "writes",
        "other",
        "total_queries",
        "transactions",
        "tps",
        "queries",
        "qps",
        "rw_requests",
        "rw_rate",
        "other_ops",
        "ignored_errors",
        "deadlocks",
        "reconnects",
        "duration_s",
        "events",
        "latency",
    )

    def __init__(self, *, checkpoint: bool) -> None:
        self.checkpoint = checkpoint
        self.seen_general = False
        self.in_queries = False
        self.in_latency = False
        self.closed = False
        self.reads: int | None = None
        self.writes: int | None = None
        self.other: int | None = None
        self.total_queries: int | None = None
        self.transactions: int | None = None
        self.tps: float | None = None
        self.queries: int | None = None
        self.qps: float | None = None
        self.rw_requests: int | None = None
        self.rw_rate: float | None = None
        self.other_ops: int | None = None
        self.ignored_errors: int | None = None
        self.deadlocks: int | None = None
        self.reconnects: int | None = None
        self.duration_s: float | None = None
        self.events: int | None = None
        self.latency = Latency()

    def is_whole(self) -> bool:
        lat = self.latency
        return (
            self.closed
            and self.duration_s is not None
            and self.events is not None
            and lat.min is not None
            and lat.avg is not None
            and lat.max is not None
        )

    def summary(self) -> Summary:
        queries, qps = self.queries, self.qps
        if queries is None and self.rw_requests is not None:
            # 0.5 prints no queries line. Its "read/write requests" is what 0.5-era results
            # call QPS, and reads + writes is all its report lines have, so summary and
            # intervals agree when both follow it (BEGIN/COMMIT stay in other_per_s).
            queries, qps = self.rw_requests, self.rw_rate
        if queries is None:
            queries = self.total_queries
        # The time base of the printed rates (see Summary's docstring).
        seconds: float | None = None
        if self.transactions and self.tps:
            seconds = self.transactions / self.tps
        elif queries and qps:
            seconds = queries / qps
        elif self.duration_s:
            seconds = self.duration_s

        def rate(count: int | None) -> float | None:
            if count is None or not seconds:
                return None
            return round(count / seconds, 2)

        return Summary(
            tps=self.tps,
            qps=qps,
            reads_per_s=rate(self.reads),
            writes_per_s=rate(self.writes),
            other_per_s=rate(self.other),
            transactions=self.transactions,
            queries=queries,
            ignored_errors=self.ignored_errors if self.ignored_errors is not None else self.deadlocks,
            reconnects=self.reconnects,
            events=self.events,
            duration_s=self.duration_s,
            latency=self.latency,
            reads=self.reads,
            writes=self.writes,
            other=self.other if self.other is not None else self.other_ops,
        )


# Keys of "key: value" lines, mapped to small codes for one dict lookup per line.
_K_THREADS = 1
_K_SQL_STATS = 2
_K_GENERAL = 3
_K_QUERIES_PERFORMED = 4
_K_READ = 5
_K_WRITE = 6
_K_OTHER = 7
_K_TOTAL = 8
_K_TRANSACTIONS = 9
_K_QUERIES = 10
_K_IGNORED = 11
_K_DEADLOCKS = 12
_K_RECONNECTS = 13
_K_RW_REQUESTS = 14
_K_OTHER_OPS = 15
_K_TOTAL_TIME = 16
_K_EVENTS = 17
_K_EVENT_EXEC_TIME = 18
_K_LATENCY = 19
_K_MIN = 20
_K_AVG = 21
_K_MAX = 22
_K_SUM = 23
_K_PCT_DISABLED = 24
_K_FAIRNESS = 25
_K_FAIR_TIME = 27

_KEYS: dict[str, int] = {
    "Number of threads": _K_THREADS,
    "SQL statistics": _K_SQL_STATS,
    "OLTP test statistics": _K_SQL_STATS,
    "General statistics": _K_GENERAL,
    "Test execution summary": _K_GENERAL,
    "queries performed": _K_QUERIES_PERFORMED,
    "read": _K_READ,
    "write": _K_WRITE,
    "other": _K_OTHER,
    "total": _K_TOTAL,
    "transactions": _K_TRANSACTIONS,
    "queries": _K_QUERIES,
    "ignored errors": _K_IGNORED,
    "deadlocks": _K_DEADLOCKS,
    "reconnects": _K_RECONNECTS,
    "read/write requests": _K_RW_REQUESTS,
    "other operations": _K_OTHER_OPS,
    "total time": _K_TOTAL_TIME,
    "total number of events": _K_EVENTS,
    "total time taken by event execution": _K_EVENT_EXEC_TIME,
    "Latency (ms)": _K_LATENCY,
    "response time": _K_LATENCY,
    "per-request statistics": _K_LATENCY,
    "min": _K_MIN,
    "avg": _K_AVG,
    "max": _K_MAX,
    "sum": _K_SUM,
    "percentile stats": _K_PCT_DISABLED,
    "Threads fairness": _K_FAIRNESS,
    "execution time (avg/stddev)": _K_FAIR_TIME,
}


class _State:
    """What has been read so far; `result()` turns it into a ParsedOutput at any point."""

    def __init__(self) -> None:
        self.version: str | None = None
        self.test: str | None = None
        self.threads: int | None = None
        self.errors: list[str] = []
        self.intervals: list[Interval] = []
        self.histogram: list[tuple[float, int]] | None = None
        self.in_histogram = False
        self.block: _Block | None = None
        self.final: _Block | None = None
        self.checkpoints: list[_Block] = []
        self.pending_checkpoint = False
        self.in_header = True
        self.seen_v1 = False
        self.seen_v05 = False
        self.broken = False

    # The loop below runs once per line of outputs that can be 20,000+ lines long, so the
    # common cases (report lines, blank lines) are decided on the first character.
    def feed(self, text: str) -> None:
        if text.startswith("\ufeff"):
            text = text[1:]
        intervals = self.intervals
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                self.in_histogram = False
                continue
            first = line[0]
            if first == "[":
                interval = parse_interval_line(line)
                if interval is not None:
                    intervals.append(interval)
                    self.in_header = False
                    if not (self.seen_v1 or self.seen_v05):
                        if "thds:" in line:
                            self.seen_v1 = True
                        else:
                            self.seen_v05 = True
                elif line.endswith("Checkpoint report:"):
                    self.pending_checkpoint = True
                # Anything else in brackets ("queue length: ..." of --rate, pasted log
                # prefixes) carries nothing we report.
                continue
            if self.in_histogram:
                # Rows run until the blank line sysbench prints after them; any other line
                # (the "value ... count" header, pasted noise) is read as usual in between.
                m = _HIST_ROW.match(line)
                if m is not None:
                    self.histogram.append((float(m.group(1)), int(m.group(2))))  # type: ignore[union-attr]
                    continue
            if line.startswith(_ERROR_PREFIXES):
                self.errors.append(line)
                continue
            if line.startswith("Latency histogram"):
                self.seen_v1 = True
                self.histogram = []
                self.in_histogram = True
                continue
            if self.in_header:
                self._header_line(line)
            key, sep, value = line.partition(":")
            if not sep:
                continue
            code = _KEYS.get(key.rstrip())
            if code is None:
                if key.endswith("percentile"):
                    self._percentile_line(key, value)
                continue
            self._key_line(code, value.strip())

    def _header_line(self, line: str) -> None:
        if line.startswith("Threads started!"):
            self.in_header = False
            return
        if self.version is None and line.startswith("sysbench "):
            m = _VERSION.match(line)
            if m is not None:
                self.version = m.group(1)
                return
        if self.test is None:
            if "sysbench" in line:
                self.test = _test_from_command(line)
            elif line.startswith("Doing OLTP test"):
                self.test = "oltp"

    def _start_block(self) -> _Block:
        # A new block ends any unclosed one: a checkpoint cut short is simply dropped, an
        # unclosed final block is kept only if no other final block follows.
        if self.block is not None and not self.block.checkpoint:
            self.final = self.block
        block = _Block(checkpoint=self.pending_checkpoint)
        self.pending_checkpoint = False
        self.block = block
        self.in_header = False
        return block

    def _key_line(self, code: int, value: str) -> None:
        block = self.block
        if code == _K_THREADS:
            if self.threads is None:
                self.threads = _leading_int(value)
            return
        if code == _K_SQL_STATS:
            block = self._start_block()
            return
        if code == _K_GENERAL:
            if block is None or block.closed or block.seen_general:
                block = self._start_block()
            block.seen_general = True
            block.in_queries = False
            return
        if block is None or block.closed:
            return
        if code == _K_QUERIES_PERFORMED:
            block.in_queries = True
        elif code in (_K_READ, _K_WRITE, _K_OTHER, _K_TOTAL):
            # Only inside "queries performed:": --debug prints other "total:" lines in seconds.
            if not block.in_queries:
                return
            number = _leading_int(value)
            if code == _K_READ:
                block.reads = number
            elif code == _K_WRITE:
                block.writes = number
            elif code == _K_OTHER:
                block.other = number
            else:
                block.total_queries = number
        elif code == _K_TRANSACTIONS:
            block.in_queries = False
            block.transactions = _leading_int(value)
            block.tps = _per_sec(value)
        elif code == _K_QUERIES:
            block.queries = _leading_int(value)
            block.qps = _per_sec(value)
        elif code == _K_IGNORED:
            block.ignored_errors = _leading_int(value)
        elif code == _K_DEADLOCKS:
            block.deadlocks = _leading_int(value)
        elif code == _K_RECONNECTS:
            block.reconnects = _leading_int(value)
        elif code == _K_RW_REQUESTS:
            block.rw_requests = _leading_int(value)
            block.rw_rate = _per_sec(value)
        elif code == _K_OTHER_OPS:
            block.other_ops = _leading_int(value)
        elif code == _K_TOTAL_TIME:
            block.duration_s = _seconds(value)
        elif code == _K_EVENTS:
            block.events = _leading_int(value)
        elif code == _K_EVENT_EXEC_TIME:
            secs = _seconds(value)
            if secs is not None and block.latency.sum is None:
                block.latency.sum = round(secs * 1000.0, 4)
        elif code == _K_LATENCY:
            block.in_latency = True
        elif code in (_K_MIN, _K_AVG, _K_MAX, _K_SUM):
            if not block.in_latency:
                return
            ms = _ms(value)
            if code == _K_MIN:
                block.latency.min = ms
            elif code == _K_AVG:
                block.latency.avg = ms
            elif code == _K_MAX:
                block.latency.max = ms
            else:
                block.latency.sum = ms
        elif code == _K_PCT_DISABLED:
            block.latency.percentile = None
            block.latency.pct = None
        elif code == _K_FAIRNESS:
            block.in_latency = False
        elif code == _K_FAIR_TIME:
            # The last line sysbench prints for a block: only now is the block whole.
            if "/" in value and _leading_float(value) is not None:
                block.closed = True
                if block.checkpoint:
                    self.checkpoints.append(block)
                else:
                    self.final = block
                self.block = None

    def _percentile_line(self, key: str, value: str) -> None:
        block = self.block
        if block is None or block.closed or not block.in_latency:
            return
        m = _PCT_KEY.search(key)
        if m is None:
            return
        block.latency.pct = float(m.group(1))
        block.latency.percentile = _ms(value.strip())
        if key.lstrip().startswith("approx."):
            self.seen_v05 = True

    def result(self, warmup_s: float) -> ParsedOutput:
        final = self.final
        if self.block is not None and not self.block.checkpoint:
            # Text ended inside the final block (cut off): report what it had, incomplete.
            final = self.block
        complete = final is not None and final.is_whole() and not self.broken
        summary = final.summary() if final is not None else None
        last_segment = None
        if final is not None and self.checkpoints:
            last_segment = summary
            summary = _whole_run([*self.checkpoints, final])
        threads = self.threads
        if threads is None and self.intervals:
            threads = max(iv.threads for iv in self.intervals)
        if self.seen_v1:
            fmt = "1.0"
        elif self.seen_v05 or (self.final is not None and self.final.rw_requests is not None):
            fmt = "0.5"
        elif self.version is not None and self.version.startswith("0."):
            fmt = "0.5"
        else:
            fmt = "1.0"
        return ParsedOutput(
            sysbench_version=self.version,
            test=self.test,
            threads=threads,
            complete=complete,
            errors=list(self.errors),
            summary=summary,
            intervals=list(self.intervals),
            histogram=list(self.histogram) if self.histogram is not None else None,
            steady=_steady(self.intervals, warmup_s),
            format=fmt,
            checkpoints=[b.summary() for b in self.checkpoints],
            last_segment=last_segment,
        )


def _whole_run(blocks: list[_Block]) -> Summary:
    """One summary for a run printed as checkpoint blocks plus the final block (see the module docstring).

    Each block's counters cover its own segment, so the whole run's counts are their sums, and
    its rates are those sums over the last block's "total time" (counted from the start).
    """
    last = blocks[-1]

    def total(name: str) -> int | None:
        values = [getattr(b, name) for b in blocks]
        return sum(values) if all(v is not None for v in values) else None

    duration = last.duration_s
    if duration is None:
        durations = [b.duration_s for b in blocks if b.duration_s is not None]
        duration = max(durations) if durations else None

    def rate(count: int | None) -> float | None:
        return round(count / duration, 2) if count is not None and duration else None

    whole = _Block(checkpoint=False)
    for name in ("reads", "writes", "other", "total_queries", "transactions", "queries", "rw_requests",
                 "other_ops", "ignored_errors", "deadlocks", "reconnects", "events"):
        setattr(whole, name, total(name))
    whole.duration_s = duration
    whole.tps = rate(whole.transactions) if last.tps is not None else None
    whole.qps = rate(whole.queries) if last.qps is not None else None
    whole.rw_rate = rate(whole.rw_requests) if last.rw_rate is not None else None
    lats = [b.latency for b in blocks]
    mins = [lat.min for lat in lats if lat.min is not None]
    maxs = [lat.max for lat in lats if lat.max is not None]
    sums = [lat.sum for lat in lats]
    lat_sum = round(sum(v for v in sums if v is not None), 2) if all(v is not None for v in sums) else None
    events = whole.events
    whole.latency = Latency(
        min=min(mins) if mins else None,
        max=max(maxs) if maxs else None,
        avg=round(lat_sum / events, 2) if lat_sum is not None and events else None,
        # Each block's percentile is its own segment's; none of them, nor the last segment's
        # histogram, is the whole run's.
        percentile=None,
        pct=None,
        sum=lat_sum,
    )
    summary = whole.summary()
    summary.checkpoints = len(blocks) - 1
    return summary


def _test_from_command(line: str) -> str | None:
    """The test named on a pasted sysbench command line, e.g. "$ sysbench ... oltp_read_write run"."""
    tokens = line.replace("\\", " ").split()
    start = next((i for i, tok in enumerate(tokens) if "sysbench" in tok.rsplit("/", 1)[-1]), None)
    if start is None:
        return None
    # Only a word followed by a command word (or --test=) names the test: the banner line
    # "sysbench 1.0.20 (using system LuaJIT ...)" has words too, but no command after them.
    candidate: str | None = None
    named: str | None = None
    for tok in tokens[start + 1 :]:
        if tok.startswith("--test="):
            named = tok.split("=", 1)[1]
            break
        if tok.startswith("-"):
            continue
        if tok in _COMMANDS:
            named = candidate
            break
        candidate = tok
    if not named:
        return None
    candidate = named
    name = candidate.rsplit("/", 1)[-1]
    if name.endswith(".lua"):
        name = name[:-4]
    return name or None


def _steady(intervals: list[Interval], warmup_s: float) -> SteadyState | None:
    try:
        warmup = float(warmup_s)
    except (TypeError, ValueError):
        warmup = 0.0
    # No warmup is 0 s; a negative or NaN one means the same (and keeps the result valid JSON).
    if math.isnan(warmup) or warmup < 0.0:
        warmup = 0.0
    kept = [iv for iv in intervals if iv.t > warmup]
    if not kept:
        return None
    n = len(kept)
    tps_values = [iv.tps for iv in kept]
    tps_mean = sum(tps_values) / n
    variance = sum((v - tps_mean) ** 2 for v in tps_values) / n
    measured = [iv.latency_pct_ms for iv in kept if iv.latency_pct_ms is not None]
    labels = {iv.latency_pct for iv in kept if iv.latency_pct_ms is not None}
    return SteadyState(
        warmup_s=warmup,
        intervals=n,
        tps=round(tps_mean, 2),
        qps=round(sum(iv.qps for iv in kept) / n, 2),
        latency_pct_ms=round(sum(measured) / len(measured), 2) if measured else None,
        # A label only when every kept interval used the same percentile.
        latency_pct=labels.pop() if len(labels) == 1 else None,
        errors_per_s=round(sum(iv.errors_per_s for iv in kept) / n, 2),
        tps_stddev=round(math.sqrt(variance), 2),
        tps_min=min(tps_values),
        tps_max=max(tps_values),
    )
