"""A sampled on-CPU profile of the target server's process during a job's steady window, where the server runs on
the client host that measures it (a campaign's `profile_server`, off by default).

The client host's worker runs `perf record -a -e cpu-clock -F <hz> -- sleep <window>` (every CPU) from 20 % of the
measured time to 90 % of it (the warm-up and the run's ends left out), then `perf report --pid <the server's pids>`
folds the server's samples by shared object and symbol, as shares of the server's own samples; the client keeps the
symbols that took at least PROFILE_MIN_PCT of them (JobClient.profile). The recording, which holds every process's
samples, stays in a private temporary folder and is deleted with it. It is the worker's own code, never the workload's: it runs outside the sandbox, as the worker's
user, and reaches only the processes listening on the target's port on this host (found as the host sampler finds
them). A server elsewhere (a managed instance, another machine) is never profiled; a kernel or user that perf may
not use (kernel.perf_event_paranoid above 0 for an unprivileged worker, no perf installed) leaves a profile that
says why, and the job goes on as without one. What it costs in throughput: bench/profile_cost.py.
"""
from __future__ import annotations

import logging
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import psutil

log = logging.getLogger(__name__)

PROFILE_HZ = 99  # samples per second per CPU: the usual rate, off the beat of timers at round frequencies
PROFILE_MIN_PCT = 0.5  # symbols under this share of the samples are summed as "other"
PROFILE_MAX_SYMBOLS = 40
PROFILE_START = 0.2  # of the measured time
PROFILE_END = 0.9
_LINE = re.compile(r"^\s*(?P<pct>\d+(?:\.\d+)?)%\s+(?P<dso>\S+)\s+\[(?P<kind>.)\]\s+(?P<sym>.+?)\s*$")
_SAMPLES = re.compile(r"^# Samples: (?P<n>\d+(?:\.\d+)?)(?P<unit>[KMG]?)")
_UNITS = {"": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000}
# The processes a target server runs as: a pid that is none of them (another machine's numbering, read from a server
# in a container) is not profiled, so no other process's functions are ever kept.
SERVER_NAMES = ("mariadbd", "mysqld", "postgres", "postmaster")


def perf_report_parse(text: str) -> tuple[int, list[list[Any]]]:
    """(samples, [[dso, symbol, share %], ...] by share) from `perf report --stdio --sort dso,sym -g none`."""
    samples = 0
    symbols: list[list[Any]] = []
    for line in text.splitlines():
        found = _SAMPLES.match(line)
        if found:  # perf abbreviates: "12K of event 'cpu-clock'"
            samples = round(float(found["n"]) * _UNITS[found["unit"]])
            continue
        if line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match:
            dso = "kernel" if match["kind"] == "k" else match["dso"]
            symbols.append([dso, match["sym"][:200], float(match["pct"])])
    symbols.sort(key=lambda s: -s[2])
    return samples, symbols


def server_processes(pids: set[int]) -> set[int]:
    """The server's processes to keep samples of: those of `pids` that run a database server, and every process
    they started (PostgreSQL's backends, where its work is done, are the postmaster's children)."""
    out: set[int] = set()
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if not process.name().startswith(SERVER_NAMES):
                continue
            out.add(pid)
            out.update(child.pid for child in process.children(recursive=True))
        except psutil.Error:
            continue
    return out


def profile_window(time_s: int) -> tuple[float, float]:
    """(delay, length) in seconds of the profile within a measurement of `time_s` seconds."""
    return time_s * PROFILE_START, max(1.0, time_s * (PROFILE_END - PROFILE_START))


class ServerProfiler(threading.Thread):
    """perf on the server's processes for one window; `result` once joined ({} until then)."""

    def __init__(self, *, pids: set[int], delay_s: float, length_s: float, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.pids, self.delay_s, self.length_s = sorted(pids), delay_s, length_s
        self.result: dict[str, Any] = {}
        self._stop_event = threading.Event()
        self._lock = threading.Lock()  # between cancel() and perf's start: a cancel never misses a perf
        self._process: subprocess.Popen[bytes] | None = None

    def cancel(self) -> None:
        """sysbench ended before the window did: perf stops now and reports what it sampled."""
        with self._lock:
            self._stop_event.set()
            process = self._process
            if process is not None and process.poll() is None:
                process.terminate()

    def run(self) -> None:
        try:
            self.result = self._profile()
        except Exception as exc:  # a profile is a bonus: nothing in it may fail the job
            log.warning("server profile failed: %s", exc)
            self.result = {"error": f"the profile failed: {exc}"[:300]}

    def _profile(self) -> dict[str, Any]:
        perf = shutil.which("perf")
        if perf is None:
            return {"error": "perf is not installed on this client host (Debian: linux-perf)"}
        servers = server_processes(set(self.pids))
        if not servers:
            return {"error": "the server's process was not found on this host"}
        if self._stop_event.wait(self.delay_s):
            return {"error": "sysbench ended before the profile's window began"}
        with tempfile.TemporaryDirectory(prefix="benchapp-perf-") as folder:
            data = Path(folder) / "perf.data"
            # Every CPU, not the server's threads: per-thread events cost the server on each of its context
            # switches (17 % of a point-select run's QPS here), per-CPU sampling at 99 Hz almost nothing. The
            # report keeps the server's samples only; the other processes' never leave this private folder.
            # -N -B: no copy of the sampled processes' files into ~/.debug, no build-id pass at the end.
            argv = [perf, "record", "-q", "-a", "-N", "-B", "-e", "cpu-clock", "-F", str(PROFILE_HZ), "-o", str(data),
                    "--", "sleep", f"{self.length_s:.1f}"]
            with self._lock:
                if self._stop_event.is_set():
                    return {"error": "sysbench ended before the profile's window began"}
                self._process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                _, err = self._process.communicate(timeout=self.length_s + 30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                _, err = self._process.communicate()
            if not data.exists() or data.stat().st_size == 0:
                why = err.decode(errors="replace").strip().splitlines()
                return {"error": ("perf could not sample the server: " + (why[-1] if why else "no data"))[:300]}
            report = subprocess.run(
                [perf, "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso,sym", "-g", "none",
                 # Backends started during the window count too (children read again now).
                 "--pid", ",".join(str(p) for p in sorted(servers | server_processes(servers))),
                 "--percentage", "relative",
                 "--percent-limit", str(PROFILE_MIN_PCT)], capture_output=True, timeout=60, check=False)
        samples, symbols = perf_report_parse(report.stdout.decode(errors="replace"))
        if not samples:
            return {"error": "perf took no sample of the server (was it idle?)", "samples": 0}
        kept = symbols[:PROFILE_MAX_SYMBOLS]
        return {"samples": samples, "hz": PROFILE_HZ, "window_s": round(self.length_s, 1),
                "symbols": kept, "other_pct": round(max(0.0, 100.0 - sum(s[2] for s in kept)), 2)}


def _well_formed(profile: dict[str, Any]) -> bool:
    """A profile with samples and [[shared object, symbol, share], ...] (an imported bundle's may be anything)."""
    samples, symbols = profile.get("samples"), profile.get("symbols")
    return (isinstance(samples, int) and samples > 0 and isinstance(symbols, list) and bool(symbols)
            and all(isinstance(s, list) and len(s) == 3 and isinstance(s[0], str) and isinstance(s[1], str)
                    and isinstance(s[2], int | float) for s in symbols))


def profiles_merged(profiles: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Several jobs' profiles as one: each symbol's share weighted by its profile's samples (None without any)."""
    usable = [p for p in profiles if isinstance(p, dict) and _well_formed(p)]
    if not usable:
        return None
    total = sum(int(p["samples"]) for p in usable)
    shares: dict[tuple[str, str], float] = {}
    for p in usable:
        for dso, symbol, pct in p["symbols"]:
            shares[(dso, symbol)] = shares.get((dso, symbol), 0.0) + float(pct) * int(p["samples"]) / total
    ordered = sorted(shares.items(), key=lambda item: -item[1])[:PROFILE_MAX_SYMBOLS]
    return {"samples": total, "profiles": len(usable),
            "symbols": [[dso, symbol, round(pct, 2)] for (dso, symbol), pct in ordered]}
