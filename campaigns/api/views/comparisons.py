"""Viewset of comparisons (products side by side) and of one cell's latency histogram."""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.permissions import RolePermission
from campaigns.api.renderers import CSVRenderer, csv_response
from campaigns.api.serializers.comparisons import CellHistogramQuerySerializer, ComparisonQuerySerializer
from campaigns.api.views.base import cached_json, format_parameter
from campaigns.cache import query_key, results_version
from campaigns.comparison.curves import comparison_curves
from campaigns.comparison.histogram import cell_histogram
from campaigns.comparison.query import COMPARISON_CSV_COLUMNS, comparison_build, comparison_rows
from campaigns.comparison.rows import Comparison
from campaigns.comparison.selection import Selection, sla_of
from campaigns.models import InstanceSpec


def _id_list_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, {"type": "array", "items": {"type": "integer", "minimum": 1,
                                                              "maximum": 2**53}},
                            explode=False, style="form", description=description)


def _selection_parameters(*, products: str, trusted_only: str) -> list[OpenApiParameter]:
    """The parameters choosing what is compared, the same for the comparison and for one cell's histogram."""
    return [
        _id_list_parameter("targets", "Targets to compare (comma-separated ids)."),
        _id_list_parameter("products", products),
        _id_list_parameter("runs", "Only jobs of these runs."),
        _id_list_parameter("campaign", "Only jobs of runs of these campaigns."),
        _id_list_parameter("scenarios", "Only these scenarios."),
        _id_list_parameter("specs", "Only targets on these instance specs."),
        _id_list_parameter("threads", "Only these thread counts."),
        OpenApiParameter("trusted_only", OpenApiTypes.BOOL, description=trusted_only),
    ]


# Bumped whenever a comparison answer changes shape (cells per target, errors, the campaign's latency limit: 2; each
# cell's jobs: 3).
API_FORMAT = 3

class ComparisonViewSet(viewsets.ViewSet):
    """GET comparisons/?targets=1,2 (or products=, runs=, campaign=, scenarios=): products side by side."""

    permission_classes = [RolePermission]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]

    @extend_schema(
        parameters=[
            *_selection_parameters(products="Products to compare; the first is the baseline unless `baseline` names "
                                            "one.",
                                   trusted_only="Leave out cells whose validity verdict is suspect or invalid."),
            OpenApiParameter("baseline", OpenApiTypes.INT,
                             description="The product (or, with by_run, the run) every Δ% is against: its column "
                                         "comes first. By default the first product named."),
            OpenApiParameter("by_run", OpenApiTypes.BOOL,
                             description="One column per product and run, so that two runs of one target are "
                                         "compared instead of pooled. On by default when `runs` names two or more "
                                         "runs; `by_run=false` pools them."),
            OpenApiParameter("sla_ms", OpenApiTypes.FLOAT,
                             description="A latency limit in ms on the percentile the jobs measured: each curve gives "
                                         "the highest QPS that keeps to it (`sla_threads`, `sla_qps`). By default the "
                                         "campaign's `sla_ms` when the comparison names one campaign (or runs of "
                                         "one)."),
            format_parameter("csv: one line per (dataset, scenario, spec, threads, product) cell."),
        ],
        responses={(200, "application/json"): OpenApiTypes.OBJECT, (200, "text/csv"): OpenApiTypes.STR},
        description="For each (dataset × scenario), a table of rows (spec, threads, table size, tables) with, per "
                    "product (or product and run), the value of QPS, TPS, average and percentile latency over "
                    "repetitions (`value`: their geometric mean) with median, n, mean, stdev, CV, min and max (and, for "
                    "QPS, `qps_ci95`: the 95% interval of the geometric mean, [low, high], from 2 runs), Δ% "
                    "against the first column (ratio of values − 1) with its 95% confidence interval "
                    "(`delta_ci95_pct`, [low, high], from 2 runs a side), and the worst validity verdict of its "
                    "jobs. Each non-baseline cell's `significance` says whether its QPS Δ% is larger than the runs' "
                    "noise: `verdict`, in the page's words (`significant`; `within ±5%`: no difference beyond "
                    "±5%, its interval that narrow; `too few runs to tell`: not significant, its interval too wide "
                    "to rule a difference out; `untested`: one run a side), `p_value` (Welch's t-test on log "
                    "QPS), `p_adjusted` (Benjamini–Hochberg over the comparison), `n_base` and `n_other`, "
                    "`ci95_pct`, `runs_needed` (runs per side that would tell a difference this large) and "
                    "`sentence`, the verdict in words. Each measured cell's `costs` are its per-query costs "
                    "(median, min, max, n over its repetitions) and `bound` what ran out, with its evidence; a "
                    "significant cell's `why` ranks the costs that differ most from the baseline's. `curves` gives "
                    "each column's peak, knee, SLA point and price-performance over its thread ladder "
                    "(docs/explain.md). Succeeded jobs only.",
    )
    def list(self, request: Request) -> Any:
        query = ComparisonQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data

        def build() -> Comparison:
            comparison = comparison_build(
                target_ids=data.get("targets"), product_ids=data.get("products"), run_ids=data.get("runs"),
                campaign_ids=data.get("campaign"), scenario_ids=data.get("scenarios"), spec_ids=data.get("specs"),
                threads=data.get("threads"), trusted_only=data.get("trusted_only", False),
                by_run=data.get("by_run"), baseline=data.get("baseline"),
            )
            spec_ids = {r["spec_id"] for g in comparison["groups"] for r in g["rows"] if r["spec_id"] is not None}
            prices = {pk: float(price) for pk, price in InstanceSpec.objects.filter(
                pk__in=spec_ids, price_per_hour__isnull=False).values_list("pk", "price_per_hour") if price}
            comparison["curves"] = comparison_curves(comparison, prices=prices, sla_ms=sla_of(
                sla_ms=data.get("sla_ms"), campaign_ids=data.get("campaign") or [], run_ids=data.get("runs") or []))
            return comparison

        if request.accepted_renderer.format == "csv":
            return csv_response(COMPARISON_CSV_COLUMNS, comparison_rows(build()), filename="comparison.csv")
        # Keyed by the results version: any new result, closed job or renamed product changes the
        # version (campaigns/cache.py), so a cached comparison is always the current one.
        version = results_version()
        # by_run=false is kept in the key: it differs from by_run left out when two runs are named.
        chosen = sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in data.items()
                        if v or (v is False and k == "by_run"))
        # API_FORMAT too: an answer cached by an older deployment is not served in a newer shape's place.
        key = None if version is None else f"api:comparison:{API_FORMAT}:{version}:{query_key(chosen)}"
        return cached_json(request, self, key, build)

    @extend_schema(
        parameters=[
            *_selection_parameters(products="Products compared.",
                                   trusted_only="Leave out jobs whose validity verdict is suspect or invalid."),
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
        query = CellHistogramQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        selection = Selection(targets=data.get("targets") or [], products=data.get("products") or [],
                              runs=data.get("runs") or [], campaign=data.get("campaign") or [],
                              scenarios=data.get("scenarios") or [], specs=data.get("specs") or [],
                              trusted_only=data.get("trusted_only", False))
        return Response(cell_histogram(
            selection, scenario_id=data["scenario"], spec_id=data["spec"], threads=data["concurrency"],
            table_size=data["table_size"], tables=data["tables"], product_id=data["product"],
            thread_filter=data.get("threads") or None, variant=data.get("variant"), target_id=data.get("target")))
