"""The argv of a host test (cpu, memory, fileio, threads, mutex): no connection, no tables.

fileio's prepare, run and cleanup all name the same files, so each carries the file options (FILEIO_FILE_OPTIONS)
and runs in the job's own directory (the runner's working directory: campaigns.execution.hostjobs).
"""
from __future__ import annotations

from collections.abc import Mapping

from campaigns.sysbench.catalogue import TESTS, options_to_argv
from campaigns.sysbench.command import options_refuse_connection, phase_options_apply
from campaigns.sysbench.hosttests import FILEIO_FILE_OPTIONS


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
    else:  # fileio's prepare and cleanup name the same files as its run, and take nothing else
        merged = {name: value for name, value in merged.items() if name in FILEIO_FILE_OPTIONS}
    phase_options_apply(merged, command, time_s=time_s, report_interval_s=report_interval_s,
                        percentile=percentile, histogram=histogram, forced_shutdown_s=forced_shutdown_s)
    return [sysbench, test, *options_to_argv(merged), command]
