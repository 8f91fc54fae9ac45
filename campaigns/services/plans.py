"""What a launch would do, before it does it: a campaign's jobs in order, their commands, and how long
they take. The one estimate of a job's duration serves the plan and a run's progress and ETA."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from campaigns.durations import duration_text as format_duration
from campaigns.execution.datasets import dataset_signature, dataset_table_ddl, loader_prepare_argv
from campaigns.execution.hosts import NoWorker, host_heartbeats, run_no_worker
from campaigns.execution.phases import JobFailure, phase_argv, split_threads
from campaigns.ladder import MAX_ADDED
from campaigns.models import Campaign, Job, PreparedDataset, Run, Scenario, Target
from campaigns.models.hosttests import runs_on
from campaigns.services.hosttests import hostjob_plan
from campaigns.settings_variants import variant_settings
from campaigns.sysbench.catalogue import OptionError
from campaigns.sysbench.command import Connection, format_command
from campaigns.sysbench.ddl import DdlError, row_bytes_on_disk, table_ddl_statements

# Rough costs for the plan's estimates, from runs on a 2-core machine (SYSBENCH-NOTES.md):
# prepare loads about 100,000 rows/s; an sbtest row with its indexes takes what
# campaigns.sysbench.ddl.row_bytes_on_disk() says (measured per driver); each job spends about a second on snapshots, process start and closing
# (seed 001's quick run: 4 s measured + 1 s warm-up took 4-6 s per job, 1 client, quiet machine);
# 2 s leaves room for the client barrier of multi-client jobs.
PREPARE_ROWS_PER_S = 100_000
JOB_OVERHEAD_S = 2
# sysbench's own table on MySQL/MariaDB; the plan itself asks row_bytes_on_disk() per driver and table shape.
BYTES_PER_ROW = row_bytes_on_disk(driver="mysql", wide=False)
# A prepare this long gets a sentence of its own in the plan, before anyone launches it.
LONG_PREPARE_S = 3600


@dataclass(slots=True)
class PlannedJob:
    position: int
    target: Target
    scenario: Scenario
    threads: int
    repetition: int
    tables: int
    table_size: int
    clients: int
    time_s: int
    warmup_s: int
    variant: str = ""
    variant_settings: dict[str, str] = field(default_factory=dict)


def campaign_expand(*, campaign: Campaign) -> list[PlannedJob]:
    """The campaign's jobs in execution order (Campaign.job_order).

    Scenarios outermost, so that a target's dataset is prepared once and reused by every job on it. Interleaved
    (the default): per scenario, per thread count, per repetition, every target and variant in turn, the turn
    reversed every second repetition (A B, B A, A B …), so that a drift of the machines' load over the run (another
    tenant, a warming cache, a thermal limit) falls on every target and variant alike instead of becoming part of
    their difference (a plain A B A B puts B one job later in every repetition: bench/order_drift.py). Blocked: per target, per
    scenario, per variant, per thread count, per repetition, as benchapp ran them before. A variant's settings
    are applied before and put back after each of its jobs either way, so neither order costs more changes.
    """
    targets = list(campaign.targets.select_related("spec", "product").order_by("name"))
    scenarios = list(campaign.scenarios.select_related("dataset").order_by("name"))
    # A campaign without variants has one implicit variant "": its jobs run the server as it is, as before.
    variants = campaign.variants or [{"name": ""}]
    # Every (target, scenario, variant, threads, repetition) cell, then its place in the order.
    cells: list[tuple[tuple[Any, ...], PlannedJob]] = []
    for t_index, target in enumerate(targets):
        for s_index, scenario in enumerate(scenarios):
            if not runs_on(target, scenario):  # host tests on client-host targets, database tests on databases
                continue
            # A host test has no tables: its own size, never the campaign's sweep.
            sizes = ([campaign.dataset_size(scenario.dataset, target.spec)] if target.is_client_host()
                     else campaign.dataset_sizes(scenario.dataset, target.spec))
            # A host test measures a client host, not a database server: no variant changes what it measures, so
            # it runs once, not once per variant.
            for z_index, (tables, table_size) in enumerate(sizes):
                for v_index, variant in enumerate([{"name": ""}] if target.is_client_host() else variants):
                    for threads in campaign.threads_for(target, scenario):
                        for repetition in range(1, campaign.repetitions + 1):
                            job = PlannedJob(
                                position=0, target=target, scenario=scenario, threads=threads,
                                repetition=repetition, tables=tables, table_size=table_size,
                                # A host test measures its one host: one client, whatever the campaign's rule.
                                clients=1 if target.is_client_host() else campaign.clients_for(threads),
                                time_s=campaign.run_time_s or scenario.time_s,
                                warmup_s=(scenario.warmup_s if campaign.warmup_override_s is None
                                          else campaign.warmup_override_s),
                                variant=variant["name"], variant_settings=variant_settings(variant, target.driver),
                            )
                            # Sizes within a scenario, outside threads: each size is prepared once per target.
                            blocked = (t_index, s_index, z_index, v_index, len(cells))
                            # Counterbalanced: the second repetition runs the targets and variants in the
                            # reverse order (A B, B A, A B …), so that a steady drift cancels across each pair of
                            # repetitions instead of always falling on whoever runs second.
                            turn = (t_index, v_index) if repetition % 2 else (-t_index, -v_index)
                            interleaved = (s_index, z_index, threads, repetition, *turn)
                            cells.append((blocked if campaign.job_order == Campaign.JobOrder.BLOCKED
                                          else interleaved, job))
    planned = [job for _, job in sorted(cells, key=lambda cell: cell[0])]
    for position, job in enumerate(planned):
        job.position = position
    return planned


def job_estimate_s(*, time_s: float, warmup_s: float, prepare_s: float = 0.0,
                   overhead_s: float = JOB_OVERHEAD_S) -> float:
    """How long one job takes: its preparation, warm-up and measured time, plus the app's own overhead."""
    return prepare_s + warmup_s + time_s + overhead_s


def planned_ddl(*, scenario: Scenario, driver: str, tables: int,
                table_size: int) -> tuple[str | None, str | None]:
    """The CREATE TABLE a job's prepare runs on its target, as it will run (for the first table; each table
    gets its own name): the scenario's own, or benchapp's BIGINT table for more rows than sysbench's INTEGER id
    holds; or the reason it would be refused; (None, None) when sysbench creates the tables."""
    try:
        ddl, _ = dataset_table_ddl(scenario=scenario, table_size=table_size, driver=driver)
        if not ddl:
            return None, None
        statements = table_ddl_statements(ddl, tables=tables, driver=driver)
    except (DdlError, JobFailure) as exc:
        return None, str(exc)
    return statements[0], None


def prepare_note(*, rows: int, prepare_s: float, resumable: bool, data_kept: bool) -> str:
    """What a user should know before launching a prepare that takes hours ("" for a short one)."""
    if prepare_s < LONG_PREPARE_S:
        return ""
    note = (f"Preparing {rows:,} rows takes hours: about {format_duration(prepare_s)} at "
            f"{PREPARE_ROWS_PER_S:,} rows/s (the time is the target's). Progress shows on the run page.")
    if prepare_s > settings.BENCHAPP_PREPARE_TIMEOUT_S:
        note += (f" It is longer than BENCHAPP_PREPARE_TIMEOUT_S ({format_duration(settings.BENCHAPP_PREPARE_TIMEOUT_S)}):"
                 " raise it, or the prepare stops there.")
    if resumable and data_kept:
        note += " A prepare that stops (cancelled, failed, timed out) resumes where it stopped at the next launch."
    elif resumable:
        note += (" A prepare that stops resumes at the next launch only if its tables are kept (the campaign's "
                 "\"keep data\" or the scenario's cleanup \"keep the data\"); as set, the run's end drops them.")
    return note


def campaign_plan(*, campaign: Campaign) -> dict[str, Any]:
    """What a launch would do, before it does it: jobs in order, exact commands and table DDL, time and size."""
    jobs: list[dict[str, Any]] = []
    ddl_cache: dict[tuple[int, str, int, int], tuple[str | None, str | None]] = {}
    total_s = 0.0
    prepared: set[tuple[int, str]] = set()
    datasets: dict[tuple[int, str], int] = {}
    planned = campaign_expand(campaign=campaign)
    # Datasets already prepared on a target: an "auto" scenario reuses them (dataset_ensure), so the plan prepares
    # nothing there and shows no prepare command (it showed one for a run that prepared nothing).
    ready = set(PreparedDataset.objects.filter(
        target_id__in={p.target.pk for p in planned}, status=PreparedDataset.Status.READY,
    ).values_list("target_id", "signature"))
    # A workload's prepare is its own code: its time and size are those of an earlier prepare of the same version
    # and parameters (on any target), or unknown until one ran; never the built-in tests' rows per second.
    earlier: dict[str, tuple[float, int | None] | None] = {}
    unknown = 0
    for p in planned:
        scenario = p.scenario
        if p.target.is_client_host():
            entry = hostjob_plan(p)
            total_s += entry["estimated_duration_s"]
            jobs.append(entry)
            continue
        shell_job = Job(target=p.target, scenario=scenario, threads=p.threads, tables=p.tables, table_size=p.table_size,
                        time_s=p.time_s, warmup_s=p.warmup_s)
        conn = Connection(driver=p.target.driver, host=p.target.host, port=p.target.port or 0,
                          database=p.target.database, user=p.target.user,
                          password="***" if p.target.has_password() else "")
        signature = dataset_signature(scenario=scenario, tables=p.tables, table_size=p.table_size)
        key = (p.target.pk, signature)
        rows = p.tables * p.table_size
        prepare_s: float | None = 0.0
        will_prepare = scenario.prepare_mode != Scenario.PrepareMode.NEVER and (
            scenario.prepare_mode == Scenario.PrepareMode.ALWAYS or (key not in prepared and key not in ready))
        wide = dataset_wide(scenario=scenario, table_size=p.table_size, driver=p.target.driver)
        dataset_bytes: int | None = rows * row_bytes_on_disk(driver=p.target.driver, wide=wide)
        if scenario.workload_version_id is not None:
            if signature not in earlier:
                earlier[signature] = _earlier_prepare(signature)
            known = earlier[signature]
            dataset_bytes = known[1] if known is not None else None
            if will_prepare:
                prepare_s = known[0] if known is not None else None
                unknown += known is None
        elif will_prepare:
            prepare_s = rows / PREPARE_ROWS_PER_S
        if will_prepare:
            prepared.add(key)
        if dataset_bytes is not None:
            datasets[key] = dataset_bytes
        duration_s = job_estimate_s(time_s=p.time_s, warmup_s=p.warmup_s, prepare_s=prepare_s or 0.0)
        total_s += duration_s
        shares = split_threads(p.threads, p.clients)
        ddl_key = (scenario.pk, p.target.driver, p.tables, p.table_size)
        if ddl_key not in ddl_cache:
            ddl_cache[ddl_key] = planned_ddl(scenario=scenario, driver=p.target.driver, tables=p.tables,
                                             table_size=p.table_size)
        table_ddl, table_ddl_error = ddl_cache[ddl_key] if will_prepare else (None, None)
        prepare_argv = None
        commands: list[str] = []
        command_error = None
        try:
            if will_prepare:
                prepare_argv = (loader_prepare_argv(job=shell_job, conn=conn, create_secondary=wide)
                                if table_ddl else phase_argv(job=shell_job, conn=conn, command="prepare"))
            commands = [format_command(phase_argv(job=shell_job, conn=conn, command="run", threads=share))
                        for share in shares]
        except (JobFailure, OptionError) as exc:  # a scenario row written past the checks: shown, never run
            command_error = str(exc)
        jobs.append({
            "position": p.position, "target": p.target.name, "target_id": p.target.pk,
            "scenario": scenario.name, "scenario_id": scenario.pk, "test": scenario.test,
            "threads": p.threads, "repetition": p.repetition, "tables": p.tables, "table_size": p.table_size,
            "size_unit": scenario.size_noun(), "variant": p.variant, "variant_settings": p.variant_settings,
            "clients": p.clients, "threads_per_client": shares,
            "prepare_command": format_command(prepare_argv) if prepare_argv else None,
            "commands": commands, "command_error": command_error,
            "table_ddl": table_ddl, "table_ddl_error": table_ddl_error,
            "estimated_prepare_s": None if prepare_s is None else round(prepare_s, 1),
            "prepare_estimate": ("unknown: no earlier prepare of this workload with these parameters"
                                 if prepare_s is None else "reused: already prepared on the target"
                                 if not will_prepare and key in ready else ""),
            "prepare_note": prepare_note(
                rows=rows, prepare_s=prepare_s or 0.0, resumable=bool(table_ddl),
                data_kept=campaign.keep_data or scenario.cleanup == Scenario.Cleanup.KEEP),
            "estimated_duration_s": round(duration_s, 1),
            "estimated_dataset_bytes": dataset_bytes,
        })
    adaptive = _adaptive_plan(campaign=campaign, planned=planned) if campaign.adaptive_ladder else None
    return {
        "campaign": campaign.name, "campaign_id": campaign.pk, "jobs": jobs, "job_count": len(jobs),
        # What the adaptive ladder may add after these jobs (at most: it stops once each ladder is located).
        "adaptive_ladder": adaptive,
        "estimated_duration_s": round(total_s, 1), "estimated_duration": format_duration(total_s),
        "estimated_dataset_bytes": sum(datasets.values()),
        # Jobs whose prepare time (and dataset size) is unknown: a workload never prepared with these parameters.
        "unknown_prepares": unknown,
        "max_clients": max((j["clients"] for j in jobs), default=0),
        "variants": [v["name"] for v in campaign.variants or []],
        "prepare_notes": list(dict.fromkeys(j["prepare_note"] for j in jobs if j["prepare_note"])),
    }


def _adaptive_plan(*, campaign: Campaign, planned: list[PlannedJob]) -> dict[str, Any]:
    """The most jobs, and measured time, the adaptive ladder may add: per ladder (target, scenario, variant, size),
    the counts strictly between its lowest and highest planned ones, at most ladder.MAX_ADDED, each repetition."""
    ladders: dict[tuple[Any, ...], list[PlannedJob]] = {}
    for p in planned:
        ladders.setdefault((p.target.pk, p.scenario.pk, p.variant, p.tables, p.table_size), []).append(p)
    jobs = 0
    seconds = 0.0
    for members in ladders.values():
        counts = {p.threads for p in members}
        room = min(MAX_ADDED, max(counts) - min(counts) + 1 - len(counts))
        repetitions = max(p.repetition for p in members)
        jobs += room * repetitions
        seconds += room * repetitions * job_estimate_s(time_s=members[0].time_s, warmup_s=members[0].warmup_s)
    return {"resolution_pct": campaign.ladder_resolution_pct, "max_counts_per_ladder": MAX_ADDED,
            "max_added_jobs": jobs, "max_added_s": round(seconds, 1), "max_added": format_duration(seconds)}


def _earlier_prepare(signature: str) -> tuple[float, int | None] | None:
    """The seconds and bytes of the latest finished prepare of this signature on any target, None if none ran."""
    found = (PreparedDataset.objects.filter(signature=signature, prepare_s__isnull=False)
             .order_by("-prepared_at").values_list("prepare_s", "size_bytes").first())
    return (float(found[0] or 0.0), found[1]) if found is not None else None


def dataset_wide(*, scenario: Scenario, table_size: int, driver: str) -> bool:
    """Whether benchapp creates this dataset's tables with BIGINT columns (its rows per byte differ)."""
    try:
        return dataset_table_ddl(scenario=scenario, table_size=table_size, driver=driver)[1]
    except JobFailure:
        return False


def runs_with_progress() -> QuerySet[Run]:
    """Runs with their jobs counted (done, failed, all, and succeeded ones by verdict) in one query;
    runs_progress() adds the ETA."""
    return cast("QuerySet[Run]", Run.objects.with_verdicts()).select_related("campaign").annotate(
        jobs_total=Count("jobs"),
        jobs_done=Count("jobs", filter=Q(jobs__status__in=Job.FINISHED)),
        jobs_failed=Count("jobs", filter=Q(jobs__status=Job.Status.FAILED)),
    )


@dataclass(slots=True)
class JobTiming:
    """What the ETA needs of one job of a run: its own nominal seconds, its dataset, and when it ran."""

    pk: int
    position: int
    status: str
    time_s: int
    warmup_s: int
    target_id: int
    signature: str
    rows: int
    prepare_mode: str
    claimed_at: datetime | None = None
    finished_at: datetime | None = None


def measured_overhead_s(*, jobs: list[JobTiming], run_started_at: datetime | None,
                        prepare_s_by_job: dict[int, float]) -> float | None:
    """The median of what this run's succeeded jobs took beyond their own measured, warm-up and preparation
    seconds, None before one has succeeded.

    A job's slot runs from the end of the job before it (or the run's start) to its own end, so the time a
    job waits to be dispatched and claimed counts as well as its snapshots, barrier and closing. The
    median, not the mean: one job that waited for a database, or a slow first connection, must not be
    multiplied by every job still to come (the mean did: "ETA 5 h 1 min" for a 4-minute quick run whose
    first job prepared its dataset).
    """
    finished = sorted((j for j in jobs if j.finished_at is not None), key=lambda j: (j.finished_at, j.position))
    overheads: list[float] = []
    previous_end = run_started_at
    for job in finished:
        assert job.finished_at is not None
        slot_start = previous_end or job.claimed_at
        previous_end = job.finished_at
        if job.status != Job.Status.SUCCEEDED or slot_start is None:
            continue
        slot_s = (job.finished_at - slot_start).total_seconds()
        overheads.append(max(0.0, slot_s - job.time_s - job.warmup_s - prepare_s_by_job.get(job.pk, 0.0)))
    return statistics.median(overheads) if overheads else None


def remaining_estimate_s(*, jobs: list[JobTiming], overhead_s: float, ready: set[tuple[int, str]],
                         rows_per_s: float = PREPARE_ROWS_PER_S, now: datetime) -> float:
    """Seconds left for the run's unfinished jobs: each one's own job_estimate_s (its measured and warm-up
    seconds, a preparation where its dataset is not ready on its target yet, the per-job overhead), less
    what an active job has already spent since it was claimed."""
    remaining = 0.0
    prepared = set(ready)
    for job in sorted(jobs, key=lambda j: j.position):
        if job.status in Job.FINISHED:
            continue
        key = (job.target_id, job.signature)
        prepare_s = 0.0
        if job.prepare_mode == Scenario.PrepareMode.ALWAYS or (
                job.prepare_mode == Scenario.PrepareMode.AUTO and key not in prepared):
            prepare_s = job.rows / rows_per_s
            prepared.add(key)
        estimate_s = job_estimate_s(time_s=job.time_s, warmup_s=job.warmup_s, prepare_s=prepare_s,
                                    overhead_s=overhead_s)
        if job.status in Job.ACTIVE and job.claimed_at is not None:
            # A job past its estimate is finishing: it still owes its closing, never a negative time.
            estimate_s = max(min(overhead_s, 1.0), estimate_s - (now - job.claimed_at).total_seconds())
        remaining += estimate_s
    return remaining


def _job_timings(run_ids: list[int]) -> dict[int, list[JobTiming]]:
    rows = (Job.objects.filter(run_id__in=run_ids).order_by()
            .values_list("pk", "run_id", "position", "status", "time_s", "warmup_s", "target_id", "tables",
                         "table_size", "claimed_at", "finished_at", "scenario__time_s", "scenario__warmup_s",
                         "scenario__test", "scenario__options", "scenario__table_ddl", "scenario__prepare_mode"))
    timings: dict[int, list[JobTiming]] = {run_id: [] for run_id in run_ids}
    signatures: dict[tuple[str, str, str, int, int], str] = {}
    for (pk, run_id, position, status, time_s, warmup_s, target_id, tables, table_size, claimed_at, finished_at,
         scenario_time_s, scenario_warmup_s, test, options, table_ddl, prepare_mode) in rows:
        shape = (test, repr(sorted((options or {}).items())), table_ddl, tables, table_size)
        if shape not in signatures:
            signatures[shape] = dataset_signature(
                scenario=Scenario(test=test, options=options or {}, table_ddl=table_ddl),
                tables=tables, table_size=table_size)
        timings[run_id].append(JobTiming(
            pk=pk, position=position, status=status,
            time_s=time_s if time_s is not None else scenario_time_s,
            warmup_s=warmup_s if warmup_s is not None else scenario_warmup_s,
            target_id=target_id, signature=signatures[shape], rows=tables * table_size,
            prepare_mode=prepare_mode, claimed_at=claimed_at, finished_at=finished_at if status in Job.FINISHED else None,
        ))
    return timings


def runs_progress(runs: list[Run], *, now: datetime | None = None) -> list[dict[str, Any]]:
    """run_progress() of each run, in three queries whatever the number of runs (none when all have finished)."""
    now = now or timezone.now()
    unfinished = [run.pk for run in runs if not run.is_finished()]
    hosts = host_heartbeats() if unfinished else []
    timings = _job_timings(unfinished) if unfinished else {}
    prepare_s_by_job: dict[int, float] = {}
    rows_per_s_by_run: dict[int, float] = {}
    ready: set[tuple[int, str]] = set()
    if unfinished:
        target_ids = {j.target_id for jobs in timings.values() for j in jobs}
        datasets = PreparedDataset.objects.filter(
            Q(prepared_by__run_id__in=unfinished)
            | Q(target_id__in=target_ids, status=PreparedDataset.Status.READY)
        ).values_list("target_id", "signature", "status", "prepared_by_id", "prepared_by__run_id", "prepare_s",
                      "tables", "table_size")
        measured: dict[int, tuple[float, float]] = {}
        for target_id, signature, status, job_id, run_id, prepare_s, tables, table_size in datasets:
            if status == PreparedDataset.Status.READY:
                ready.add((target_id, signature))
            if run_id in timings and job_id is not None and prepare_s:
                prepare_s_by_job[job_id] = prepare_s
                rows, seconds = measured.get(run_id, (0.0, 0.0))
                measured[run_id] = (rows + tables * table_size, seconds + prepare_s)
        # The pace this run's own preparations had, when they were long enough to say something.
        rows_per_s_by_run = {run_id: rows / seconds for run_id, (rows, seconds) in measured.items() if seconds >= 1}
    return [_progress(run, now=now, jobs=timings.get(run.pk), ready=ready, prepare_s_by_job=prepare_s_by_job,
                      rows_per_s=rows_per_s_by_run.get(run.pk, PREPARE_ROWS_PER_S),
                      no_worker=run_no_worker(run=run, hosts=hosts, now=now)) for run in runs]


def run_progress(run: Run, *, now: datetime | None = None) -> dict[str, Any]:
    """Jobs done of total, elapsed and an ETA, for a run from runs_with_progress().

    The ETA is the one estimate of the plan (job_estimate_s) for each unfinished job: its own measured and
    warm-up seconds (the campaign's overrides included), a preparation where its dataset is not ready yet,
    and a per-job overhead: the planned JOB_OVERHEAD_S until a job of the run has succeeded, then the median
    overhead its jobs measured (measured_overhead_s); an active job's spent seconds are taken off, so the
    ETA counts down as a job runs and moves as jobs finish.
    """
    return runs_progress([run], now=now)[0]


def _progress(run: Run, *, now: datetime, jobs: list[JobTiming] | None, ready: set[tuple[int, str]],
              prepare_s_by_job: dict[int, float], rows_per_s: float, no_worker: NoWorker | None = None) -> dict[str, Any]:
    total = getattr(run, "jobs_total", 0) or 0
    done = getattr(run, "jobs_done", 0) or 0
    end = run.finished_at or now
    elapsed_s = max(0.0, (end - run.started_at).total_seconds()) if run.started_at else 0.0
    eta_s = None
    overhead_s: float | None = None
    # With no worker alive the ETA stops: nothing moves until one is started (the warning says so).
    if not run.is_finished() and jobs is not None and no_worker is None:
        overhead_s = measured_overhead_s(jobs=jobs, run_started_at=run.started_at, prepare_s_by_job=prepare_s_by_job)
        eta_s = remaining_estimate_s(jobs=jobs, overhead_s=JOB_OVERHEAD_S if overhead_s is None else overhead_s,
                                     ready=ready, rows_per_s=rows_per_s, now=now)
    return {"done": done, "total": total, "pct": round(done * 100 / total) if total else 0,
            "elapsed_s": elapsed_s, "eta_s": eta_s, "failed": getattr(run, "jobs_failed", 0) or 0,
            "overhead_s": overhead_s, "no_worker": no_worker.as_dict() if no_worker else None}
