"""Viewset of jobs, with their live samples, series and metrics (cached once a job is closed)."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.samples_query import (
    SAMPLE_SUMMED,
    SECOND_COLUMNS,
    SERIES_METRICS,
    fetch_rows,
    job_second_rows,
    samples_per_second,
)
from campaigns.api.serializers.jobs import (
    JobDetailSerializer,
    JobSerializer,
    SamplesQuerySerializer,
    SamplesResponseSerializer,
    SeriesQuerySerializer,
    SeriesResponseSerializer,
)
from campaigns.api.serializers.results import ResultBriefSerializer
from campaigns.api.views.base import (
    ReadOnlyViewSet,
    cached_json,
    scenarios_prefetch,
    serialized_columns,
    targets_prefetch,
)
from campaigns.cache import SECONDS_TIMEOUT_S, SERIES_TIMEOUT_S, cached_value
from campaigns.downsample import downsample
from campaigns.execution.metrics import job_metrics
from campaigns.filtersets import JobFilterSet
from campaigns.models import Job


def _job_list_columns() -> list[str]:
    # Lists load only what they show: a job row has a dozen timestamps, a run and a result a dozen
    # columns more, and building those values is most of a list's time in the database driver.
    # "attempts" comes from the prefetched Attempt rows and the timestamps waiting and attempts are made of.
    return [*serialized_columns(JobSerializer), "run__campaign",
            *(f"result__{name}" for name in serialized_columns(ResultBriefSerializer))]


def _latency_meta(job: Job) -> dict[str, Any]:
    return {"pct": job.scenario.percentile, "aggregate": "max", "label": "worst client"}


@extend_schema_view(
    retrieve=extend_schema(responses={200: JobDetailSerializer}),
    samples=extend_schema(
        parameters=[SamplesQuerySerializer],
        responses={200: SamplesResponseSerializer},
        description="Live per-second figures for polling: seconds with t > since, rates summed over the job's "
                    "clients, latency the worst client's; with the job's status.",
    ),
    series=extend_schema(
        parameters=[SeriesQuerySerializer],
        responses={200: SeriesResponseSerializer},
        description="The job's whole series per metric, downsampled server-side to at most max_points points "
                    "(min/max buckets keep every extreme; lttb keeps the shape); full=true for every point.",
    ),
    metrics=extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        description="What was measured beside sysbench, per second on its time axis: each client host's CPU (total, "
                    "per core, of sysbench, of the CPUs sysbench may use), load, context switches, network and memory; "
                    "the target server's counter rates and gauges; the exact server readings around the measurement; "
                    "the run's client-to-target round trips; and the job's validity findings and verdict.",
    ),
)
class JobViewSet(ReadOnlyViewSet):
    # Targets and scenarios are few and shared by many jobs: prefetched (one small query each)
    # rather than joined, which keeps the main query's plan cheap. server_snapshot can be large
    # and is not part of the list.
    queryset = (Job.objects.select_related("run", "result").only(*_job_list_columns())
                .prefetch_related(targets_prefetch("target"), scenarios_prefetch("scenario"), "attempts"))
    serializer_class = JobSerializer
    filterset_class = JobFilterSet
    ordering_fields = ["id", "run", "position", "threads", "status", "queued_at", "started_at", "finished_at"]

    def get_queryset(self) -> QuerySet[Job]:
        if self.action in ("samples", "series"):
            # Live polling: the job's state and its percentile label, in one small query.
            return Job.objects.select_related("scenario").only(
                "id", "status", "phase", "clients_needed", "finished_at", "attempt", "scenario__percentile")
        if self.action == "retrieve":
            return Job.objects.select_related("run", "result").prefetch_related(
                targets_prefetch("target"), scenarios_prefetch("scenario"), "attempts", "clients__earlier_sends")
        return super().get_queryset()

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return JobDetailSerializer if self.action == "retrieve" else JobSerializer

    # Newest first; `?run=…&ordering=position` lists one run's jobs in execution order.
    ordering = ["-id"]

    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def samples(self, request: Request, pk: str | None = None) -> Response | HttpResponse:
        job = self.get_object()
        query = SamplesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        since = query.validated_data.get("since")
        limit = query.validated_data["limit"]
        # A closed job's seconds never change: its answers are cached, made from the seconds cached
        # for its series. A job still measuring is read from the database each time.
        job_key = _closed_job_key(job)

        def build() -> dict[str, Any]:
            if job_key is not None:
                columns = _second_columns(job, job_key)
                rows = [row for row in zip(*(columns.get(c, ()) for c in SECOND_COLUMNS), strict=True)
                        if since is None or row[0] > since][: limit + 1]
            else:
                queryset = samples_per_second(job)
                if since is not None:
                    queryset = queryset.filter(t__gt=since)
                rows = fetch_rows(queryset[: limit + 1])
            fetched = [dict(zip(SECOND_COLUMNS, row, strict=True)) for row in rows]
            more = len(fetched) > limit
            fetched = fetched[:limit]
            return {
                "job": job.pk, "status": job.status, "phase": job.phase, "finished": job.is_finished(),
                "clients": job.clients_needed, "summed": list(SAMPLE_SUMMED), "latency": _latency_meta(job),
                "last_t": fetched[-1]["t"] if fetched else since, "more": more, "samples": fetched,
            }

        key = job_key and f"{job_key}:samples:{since}:{limit}"
        return cached_json(request, self, key, build, timeout=SERIES_TIMEOUT_S)

    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def metrics(self, request: Request, pk: str | None = None) -> Response:
        return Response(job_metrics(self.get_object()))

    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def series(self, request: Request, pk: str | None = None) -> Response | HttpResponse:
        job = self.get_object()
        query = SeriesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        # A closed job's samples never change: charts of past jobs come from the cache. A job failed
        # while its clients still run ("run" phase) may get a few more seconds: not cached yet.
        # Two entries: the answer itself, and the job's seconds (the costly GROUP BY), which serve
        # any other max_points or method of the same job.
        params = query.validated_data
        job_key = _closed_job_key(job)
        key = job_key and f"{job_key}:{int(params['full'])}:{params['max_points']}:{params['method']}"

        def build() -> dict[str, Any]:
            return self._series(job, _second_columns(job, job_key), **params)

        return cached_json(request, self, key, build, timeout=SERIES_TIMEOUT_S)

    def _series(self, job: Job, columns: dict[str, tuple[Any, ...]], *, full: bool, max_points: int,
                method: str) -> dict[str, Any]:
        ts = columns.get("t", ())
        series: dict[str, list[tuple[float, float | None]]] = {}
        for metric in SERIES_METRICS:
            values = columns.get(metric, ())
            series[metric] = list(zip(ts, values, strict=True)) if full else downsample(
                ts, values, max_points=max_points, method=method)
        return {
            "job": job.pk, "status": job.status, "finished": job.is_finished(), "total_points": len(ts),
            "downsampled": not full and len(ts) > max_points,
            "method": None if full else method, "max_points": None if full else max_points,
            "latency": _latency_meta(job), "series": series,
        }


def _closed_job_key(job: Job) -> str | None:
    """The cache key of a closed job's samples, None while they may still change: a job failed while
    its clients still run ("run" phase) may get a few more seconds."""
    if job.is_finished() and job.phase not in ("prepare", "run", "finalizing"):
        return f"api:series:{job.pk}:{job.finished_at.timestamp() if job.finished_at else None}"
    return None


def _second_columns(job: Job, job_key: str | None) -> dict[str, tuple[Any, ...]]:
    """The job's seconds as columns (SECOND_COLUMNS), empty if it has none; a closed job's (job_key
    not None) from the cache, where they serve its series and its samples alike."""
    def read() -> dict[str, tuple[Any, ...]]:
        rows = job_second_rows(job)
        return dict(zip(SECOND_COLUMNS, zip(*rows, strict=True), strict=True)) if rows else {}

    return cached_value(job_key and f"{job_key}:seconds", read, timeout=SECONDS_TIMEOUT_S)
