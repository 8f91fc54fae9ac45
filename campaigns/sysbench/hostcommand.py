"""The argv of a host test (cpu, memory, fileio, threads, mutex): no connection, no tables.

fileio's prepare, run and cleanup all name the same files, so each carries the file options (FILEIO_FILE_OPTIONS)
and runs in the job's own directory (the runner's working directory: campaigns.execution.hostjobs).
"""
from __future__ import annotations

from collections.abc import Mapping

from campaigns.sysbench.catalogue import TESTS, options_to_argv
from campaigns.sysbench.command import options_refuse_connection
from campaigns.sysbench.hosttests import FILEIO_FILE_OPTIONS

# Options that only shape the measured phase: fileio's prepare and cleanup take none of them.
_RUN_ONLY = ("report-interval", "histogram", "percentile", "time", "events", "rate", "report-checkpoints",
             "forced-shutdown")


def build_host_argv(
    *,
    sysbench: str,
    test: str,
    command: str,
    options: Mapping[str, object],
    threads: int = 1,
    time_s: int | None = None,
    report_interval_s: int | None = None,
    percentile: float | None = None,
    histogram: bool = False,
    forced_shutdown_s: int | None = None,
) -> list[str]:
    """The full argv of one phase of a host test: `run` for every test, `prepare` and `cleanup` for fileio."""
    spec = TESTS.get(test)
    if spec is None or not spec.host:
        raise ValueError(f"{test!r} is not a host test")
    if command not in ("prepare", "run", "cleanup") or (command != "run" and test != "fileio"):
        raise ValueError(f"{test} has no {command!r} step")
    options_refuse_connection(options)
    merged: dict[str, object] = dict(options)
    if command == "run":
        merged["threads"] = threads
        if time_s is not None:
            merged["time"] = time_s
        if report_interval_s:
            merged["report-interval"] = report_interval_s
        if percentile is not None:
            merged["percentile"] = int(percentile)
        if histogram:
            merged["histogram"] = True
        if forced_shutdown_s is not None:
            merged["forced-shutdown"] = forced_shutdown_s
    else:
        merged = {name: value for name, value in merged.items() if name in FILEIO_FILE_OPTIONS}
    return [sysbench, test, *options_to_argv({k: v for k, v in merged.items() if k not in _RUN_ONLY or
                                              command == "run"}), command]
