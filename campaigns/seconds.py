"""Every stored second of jobs' attempts, whether still rows or packed; and the packing of attempts that ended.

While an attempt measures, its seconds are rows (IntervalSample, HostSample, ServerSample): clients insert them one
second at a time and live pages read them with SQL. Once it has ended (an earlier attempt of its job, or the job
closed BENCHAPP_SECONDS_PACK_AFTER_S ago) seconds_pack_due() packs them into one PackedSeconds row per kind and
client (campaigns.packing) and deletes the rows, in one transaction. Whoever reads seconds of an attempt that may
have ended reads them here, as the rows they were: seconds_rows() merges both stores, preferring a packing over
rows of the same attempt and client (rows written after it was packed are folded in by the next pass)."""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone

from campaigns.models import HostSample, IntervalSample, Job, PackedSeconds, ServerSample

log = logging.getLogger(__name__)

Kind = PackedSeconds.Kind
MODELS: dict[str, type[models.Model]] = {Kind.INTERVAL: IntervalSample, Kind.HOST: HostSample,
                                         Kind.SERVER: ServerSample}
_KEYS = ("id", "job", "attempt", "client_index")
# A server second's counters travel as one column each: "r:Questions", "g:Threads_running".
_MAPS = {"rates": "r:", "gauges": "g:"}

# None for a job: every attempt of it.
Attempts = Mapping[int, int | None]


def columns_of(kind: str) -> tuple[str, ...]:
    """The figures of a second of that kind, as the model names them (t first)."""
    names = [f.name for f in MODELS[kind]._meta.concrete_fields if f.name not in _KEYS]
    return ("t", *(n for n in names if n != "t"))


def _wanted(attempts: Attempts, job_id: int, attempt: int) -> bool:
    want = attempts.get(job_id, -1)
    return want is None or want == attempt


def _to_columns(kind: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    names = columns_of(kind)
    out: dict[str, list[Any]] = {}
    for name in names:
        if name in _MAPS:
            keys = sorted({k for r in rows for k in (r[name] or {})})
            for key in keys:
                out[_MAPS[name] + key] = [(r[name] or {}).get(key) for r in rows]
        else:
            out[name] = [r[name] for r in rows]
    return out


def _from_columns(kind: str, columns: Mapping[str, list[Any]], n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for name in columns_of(kind):
        if name in _MAPS:
            prefix = _MAPS[name]
            maps: list[dict[str, Any]] = [{} for _ in range(n)]
            for column, values in columns.items():
                if column.startswith(prefix):
                    key = column[len(prefix):]
                    for i, v in enumerate(values):
                        if v is not None:
                            maps[i][key] = v
            for row, m in zip(rows, maps, strict=True):
                row[name] = m
        else:
            values = columns.get(name, [None] * n)
            for row, v in zip(rows, values, strict=True):
                row[name] = v
    return rows


def _packed(kind: str, attempts: Attempts) -> dict[tuple[int, int, int], list[dict[str, Any]]]:
    from campaigns.packing import unpack  # numpy: only where seconds are read, never on a client host's worker

    out = {}
    for job_id, attempt, index, count, data in (PackedSeconds.objects.filter(kind=kind, job_id__in=list(attempts))
                                                .values_list("job_id", "attempt", "client_index", "count", "data")):
        if _wanted(attempts, job_id, attempt):
            out[(job_id, attempt, index)] = _from_columns(kind, unpack(bytes(data)), count)
    return out


def seconds_rows(kind: str, attempts: Attempts, *, fields: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The seconds of those jobs' attempts (job id → attempt, None for all), rows and packings alike, as dicts of
    job_id, attempt, client_index and the fields asked (all by default), ordered by job, attempt, client and t."""
    model = MODELS[kind]
    names = list(fields) if fields is not None else list(columns_of(kind))
    if "t" not in names:
        names.insert(0, "t")
    index = ["client_index"] if kind != Kind.SERVER else []
    # Rows first, then packings: a pass that packs in between shows its packing (preferred), never neither.
    live = [r for r in model._default_manager.filter(job_id__in=list(attempts)).order_by()
            .values("job_id", "attempt", *index, *names) if _wanted(attempts, r["job_id"], r["attempt"])]
    packed = _packed(kind, attempts)
    out = []
    for r in live:
        r.setdefault("client_index", 0)
        if (r["job_id"], r["attempt"], r["client_index"]) not in packed:
            out.append(r)
    for (job_id, attempt, client), rows in packed.items():
        for row in rows:
            out.append({"job_id": job_id, "attempt": attempt, "client_index": client,
                        **{n: row.get(n) for n in names}})
    out.sort(key=lambda r: (r["job_id"], r["attempt"], r["client_index"], r["t"]))
    return out


def current_attempts(jobs: Iterable[Job]) -> dict[int, int | None]:
    """Each job's current attempt: what seconds_rows() reads for the figures that count."""
    return {job.pk: job.attempt for job in jobs}


def live_rows(kind: str, job: Job) -> models.QuerySet[Any]:
    """The rows of the job's current attempt (SQL for live pages): an attempt still measuring is never packed."""
    return MODELS[kind]._default_manager.filter(job_id=job.pk, attempt=job.attempt)


def seconds_exist(job_ids: Iterable[int]) -> bool:
    """Whether any of those jobs stored a second of sysbench's, in either form."""
    ids = list(job_ids)
    return (IntervalSample.objects.filter(job_id__in=ids).exists()
            or PackedSeconds.objects.filter(job_id__in=ids, kind=Kind.INTERVAL).exists())


def attempt_pack(*, job_id: int, attempt: int) -> int:
    """Packs one attempt's rows of every kind (folding in a packing made before) and deletes them; the seconds
    packed. The job's row is locked meanwhile, so two passes never pack one attempt at once."""
    from campaigns.packing import pack

    packed = 0
    with transaction.atomic():
        if not Job.objects.select_for_update().filter(pk=job_id).exists():
            return 0
        for kind, model in MODELS.items():
            # Its packing first (a second it holds wins), then any rows written since it was made.
            rows = [{"client_index": client, **row} for (_, _, client), packed_rows in
                    _packed(kind, {job_id: attempt}).items() for row in packed_rows]
            index = ["client_index"] if kind != Kind.SERVER else []
            rows += model._default_manager.filter(job_id=job_id, attempt=attempt).order_by("t").values(
                *index, *columns_of(kind))
            by_client: dict[int, dict[Any, dict[str, Any]]] = defaultdict(dict)
            for row in rows:
                by_client[row.get("client_index", 0)].setdefault(row["t"], row)  # a second stored twice counts once
            for client, seconds in by_client.items():
                ordered = [seconds[t] for t in sorted(seconds)]
                PackedSeconds.objects.update_or_create(
                    job_id=job_id, attempt=attempt, kind=kind, client_index=client,
                    defaults={"count": len(ordered), "data": pack(_to_columns(kind, ordered))})
                packed += len(ordered)
            model._default_manager.filter(job_id=job_id, attempt=attempt).delete()
    return packed


def _ended(model: type[models.Model], cutoff: datetime, limit: int) -> list[tuple[int, int]]:
    ended = Q(attempt__lt=F("job__attempt")) | Q(
        job__status__in=Job.FINISHED, job__finished_at__lt=cutoff, attempt=F("job__attempt"))
    running = Q(job__phase__in=("prepare", "run", "finalizing"), attempt=F("job__attempt"))
    return list(model._default_manager.filter(ended).exclude(running).order_by().values_list("job_id", "attempt")
                .distinct()[:limit])


def seconds_pack_due(*, now: datetime | None = None, limit: int = 200) -> int:
    """Packs the seconds of attempts that ended (an earlier attempt of its job, or the job closed more than
    BENCHAPP_SECONDS_PACK_AFTER_S ago and out of its measuring phases), at most `limit` attempts; the attempts
    packed. beat runs it every minute (seconds_pack_task); `manage.py seconds_pack` runs it to the end."""
    from campaigns.packing import PackError

    cutoff = (now or timezone.now()) - timedelta(seconds=settings.BENCHAPP_SECONDS_PACK_AFTER_S)
    due: set[tuple[int, int]] = set()
    for model in MODELS.values():
        due.update(_ended(model, cutoff, limit))
    done = 0
    for job_id, attempt in sorted(due)[:limit]:
        try:
            seconds = attempt_pack(job_id=job_id, attempt=attempt)
        except PackError as exc:  # its rows stay (the transaction rolled back) and are read as rows
            log.warning("job %s attempt %s: seconds not packed: %s", job_id, attempt, exc)
            continue
        done += 1
        log.debug("job %s attempt %s: %s seconds packed", job_id, attempt, seconds)
    return done


# ---------------------------------------------------------------- old seconds, kept at a coarser step

# Of a second's figures, these keep their worst over a coarse point (the latency percentile, the threads asked);
# every other number its mean, a list its mean item by item, a text its most frequent value.
_WORST = frozenset({"latency_pct_ms", "threads"})


def _merged(name: str, values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    first = present[0]
    if isinstance(first, dict):
        keys = {k for v in present for k in v}
        return {k: _merged(k, [v[k] for v in present if k in v]) for k in sorted(keys)}
    if isinstance(first, list):
        if len({len(v) for v in present}) != 1:
            return present[-1]
        return [_merged(name, list(items)) for items in zip(*present, strict=True)]
    if isinstance(first, bool) or isinstance(first, str):
        return max(set(present), key=present.count)
    if name in _WORST:
        return max(present)
    mean = sum(present) / len(present)
    return round(mean) if all(isinstance(v, int) for v in present) else round(mean, 2)


def coarse_rows(rows: Sequence[Mapping[str, Any]], step: int) -> list[dict[str, Any]]:
    """One client's seconds (t from 1) as one point per `step` seconds: t the last second of its span, rates and
    figures their mean, latency and threads their worst, lists item by item, maps key by key."""
    spans: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        spans[(int(row["t"]) - 1) // step].append(row)
    out = []
    for _, span in sorted(spans.items()):
        point = {name: _merged(name, [r[name] for r in span]) for name in span[0] if name != "t"}
        out.append({"t": max(r["t"] for r in span), **point})
    return out


def attempt_coarsen(*, job_id: int, attempt: int, step: int) -> tuple[int, int]:
    """Keeps one attempt's packed seconds of every kind at `step` seconds a point (in one transaction, the job's
    row locked as a packing locks it); the bytes before and after. Packings already coarse are left as they are."""
    from campaigns.packing import pack, unpack

    before = after = 0
    with transaction.atomic():
        if not Job.objects.select_for_update().filter(pk=job_id).exists():
            return 0, 0
        for packed in PackedSeconds.objects.filter(job_id=job_id, attempt=attempt, step_s=1):
            rows = _from_columns(packed.kind, unpack(bytes(packed.data)), packed.count)
            coarse = coarse_rows(rows, step)
            data = pack(_to_columns(packed.kind, coarse))
            before, after = before + len(packed.data), after + len(data)
            PackedSeconds.objects.filter(pk=packed.pk).update(data=data, count=len(coarse), step_s=step)
    return before, after


def seconds_coarsen_due(*, now: datetime | None = None, limit: int = 500, dry_run: bool = False) -> dict[str, int]:
    """The packed seconds of jobs closed more than BENCHAPP_SECONDS_KEEP_DAYS ago, kept at BENCHAPP_SECONDS_COARSE_S
    seconds a point (at most `limit` attempts a call); {"attempts", "bytes_before", "bytes_after"}. dry_run only
    counts the attempts due and their bytes. Nothing with BENCHAPP_SECONDS_KEEP_DAYS 0."""
    from campaigns.packing import PackError

    keep_days = settings.BENCHAPP_SECONDS_KEEP_DAYS
    done = {"attempts": 0, "bytes_before": 0, "bytes_after": 0}
    if keep_days <= 0:
        return done
    cutoff = (now or timezone.now()) - timedelta(days=keep_days)
    due = (PackedSeconds.objects.filter(step_s=1, job__status__in=Job.FINISHED, job__finished_at__lt=cutoff)
           .order_by("job_id", "attempt").values_list("job_id", "attempt").distinct()[:limit])
    for job_id, attempt in list(due):
        if dry_run:
            sizes = PackedSeconds.objects.filter(job_id=job_id, attempt=attempt, step_s=1).values_list("data",
                                                                                                       flat=True)
            done["attempts"] += 1
            done["bytes_before"] += sum(len(d) for d in sizes)
            continue
        try:
            before, after = attempt_coarsen(job_id=job_id, attempt=attempt, step=settings.BENCHAPP_SECONDS_COARSE_S)
        except PackError as exc:  # left at full resolution (the transaction rolled back)
            log.warning("job %s attempt %s: old seconds not coarsened: %s", job_id, attempt, exc)
            continue
        done["attempts"] += 1
        done["bytes_before"] += before
        done["bytes_after"] += after
    return done
