"""Do benchapp's regression checks hold on this machine? False alarms on unchanged runs, and slowdowns caught.

Runs real sysbench jobs on the local MariaDB (root, no password; a database of its own, benchapp_rq, dropped at
the end; --database names another, for two collections side by side) and judges them with the very function the nightly check uses (campaigns.statistics.cells_judge, called
by campaigns.monitoring.run_evaluate), at the campaign defaults (5% threshold, baseline = the last 5 runs, their
spread measured on the last 20):

    cells     oltp_point_select and oltp_read_only × 1, 2, 4, 8 threads: 8 cells, each a job of --time seconds
              (default 1: short jobs, so that a few hundred cells fit in half an hour), --reps repetitions
    A/A       --runs runs of the same campaign one after another; each run from the 6th on is judged against the 5
              before it, cell by cell (QPS and p95 latency): any change reported is a false alarm. Also judged
              against the single run before it, as a pinned baseline run is. Either way the unchanged runs before
              it (up to 20) are the history whose spread the test reads, as run_evaluate reads the campaign's.
    A/B       between those runs, --ab-runs runs slowed down by a known amount: sysbench's --rate set to 85% or
              70% of the cell's geometric-mean throughput in the baseline it is judged against, so the slowdown
              is 15% or 30% by construction (the bench prints the slowdown it measured too). Caught: a QPS
              regression reported for the cell.

It prints, with 95% confidence intervals (Wilson), the false-alarm rate per cell, the detection rate of each
slowdown, the coefficient of variation measured (one repetition within a run; one run's mean between runs), and
the repetitions that the measured noise calls for (campaigns.statistics.repetitions_needed: what the campaign
form recommends). The goal: false alarms on at most 1% of cells, and a 15% slowdown caught 9 times in 10 where
the noise allows it with the repetitions used.

How many trials the goal needs: the upper end of a Wilson 95% interval is under 1% with 0 alarms in 381 trials,
1 in 563, 2 in 726, 3 in 878, 4 in 1025, 5 in 1166. The default 55 runs give 400 (0 alarms allowed); collections
pool (--load a.json b.json c.json: independent runs, their trials add up), so three give 1200 (5 allowed).
Every A/A alarm is printed with its cell, metric, baseline kind, Δ% and p-values, and the raw measurements are
saved after every run (--save), so that a rule can be re-scored offline on the same measurements (--load).

Usage: .venv/bin/python bench/regression_quality.py [--runs 55] [--ab-runs 20] [--reps 3] [--time 1]
                                                    [--database benchapp_rq]
                                                    [--save var/bench/regression_quality.json] [--load FILE...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from _local import mariadb_connection, mariadb_database, mariadb_database_drop  # noqa: E402
from scipy import stats as sstats  # noqa: E402

from campaigns.changepoints import change_points  # noqa: E402
from campaigns.statistics import (  # noqa: E402
    CONFIRM_ALPHA,
    CONFIRM_SCREEN_ALPHA,
    HISTORY_RUNS,
    LATENCY,
    QPS,
    REGRESSION_ALPHA,
    CellChange,
    RunNoise,
    alarms_confirm,
    cells_judge,
    geometric_mean,
    repetitions_needed,
    run_noise,
)
from campaigns.sysbench.command import build_argv  # noqa: E402
from campaigns.sysbench.parser import parse_output  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATABASE = "benchapp_rq"
TESTS = ("oltp_point_select", "oltp_read_only")
THREADS = (1, 2, 4, 8)
TABLES, TABLE_SIZE = 1, 10_000
BASELINE_RUNS = 5
THRESHOLD_PCT = 5.0
SLOWDOWNS = (15.0, 30.0)
WINDOW, PINNED = "last-5", "pinned"


Cell = tuple[str, int]


def sysbench(test: str, command: str, *, threads: int = 1, time_s: int | None = None,
             rate: float | None = None) -> str:
    options: dict[str, object] = {"rand-type": "uniform"}
    if rate is not None:
        options["rate"] = max(1, round(rate))
    argv = build_argv(sysbench="sysbench", test=test, command=command, connection=mariadb_connection(DATABASE), tables=TABLES,
                      table_size=TABLE_SIZE, options=options, threads=threads, time_s=time_s, percentile=95)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120 + (time_s or 0))
    if done.returncode != 0:
        raise SystemExit(f"sysbench {test} {command} failed: {done.stderr.strip() or done.stdout[-400:]}")
    return done.stdout


def job(cell: Cell, time_s: int, rate: float | None = None) -> dict[str, float]:
    test, threads = cell
    summary = parse_output(sysbench(test, "run", threads=threads, time_s=time_s, rate=rate)).summary
    if summary is None or summary.qps is None or summary.tps is None:
        raise SystemExit(f"no summary for {cell}")
    return {"qps": summary.qps, "tps": summary.tps, "p95_ms": summary.latency.percentile or 0.0}


def campaign_run(cells: list[Cell], reps: int, time_s: int, rates: dict[Cell, float] | None = None
                 ) -> dict[Cell, list[dict[str, float]]]:
    """One run of the campaign: every cell, its repetitions one after another, as a launch orders them."""
    return {cell: [job(cell, time_s, rates.get(cell) if rates else None) for _ in range(reps)] for cell in cells}


def _values(run: dict[Cell, list[dict[str, float]]]) -> dict[Cell, dict[str, list[float]]]:
    return {cell: {QPS: [j["qps"] for j in jobs], LATENCY: [j["p95_ms"] for j in jobs]} for cell, jobs in run.items()}


def judge(baseline_runs: list[dict], current: dict, run_cv_pct: float = 0.0,
          spread_runs: list[dict] | None = None) -> set[tuple[Cell, str, bool]]:
    """The (cell, metric, worse) changes cells_judge reports for `current` against `baseline_runs`."""
    return {(c["cell"], c["metric"], c["worse"]) for c in judge_detail(baseline_runs, current, run_cv_pct, spread_runs)}


def _inputs(baseline_runs: list[dict], current: dict, spread_runs: list[dict] | None
            ) -> tuple[dict[Cell, Any], dict[Cell, Any], dict[Cell, Any]]:
    """cells_judge's baseline, current and history for `current` against `baseline_runs`."""
    base_values = [_values(r) for r in baseline_runs]
    now = _values(current)
    baseline = {cell: {metric: [b[cell][metric] for b in base_values] for metric in (QPS, LATENCY)} for cell in now}
    spread_values = [_values(r) for r in spread_runs or []]
    history = {cell: {metric: [m for s in spread_values if (m := geometric_mean(s[cell][metric])) is not None]
                      for metric in (QPS, LATENCY)} for cell in now}
    return baseline, now, history


def changes(baseline_runs: list[dict], current: dict, run_cv_pct: float = 0.0,
            spread_runs: list[dict] | None = None, alpha: float = REGRESSION_ALPHA) -> list[CellChange]:
    baseline, now, history = _inputs(baseline_runs, current, spread_runs)
    return cells_judge(baseline=baseline, current=now, threshold_pct=THRESHOLD_PCT, run_cv_pct=run_cv_pct,
                       history=history, alpha=alpha)


def judge_detail(baseline_runs: list[dict], current: dict, run_cv_pct: float = 0.0,
                 spread_runs: list[dict] | None = None) -> list[dict[str, Any]]:
    """cells_judge's changes with what raised each: the effect, the p-value before and after the correction, the
    test. spread_runs: the unchanged runs before `current` (up to HISTORY_RUNS) whose means measure the run-to-run
    spread, as run_evaluate reads the campaign's last runs."""
    return [{"cell": c.cell, "metric": c.metric, "worse": c.worse, "change_pct": c.change_pct, "p": c.p_value,
             "p_adjusted": c.p_adjusted, "method": c.method}
            for c in changes(baseline_runs, current, run_cv_pct, spread_runs)]


def confirmed(baseline_runs: list[dict], current: dict, fresh: dict | None, spread_runs: list[dict], *,
              screen: float, confirm: float) -> set[tuple[Cell, str, bool]]:
    """The alarms that hold under confirmation: `current` screened at `screen`, each alarm measured again in
    `fresh` (the run right after it) and kept when it moves the same way at `confirm` (statistics.alarms_confirm,
    the nightly check's own rule). No fresh run: nothing is confirmed (the collection's last run)."""
    alarms = changes(baseline_runs, current, spread_runs=spread_runs, alpha=screen)
    if not alarms or fresh is None:
        return set()
    baseline, now, history = _inputs(baseline_runs, fresh, spread_runs)
    held = alarms_confirm(alarms=alarms, baseline=baseline, current=now, threshold_pct=THRESHOLD_PCT,
                          history=history, alpha=confirm)
    return {(a.cell, a.metric, a.worse) for a in alarms if held[(a.cell, a.metric)] is not None}


def alarms_print(alarms: list[dict[str, Any]]) -> None:
    """Every A/A alarm, and where they gather: baseline kind, metric, direction, cell, and how many per run (a
    run whose every cell moved together points at the machine, not at a cell)."""
    if not alarms:
        return
    print("  A/A alarms (run, baseline, cell, metric, Δ%, p, p adjusted):")
    for a in alarms:
        p = "–" if a["p"] is None else f"{a['p']:.2g}"
        adjusted = "–" if a["p_adjusted"] is None else f"{a['p_adjusted']:.2g}"
        print(f"    run {a['run']:3d}  {a['baseline']:6s}  {a['cell'][0]}@{a['cell'][1]:<2d}  {a['metric']:14s} "
              f"{a['change_pct']:+6.1f}%  p {p:7s} adj {adjusted:7s} {'worse' if a['worse'] else 'better'}")
    for label, key in (("baseline", lambda a: a["baseline"]), ("metric", lambda a: a["metric"]),
                       ("direction", lambda a: "worse" if a["worse"] else "better"),
                       ("cell", lambda a: f"{a['cell'][0]}@{a['cell'][1]}"),
                       ("alarms in the same run", lambda a: sum(1 for b in alarms if (b["run"], b["baseline"]) == (
                           a["run"], a["baseline"])))):
        counts: dict[Any, int] = {}
        for a in alarms:
            counts[key(a)] = counts.get(key(a), 0) + 1
        print(f"    by {label}: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=str)))


def noise(runs: list[dict]) -> RunNoise:
    """The runs' noise, measured as monitoring.campaign_noise measures a campaign's (statistics.run_noise)."""
    return run_noise([{cell: [j["qps"] for j in jobs] for cell, jobs in run.items()} for run in runs])


def wilson(hits: int, n: int) -> str:
    if n == 0:
        return "n/a"
    ci = sstats.binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    digits = 2 if ci.high < 0.1 else 1  # 0.95% is not 1.0%: the goal's edge needs the second digit
    return f"{hits}/{n} = {hits / n:.{digits}%} (95% CI {ci.low:.{digits}%}–{ci.high:.{digits}%})"


def collect(args: argparse.Namespace) -> dict[str, Any]:
    cells = [(test, threads) for test in TESTS for threads in THREADS]
    mariadb_database(DATABASE, fresh=True)
    sysbench(TESTS[0], "prepare")
    history: list[dict[str, Any]] = []  # {"kind": "A"} or {"kind": "B", "slowdown": 15.0, "rates": ...}
    started = time.monotonic()
    loads: list[float] = []  # the machine's 1-minute load average after each run: how quiet it was

    def checkpoint() -> None:
        # Written after every run, so that an interrupted collection still leaves its measurements to re-score.
        loads.append(os.getloadavg()[0])
        save(args.save, _collected(args, history, started, loads, finished=False))
    try:
        for _ in range(min(BASELINE_RUNS, args.runs)):
            history.append({"kind": "A", "run": campaign_run(cells, args.reps, args.time)})
            checkpoint()
        a_left, b_left = args.runs - BASELINE_RUNS, args.ab_runs
        b_every = max(1, a_left // max(1, b_left)) if b_left else 0
        step = 0
        while a_left > 0 or b_left > 0:
            if a_left > 0:
                history.append({"kind": "A", "run": campaign_run(cells, args.reps, args.time)})
                a_left -= 1
                checkpoint()
            step += 1
            if b_left > 0 and (a_left == 0 or step % b_every == 0):
                slowdown = SLOWDOWNS[(args.ab_runs - b_left) % len(SLOWDOWNS)]
                baseline = [h["run"] for h in history if h["kind"] == "A"][-BASELINE_RUNS:]
                rates = {cell: (1 - slowdown / 100) * (geometric_mean([j["tps"] for r in baseline for j in r[cell]])
                                                       or 1.0) for cell in cells}
                history.append({"kind": "B", "slowdown": slowdown,
                                "run": campaign_run(cells, args.reps, args.time, rates)})
                checkpoint()
                # Its confirmation, as the nightly check measures an alarmed cell again at once: the same slowdown.
                history.append({"kind": "C", "slowdown": slowdown,
                                "run": campaign_run(cells, args.reps, args.time, rates)})
                b_left -= 1
                checkpoint()
            done = len(history)
            print(f"  {done} runs in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    finally:
        mariadb_database_drop(DATABASE)
    return _collected(args, history, started, loads, finished=True)


def _collected(args: argparse.Namespace, history: list[dict[str, Any]], started: float, loads: list[float], *,
               finished: bool) -> dict[str, Any]:
    return {"reps": args.reps, "time_s": args.time, "elapsed_s": time.monotonic() - started, "finished": finished,
            "started_utc": args.started_utc, "commit": args.commit, "load_averages": loads,
            "history": [{**h, "run": {f"{c[0]}:{c[1]}": jobs for c, jobs in h["run"].items()}} for h in history]}


def save(path: str, data: dict[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path + ".tmp").write_text(json.dumps(data))
    os.replace(path + ".tmp", path)


def report(data: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Prints the collection's figures; returns its counts (alarms or catches, trials) for pooling."""
    history = [{**h, "run": {(k.split(":")[0], int(k.split(":")[1])): v for k, v in h["run"].items()}}
               for h in data["history"]]
    a_runs = [h["run"] for h in history if h["kind"] == "A"]
    cells = list(a_runs[0])
    reps = data["reps"]
    print(f"regression quality: {len(a_runs)} unchanged runs and {len(history) - len(a_runs)} slowed runs of "
          f"{len(cells)} cells × {reps} repetitions of {data['time_s']} s on the local MariaDB "
          f"({data['elapsed_s'] / 60:.1f} min); threshold {THRESHOLD_PCT:g}%, baseline the last {BASELINE_RUNS} runs, "
          f"their spread measured on the last {HISTORY_RUNS}, Benjamini–Hochberg at {REGRESSION_ALPHA:g}")
    if data.get("load_averages"):
        loads = data["load_averages"]
        print(f"  started {data.get('started_utc')}, commit {data.get('commit')}, "
              f"{'' if data.get('finished', True) else 'UNFINISHED, '}1-min load average after each run: "
              f"median {statistics.median(loads):.1f}, max {max(loads):.1f} (on {os.cpu_count()} cores)")

    # Noise: one repetition within its run, and one run's geometric mean between runs.
    measured = noise(a_runs)
    cv_within, cv_between = measured.cv_within_pct, measured.cv_between_pct
    between = [b for cell in cells if (b := noise([{cell: run[cell]} for run in a_runs]).cv_between_pct) is not None]
    print(f"  CV of one repetition within a run (median over cells and runs): {cv_within:.1f}%" if cv_within
          is not None else "  CV within a run: needs 2+ repetitions")
    if cv_between is not None:
        print(f"  CV of a run's mean between runs (median over cells): {cv_between:.1f}%"
              f"  [per cell {min(between):.1f}–{max(between):.1f}%]")

    # A/A against the last 5 runs, and against the single run before (a pinned baseline); every alarm kept with
    # what raised it, so that the extra ones can be traced to cells, metrics and baseline kinds.
    a_positions = [i for i, h in enumerate(history) if h["kind"] == "A"]
    trials = {WINDOW: 0, PINNED: 0}
    alarms: list[dict[str, Any]] = []
    for n, i in enumerate(a_positions):
        earlier = [history[j]["run"] for j in a_positions[:n]]
        if len(earlier) >= BASELINE_RUNS:
            alarms += [{"run": i, "baseline": WINDOW, **change}
                       for change in judge_detail(earlier[-BASELINE_RUNS:], history[i]["run"],
                                                 spread_runs=earlier[-HISTORY_RUNS:])]
            trials[WINDOW] += len(cells)
        if len(earlier) >= 3 and reps >= 2:
            # As run_evaluate does against a pinned run: the run-to-run noise measured on the history so far.
            alarms += [{"run": i, "baseline": PINNED, **change}
                       for change in judge_detail(earlier[-1:], history[i]["run"],
                                                  run_cv_pct=noise(earlier[-20:]).between_only_pct or 0.0,
                                                  spread_runs=earlier[-HISTORY_RUNS:])]
            trials[PINNED] += len(cells)
    flagged = {kind: len({(a["run"], a["cell"]) for a in alarms if a["baseline"] == kind}) for kind in trials}
    print(f"  A/A false alarms per cell, baseline = the last {BASELINE_RUNS} runs: "
          f"{wilson(flagged[WINDOW], trials[WINDOW])}  (goal ≤ 1%, the upper end included)")
    if trials[PINNED]:
        print(f"  A/A false alarms per cell, baseline = one pinned run:     {wilson(flagged[PINNED], trials[PINNED])}")
    alarms_print(alarms)
    counts = {WINDOW: (flagged[WINDOW], trials[WINDOW]), PINNED: (flagged[PINNED], trials[PINNED])}

    # A/B: each slowed run against the 5 unchanged runs before it.
    for slowdown in SLOWDOWNS:
        caught = total = 0
        deltas = []  # not `measured`: that name holds the runs' noise, which the advice below reads
        for i, h in enumerate(history):
            if h["kind"] != "B" or h["slowdown"] != slowdown:
                continue
            before = [history[j]["run"] for j in a_positions if j < i]
            baseline = before[-BASELINE_RUNS:]
            found = judge(baseline, h["run"], spread_runs=before[-HISTORY_RUNS:])
            caught += sum(1 for cell in cells if (cell, QPS, True) in found)
            total += len(cells)
            for cell in cells:
                base = geometric_mean([geometric_mean([j["qps"] for j in r[cell]]) or 0.0 for r in baseline])
                now = geometric_mean([j["qps"] for j in h["run"][cell]])
                if base and now:
                    deltas.append((now / base - 1) * 100)
        counts[f"{slowdown:g}%"] = (caught, total)
        if total:
            print(f"  A/B {slowdown:.0f}% slowdown caught: {wilson(caught, total)}"
                  f"  (measured Δ median {statistics.median(deltas):+.1f}%)")
    counts.update(confirmation_report(history, a_positions, cells))
    if cv_within is not None:
        # What repetitions cannot reduce: the spread of run means beyond what their repetitions explain.
        pure_between = measured.between_only_pct or 0.0
        print(f"  of which between runs, whatever the repetitions: {pure_between:.1f}%")
        for slowdown in SLOWDOWNS:
            needed = repetitions_needed(cv_within, between_cv_pct=pure_between, change_pct=slowdown,
                                        baseline_runs=BASELINE_RUNS)
            advice = (f"{needed} repetitions" if needed is not None else
                      "no number of repetitions: the run-to-run noise alone is too large (more baseline runs, "
                      "longer jobs, or a quieter machine)")
            print(f"  to catch a {slowdown:.0f}% slowdown 9 times in 10 at this noise: {advice} (used {reps})")
        histories(cv_within, pure_between, reps)
    return counts


# The confirmation rules reported: (screen, confirm) alphas; the first is the nightly check's (statistics).
CONFIRM_RULES = tuple(dict.fromkeys(((CONFIRM_SCREEN_ALPHA, CONFIRM_ALPHA), (REGRESSION_ALPHA, CONFIRM_ALPHA),
                                     (0.05, 0.1), (0.05, 0.2), (0.1, 0.2))))


def confirmation_report(history: list[dict[str, Any]], a_positions: list[int], cells: list[Cell]
                        ) -> dict[str, tuple[int, int]]:
    """False alarms and catches when every alarm is measured again before anyone is told (Campaign.confirm_alarms):
    an unchanged run's alarms confirmed on the next unchanged run, a slowed run's on the slowed run measured right
    after it (kind C), against the same baseline."""
    counts: dict[str, tuple[int, int]] = {}
    if not any(h["kind"] == "C" for h in history):
        print("  confirmation: this collection has no confirmation runs (collected before they were measured)")
    for screen, confirm in CONFIRM_RULES:
        flagged = trials = 0
        for n, i in enumerate(a_positions[:-1]):
            earlier = [history[j]["run"] for j in a_positions[:n]]
            if len(earlier) < BASELINE_RUNS:
                continue
            fresh = history[a_positions[n + 1]]["run"]
            held = confirmed(earlier[-BASELINE_RUNS:], history[i]["run"], fresh, earlier[-HISTORY_RUNS:],
                             screen=screen, confirm=confirm)
            flagged += len({cell for cell, _, _ in held})
            trials += len(cells)
        rule = f"screen {screen:g}, confirm {confirm:g}"
        counts[f"confirm {rule} A/A"] = (flagged, trials)
        line = f"  confirmed ({rule}): A/A false alarms {wilson(flagged, trials)}"
        for slowdown in SLOWDOWNS:
            caught = total = 0
            for i, h in enumerate(history[:-1]):
                if h["kind"] != "B" or h["slowdown"] != slowdown or history[i + 1]["kind"] != "C":
                    continue
                before = [history[j]["run"] for j in a_positions if j < i]
                held = confirmed(before[-BASELINE_RUNS:], h["run"], history[i + 1]["run"], before[-HISTORY_RUNS:],
                                 screen=screen, confirm=confirm)
                caught += sum(1 for cell in cells if (cell, QPS, True) in held)
                total += len(cells)
            counts[f"confirm {rule} {slowdown:g}%"] = (caught, total)
            if total:
                line += f"; {slowdown:.0f}% caught {wilson(caught, total)}"
        print(line)
    return counts


def histories(cv_within: float, cv_between: float, reps: int, *, series: int = 200, runs: int = 40, step_at: int = 25,
              step_pct: float = 5.0) -> None:
    """Nightly histories of `runs` runs drawn at the noise measured above (each run: `reps` repetitions around a
    run level that itself varies by cv_between), half with a step of step_pct after run step_at: how often the
    threshold check (each night against the 5 before) and the change-point detection (E-Divisive means over the
    whole history) find the step within 3 runs of it, and how often either fires on a history without one."""
    rng = np.random.default_rng(16)
    found = {"threshold": 0, "change point": 0}
    fired = {"threshold": 0, "change point": 0}
    for k in range(series):
        for stepped in (True, False):
            level = np.where(np.arange(runs) >= step_at, 1 - step_pct / 100, 1.0) if stepped else np.ones(runs)
            run_level = level * rng.lognormal(0, cv_between / 100, runs)
            values = [list(10_000 * lvl * rng.lognormal(0, cv_within / 100, reps)) for lvl in run_level]
            nights = set()
            for i in range(BASELINE_RUNS, runs):
                baseline = {"c": {QPS: values[i - BASELINE_RUNS:i], LATENCY: [[] for _ in range(BASELINE_RUNS)]}}
                spread = [geometric_mean(v) or 0.0 for v in values[max(0, i - HISTORY_RUNS):i]]
                if cells_judge(baseline=baseline, current={"c": {QPS: values[i], LATENCY: []}},
                               threshold_pct=THRESHOLD_PCT, history={"c": {QPS: spread, LATENCY: []}}):
                    nights.add(i)
            points = [p.index for p in change_points([geometric_mean(v) or 0.0 for v in values], seed=k)]
            if stepped:
                found["threshold"] += any(step_at <= i <= step_at + 3 for i in nights)
                found["change point"] += any(abs(i - step_at) <= 3 for i in points)
            else:
                fired["threshold"] += bool(nights)
                fired["change point"] += bool(points)
    print(f"  histories of {runs} nights at this noise ({series} with a {step_pct:g}% step after night {step_at}, "
          f"{series} without):")
    for method in found:
        print(f"    {method:12s} finds the step within 3 nights: {wilson(found[method], series)}; "
              f"fires on a history without one: {wilson(fired[method], series)}")


def main() -> None:
    global DATABASE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 55: 50 judged runs × 8 cells = 400 trials, the fewest whose 95% interval (Wilson) can end under 1% (0 alarms:
    # 3.84 / (n + 3.84) ≤ 1% needs n ≥ 381); 45 runs (320 trials) could not show the goal even without an alarm.
    parser.add_argument("--runs", type=int, default=55, help="unchanged (A) runs, the first 5 only as baseline")
    parser.add_argument("--ab-runs", type=int, default=20, help="slowed (B) runs, alternately 15%% and 30%%")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--database", default=DATABASE,
                        help="the MariaDB database it creates and drops (two collections side by side need two)")
    parser.add_argument("--time", type=int, default=1, help="seconds per job")
    parser.add_argument("--save", default=str(ROOT / "var" / "bench" / "regression_quality.json"))
    parser.add_argument("--load", nargs="+", metavar="FILE",
                        help="report on saved collections instead of running jobs (several: each, then pooled)")
    args = parser.parse_args()
    DATABASE = args.database
    if args.load:
        pooled: dict[str, list[int]] = {}
        for path in args.load:
            print(f"{path}:")
            for key, (hits, n) in report(json.loads(Path(path).read_text())).items():
                pooled.setdefault(key, [0, 0])
                pooled[key][0] += hits
                pooled[key][1] += n
        if len(args.load) > 1:
            print(f"pooled over {len(args.load)} collections (independent runs: their trials add up):")
            print(f"  A/A false alarms per cell, baseline = the last {BASELINE_RUNS} runs: {wilson(*pooled[WINDOW])}")
            print(f"  A/A false alarms per cell, baseline = one pinned run:     {wilson(*pooled[PINNED])}")
            for slowdown in SLOWDOWNS:
                print(f"  A/B {slowdown:.0f}% slowdown caught: {wilson(*pooled[f'{slowdown:g}%'])}")
            for key, (hits, n) in pooled.items():
                if key.startswith("confirm ") and n:
                    print(f"  {key}: {wilson(hits, n)}")
        return
    args.started_utc = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                 cwd=ROOT).stdout.strip()
    data = collect(args)
    save(args.save, data)
    print(f"saved to {os.path.relpath(args.save)}", file=sys.stderr)
    report(data)


if __name__ == "__main__":
    main()
