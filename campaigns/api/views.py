"""API viewsets: queryset + serializer + FilterSet, and actions that call one service each.

Every list is filtered (campaigns.filtersets), ordered (`?ordering=`, explicit fields) and
paginated (`?limit=&offset=`), and its queryset joins or prefetches what the serializer reads, so
the number of queries does not grow with the number of rows.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from django.contrib.auth import authenticate, get_user_model
from django.db import transaction
from django.db.models import Count, Model, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns import monitoring, roles, services
from campaigns.api import serializers as s
from campaigns.api.exceptions import Conflict
from campaigns.api.fields import NoInputSerializer
from campaigns.api.permissions import RolePermission, SuperuserEditedBySuperuser
from campaigns.api.renderers import CSVRenderer, csv_response
from campaigns.api.samples_query import SAMPLE_SUMMED, SECOND_COLUMNS, SERIES_METRICS, fetch_rows, samples_per_second
from campaigns.api.throttling import TokenAddressThrottle, TokenUsernameThrottle
from campaigns.cache import (
    SECONDS_TIMEOUT_S,
    SERIES_TIMEOUT_S,
    cached_value,
    query_key,
    request_snapshot,
    results_version,
)
from campaigns.comparison.histogram import cell_histogram
from campaigns.comparison.query import COMPARISON_CSV_COLUMNS, comparison_build, comparison_rows
from campaigns.comparison.rows import Comparison
from campaigns.comparison.selection import Selection
from campaigns.downsample import downsample
from campaigns.execution.metrics import job_metrics
from campaigns.filtersets import (
    CampaignFilterSet,
    ClientHostFilterSet,
    DatasetFilterSet,
    InstanceSpecFilterSet,
    JobFilterSet,
    JobResultFilterSet,
    ProductFilterSet,
    RunFilterSet,
    ScenarioFilterSet,
    TargetFilterSet,
)
from campaigns.models import (
    ApiToken,
    Campaign,
    ClientHost,
    Dataset,
    InstanceSpec,
    Job,
    JobResult,
    Product,
    Run,
    Scenario,
    Target,
)
from campaigns.sysbench.cmdline import command_to_scenario, parse_command

ID_PATTERN = r"[0-9]{1,19}"
MAX_IDEMPOTENCY_KEY = 200
MAX_UPLOAD_BYTES = 64 * 2**20
# A list page's entry is only ever read under the same database snapshot; while anything writes,
# entries are outdated within a second, so they need not be kept long.
LIST_TIMEOUT_S = 60


class _RendersContext(Protocol):
    def get_renderer_context(self) -> dict[str, Any]: ...


def cached_json(request: Request, view: _RendersContext, key: str | None, build: Callable[[], Any], *,
                timeout: int | None = None) -> Response | HttpResponse:
    """build()'s answer. Plain JSON (nearly every request) is served as the exact bytes
    JSONRenderer made of it, from the cache under `key` when there (key None: never cached); other
    renderings (browsable API, indented JSON, CSV) are built each time."""
    renderer = request.accepted_renderer
    if key is None or type(renderer) is not JSONRenderer or request.accepted_media_type != renderer.media_type:
        return Response(build())
    context = view.get_renderer_context()
    body = cached_value(key, lambda: renderer.render(build(), renderer.media_type, context), timeout=timeout)
    return HttpResponse(body, content_type=renderer.media_type)


class BaseViewSet(viewsets.GenericViewSet):
    """Role permissions, numeric ids in URLs, and writes inside a savepoint.

    The savepoint matters when a write fails in the database (a unique value taken between the
    validator's check and the INSERT): the error becomes a 409 and the connection stays usable.
    """

    permission_classes = [RolePermission]
    lookup_value_regex = ID_PATTERN

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        # A model with a creator (targets, datasets, scenarios, campaigns) records who made the row, for `?mine=`.
        model = getattr(getattr(serializer, "Meta", None), "model", None)
        has_creator = model is not None and any(f.name == "created_by" for f in model._meta.fields)
        with transaction.atomic():
            serializer.save(**({"created_by": self.request.user} if has_creator else {}))

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        with transaction.atomic():
            serializer.save()

    def perform_destroy(self, instance: Any) -> None:
        with transaction.atomic():
            instance.delete()


class CachedListMixin(mixins.ListModelMixin):
    """Lists served from the cache while the database has not changed (campaigns.cache: keyed by
    the database snapshot, the URL and the caller's role). A viewset whose rows depend on the clock
    as well (a host's "online") sets `list_cached = False`."""

    list_cached = True

    # DRF sends any HttpResponse as it is: a cached list is the exact bytes rendered the first time.
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response | HttpResponse:  # type: ignore[override]
        key = None
        if self.list_cached:
            snapshot = request_snapshot(request.auth)
            if snapshot is not None:
                # `?mine=` lists depend on who asks, not only on the role.
                caller = request.user.pk if "mine" in request.query_params else None
                key = query_key("list", roles.user_role(request.user), request.build_absolute_uri(), snapshot, caller)
        view: Any = self  # the viewset this mixin is part of
        return cached_json(request, view, key, lambda: super(CachedListMixin, self).list(request, *args, **kwargs).data,
                           timeout=LIST_TIMEOUT_S)


class ModelViewSet(BaseViewSet, CachedListMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                   mixins.UpdateModelMixin, mixins.DestroyModelMixin):
    pass


class ReadOnlyViewSet(BaseViewSet, CachedListMixin, mixins.RetrieveModelMixin):
    pass


# ---------------------------------------------------------------- catalogue of systems


class ProductViewSet(ModelViewSet):
    queryset = Product.objects.all()
    serializer_class = s.ProductSerializer
    filterset_class = ProductFilterSet
    ordering_fields = ["id", "name", "engine", "vendor", "version", "created_at"]


class InstanceSpecViewSet(ModelViewSet):
    queryset = InstanceSpec.objects.all()
    serializer_class = s.InstanceSpecSerializer
    filterset_class = InstanceSpecFilterSet
    ordering_fields = ["id", "label", "cpu_cores", "memory_gb", "storage_gb", "price_per_hour"]


@extend_schema_view(
    check=extend_schema(
        request=None,
        responses={200: s.TargetCheckSerializer, 400: OpenApiResponse(description="The target cannot be reached "
                                                                              "(code target_unreachable)."),
                   429: OpenApiResponse(description="Too many connection checks by this user "
                                                    "(30 an hour by default); Retry-After says when to retry.")},
        description="Connects to the target (5 s connect timeout) and returns its server version and the "
                    "settings that decide results. Each user has a budget of checks (30 an hour by default), "
                    "shared with the target page and quick compare; every check is logged.",
    ),
)
class TargetViewSet(ModelViewSet):
    queryset = Target.objects.select_related("product", "spec")
    serializer_class = s.TargetSerializer
    filterset_class = TargetFilterSet
    ordering_fields = ["id", "name", "host", "port", "driver", "created_at", "updated_at"]

    @action(detail=True, methods=["post"])
    def check(self, request: Request, pk: str | None = None) -> Response:
        target = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        return Response(services.target_check(target=target, user=request.user))


class DatasetViewSet(ModelViewSet):
    queryset = Dataset.objects.all()
    serializer_class = s.DatasetSerializer
    filterset_class = DatasetFilterSet
    ordering_fields = ["id", "name", "tables", "table_size"]


@extend_schema_view(
    from_command=extend_schema(
        request=s.FromCommandSerializer,
        responses={200: s.FromCommandResponseSerializer, 201: s.FromCommandResponseSerializer},
        description="Reads a pasted sysbench command (0.5 or 1.0 spelling) into a scenario: test, options, "
                    "dataset size, threads, a hint of the target (never its password) and warnings for "
                    "whatever it could not keep. With save=true, name and dataset, also creates the scenario.",
    ),
)
class ScenarioViewSet(ModelViewSet):
    queryset = Scenario.objects.select_related("dataset")
    serializer_class = s.ScenarioSerializer
    filterset_class = ScenarioFilterSet
    ordering_fields = ["id", "name", "test", "time_s", "created_at"]

    @action(detail=False, methods=["post"], url_path="from-command")
    def from_command(self, request: Request) -> Response:
        query = s.FromCommandSerializer(data=request.data)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        parsed = parse_command(data["command"], default_test=data.get("default_test"))
        body: dict[str, Any] = parsed.to_dict()
        proposal = command_to_scenario(parsed)
        body["proposed"] = proposal.fields()
        body["notes"] = list(proposal.notes)
        body["scenario"] = None
        dataset = data.get("dataset")
        if dataset is not None and parsed.tables and parsed.table_size and (
            (dataset.tables, dataset.table_size) != (parsed.tables, parsed.table_size)
        ):
            body["warnings"].append(
                f"the command prepares {parsed.tables} × {parsed.table_size:,} rows; dataset '{dataset.name}' "
                f"has {dataset.tables} × {dataset.table_size:,}"
            )
        if not data["save"]:
            return Response(body)
        scenario = s.ScenarioSerializer(data={
            **body["proposed"], "name": data["name"], "dataset": dataset.pk, "description": data["description"],
        })
        scenario.is_valid(raise_exception=True)
        self.perform_create(scenario)
        body["scenario"] = scenario.data
        return Response(body, status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------- campaigns and runs


def _job_count(**condition: Any) -> Coalesce:
    jobs = Job.objects.filter(run=OuterRef("pk"), **condition).order_by().values("run")
    return Coalesce(Subquery(jobs.annotate(n=Count("*")).values("n")), 0)


def run_queryset() -> QuerySet[Run]:
    """Runs with their jobs counted by state, in the same query.

    Correlated subqueries rather than a join and GROUP BY: PostgreSQL evaluates them only for
    the page of runs returned, so a list of 50 runs does not count the jobs of every run.
    """
    return Run.objects.select_related("campaign", "created_by").annotate(
        jobs_total=_job_count(),
        jobs_pending=_job_count(status__in=(Job.Status.QUEUED, Job.Status.WAITING)),
        jobs_active=_job_count(status__in=Job.ACTIVE),
        jobs_succeeded=_job_count(status=Job.Status.SUCCEEDED),
        jobs_failed=_job_count(status=Job.Status.FAILED),
        jobs_cancelled=_job_count(status=Job.Status.CANCELLED),
    )


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key header (None without one), refused with a 400 naming it when unusable."""
    key = request.headers.get("Idempotency-Key", "").strip() or None
    if key is not None and (len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable()):
        raise serializers.ValidationError({"Idempotency-Key": f"at most {MAX_IDEMPOTENCY_KEY} printable characters"})
    return key


@extend_schema_view(
    plan=extend_schema(request=None, responses={200: OpenApiTypes.OBJECT},
                       description="What a launch would do: jobs in order, exact commands (password as ***), "
                                   "estimated duration and dataset size."),
    launch=extend_schema(
        request=s.LaunchSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER,
                                     description="Retrying with the same key returns the run the first request "
                                                 "created instead of starting another.")],
        responses={202: s.RunSerializer, 409: OpenApiResponse(description="A run is already in progress, or the "
                                                                          "campaign has no jobs.")},
    ),
)
class CampaignViewSet(ModelViewSet):
    queryset = Campaign.objects.select_related("created_by").prefetch_related(
        Prefetch("targets", queryset=Target.objects.only("id")),
        Prefetch("scenarios", queryset=Scenario.objects.only("id")),
    )
    serializer_class = s.CampaignSerializer
    filterset_class = CampaignFilterSet
    ordering_fields = ["id", "name", "created_at", "updated_at"]

    def get_queryset(self) -> QuerySet[Campaign]:
        if self.action in ("plan", "launch", "destroy"):
            # Services query the campaign's targets and scenarios themselves, with their own joins.
            return Campaign.objects.all()
        return super().get_queryset()

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        with transaction.atomic():
            serializer.save(created_by=self.request.user)

    def perform_destroy(self, instance: Campaign) -> None:
        if instance.runs.active().exists():
            raise Conflict("the campaign has a run in progress: cancel it first", code="state_conflict")
        super().perform_destroy(instance)

    @action(detail=True, methods=["post"])
    def plan(self, request: Request, pk: str | None = None) -> Response:
        campaign = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        return Response(services.campaign_plan(campaign=campaign))

    @extend_schema(responses={200: s.CampaignNoiseSerializer})
    @action(detail=True, methods=["get"])
    def noise(self, request: Request, pk: str | None = None) -> Response:
        """The noise measured in the campaign's last runs and the repetitions it calls for (campaign_noise)."""
        return Response(s.CampaignNoiseSerializer(monitoring.campaign_noise(campaign=self.get_object())).data)

    @action(detail=True, methods=["post"])
    def launch(self, request: Request, pk: str | None = None) -> Response:
        campaign = self.get_object()
        body = s.LaunchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = idempotency_key(request)
        run = services.campaign_launch(campaign=campaign, user=request.user, trigger=Run.Trigger.API,
                                       idempotency_key=key, label=body.validated_data["label"])
        data = s.RunSerializer(run_queryset().get(pk=run.pk), context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    cancel=extend_schema(request=None, responses={200: s.RunSerializer,
                                                  409: OpenApiResponse(description="The run has already finished.")}),
    export=extend_schema(responses={200: OpenApiResponse(description="The run bundle (docs/bundle.md).")}),
    import_bundle=extend_schema(request=s.RunBundleSerializer, responses={
        201: s.RunSerializer, 400: OpenApiResponse(description="The bundle is refused; the message names the part.")}),
    retry_failed=extend_schema(request=None, responses={
        202: s.RunSerializer, 409: OpenApiResponse(description="No failed or cancelled job, the run is still "
                                                               "active, or the campaign has a run in progress.")}),
    run_again=extend_schema(request=None, responses={
        202: s.RunSerializer, 409: OpenApiResponse(description="The run is still active, was imported, or the "
                                                               "campaign has a run in progress.")}),
)
class RunViewSet(ReadOnlyViewSet, mixins.DestroyModelMixin):
    queryset = run_queryset()
    serializer_class = s.RunSerializer
    filterset_class = RunFilterSet
    ordering_fields = ["id", "created_at", "started_at", "finished_at", "status"]
    ordering = ["-id"]

    def perform_destroy(self, instance: Run) -> None:
        if not instance.is_finished():
            raise Conflict("the run is still in progress: cancel it first", code="state_conflict")
        super().perform_destroy(instance)

    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        run = services.run_cancel(run=run)
        return Response(self.get_serializer(run_queryset().get(pk=run.pk)).data)

    def _rerun(self, request: Request, scope: str) -> Response:
        run = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        key = idempotency_key(request)
        new = services.run_rerun(run=run, user=request.user, trigger=Run.Trigger.API, scope=scope,
                                 idempotency_key=key)
        return Response(self.get_serializer(run_queryset().get(pk=new.pk)).data, status=status.HTTP_202_ACCEPTED)

    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str | None = None) -> HttpResponse:
        """The run as one JSON bundle (docs/bundle.md) for another benchapp's POST /runs/import-bundle/."""
        run = self.get_object()
        response = HttpResponse(services.bundle_json(services.run_export(run=run)), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="benchapp-run-{run.pk}.json"'
        return response

    @action(detail=False, methods=["post"], url_path="import-bundle")
    def import_bundle(self, request: Request) -> Response:
        """Stores a bundle exported by another benchapp as an imported run (400 naming the part refused)."""
        s.RunBundleSerializer(data=request.data).is_valid(raise_exception=True)
        try:
            run = services.bundle_import(bundle=request.data, user=request.user)
        except services.BundleRejected as exc:
            raise serializers.ValidationError({"bundle": [str(exc)]}) from None
        return Response(self.get_serializer(run_queryset().get(pk=run.pk)).data, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"], url_path="retry-failed")
    def retry_failed(self, request: Request, pk: str | None = None) -> Response:
        """A new run of this run's failed and cancelled jobs (409 if it has none or is still active)."""
        return self._rerun(request, Run.Rerun.FAILED)

    @action(detail=True, methods=["post"], url_path="run-again")
    def run_again(self, request: Request, pk: str | None = None) -> Response:
        """A new run of every job of this run, as they were (409 while a run of the campaign is active)."""
        return self._rerun(request, Run.Rerun.ALL)


# ---------------------------------------------------------------- jobs, samples, series, results

def _targets_prefetch(path: str) -> Prefetch:
    return Prefetch(path, queryset=Target.objects.select_related("product", "spec"))


def _scenarios_prefetch(path: str) -> Prefetch:
    return Prefetch(path, queryset=Scenario.objects.select_related("dataset"))


def _serialized_columns(serializer: type[serializers.ModelSerializer]) -> list[str]:
    """The model fields a serializer lists by name: the columns worth loading for it."""
    model: type[Model] = serializer.Meta.model
    concrete = {f.name for f in model._meta.concrete_fields}
    return [name for name in serializer.Meta.fields if name in concrete]


def _job_list_columns() -> list[str]:
    # Lists load only what they show: a job row has a dozen timestamps, a run and a result a dozen
    # columns more, and building those values is most of a list's time in the database driver.
    # earlier_attempts feeds "attempts", and the timestamps waiting and attempts are made of.
    return [*_serialized_columns(s.JobSerializer), "earlier_attempts", "run__campaign",
            *(f"result__{name}" for name in _serialized_columns(s.ResultBriefSerializer))]


def _latency_meta(job: Job) -> dict[str, Any]:
    return {"pct": job.scenario.percentile, "aggregate": "max", "label": "worst client"}


@extend_schema_view(
    retrieve=extend_schema(responses={200: s.JobDetailSerializer}),
    samples=extend_schema(
        parameters=[s.SamplesQuerySerializer],
        responses={200: s.SamplesResponseSerializer},
        description="Live per-second figures for polling: seconds with t > since, rates summed over the job's "
                    "clients, latency the worst client's; with the job's status.",
    ),
    series=extend_schema(
        parameters=[s.SeriesQuerySerializer],
        responses={200: s.SeriesResponseSerializer},
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
                .prefetch_related(_targets_prefetch("target"), _scenarios_prefetch("scenario")))
    serializer_class = s.JobSerializer
    filterset_class = JobFilterSet
    ordering_fields = ["id", "run", "position", "threads", "status", "queued_at", "started_at", "finished_at"]

    def get_queryset(self) -> QuerySet[Job]:
        if self.action in ("samples", "series"):
            # Live polling: the job's state and its percentile label, in one small query.
            return Job.objects.select_related("scenario").only(
                "id", "status", "phase", "clients_needed", "finished_at", "attempt", "scenario__percentile")
        if self.action == "retrieve":
            return Job.objects.select_related("run", "result").prefetch_related(
                _targets_prefetch("target"), _scenarios_prefetch("scenario"), "clients")
        return super().get_queryset()

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return s.JobDetailSerializer if self.action == "retrieve" else s.JobSerializer

    # Newest first; `?run=…&ordering=position` lists one run's jobs in execution order.
    ordering = ["-id"]

    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def samples(self, request: Request, pk: str | None = None) -> Response | HttpResponse:
        job = self.get_object()
        query = s.SamplesQuerySerializer(data=request.query_params)
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
        query = s.SeriesQuerySerializer(data=request.query_params)
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
        rows = fetch_rows(samples_per_second(job))
        return dict(zip(SECOND_COLUMNS, zip(*rows, strict=True), strict=True)) if rows else {}

    return cached_value(job_key and f"{job_key}:seconds", read, timeout=SECONDS_TIMEOUT_S)


def result_queryset() -> QuerySet[JobResult]:
    job_columns = ("run", "status", "target", "scenario", "threads", "repetition", "tables", "table_size")
    return (JobResult.objects.select_related("job__run")
            .only(*_serialized_columns(s.JobResultSerializer), *(f"job__{name}" for name in job_columns),
                  "job__run__campaign")
            .prefetch_related(_targets_prefetch("job__target"), _scenarios_prefetch("job__scenario")))


def _format_parameter(description: str) -> OpenApiParameter:
    return OpenApiParameter("format", OpenApiTypes.STR, enum=["json", "csv"], description=description)


@extend_schema_view(
    list=extend_schema(parameters=[_format_parameter("csv: every matching result as a CSV download "
                                                     "(not paginated).")],
                       responses={(200, "application/json"): s.JobResultSerializer(many=True),
                                  (200, "text/csv"): OpenApiTypes.STR}),
    import_logs=extend_schema(
        request={"multipart/form-data": s.ResultsImportSerializer},
        responses={201: s.ResultsImportResponseSerializer},
        description="Stores sysbench logs made outside benchapp as an imported run, one job per file. Every "
                    "file is checked first; if any is refused (400 naming the file), nothing is stored.",
    ),
)
class ResultViewSet(ReadOnlyViewSet):
    queryset = result_queryset()
    serializer_class = s.JobResultSerializer
    filterset_class = JobResultFilterSet
    ordering_fields = ["id", "created_at", "qps", "tps", "latency_avg_ms", "latency_pct_ms", "job__threads"]
    ordering = ["-id"]

    def get_renderers(self) -> list[Any]:
        # CSV only for the list: one result or an import response has no table shape.
        renderers = [JSONRenderer(), BrowsableAPIRenderer()]
        return [*renderers, CSVRenderer()] if self.action == "list" else renderers

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        if request.accepted_renderer.format != "csv":
            return super().list(request, *args, **kwargs)
        queryset = self.filter_queryset(self.get_queryset())
        columns = s.RESULT_CSV_COLUMNS
        serializer = s.JobResultSerializer()

        def rows() -> Any:
            for result in queryset.iterator(chunk_size=2000):
                data = serializer.to_representation(result)
                yield [data[c] for c in columns]

        return csv_response(columns, rows(), filename="results.csv")

    @action(detail=False, methods=["post"], url_path="import")
    def import_logs(self, request: Request) -> Response:
        body = s.ResultsImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        files = []
        for upload in body.validated_data["files"]:
            name = (upload.name or "upload")[:255]
            if upload.size > MAX_UPLOAD_BYTES:
                raise serializers.ValidationError({"files": f"{name}: larger than {MAX_UPLOAD_BYTES // 2**20} MiB"})
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise serializers.ValidationError({"files": f"{name}: not UTF-8 text, so not sysbench output"}) from None
            files.append((name, text))
        run = services.results_import(files=files, target=body.validated_data["target"],
                                      scenario=body.validated_data["scenario"], user=request.user)
        results = result_queryset().filter(job__run=run).order_by("job__position")
        return Response({
            "run": s.RunSerializer(run_queryset().get(pk=run.pk)).data,
            "results": s.JobResultSerializer(results, many=True).data,
        }, status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------- comparisons


def _id_list_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, {"type": "array", "items": {"type": "integer", "minimum": 1,
                                                              "maximum": 2**53}},
                            explode=False, style="form", description=description)


class ComparisonViewSet(viewsets.ViewSet):
    """GET comparisons/?targets=1,2 (or products=, runs=, campaign=, scenarios=): products side by side."""

    permission_classes = [RolePermission]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]

    @extend_schema(
        parameters=[
            _id_list_parameter("targets", "Targets to compare (comma-separated ids)."),
            _id_list_parameter("products", "Products to compare, the first being the baseline."),
            _id_list_parameter("runs", "Only jobs of these runs."),
            _id_list_parameter("campaign", "Only jobs of runs of these campaigns."),
            _id_list_parameter("scenarios", "Only these scenarios."),
            _id_list_parameter("specs", "Only targets on these instance specs."),
            _id_list_parameter("threads", "Only these thread counts."),
            OpenApiParameter("trusted_only", OpenApiTypes.BOOL,
                             description="Leave out cells whose validity verdict is suspect or invalid."),
            OpenApiParameter("baseline", OpenApiTypes.INT,
                             description="The product (or, with by_run, the run) every Δ% is against: its column "
                                         "comes first. By default the first product named."),
            OpenApiParameter("by_run", OpenApiTypes.BOOL,
                             description="One column per product and run, so that two runs of one target are "
                                         "compared instead of pooled. On by default when `runs` names two or more "
                                         "runs; `by_run=false` pools them."),
            _format_parameter("csv: one line per (dataset, scenario, spec, threads, product) cell."),
        ],
        responses={(200, "application/json"): OpenApiTypes.OBJECT, (200, "text/csv"): OpenApiTypes.STR},
        description="For each (dataset × scenario), a table of rows (spec, threads, table size, tables) with, per "
                    "product (or product and run), the value of QPS, TPS, average and percentile latency over "
                    "repetitions (`value`: their geometric mean) with median, n, mean, stdev, CV, min and max (and, for "
                    "QPS, `qps_ci95`: the 95% interval of the geometric mean, [low, high], from 2 runs), Δ% "
                    "against the first column (ratio of values − 1) with its 95% confidence interval "
                    "(`delta_ci95_pct`, [low, high], from 2 runs a side), and the worst validity verdict of its "
                    "jobs. Each non-baseline cell's `significance` says whether its QPS Δ% is larger than the runs' "
                    "noise: `verdict` (significant, not significant, untested), `p_value` (Welch's t-test on log "
                    "QPS), `p_adjusted` (Benjamini–Hochberg over the comparison), `n_base` and `n_other`, "
                    "`ci95_pct`, `runs_needed` (runs per side that would tell a difference this large) and "
                    "`sentence`, the verdict in words. Succeeded jobs only.",
    )
    def list(self, request: Request) -> Any:
        query = s.ComparisonQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data

        def build() -> Comparison:
            return comparison_build(
                target_ids=data.get("targets"), product_ids=data.get("products"), run_ids=data.get("runs"),
                campaign_ids=data.get("campaign"), scenario_ids=data.get("scenarios"), spec_ids=data.get("specs"),
                threads=data.get("threads"), trusted_only=data.get("trusted_only", False),
                by_run=data.get("by_run"), baseline=data.get("baseline"),
            )

        if request.accepted_renderer.format == "csv":
            return csv_response(COMPARISON_CSV_COLUMNS, comparison_rows(build()), filename="comparison.csv")
        # Keyed by the results version: any new result, closed job or renamed product changes the
        # version (campaigns/cache.py), so a cached comparison is always the current one.
        version = results_version()
        # by_run=false is kept in the key: it differs from by_run left out when two runs are named.
        chosen = sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in data.items()
                        if v or (v is False and k == "by_run"))
        key = None if version is None else f"api:comparison:{version}:{query_key(chosen)}"
        return cached_json(request, self, key, build)

    @extend_schema(
        parameters=[
            _id_list_parameter("targets", "Targets compared (comma-separated ids)."),
            _id_list_parameter("products", "Products compared."),
            _id_list_parameter("runs", "Only jobs of these runs."),
            _id_list_parameter("campaign", "Only jobs of runs of these campaigns."),
            _id_list_parameter("scenarios", "Only these scenarios."),
            _id_list_parameter("specs", "Only targets on these instance specs."),
            _id_list_parameter("threads", "Only these thread counts."),
            OpenApiParameter("trusted_only", OpenApiTypes.BOOL,
                             description="Leave out jobs whose validity verdict is suspect or invalid."),
            OpenApiParameter("scenario", OpenApiTypes.INT, required=True, description="The cell's scenario id."),
            OpenApiParameter("spec", OpenApiTypes.STR, required=True,
                             description="The cell's spec id; empty or 'none' for targets without a spec."),
            OpenApiParameter("concurrency", OpenApiTypes.INT, required=True, description="The cell's threads."),
            OpenApiParameter("table_size", OpenApiTypes.INT, required=True),
            OpenApiParameter("tables", OpenApiTypes.INT, required=True),
            OpenApiParameter("product", OpenApiTypes.INT, required=True, description="The cell's product id."),
            OpenApiParameter("variant", OpenApiTypes.STR, required=False,
                             description="The cell's settings variant (\"\" for jobs without one); omitted: any."),
        ],
        responses={200: OpenApiTypes.OBJECT},
        description="The latency histogram of one comparison cell: its jobs' sysbench histograms merged bucket by "
                    "bucket ([[latency_ms, count], …]), p50/p90/p95/p99/p99.9 read from them, and a note where "
                    "the jobs recorded none (a scenario run with --percentile=0).",
    )
    @action(detail=False, methods=["get"], url_path="cell-histogram", renderer_classes=[JSONRenderer,
                                                                                        BrowsableAPIRenderer])
    def cell_histogram(self, request: Request) -> Response:
        query = s.CellHistogramQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        selection = Selection(targets=data.get("targets") or [], products=data.get("products") or [],
                              runs=data.get("runs") or [], campaign=data.get("campaign") or [],
                              scenarios=data.get("scenarios") or [], specs=data.get("specs") or [],
                              trusted_only=data.get("trusted_only", False))
        return Response(cell_histogram(
            selection, scenario_id=data["scenario"], spec_id=data["spec"], threads=data["concurrency"],
            table_size=data["table_size"], tables=data["tables"], product_id=data["product"],
            thread_filter=data.get("threads") or None, variant=data.get("variant")))


# ---------------------------------------------------------------- hosts, users, tokens


class ClientHostViewSet(ModelViewSet):
    """Client hosts register themselves (worker heartbeats); only admins change or remove them."""

    queryset = ClientHost.objects.all()
    serializer_class = s.ClientHostSerializer
    filterset_class = ClientHostFilterSet
    ordering_fields = ["id", "hostname", "cores", "memory_gb", "last_heartbeat"]
    write_role = roles.ADMIN
    list_cached = False  # "online" follows the clock: a silent host goes offline with no write


class UserViewSet(ModelViewSet):
    """Logins and their roles: admins only."""

    queryset = get_user_model().objects.prefetch_related("groups").order_by("username")
    serializer_class = s.UserSerializer
    ordering_fields = ["id", "username", "date_joined", "last_login"]
    filterset_fields = ["is_active", "username"]
    read_role = write_role = delete_role = roles.ADMIN
    permission_classes = [RolePermission, SuperuserEditedBySuperuser]

    def perform_destroy(self, instance: Any) -> None:
        if instance.pk == self.request.user.pk:
            raise Conflict("you cannot delete your own login", code="state_conflict")
        super().perform_destroy(instance)


class TokenView(APIView):
    """POST username and password → a new API token of the user, shown this once (only a hash of it is kept). It
    expires after the server's token lifetime (90 days unless the administrator set another); POST
    auth/token/revoke/ with it ends it sooner. Send it as `Authorization: Bearer <token>` (or `Token <token>`).
    The API tokens page of the app (your menu › API tokens) creates, names and revokes tokens without a password
    in a script.

    Throttled per client address and per username: past the limit a request is a 429 with Retry-After before its
    password is checked.
    """

    permission_classes = [AllowAny]
    authentication_classes: list[Any] = []
    throttle_classes = [TokenAddressThrottle, TokenUsernameThrottle]

    @extend_schema(request=s.TokenRequestSerializer, auth=[], responses={
        200: s.TokenResponseSerializer,
        429: OpenApiResponse(
            response=inline_serializer("Throttled", {"detail": serializers.CharField(),
                                                     "code": serializers.CharField()}),
            description="Too many attempts from this address or for this username; the Retry-After "
                        "header says when to try again."),
    })
    def post(self, request: Request) -> Response:
        body = s.TokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = authenticate(request._request, username=body.validated_data["username"],
                            password=body.validated_data["password"])
        if user is None or not user.is_active:
            raise serializers.ValidationError({"non_field_errors": ["unknown username or wrong password"]})
        key = services.token_issue(user=user)
        return Response({"token": key, "username": user.get_username(), "role": roles.user_role(user)})


class TokenRevokeView(APIView):
    """POST with a token → that token no longer works (204). Session users have no token to revoke (400)."""

    @extend_schema(request=None, responses={204: None, 400: OpenApiResponse(description="Not a token request.")})
    def post(self, request: Request) -> Response:
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        if not isinstance(request.auth, ApiToken):
            raise serializers.ValidationError({"non_field_errors": ["authenticate with the token to revoke "
                                                                   "(Authorization: Token ...)"]})
        services.token_revoke(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Anything under /api/ that no route matches: a JSON 404 (whatever the method)."""
    return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
