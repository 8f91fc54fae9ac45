"""What a server profile costs in throughput: sysbench against this machine's MariaDB with and without benchapp's
ServerProfiler (perf record -e cpu-clock -F 99 on the server's process, campaigns/execution/profiles.py) attached
over the same window as a job's, in alternating pairs so that a drift of the machine falls on both alike.

Prints each pair's QPS, the mean cost in % with its spread, and the profile's samples. Uses a database of its own
(bench_profile_cost) on the MariaDB at --host/--port (default 127.0.0.1:3306, root, no password), dropped at the end.

Usage: PYTHONPATH=. .venv/bin/python bench/profile_cost.py [--pairs 6] [--time-s 10] [--threads 2]
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys

from _django import setup

DB = "bench_profile_cost"


def sysbench(args: argparse.Namespace, command: str, *extra: str) -> str:
    argv = ["sysbench", "oltp_point_select", f"--mysql-host={args.host}", f"--mysql-port={args.port}",
            "--mysql-user=root", f"--mysql-db={DB}", "--tables=1", "--table-size=10000", *extra, command]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600).stdout


def measure(args: argparse.Namespace, *, profile: bool) -> tuple[float, int]:
    """One measurement's QPS and (profiled) the profile's samples."""
    from campaigns.execution.metrics import _listening_pids
    from campaigns.execution.profiles import ServerProfiler, profile_window

    profiler = None
    if profile:
        delay, length = profile_window(args.time_s)
        profiler = ServerProfiler(pids=_listening_pids(args.port), delay_s=delay, length_s=length, name="bench")
        profiler.start()
    out = sysbench(args, "run", f"--threads={args.threads}", f"--time={args.time_s}")
    samples = 0
    if profiler is not None:
        profiler.join(timeout=120)
        if "error" in profiler.result:
            sys.exit(f"profile failed: {profiler.result['error']}")
        samples = int(profiler.result.get("samples", 0))
    found = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", out)
    if found is None:
        sys.exit("sysbench printed no queries per second:\n" + out)
    return float(found.group(1)), samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--time-s", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3306)
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("perf is not installed (Debian: linux-perf)")
    setup()
    mysql = ["mariadb", f"--host={args.host}", f"--port={args.port}", "--user=root"]
    subprocess.run([*mysql, "-e", f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}"], check=True)
    try:
        sysbench(args, "prepare")
        sysbench(args, "run", f"--threads={args.threads}", "--time=3")  # warm the buffer pool
        costs = []
        print(f"{'pair':>4} {'plain QPS':>11} {'profiled QPS':>13} {'cost':>7} {'samples':>8}")
        for pair in range(1, args.pairs + 1):
            # Alternate which goes first, so that a steady drift of the machine cancels out.
            order = (False, True) if pair % 2 else (True, False)
            figures = {profile: measure(args, profile=profile) for profile in order}
            plain, (profiled, samples) = figures[False][0], figures[True]
            cost = (plain - profiled) / plain * 100
            costs.append(cost)
            print(f"{pair:>4} {plain:>11,.0f} {profiled:>13,.0f} {cost:>+6.2f}% {samples:>8,}")
        spread = statistics.stdev(costs) if len(costs) > 1 else 0.0
        print(f"cost of a server profile: {statistics.mean(costs):+.2f} % of QPS (sd {spread:.2f} points over "
              f"{len(costs)} pairs; {args.threads} threads, {args.time_s} s each, perf at 99 Hz over 70 % of the run)")
    finally:
        subprocess.run([*mysql, "-e", f"DROP DATABASE IF EXISTS {DB}"], check=False)


if __name__ == "__main__":
    main()
