"""Viewset of runs (cancel, retry, run again, export and import of a bundle), and the queryset of runs
with their jobs counted by state that every answer carrying a run uses."""
from __future__ import annotations

from typing import Any, cast

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import services
from campaigns.api.exceptions import Conflict
from campaigns.api.fields import NoInputSerializer
from campaigns.api.serializers.runs import RunBundleSerializer, RunSerializer
from campaigns.api.views.base import ReadOnlyViewSet
from campaigns.filtersets import RunFilterSet
from campaigns.models import Job, Run

MAX_IDEMPOTENCY_KEY = 200


def _job_count(**condition: Any) -> Coalesce:
    jobs = Job.objects.filter(run=OuterRef("pk"), **condition).order_by().values("run")
    return Coalesce(Subquery(jobs.annotate(n=Count("*")).values("n")), 0)


def run_queryset() -> QuerySet[Run]:
    """Runs with their jobs counted by state, in the same query.

    Correlated subqueries rather than a join and GROUP BY: PostgreSQL evaluates them only for
    the page of runs returned, so a list of 50 runs does not count the jobs of every run.
    """
    return cast("QuerySet[Run]", Run.objects.with_verdicts()).select_related("campaign", "created_by").annotate(
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
    cancel=extend_schema(request=None, responses={200: RunSerializer,
                                                409: OpenApiResponse(description="The run has already finished.")}),
    export=extend_schema(responses={200: OpenApiResponse(description="The run bundle (docs/bundle.md).")}),
    import_bundle=extend_schema(request=RunBundleSerializer, responses={
        201: RunSerializer, 400: OpenApiResponse(description="The bundle is refused; the message names the part.")}),
    retry_failed=extend_schema(request=None, responses={
        202: RunSerializer, 409: OpenApiResponse(description="No failed or cancelled job, the run is still "
                                                             "active, or the campaign has a run in progress.")}),
    run_again=extend_schema(request=None, responses={
        202: RunSerializer, 409: OpenApiResponse(description="The run is still active, was imported, or the "
                                                             "campaign has a run in progress.")}),
)
class RunViewSet(ReadOnlyViewSet, mixins.DestroyModelMixin):
    queryset = run_queryset()
    serializer_class = RunSerializer
    filterset_class = RunFilterSet
    ordering_fields = ["id", "created_at", "started_at", "finished_at", "status"]
    ordering = ["-id"]

    def perform_destroy(self, instance: Run) -> None:
        if not instance.is_finished():
            raise Conflict("the run is still in progress: cancel it first", code="state_conflict")
        super().perform_destroy(instance)

    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancels every unfinished job of the run: running sysbench processes stop within a second or so and keep
        the seconds measured so far; a job already past its measurement keeps its outcome (409 if the run is
        already finished)."""
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
        RunBundleSerializer(data=request.data).is_valid(raise_exception=True)
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
