"""Viewset of job results: the list (JSON or CSV) and the import of logs made elsewhere."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import services
from campaigns.api.renderers import CSVRenderer, csv_response
from campaigns.api.serializers.results import (
    RESULT_CSV_COLUMNS,
    JobResultSerializer,
    ResultsImportResponseSerializer,
    ResultsImportSerializer,
)
from campaigns.api.serializers.runs import RunSerializer
from campaigns.api.views.base import (
    ReadOnlyViewSet,
    format_parameter,
    scenarios_prefetch,
    serialized_columns,
    targets_prefetch,
)
from campaigns.api.views.runs import run_queryset
from campaigns.filtersets import JobResultFilterSet
from campaigns.models import JobResult

MAX_UPLOAD_BYTES = 64 * 2**20


def result_queryset() -> QuerySet[JobResult]:
    job_columns = ("run", "status", "target", "scenario", "threads", "repetition", "tables", "table_size")
    return (JobResult.objects.select_related("job__run")
            .only(*serialized_columns(JobResultSerializer), *(f"job__{name}" for name in job_columns),
                  "job__run__campaign")
            .prefetch_related(targets_prefetch("job__target"), scenarios_prefetch("job__scenario")))


@extend_schema_view(
    list=extend_schema(parameters=[format_parameter("csv: every matching result as a CSV download "
                                                    "(not paginated).")],
                       responses={(200, "application/json"): JobResultSerializer(many=True),
                                  (200, "text/csv"): OpenApiTypes.STR}),
    import_logs=extend_schema(
        request={"multipart/form-data": ResultsImportSerializer},
        responses={201: ResultsImportResponseSerializer},
        description="Stores sysbench logs made outside benchapp as an imported run, one job per file. Every "
                    "file is checked first; if any is refused (400 naming the file), nothing is stored.",
    ),
)
class ResultViewSet(ReadOnlyViewSet):
    queryset = result_queryset()
    serializer_class = JobResultSerializer
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
        columns = RESULT_CSV_COLUMNS
        serializer = JobResultSerializer()

        def rows() -> Any:
            for result in queryset.iterator(chunk_size=2000):
                data = serializer.to_representation(result)
                yield [data[c] for c in columns]

        return csv_response(columns, rows(), filename="results.csv")

    @action(detail=False, methods=["post"], url_path="import")
    def import_logs(self, request: Request) -> Response:
        body = ResultsImportSerializer(data=request.data)
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
            "run": RunSerializer(run_queryset().get(pk=run.pk)).data,
            "results": JobResultSerializer(results, many=True).data,
        }, status=status.HTTP_201_CREATED)
