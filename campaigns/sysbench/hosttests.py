"""sysbench's built-in host tests (cpu, memory, fileio, threads, mutex): their options and their figures.

Pure: strings in, dataclasses and dicts out. The options are read off Debian's sysbench 1.0.20 (`sysbench cpu help`
and so on; tests/test_hosttests.py compares them with the installed sysbench); the catalogue builds its TestSpecs
from HOST_OPTION_ROWS (campaigns.sysbench.catalogue), and campaigns.sysbench.hostcommand builds their argv.

These tests measure the machine sysbench runs on, not a database. Their figures are stored in a job's result as
the database tests' are, so that comparisons, charts, significance and regressions work unchanged:

    qps   the test's headline figure: events/s (cpu, threads, mutex), MiB/s (memory: transferred; fileio: read
          plus written)
    tps   events per second (memory: operations; fileio: file operations, fsyncs included)

and every figure the test prints goes to host_figures() (reads/s, writes/s, fsyncs/s, MiB/s read and written, ...).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

HOST_TESTS = ("cpu", "memory", "fileio", "threads", "mutex")

HOST_DESCRIPTIONS = {
    "cpu": "the client host's CPU: prime numbers up to cpu-max-prime per event (events/s)",
    "memory": "the client host's memory: blocks read or written (MiB/s)",
    "fileio": "the client host's file I/O on test files it prepares in its host-test directory (MiB/s, reads/s, "
              "writes/s, fsyncs/s)",
    "threads": "the client host's scheduler: threads yielding and taking locks (events/s)",
    "mutex": "the client host's mutexes: every thread locks and unlocks (events/s: threads / total time)",
}

# What the headline figure (the result's qps) is for each test, as pages and the comparison label it.
HEADLINE_UNITS = {"cpu": "events/s", "memory": "MiB/s", "fileio": "MiB/s", "threads": "events/s",
                  "mutex": "events/s"}

_SIZE = "size"  # a byte size as sysbench writes it: 1K, 100G, 16384
# (name, type, default, min, max, choices, help), as `sysbench <test> help` prints them.
OptionRow = tuple[str, str, object, float | None, float | None, tuple[str, ...] | None, str]
_INT32 = 2_147_483_647

HOST_OPTION_ROWS: dict[str, tuple[OptionRow, ...]] = {
    "cpu": (
        ("cpu-max-prime", "int", 10000, 3, _INT32, None, "upper limit for primes generator"),
    ),
    "memory": (
        ("memory-block-size", _SIZE, "1K", None, None, None, "size of memory block for test"),
        ("memory-total-size", _SIZE, "100G", None, None, None, "total size of data to transfer"),
        ("memory-scope", "choice", "global", None, None, ("global", "local"), "memory access scope"),
        ("memory-hugetlb", "bool", False, None, None, None, "allocate memory from HugeTLB pool"),
        ("memory-oper", "choice", "write", None, None, ("read", "write", "none"), "type of memory operations"),
        ("memory-access-mode", "choice", "seq", None, None, ("seq", "rnd"), "memory access mode"),
    ),
    "fileio": (
        ("file-num", "int", 128, 1, 100_000, None, "number of files to create"),
        ("file-block-size", "int", 16384, 1, 1 << 30, None, "block size to use in all IO operations"),
        ("file-total-size", _SIZE, "2G", None, None, None,
         "total size of files to create (within the host-test directory's size limit)"),
        ("file-test-mode", "choice", None, None, None, ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"),
         "test mode (required)"),
        ("file-io-mode", "choice", "sync", None, None, ("sync", "async", "mmap"), "file operations mode"),
        ("file-async-backlog", "int", 128, 1, _INT32, None, "number of asynchronous operations to queue per thread"),
        ("file-extra-flags", "flags", "", None, None, ("sync", "dsync", "direct"),
         "list of additional flags to use to open files"),
        ("file-fsync-freq", "int", 100, 0, _INT32, None, "do fsync() after this number of requests (0: never)"),
        ("file-fsync-all", "bool", False, None, None, None, "do fsync() after each write operation"),
        ("file-fsync-end", "bool", True, None, None, None, "do fsync() at the end of test"),
        ("file-fsync-mode", "choice", "fsync", None, None, ("fsync", "fdatasync"),
         "which method to use for synchronization"),
        ("file-merged-requests", "int", 0, 0, _INT32, None, "merge at most this number of IO requests (0: don't)"),
        ("file-rw-ratio", "float", 1.5, 0.0, 1e6, None, "reads/writes ratio for combined test"),
    ),
    "threads": (
        ("thread-yields", "int", 1000, 0, _INT32, None, "number of yields to do per request"),
        ("thread-locks", "int", 8, 1, _INT32, None, "number of locks per thread"),
    ),
    "mutex": (
        ("mutex-num", "int", 4096, 1, _INT32, None, "total size of mutex array"),
        ("mutex-locks", "int", 50000, 0, _INT32, None, "number of mutex locks to do per thread"),
        ("mutex-loops", "int", 10000, 0, _INT32, None, "number of empty loops to do outside mutex lock"),
    ),
}

# The options of fileio that decide which files `prepare` creates (and `cleanup` removes).
FILEIO_FILE_OPTIONS = ("file-num", "file-total-size", "file-block-size", "file-extra-flags")

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"([0-9]{1,15})([KkMmGgTt]?)")


def size_bytes(text: str) -> int | None:
    """sysbench's size "2G" as bytes (K, M, G, T are powers of 1024, as sysbench reads them); None if not a size."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def is_host_test(test: object) -> bool:
    return isinstance(test, str) and test in HOST_TESTS


def host_options_problem(test: str, options: dict[str, object], *,
                         max_file_bytes: int | None) -> tuple[str, str] | None:
    """(option, why) when validated options cannot run as a host test; None when they can.

    fileio needs its test mode (sysbench has no default) and may not prepare more than the host-test directory's
    size limit (BENCHAPP_HOSTTEST_MAX_BYTES; None where the limit is not known, as when a pasted command is read:
    Scenario.clean checks it when the scenario is saved); memory and fileio sizes must be sizes."""
    if test == "fileio":
        if not options.get("file-test-mode"):
            return "file-test-mode", "fileio needs a test mode (seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw)"
        total = size_bytes(str(options.get("file-total-size", "2G")))
        if total is None or total < 1:
            return "file-total-size", "not a size such as 512M or 2G"
        if max_file_bytes is not None and total > max_file_bytes:
            return "file-total-size", (f"{total / (1 << 20):,.0f} MiB is above the host-test directory's limit of "
                                       f"{max_file_bytes / (1 << 20):,.0f} MiB (BENCHAPP_HOSTTEST_MAX_BYTES)")
    return None


# What one host test may take of its host: sysbench allocates memory-block-size per thread
# (memory-scope=local; once with global), file-block-size per fileio thread, and thread-stack-size per thread.
MEMORY_SHARE = 0.5
THREAD_STACK_MAX_BYTES = 64 << 20


def _size_text(n: float) -> str:
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:,.1f} {unit}"
    return f"{n:,.0f} bytes"


def host_bounds_problem(test: str, options: dict[str, object], *, threads: int, memory_bytes: int | None,
                        free_bytes: int | None = None, host: str = "the host") -> tuple[str, str] | None:
    """(option, why) when a host test would take more of its host than it may: memory for its threads above
    MEMORY_SHARE of the host's RAM (memory_bytes; None: not known, not checked), a thread stack above
    THREAD_STACK_MAX_BYTES, fileio's files above the free space of its directory (free_bytes). The message
    names the option, the figure asked and the host's own."""
    threads = max(1, threads)
    stack = size_bytes(str(options.get("thread-stack-size", "64K"))) or 0
    if stack > THREAD_STACK_MAX_BYTES:
        return "thread-stack-size", (f"{_size_text(stack)} per thread is above the cap of "
                                     f"{_size_text(THREAD_STACK_MAX_BYTES)}")
    budget = memory_bytes * MEMORY_SHARE if memory_bytes else None
    asked: list[tuple[str, int, str]] = []
    if test == "memory":
        block = size_bytes(str(options.get("memory-block-size", "1K"))) or 0
        local = str(options.get("memory-scope", "global")) == "local"
        per = threads if local else 1
        asked.append(("memory-block-size", block * per, f"{_size_text(block)}"
                      + (f" × {threads} threads (memory-scope=local)" if local and threads > 1 else "")))
    if test == "fileio":
        block = int(str(options.get("file-block-size", 16384)) or 0)
        asked.append(("file-block-size", block * threads, f"{_size_text(block)} × {threads} threads"))
    if stack * threads > (budget or float("inf")):
        asked.append(("thread-stack-size", stack * threads, f"{_size_text(stack)} × {threads} threads"))
    for option, need, how in asked:
        if budget is not None and memory_bytes is not None and need > budget:
            equals = "" if how == _size_text(need) else f" = {_size_text(need)}"
            return option, (f"{how}{equals} is above {MEMORY_SHARE:.0%} of the RAM of {host} "
                            f"({_size_text(memory_bytes)})")
    if test == "fileio" and free_bytes is not None:
        total = size_bytes(str(options.get("file-total-size", "2G"))) or 0
        if total > free_bytes:
            return "file-total-size", (f"{_size_text(total)} of test files is above the {_size_text(free_bytes)} "
                                       f"free on {host}")
    return None


# ---------------------------------------------------------------- figures


@dataclass(frozen=True, slots=True)
class HostFigures:
    """What a host test printed at its end, per second of its total time (None where the test prints nothing)."""

    events_per_s: float | None = None
    mib_per_s: float | None = None
    reads_per_s: float | None = None
    writes_per_s: float | None = None
    fsyncs_per_s: float | None = None
    read_mib_per_s: float | None = None
    written_mib_per_s: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return asdict(self)


_NUM = r"([0-9]{1,20}(?:\.[0-9]{1,20})?)"
_PATTERNS = {
    "events_per_s": re.compile(rf"^\s*events per second:\s+{_NUM}", re.M),
    "memory_ops": re.compile(rf"^Total operations: [0-9]{{1,20}} \({_NUM} per second\)", re.M),
    "memory_mib": re.compile(rf"^{_NUM} MiB transferred \({_NUM} MiB/sec\)", re.M),
    "reads_per_s": re.compile(rf"^\s*reads/s:\s+{_NUM}", re.M),
    "writes_per_s": re.compile(rf"^\s*writes/s:\s+{_NUM}", re.M),
    "fsyncs_per_s": re.compile(rf"^\s*fsyncs/s:\s+{_NUM}", re.M),
    "read_mib_per_s": re.compile(rf"^\s*read, MiB/s:\s+{_NUM}", re.M),
    "written_mib_per_s": re.compile(rf"^\s*written, MiB/s:\s+{_NUM}", re.M),
}


def _find(name: str, text: str, group: int = 1) -> float | None:
    match = _PATTERNS[name].search(text)
    return float(match.group(group)) if match else None


def host_figures(test: str, text: str, *, events: int | None, duration_s: float | None) -> HostFigures:
    """The figures of one host test's output; `events` and `duration_s` are sysbench's "General statistics"
    (campaigns.sysbench.parser reads them) for the tests that print no rate of their own (threads, mutex)."""
    per_total = (events / duration_s) if events is not None and duration_s else None
    if test == "cpu":
        return HostFigures(events_per_s=_find("events_per_s", text) or per_total)
    if test == "memory":
        return HostFigures(events_per_s=_find("memory_ops", text) or per_total, mib_per_s=_find("memory_mib", text, 2))
    if test == "fileio":
        read, written = _find("read_mib_per_s", text), _find("written_mib_per_s", text)
        total = (read or 0.0) + (written or 0.0) if read is not None or written is not None else None
        return HostFigures(events_per_s=per_total, mib_per_s=total, reads_per_s=_find("reads_per_s", text),
                           writes_per_s=_find("writes_per_s", text), fsyncs_per_s=_find("fsyncs_per_s", text),
                           read_mib_per_s=read, written_mib_per_s=written)
    return HostFigures(events_per_s=per_total)


def headline(test: str, figures: HostFigures) -> float | None:
    """The test's headline figure (stored as the result's qps): MiB/s for memory and fileio, else events/s."""
    return figures.mib_per_s if test in ("memory", "fileio") else figures.events_per_s


def summary_fields(test: str, figures: HostFigures) -> dict[str, object]:
    """A client summary's rate fields for a host test (what results.result_store copies into the job's result)."""
    return {"tps": figures.events_per_s, "qps": headline(test, figures), "reads_per_s": figures.reads_per_s,
            "writes_per_s": figures.writes_per_s, "other_per_s": figures.fsyncs_per_s,
            "host_figures": figures.to_dict()}


# ---------------------------------------------------------------- per-second lines


@dataclass(frozen=True, slots=True)
class HostSecond:
    """One per-second line of a host test: its headline figure and, for fileio, the parts of it."""

    t: float
    headline: float
    read_mib_per_s: float = 0.0
    written_mib_per_s: float = 0.0
    fsyncs_per_s: float = 0.0
    latency_pct_ms: float | None = None
    latency_pct: float | None = None


_T = r"^\[ ([0-9]{1,10}(?:\.[0-9]{1,6})?)s \] "
_MEMORY_SECOND = re.compile(_T + rf"{_NUM} MiB/sec\s*$")
_FILEIO_SECOND = re.compile(_T + rf"reads: {_NUM} MiB/s writes: {_NUM} MiB/s fsyncs: {_NUM}/s "
                            rf"latency \(ms,{_NUM}%\): {_NUM}\s*$")
_EVENTS_SECOND = re.compile(_T + rf"thds: [0-9]{{1,10}} eps: {_NUM} lat \(ms,{_NUM}%\): {_NUM}\s*$")


def host_second(test: str, line: str) -> HostSecond | None:
    """One `--report-interval` line of a host test; None for any other line. mutex prints none."""
    line = line.strip()
    if not line.startswith("["):
        return None
    if test == "memory":
        match = _MEMORY_SECOND.match(line)
        return HostSecond(t=float(match.group(1)), headline=float(match.group(2))) if match else None
    if test == "fileio":
        match = _FILEIO_SECOND.match(line)
        if match is None:
            return None
        t, read, written, fsyncs, pct, lat = (float(v) for v in match.groups())
        return HostSecond(t=t, headline=read + written, read_mib_per_s=read, written_mib_per_s=written,
                          fsyncs_per_s=fsyncs, latency_pct_ms=lat if pct > 0 else None, latency_pct=pct)
    match = _EVENTS_SECOND.match(line)
    if match is None:
        return None
    t, eps, pct, lat = (float(v) for v in match.groups())
    return HostSecond(t=t, headline=eps, latency_pct_ms=lat if pct > 0 else None, latency_pct=pct)
