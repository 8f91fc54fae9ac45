"""What does the sandbox cost? Goal: under 1 % of QPS, and a start-up cost per sysbench process a job does not feel.

Every sysbench benchapp starts runs in bubblewrap as the sandbox's user (campaigns/sysbench/sandbox.py): switched to
with setpriv by a root worker, through sudo by a worker that runs as `benchapp` (every install). This times:
- start-up: `sysbench --version` bare, boxed as this process runs it, and (as root, with the user benchapp and its
  sudo rule present) boxed from a process running as benchapp: the median of --starts runs each, in milliseconds;
- throughput: oltp_point_select on the local MariaDB, bare and boxed in interleaved rounds (--rounds, --time s each,
  --threads), the mean QPS of each, their ratio, and the ratio's min-max over the rounds.

Usage: .venv/bin/python bench/sandbox_cost.py [--starts 30] [--rounds 6] [--time 10] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import pwd
import re
import statistics
import subprocess
import sys
import time

from _django import ROOT, setup
from _local import MARIADB_HOST, MARIADB_PORT, MARIADB_USER, mariadb_database

DB = "bench_sandbox_cost"
# Two-sided 95 % Student t quantiles by degrees of freedom (n - 1), for the confidence interval of the mean ratio.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093}
TIMED = """
import sys, time
from campaigns.sysbench.runner import run_process
starts = int(sys.argv[1])
took = []
for _ in range(starts):
    t = time.monotonic()
    out = run_process(["sysbench", "--version"])
    took.append(time.monotonic() - t)
    assert out.exit_code == 0, out.output + out.start_error
took.sort()
print(took[len(took) // 2])
"""


def _median_bare(starts: int) -> float:
    took = []
    for _ in range(starts):
        t = time.monotonic()
        subprocess.run(["sysbench", "--version"], capture_output=True, check=True)
        took.append(time.monotonic() - t)
    return statistics.median(took)


def _median_boxed(starts: int, user: str | None = None) -> float:
    prefix = ["runuser", "-u", user, "--"] if user else []
    done = subprocess.run([*prefix, sys.executable, "-c", TIMED, str(starts)], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/nonexistent"})
    return float(done.stdout.strip().splitlines()[-1])


def _qps(output: str) -> float:
    found = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", output)
    if not found:
        raise SystemExit(f"no QPS in sysbench's output:\n{output[-2000:]}")
    return float(found.group(1))


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--starts", type=int, default=30)
    args.add_argument("--rounds", type=int, default=6)
    args.add_argument("--time", type=int, default=10)
    args.add_argument("--threads", type=int, default=2)
    opts = args.parse_args()
    setup()
    from campaigns.sysbench.runner import run_process
    from campaigns.sysbench.sandbox import sandbox_status, sandbox_user

    print(f"sandbox: {sandbox_status() or f'sysbench as {sandbox_user()} in bubblewrap'}")
    bare = _median_bare(opts.starts)
    boxed = _median_boxed(opts.starts)
    print(f"start-up (sysbench --version, median of {opts.starts}): bare {bare * 1000:.1f} ms, boxed "
          f"{boxed * 1000:.1f} ms (+{(boxed - bare) * 1000:.1f} ms)")
    if os.geteuid() == 0 and any(u.pw_name == "benchapp" for u in pwd.getpwall()) \
            and os.path.exists("/etc/sudoers.d/benchapp-sandbox"):
        as_benchapp = _median_boxed(opts.starts, "benchapp")
        print(f"  from a worker running as benchapp (through sudo): {as_benchapp * 1000:.1f} ms "
              f"(+{(as_benchapp - bare) * 1000:.1f} ms)")

    mariadb_database(DB, fresh=True)
    common = ["oltp_point_select", "--db-driver=mysql", f"--mysql-host={MARIADB_HOST}",
              f"--mysql-port={MARIADB_PORT}", f"--mysql-user={MARIADB_USER}", f"--mysql-db={DB}", "--tables=2",
              "--table-size=10000"]
    subprocess.run(["sysbench", *common, "prepare"], capture_output=True, check=True)
    run = [*common, f"--threads={opts.threads}", f"--time={opts.time}", "--report-interval=0", "run"]
    ratios, bare_qps, boxed_qps = [], [], []
    for n in range(opts.rounds):
        # Interleaved, and each pair in alternating order: a drift of the machine weighs on both alike.
        order = ("bare", "boxed") if n % 2 == 0 else ("boxed", "bare")
        got = {}
        for kind in order:
            if kind == "bare":
                got[kind] = _qps(subprocess.run(["sysbench", *run], capture_output=True, text=True,
                                                check=True).stdout)
            else:
                outcome = run_process(["sysbench", *run], timeout_s=opts.time + 60)
                assert outcome.exit_code == 0, outcome.output[-2000:] + outcome.start_error
                got[kind] = _qps(outcome.output)
        bare_qps.append(got["bare"])
        boxed_qps.append(got["boxed"])
        ratios.append(got["boxed"] / got["bare"])
        print(f"round {n + 1}: bare {got['bare']:,.0f} QPS, boxed {got['boxed']:,.0f} QPS "
              f"({100 * (ratios[-1] - 1):+.1f} %)")
    subprocess.run(["sysbench", *common, "cleanup"], capture_output=True, check=False)
    mean = statistics.mean(ratios)
    half = (T95.get(len(ratios) - 1, 2.0) * statistics.stdev(ratios) / len(ratios) ** 0.5) if len(ratios) > 1 else 0.0
    print(f"throughput ({opts.rounds} rounds of {opts.time} s, {opts.threads} threads): bare "
          f"{statistics.mean(bare_qps):,.0f} QPS, boxed {statistics.mean(boxed_qps):,.0f} QPS; boxed/bare "
          f"{mean:.3f} ({100 * (mean - 1):+.1f} %, 95 % CI {100 * (mean - half - 1):+.1f} % to "
          f"{100 * (mean + half - 1):+.1f} %), rounds {100 * (min(ratios) - 1):+.1f} % to "
          f"{100 * (max(ratios) - 1):+.1f} %")


if __name__ == "__main__":
    main()
