"""One job's per-second figures, summed over its clients: straight from PostgreSQL while they are rows, from their
packing (campaigns.seconds) once the attempt's seconds were packed."""
from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Count, Max, QuerySet, Sum

from campaigns.models import Job, PackedSeconds
from campaigns.seconds import Kind, live_rows

SAMPLE_SUMMED = ("tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "errors_per_s", "reconnects_per_s")
SERIES_METRICS = (*SAMPLE_SUMMED, "latency_pct_ms", "threads")


# Columns of one second of a job, in the order samples_per_second selects them.
SECOND_COLUMNS = ("t", "clients", "threads", *SAMPLE_SUMMED, "latency_pct_ms")


def samples_per_second(job: Job) -> QuerySet:
    """The job's seconds of its current attempt in time order (SECOND_COLUMNS): rates summed over its clients, latency the
    worst client's (percentiles cannot be summed)."""
    summed = {f"sum_{name}": Sum(name) for name in SAMPLE_SUMMED}
    return (
        live_rows(Kind.INTERVAL, job).values("t").order_by("t")
        .annotate(n_clients=Count("id"), sum_threads=Sum("threads"), worst_latency=Max("latency_pct_ms"), **summed)
        .values_list("t", "n_clients", "sum_threads", *summed, "worst_latency")
    )


def fetch_rows(queryset: QuerySet) -> list[tuple[Any, ...]]:
    """The rows of a values_list() queryset as the driver returns them.

    Django would pass every value of every row through its converters; for a day-long series
    (86,400 seconds × 11 columns) that is most of the request's time, and the driver's ints and
    floats are already what the JSON needs.
    """
    sql, params = queryset.query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def job_second_rows(job: Job) -> list[tuple[Any, ...]]:
    """samples_per_second()'s rows of the job, whichever store holds them, in one query (one snapshot: a packing
    committed meanwhile is seen whole, or not at all with its rows): the rows summed by SQL, or beside them the
    attempt's packings, which are summed here as the SQL sums them."""
    from campaigns.packing import unpack  # numpy, loaded only where a packing is read

    sql, params = samples_per_second(job).query.sql_with_params()
    blanks = ", ".join(["NULL"] * len(SECOND_COLUMNS))
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"SELECT s.*, NULL::smallint, NULL::bytea FROM ({sql}) s UNION ALL "  # noqa: S608 (Django's own SQL)
            f"SELECT {blanks}, p.client_index, p.data FROM {PackedSeconds._meta.db_table} p "
            "WHERE p.job_id = %s AND p.attempt = %s AND p.kind = %s", [*params, job.pk, job.attempt, Kind.INTERVAL])
        found = cursor.fetchall()
    width = len(SECOND_COLUMNS)
    packed = {row[width]: unpack(bytes(row[width + 1])) for row in found if row[width + 1] is not None}
    if not packed:
        return sorted((row[:width] for row in found), key=lambda row: row[0])
    if len(packed) == 1:  # one client: its seconds are the job's
        (c,) = packed.values()
        n = len(c.get("t", ()))
        return list(zip(c["t"], [1] * n, c["threads"], *(c[name] for name in SAMPLE_SUMMED), c["latency_pct_ms"],
                        strict=True)) if n else []
    by_t: dict[float, list[tuple[Any, ...]]] = {}
    for c in packed.values():
        for second in zip(c["t"], c["threads"], *(c[name] for name in SAMPLE_SUMMED), c["latency_pct_ms"],
                          strict=True):
            by_t.setdefault(second[0], []).append(second)
    out = []
    for t in sorted(by_t):
        clients = by_t[t]
        latencies = [s[-1] for s in clients if s[-1] is not None]
        out.append((t, len(clients), *(sum(s[i] for s in clients) for i in range(1, 2 + len(SAMPLE_SUMMED))),
                    max(latencies, default=None)))
    return out
