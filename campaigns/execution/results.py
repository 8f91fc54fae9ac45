"""A job's figures: per-second samples as sysbench prints them, the clients' summaries merged into one
result, and the end of an attempt: the closing of a job (snapshot, cache check, cleanup, status) once its last
client is done, or a new attempt when the infrastructure spoiled this one (job_measure_again). job_close and
job_measure_again are the only callers of their transitions (transitions.job_end, transitions.job_requeue): each
does everything its end needs (a settings variant put back, the comparisons' cache outdated, the outcome logged).

One rule each: sample_row() is the only mapping from a parsed interval to an IntervalSample row (used
per line while measuring, by COPY for imported logs, and by the benches), and result_store() the only
writer of a JobResult, whether measured or imported, with one steady-state rule (steady_figures()).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max

from campaigns.cache import results_changed
from campaigns.crypto import DecryptionError
from campaigns.execution import transitions
from campaigns.execution.datasets import dataset_drop, job_dataset_signature
from campaigns.execution.dispatch import job_finalize_dispatch, job_measure_again_dispatch, run_advance
from campaigns.execution.outcomes import job_ended_log, job_outcome_log, job_phases_count
from campaigns.execution.phases import job_target_connection
from campaigns.execution.sealed import holds_field_key, job_passwords_forget
from campaigns.execution.variants import variant_restore
from campaigns.execution.verdict import job_judge
from campaigns.models import IntervalSample, Job, JobClient, JobResult, Scenario
from campaigns.probes import ProbeError, cache_hit_ratio, server_info, server_work_count
from campaigns.sysbench import parser

log = logging.getLogger(__name__)

FULL_CACHE_HIT_RATIO = 0.99

# ---------------------------------------------------------------- per-second samples

SAMPLE_COLUMNS = ("job_id", "client_index", "attempt", "t", "threads", "tps", "qps", "reads_per_s", "writes_per_s",
                  "other_per_s", "latency_pct_ms", "errors_per_s", "reconnects_per_s")

STORED, DUPLICATE, REFUSED = "stored", "duplicate", "refused"

# One statement per line: the row goes in only while its job runs this attempt and its client runs (a lost
# client's sysbench, still printing after its job failed, writes nothing); a second printed twice is kept once.
_SAMPLE_INSERT = (
    f"INSERT INTO campaigns_intervalsample ({', '.join(SAMPLE_COLUMNS)})"
    f" SELECT {', '.join(['%s'] * len(SAMPLE_COLUMNS))}"
    " FROM campaigns_job j JOIN campaigns_jobclient c ON c.job_id = j.id AND c.index = %s"
    " WHERE j.id = %s AND j.attempt = %s AND j.status = 'running' AND c.status = 'running'"
    " AND (%s::integer IS NULL OR c.attempt = %s::integer)"
    " ON CONFLICT (job_id, client_index, attempt, t) DO NOTHING RETURNING 1"
)
_SAMPLE_RUNNING = (
    "SELECT 1 FROM campaigns_job j JOIN campaigns_jobclient c ON c.job_id = j.id AND c.index = %s"
    " WHERE j.id = %s AND j.attempt = %s AND j.status = 'running' AND c.status = 'running'"
    " AND (%s::integer IS NULL OR c.attempt = %s::integer)"
)


def sample_row(*, job_id: int, client_index: int, attempt: int, interval: parser.Interval) -> tuple[Any, ...]:
    """One interval as the values of SAMPLE_COLUMNS, in that order."""
    return (job_id, client_index, attempt, interval.t, interval.threads, interval.tps, interval.qps,
            interval.reads_per_s, interval.writes_per_s, interval.other_per_s, interval.latency_pct_ms,
            interval.errors_per_s, interval.reconnects_per_s)


def sample_store(*, job_id: int, client_index: int, attempt: int, interval: parser.Interval,
                 client_attempt: int | None = None) -> str:
    """Stores one interval the moment sysbench prints it (the live view reads it from here).

    Returns STORED; DUPLICATE when this second of this client and attempt was stored already (sysbench printed
    it twice: it counts once); REFUSED when the job no longer runs this attempt or the client no longer runs
    (its send `client_attempt`, when given): its sysbench must stop.
    """
    row = sample_row(job_id=job_id, client_index=client_index, attempt=attempt, interval=interval)
    running = [client_index, job_id, attempt, client_attempt, client_attempt]
    with connection.cursor() as cursor:
        cursor.execute(_SAMPLE_INSERT, [*row, *running])
        if cursor.fetchone() is not None:
            return STORED
        cursor.execute(_SAMPLE_RUNNING, running)
        return DUPLICATE if cursor.fetchone() is not None else REFUSED


def samples_copy(rows: Iterable[tuple[Any, ...]]) -> int:
    """Stores many sample rows (values of SAMPLE_COLUMNS) with PostgreSQL COPY."""
    count = 0
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg 3 cursor underneath Django's wrapper
        with raw.copy(f"COPY campaigns_intervalsample ({', '.join(SAMPLE_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def samples_bulk_store(*, job_id: int, client_index: int, intervals: list[parser.Interval],
                       attempt: int = 1) -> int:
    """Stores a whole log's intervals at once (a 1-hour, 6-client log in well under a second); a second the log
    prints twice is stored once, the first time (as sample_store does)."""
    seen: set[float] = set()
    unique = []
    for interval in intervals:
        if interval.t not in seen:
            seen.add(interval.t)
            unique.append(interval)
    if not unique:
        return 0
    return samples_copy(sample_row(job_id=job_id, client_index=client_index, attempt=attempt, interval=i)
                        for i in unique)


# ---------------------------------------------------------------- results

_SUMMED = ("tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "transactions", "queries",
           "ignored_errors", "reconnects", "events", "counted")


def merge_summaries(summaries: list[dict[str, Any]], histograms: list[list[list[float]] | None]) -> dict[str, Any]:
    """One job-level summary from its clients: rates and counts add up; latency percentiles come
    from the merged histograms (percentiles cannot be averaged); the average is events-weighted."""
    summaries = [s for s in summaries if s]
    if not summaries:
        return {}
    if len(summaries) == 1:
        return summaries[0]
    merged: dict[str, Any] = {}
    for key in _SUMMED:
        values = [s.get(key) for s in summaries]
        merged[key] = sum(v for v in values if v is not None) if any(v is not None for v in values) else None
    merged["duration_s"] = max((s.get("duration_s") or 0) for s in summaries)
    lats = [s.get("latency_ms") or {} for s in summaries]
    events = [s.get("events") or 0 for s in summaries]
    total_events = sum(events)
    pct = next((lat.get("pct") for lat in lats if lat.get("pct") is not None), None)
    usable = [h for h in histograms if h]
    if pct is not None and len(usable) == len(summaries):
        percentile = parser.histogram_percentile(parser.merge_histograms([[(b[0], int(b[1])) for b in h] for h in usable]), pct)
    else:
        # No histogram from every client: the worst client's printed percentile, if any printed one
        # (None, not 0, when none did: --percentile=0 measures nothing).
        printed = [lat["percentile"] for lat in lats if lat.get("percentile") is not None]
        percentile = max(printed) if printed else None
    merged["latency_ms"] = {
        "min": min((lat["min"] for lat in lats if lat.get("min") is not None), default=None),
        "max": max((lat["max"] for lat in lats if lat.get("max") is not None), default=None),
        "avg": (sum((lat.get("avg") or 0) * e for lat, e in zip(lats, events, strict=True)) / total_events
                if total_events else None),
        "sum": sum(lat.get("sum") or 0 for lat in lats),
        "pct": pct,
        "percentile": percentile,
    }
    return merged


# Why a job has no latency distribution: the sentence the API and the job page show.
NO_HISTOGRAM_PERCENTILE_0 = "no latency histogram: sysbench ran with --percentile=0"
NO_HISTOGRAM_CHECKPOINTS = ("no whole-run latency histogram: with --report-checkpoints sysbench prints the histogram "
                            "of the time after the last checkpoint only")
NO_HISTOGRAM_OFF = "no latency histogram: sysbench ran without --histogram=on"
NO_HISTOGRAM_SOME_CLIENTS = "no latency histogram from every client: percentiles of part of the job would mislead"
NO_HISTOGRAM_EMPTY = "the latency histogram is empty: no event finished"


def latency_distribution(summaries: list[dict[str, Any]], histograms: list[list[list[float]] | None]
                         ) -> tuple[dict[str, float | None], str]:
    """The job's p50 … p99.9 from its clients' histograms merged into one, and why they are missing ("" if not).

    Percentiles come only from a histogram of the whole job: every client's, each of its whole run.
    """
    nothing: dict[str, float | None] = {key: None for key, _ in parser.LATENCY_PERCENTILES}
    if any((summary or {}).get("checkpoints") for summary in summaries):
        return nothing, NO_HISTOGRAM_CHECKPOINTS
    if not histograms or any(h is None for h in histograms):
        lats = [(summary or {}).get("latency_ms") or {} for summary in summaries]
        # sysbench refuses --histogram with --percentile=0, and then prints "percentile stats: disabled".
        if lats and all(lat.get("pct") is None and lat.get("avg") is not None for lat in lats):
            return nothing, NO_HISTOGRAM_PERCENTILE_0
        if all(h is None for h in histograms):
            return nothing, NO_HISTOGRAM_OFF
        return nothing, NO_HISTOGRAM_SOME_CLIENTS
    merged = parser.merge_histograms([[(b[0], int(b[1])) for b in h] for h in histograms if h is not None])
    if not merged:
        return nothing, NO_HISTOGRAM_EMPTY
    return parser.histogram_percentiles(merged), ""


# The steady-state rule, in SQL so that the migration that recomputed stored results says the same: the mean
# per-second figures of the job's current attempt over the seconds in which every client reported (a second with
# only some clients is not the job's sum), each stored once, but the first (the ramp-up of connections, and the
# only interval a warm-up run does not cover), and but zero-throughput seconds after --time (a hung target waiting
# for --forced-shutdown is not measurement); summed over clients at each t; latency is the worst client's at each t.
STEADY_SQL = (
    "WITH a AS (SELECT * FROM campaigns_intervalsample WHERE job_id = %(job)s AND attempt = %(attempt)s),"
    " s AS (SELECT t, sum(tps) tps, sum(qps) qps, max(latency_pct_ms) lat FROM a GROUP BY t"
    " HAVING count(*) = (SELECT count(DISTINCT client_index) FROM a))"
    " SELECT avg(tps), avg(qps), avg(lat) FROM s WHERE t > (SELECT min(t) FROM a)"
    " AND (%(time_s)s::float IS NULL OR t <= %(time_s)s::float OR tps > 0 OR qps > 0)"
)


def steady_figures(job: Job) -> dict[str, float | None]:
    """The job's steady-state figures from its current attempt's stored samples (measured or imported alike);
    read while it closes, before its seconds can be packed."""
    time_s = job.time_s or job.scenario.time_s
    with connection.cursor() as cursor:
        cursor.execute(STEADY_SQL, {"job": job.pk, "attempt": job.attempt, "time_s": time_s})
        tps, qps, lat = cursor.fetchone()
    return {"steady_tps": tps, "steady_qps": qps, "steady_latency_pct_ms": lat}


def result_store(*, job: Job, clients: list[JobClient], source: str) -> JobResult | None:
    """The job's JobResult from its clients' summaries (one client's comes back unchanged) and its samples.

    No result when there is neither a summary nor a steady figure.
    """
    summary = merge_summaries([c.summary for c in clients], [c.histogram for c in clients])
    steady = steady_figures(job)
    if not summary and all(value is None for value in steady.values()):
        return None
    latency = summary.get("latency_ms") or {}
    percentiles, missing = latency_distribution([c.summary for c in clients], [c.histogram for c in clients])
    fields = {key: summary.get(key) for key in _SUMMED}
    # A count from some clients only is no count of the job.
    counted = None if any((c.summary or {}).get("counted") is None for c in clients) else fields.get("counted")
    fields["counted"] = counted
    fields.update({
        "source": source, "duration_s": summary.get("duration_s"),
        "latency_min_ms": latency.get("min"), "latency_avg_ms": latency.get("avg"),
        "latency_max_ms": latency.get("max"), "latency_pct": latency.get("pct"),
        "latency_pct_ms": latency.get("percentile"), "latency_sum_ms": latency.get("sum"),
        **{JobResult.PERCENTILE_FIELDS[key]: value for key, value in percentiles.items()},
        "latency_percentiles_missing": missing,
        "host_figures": summary.get("host_figures") or {},
        "counted_per_min": (counted * 60.0 / summary["duration_s"]
                            if counted is not None and summary.get("duration_s") else None),
        **steady,
    })
    result, _ = JobResult.objects.update_or_create(job=job, defaults=fields)
    return result


# ---------------------------------------------------------------- closing a job


def job_load(job_id: int) -> Job:
    """The job with the rows its execution reads (target, scenario, dataset, run), in one query."""
    jobs = Job.objects.select_related("target", "target__spec", "scenario", "scenario__dataset", "run")
    if not holds_field_key():  # a client host may not read it (models.SecretsDeferredManager)
        jobs = jobs.defer("target__password_encrypted")
    return jobs.get(pk=job_id)


def client_prefix(job: Job, client: JobClient) -> str:
    return f"client {client.host_name}: " if job.clients_needed > 1 else ""


def job_close(job: Job, *, status: str, error: str = "") -> None:
    """Records the end of a job's attempt (a cancel or failure recorded meanwhile wins over `status`). A settings
    variant goes back first, whatever the end: one that could not be put back fails the job, naming what a DBA
    must run. Nothing when the job has been measured again since `job` was read: that attempt is not this
    caller's to end, and its own closer puts the variant's settings back."""
    if not Job.objects.filter(pk=job.pk, attempt=job.attempt).exists():
        log.warning("job %s: attempt %s not closed as %s: the job is being measured again", job.pk, job.attempt,
                    status)
        return
    if job.variant_settings:
        held = variant_restore(job_id=job.pk)
        if held:
            status = Job.Status.FAILED
            error = "; ".join(filter(None, [error, *held]))
    closed_before = Job.objects.filter(pk=job.pk, phase=Job.Phase.DONE).exists()
    if not transitions.job_end(job_id=job.pk, status=status, error=error, attempt=job.attempt):
        log.warning("job %s: attempt %s not closed as %s: the job is being measured again", job.pk, job.attempt,
                    status)
        return
    job_passwords_forget(job_id=job.pk)  # a closed job's password is no host's any more
    job_ended_log(job_id=job.pk)  # a WARNING when it failed or ended invalid (with whatever won meanwhile)
    if not closed_before:  # a close delivered twice counts the job's phases once
        job_phases_count(job_id=job.pk)
    results_changed()  # a job that just succeeded joins the comparisons


def _server_work_after(job: Job) -> dict[str, Any]:
    """The job's server_work with the server's own reading after every client ended ("after"), taken here, on
    benchapp's server, before anything else (a dataset dropped after the job) asks the target for more work."""
    work = dict(job.server_work or {})
    if "before" not in work or job.target.is_client_host():
        return work
    try:
        after = server_work_count(job_target_connection(job))
    except DecryptionError:
        after = None
    if after is not None:
        work["after"] = after
    return work


def job_finalize(*, job_id: int, attempt: int | None = None) -> bool:
    """Merges the clients' figures into the job once all have finished; True if this call did it.

    A client passes the job's attempt it measured for: a client of a lost attempt closes nothing. On a client host
    it is left to the server (dispatch.job_finalize_dispatch): False."""
    if not holds_field_key():
        job_finalize_dispatch(job_id=job_id, attempt=attempt)
        return False
    if JobClient.objects.filter(job_id=job_id, status__in=transitions.CLIENT_ACTIVE).exists():
        return False
    # Exactly one caller wins the move out of the "run" phase, whoever else arrives. The heartbeat
    # (kept up by the cleanup below) tells the reconciler this closer is alive.
    if not transitions.job_finalizing_begin(job_id=job_id, attempt=attempt):
        return False
    job = job_load(job_id)
    clients = list(job.clients.order_by("index"))
    starts = [c.started_at for c in clients if c.started_at is not None]
    skew_ms = (max(starts) - min(starts)).total_seconds() * 1000 if len(starts) == len(clients) and starts else None
    result = result_store(job=job, clients=clients, source=JobResult.Source.MEASURED)
    work = _server_work_after(job)
    snapshot = dict(job.server_snapshot)
    ratio = None
    warning = ""
    if "after" not in snapshot:  # normally taken by the last client as it exited (client._measurement_end)
        try:
            conn = job_target_connection(job)
            snapshot["after"] = server_info(conn, tables=[f"sbtest{i}" for i in range(1, job.tables + 1)]).to_dict()
        except (ProbeError, DecryptionError) as exc:
            snapshot["after"] = {"error": str(exc)}
    if "error" not in snapshot["after"] and not job.target.is_client_host():  # a host test has no server
        before_status = (snapshot.get("before") or {}).get("status") or {}
        ratio = cache_hit_ratio(before_status, snapshot["after"].get("status") or {})
        if ratio is not None and ratio < FULL_CACHE_HIT_RATIO and "cache" in job.scenario.dataset.name.lower():
            warning = f"buffer-pool hit ratio {ratio:.2%} is below 99% on a full-cache dataset"
        if job.scenario.cleanup == Scenario.Cleanup.AFTER_JOB:
            dataset_drop(job=job, signature=job_dataset_signature(job))
    wall = [c.wall_time_s for c in clients if c.wall_time_s is not None]
    Job.objects.filter(pk=job.pk).update(
        server_snapshot=snapshot, cache_hit_ratio=ratio, cache_warning=warning, start_skew_ms=skew_ms,
        wall_time_s=max(wall) if wall else None, server_work=work,
    )
    failed = [c for c in clients if c.status == JobClient.Status.FAILED]
    if failed:
        job_close(job, status=Job.Status.FAILED, error=client_prefix(job, failed[0]) + failed[0].error)
    elif any(c.status == JobClient.Status.CANCELLED for c in clients):
        job_close(job, status=Job.Status.CANCELLED)
    elif result is None:
        job_close(job, status=Job.Status.FAILED, error="sysbench printed no results")
    else:
        job_judge(job_id=job.pk)  # before it closes: a succeeded job always carries its verdict
        if not _spoiled_measure_again(job):
            job_close(job, status=Job.Status.SUCCEEDED)
    run_advance(run_id=job.run_id)
    return True


# Findings that say something outside the job spoiled its measurement, which another attempt may not meet: other
# processes on its client host, another job on its server or host, the server counting work sysbench did not send
# (another client's queries), a stall that made sysbench run past its time. Not the job's own limits (a saturated
# load generator, a cold cache, throughput that never settles): measuring again would find them again.
SPOILED_FROM_OUTSIDE = frozenset({"host-busy", "shared", "server-disagrees", "overran"})


def _spoiled_measure_again(job: Job) -> bool:
    """A measurement spoiled from outside (SPOILED_FROM_OUTSIDE) is measured again while the campaign's job_tries
    last and it asks for it (remeasure_spoiled): the spoiled attempt becomes an earlier attempt, its seconds kept
    under its number, and only what stays spoiled after the last try is a result with its verdict. True when the
    job was sent to be measured again (its closer then closes nothing)."""
    campaign = job.run.campaign
    if not (settings.BENCHAPP_REMEASURE_SPOILED and campaign.remeasure_spoiled) or job.attempt >= campaign.job_tries:
        return False
    findings = Job.objects.filter(pk=job.pk).values_list("findings", flat=True).first() or []
    spoiled = [f for f in findings if f.get("code") in SPOILED_FROM_OUTSIDE and f.get("level") != "info"]
    if not spoiled:
        return False
    cause = "spoiled from outside: " + "; ".join(str(f.get("message") or f.get("code")) for f in spoiled)
    return job_measure_again(job_id=job.pk, attempt=job.attempt, cause=cause, closing=True) == "again"


Outcome = Literal["again", "no try left", "moved on"]


def job_measure_again(*, job_id: int, attempt: int, cause: str, heartbeat_before: datetime | None = None,
                      lost_client: transitions.LostClient | None = None, closing: bool = False) -> Outcome:
    """Sends the job (at attempt `attempt`, preparing or running) to be measured again as attempt + 1.

    "no try left" when the campaign's job_tries are used (the caller then fails the job with the cause), "moved
    on" when the job had already ended, been measured again by someone else, is being closed, or (given
    heartbeat_before) beat meanwhile, or when lost_client (the client whose loss spoiled it) is no longer active
    and silent: the caller then leaves the job alone. closing: the attempt's own closer found it spoiled from
    outside; its settings variant goes back now (the new attempt applies it again before it measures) and the
    closer advances the run itself.
    """
    job = Job.objects.select_related("run__campaign").get(pk=job_id)
    tries = job.run.campaign.job_tries
    if job.attempt != attempt or job.is_finished():
        return "moved on"
    if attempt >= tries:
        return "no try left"
    if not holds_field_key():
        # A client host's worker may not remove the attempt's rows nor its seals: the server does it
        # (job_measure_again_for_host), on the request written on the host's own client row. Its client stays
        # active meanwhile, as the requeue wants it.
        if lost_client is None or not transitions.client_remeasure_ask(
                client_id=lost_client.client_id, attempt=lost_client.send, cause=cause):
            log.warning("job %s: a client host asks for a new attempt only for a client of its own that is active",
                        job_id)
            return "moved on"
        job_measure_again_dispatch(job_id=job_id, attempt=attempt, cause=cause, client_id=lost_client.client_id,
                                   send=lost_client.send)
        return "again"
    # Where the attempt was lost: the lost client's own last second (its peers may have measured on well past it).
    seconds = IntervalSample.objects.filter(job_id=job_id, attempt=attempt)
    if lost_client is not None:
        index = JobClient.objects.filter(pk=lost_client.client_id).values_list("index", flat=True).first()
        if index is not None and seconds.filter(client_index=index).exists():
            seconds = seconds.filter(client_index=index)
    t_s = seconds.aggregate(t=Max("t"))["t"]
    # The lost attempt's seals go with it, in the same transaction: the new attempt's sends seal again, for the
    # hosts it picks, and none of them can be sent (nor seal) before the requeue is committed.
    with transaction.atomic():
        if not transitions.job_requeue(job_id=job_id, attempt=attempt, cause=cause, t_s=t_s, closing=closing,
                                       heartbeat_before=heartbeat_before, lost_client=lost_client):
            return "moved on"
        job_passwords_forget(job_id=job_id)
    if closing and job.variant_settings:
        variant_restore(job_id=job_id)
    job_outcome_log(job_id=job_id, event="measured again", attempt=attempt,
                    cause=f"attempt {attempt} of {tries} lost: {cause}")
    results_changed()
    if not closing:
        run_advance(run_id=job.run_id)
    return "again"


def job_measure_again_for_host(*, job_id: int, attempt: int, cause: str, client_id: int | None,
                               send: int | None) -> Outcome:
    """On the server, for a client host whose client found the attempt spoiled: measured again, or, when no try is
    left any more, that client closed and the job failed with the cause (as the host would have done).

    Only on the request the host wrote on its own client row (transitions.client_remeasure_ask), and with that
    row's cause: a message pushed to the shared queue by anyone else (another client host may push there) names
    a client its sender could not have written, and changes nothing."""
    asked = (JobClient.objects.filter(pk=client_id, job_id=job_id, attempt=send).exclude(remeasure_cause="")
             .values_list("remeasure_cause", flat=True).first() if client_id is not None and send is not None
             else None)
    if asked is None:
        log.warning("job %s: a re-measure request refused: client %s (send %s) of that job asked for none", job_id,
                    client_id, send)
        return "moved on"
    cause = asked
    lost = transitions.LostClient(client_id=client_id, send=send) if client_id is not None else None
    measured = job_measure_again(job_id=job_id, attempt=attempt, cause=cause, lost_client=lost)
    if measured == "no try left":
        if client_id is not None:
            transitions.client_close(client_id=client_id, status=JobClient.Status.FAILED, error=cause, attempt=send)
        job = Job.objects.select_related("run__campaign").get(pk=job_id)
        transitions.job_fail(job_id=job_id, attempt=attempt, cause=no_try_left(
            cause, attempt=attempt, tries=job.run.campaign.job_tries))
        job_finalize(job_id=job_id, attempt=attempt)
    return measured


def no_try_left(cause: str, *, attempt: int, tries: int) -> str:
    """The cause of a job that failed with its tries used."""
    return cause if tries <= 1 else f"{cause} (attempt {attempt} of {tries}: no try left)"
