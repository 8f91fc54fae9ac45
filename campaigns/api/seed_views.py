"""The seed white papers' campaign templates over the API: list them, instantiate one, or run a reduced suite.

    GET  /api/v1/templates/                      the templates (key, document, scenarios, datasets, specs)
    POST /api/v1/templates/{key}/instantiate/    a runnable campaign from a template: targets + scale factor
    POST /api/v1/templates/quick-run/            the templates named (e.g. seed-001, seed-003) at reduced
                                                 scale, queued one after the other; `"preview": true` only plans
"""
from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.fields import StrictInputMixin
from campaigns.api.permissions import RolePermission
from campaigns.api.serializers.campaigns import CampaignSerializer
from campaigns.api.serializers.runs import RunSerializer
from campaigns.api.views.runs import run_queryset
from campaigns.models import Campaign, Run, Target
from campaigns.seeds.quickrun import DEFAULT_TEMPLATES, QuickRunOptions, suite_launch, suite_preview
from campaigns.seeds.services import template_instantiate
from campaigns.services import DEMO_TARGET_NAMES

TEMPLATE_KEY_PATTERN = r"[a-z0-9][a-z0-9-]{0,49}"


class TemplateSerializer(serializers.ModelSerializer):
    key = serializers.CharField(source="template_key")
    scenarios = serializers.SerializerMethodField()
    datasets = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = ["id", "key", "name", "description", "threads", "threads_by_spec", "clients_min",
                  "clients_per_threads", "scenarios", "datasets"]
        read_only_fields = fields  # templates are written by load_seed_templates only

    def get_scenarios(self, obj: Campaign) -> list[str]:
        return [sc.name for sc in obj.scenarios.all()]

    def get_datasets(self, obj: Campaign) -> list[str]:
        return sorted({sc.dataset.name for sc in obj.scenarios.all()})


def _targets_field() -> serializers.PrimaryKeyRelatedField:
    return serializers.PrimaryKeyRelatedField(queryset=Target.objects.all(), many=True, required=False)


class ReductionSerializer(StrictInputMixin, serializers.Serializer):
    """The reduction of a template's campaign: scale, measured time, warm-up, thread ceiling."""

    scale_factor = serializers.FloatField(min_value=1e-9, max_value=1.0)
    run_time_s = serializers.IntegerField(min_value=1, max_value=3600, required=False, allow_null=True)
    warmup_s = serializers.IntegerField(min_value=0, max_value=3600, required=False, allow_null=True)
    max_threads = serializers.IntegerField(min_value=1, max_value=100_000, required=False, allow_null=True)
    table_rows_min = serializers.IntegerField(min_value=1, max_value=10**12, required=False, allow_null=True)
    table_rows_max = serializers.IntegerField(min_value=1, max_value=10**12, required=False, allow_null=True)


class InstantiateSerializer(ReductionSerializer):
    targets = serializers.PrimaryKeyRelatedField(queryset=Target.objects.all(), many=True, allow_empty=False)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    plain_ddl = serializers.BooleanField(default=False, help_text="Drop middleware-only clauses from table DDL.")


class QuickRunSerializer(StrictInputMixin, serializers.Serializer):
    defaults = QuickRunOptions()
    # Required: a body that names no template (or misspells the field) must not launch a whole suite.
    templates = serializers.ListField(
        child=serializers.RegexField(TEMPLATE_KEY_PATTERN), allow_empty=False, max_length=20,
        help_text=f"Template keys to run, in order, e.g. {', '.join(DEFAULT_TEMPLATES)}.",
    )
    targets = _targets_field()
    scale_factor = serializers.FloatField(min_value=1e-9, max_value=1.0, default=defaults.scale_factor)
    run_time_s = serializers.IntegerField(min_value=1, max_value=3600, default=defaults.run_time_s)
    warmup_s = serializers.IntegerField(min_value=0, max_value=3600, default=defaults.warmup_s)
    max_threads = serializers.IntegerField(min_value=1, max_value=100_000, default=defaults.max_threads)
    table_rows_min = serializers.IntegerField(min_value=1, max_value=10**12, allow_null=True,
                                              default=defaults.table_rows_min)
    table_rows_max = serializers.IntegerField(min_value=1, max_value=10**12, allow_null=True,
                                              default=defaults.table_rows_max)
    preview = serializers.BooleanField(default=False, help_text="Only say what would run.")


def _as_drf(exc: DjangoValidationError) -> serializers.ValidationError:
    if hasattr(exc, "error_dict"):
        return serializers.ValidationError({k: [m for e in v for m in e.messages] for k, v in exc.error_dict.items()})
    return serializers.ValidationError({"non_field_errors": exc.messages})


class TemplateViewSet(viewsets.GenericViewSet):
    """The seed templates: each seed white paper's campaign, with its published figures."""

    permission_classes = [RolePermission]
    serializer_class = TemplateSerializer
    lookup_field = "template_key"
    lookup_url_kwarg = "key"
    lookup_value_regex = TEMPLATE_KEY_PATTERN
    pagination_class = None
    filter_backends: list[Any] = []

    def get_queryset(self) -> Any:
        return (Campaign.objects.filter(is_template=True).order_by("template_key")
                .prefetch_related("scenarios__dataset"))

    def list(self, request: Request) -> Response:
        return Response(self.get_serializer(self.get_queryset(), many=True).data)

    def retrieve(self, request: Request, key: str | None = None) -> Response:
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(request=InstantiateSerializer, responses={201: CampaignSerializer})
    @action(detail=True, methods=["post"])
    def instantiate(self, request: Request, key: str | None = None) -> Response:
        """A campaign of your own from the template, on the targets given, its dataset scaled by scale_factor and
        its rows and threads bounded as asked (201 with the campaign; launch it to run it)."""
        template = self.get_object()
        body = InstantiateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            with transaction.atomic():
                campaign = template_instantiate(
                    template=template, targets=list(data["targets"]), scale_factor=data["scale_factor"],
                    name=data.get("name") or None, run_time_s=data.get("run_time_s"), warmup_s=data.get("warmup_s"),
                    max_threads=data.get("max_threads"), plain_ddl=data["plain_ddl"],
                    table_rows_min=data.get("table_rows_min"), table_rows_max=data.get("table_rows_max"),
                    user=request.user,
                )
        except DjangoValidationError as exc:
            raise _as_drf(exc) from None
        except ValueError as exc:
            raise serializers.ValidationError({"targets": [str(exc)]}) from None
        campaign = Campaign.objects.prefetch_related("targets", "scenarios").get(pk=campaign.pk)
        return Response(CampaignSerializer(campaign, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(
        request=QuickRunSerializer,
        responses={
            202: inline_serializer("QuickRunLaunched", {"runs": RunSerializer(many=True)}),
            200: OpenApiResponse(description="With preview: per template, its targets, jobs and estimated seconds."),
        },
    )
    @action(detail=False, methods=["post"], url_path="quick-run")
    def quick_run(self, request: Request) -> Response:
        """Instantiates and launches the templates given, reduced (scale, duration, threads) to run in minutes on
        the targets given or the demo targets (202 with the runs); with preview, only what it would run."""
        body = QuickRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        targets = list(data.get("targets") or Target.objects.filter(name__in=DEMO_TARGET_NAMES).order_by("name"))
        options = QuickRunOptions(scale_factor=data["scale_factor"], run_time_s=data["run_time_s"],
                                  warmup_s=data["warmup_s"], max_threads=data["max_threads"],
                                  table_rows_min=data["table_rows_min"], table_rows_max=data["table_rows_max"])
        keys = list(data["templates"])
        try:
            if data["preview"]:
                return Response({"templates": suite_preview(template_keys=keys, targets=targets, options=options)})
            runs = suite_launch(template_keys=keys, targets=targets, options=options, user=request.user,
                                trigger=Run.Trigger.API)
        except DjangoValidationError as exc:
            raise _as_drf(exc) from None
        listed = run_queryset().filter(pk__in=[r.pk for r in runs]).order_by("pk")
        return Response({"runs": RunSerializer(listed, many=True, context=self.get_serializer_context()).data},
                        status=status.HTTP_202_ACCEPTED)
