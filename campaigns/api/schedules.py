"""API for nightly campaigns: schedules (kept in step with Celery beat) and the regressions found."""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, permissions, serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import monitoring, roles, services
from campaigns.api.fields import ModelCleanMixin, StrictInputMixin
from campaigns.api.views.base import ModelViewSet, ReadOnlyViewSet
from campaigns.filtersets import IdListFilter
from campaigns.models import Annotation, Campaign, CampaignSchedule, Regression, Run, Scenario, ScheduleFiring, Target
from campaigns.sysbench.catalogue import MAX_THREADS

MAX_ID = 2**63 - 1
HISTORY_MAX_RUNS = 500


class ScheduleFiringSerializer(serializers.ModelSerializer):
    class Meta:
        model = ScheduleFiring
        fields = ["id", "fired_at", "outcome", "run", "reason"]


class ScheduleSerializer(StrictInputMixin, serializers.ModelSerializer):
    recent_firings = serializers.SerializerMethodField()

    class Meta:
        model = CampaignSchedule
        fields = ["id", "campaign", "label", "cron", "timezone", "enabled", "last_fired_at", "created_at",
                  "recent_firings"]
        read_only_fields = ["last_fired_at", "created_at"]

    def get_recent_firings(self, obj: CampaignSchedule) -> list[dict[str, Any]]:
        firings = sorted(obj.firings.all(), key=lambda f: f.fired_at, reverse=True)[:5]
        return list(ScheduleFiringSerializer(firings, many=True).data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The model's validators name the field (cron, timezone); run them here so a bad value is a 400.
        instance = self.instance or CampaignSchedule()
        for key, value in attrs.items():
            setattr(instance, key, value)
        from django.core.exceptions import ValidationError

        try:
            instance.full_clean(exclude=["periodic_task"])
        except ValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs

    def _user(self) -> Any:
        request = self.context.get("request")
        return getattr(request, "user", None)

    def create(self, validated_data: dict[str, Any]) -> CampaignSchedule:
        return monitoring.schedule_save(schedule=CampaignSchedule(**validated_data), user=self._user())

    def update(self, instance: CampaignSchedule, validated_data: dict[str, Any]) -> CampaignSchedule:
        for key, value in validated_data.items():
            setattr(instance, key, value)
        return monitoring.schedule_save(schedule=instance, user=self._user())


class ScheduleFilterSet(filters.FilterSet):
    id = IdListFilter(field_name="id")
    campaign = IdListFilter(field_name="campaign_id")

    class Meta:
        model = CampaignSchedule
        fields = ["id", "campaign", "enabled"]


class ScheduleViewSet(ModelViewSet):
    """Cron schedules of campaigns; a firing while the previous run is going is skipped and recorded."""

    queryset = CampaignSchedule.objects.prefetch_related("firings").order_by("id")
    serializer_class = ScheduleSerializer
    filterset_class = ScheduleFilterSet
    ordering_fields = ["id", "campaign", "last_fired_at"]
    # Admins delete (README: viewer reads, operator creates, edits, launches and cancels, admin deletes); an operator
    # stops a schedule with enabled: false. A schedule is changed only by its owner or an admin (schedule_save: 403).

    def perform_destroy(self, instance: CampaignSchedule) -> None:
        with transaction.atomic():
            monitoring.schedule_delete(schedule=instance, user=self.request.user)


class RegressionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Regression
        fields = ["id", "campaign", "run", "target", "scenario", "threads", "variant", "metric", "kind", "baseline_value",
                  "current_value", "change_pct", "p_value", "p_adjusted", "method", "detector", "found_in_run",
                  "explanation", "baseline_run_ids", "baseline_label", "notified_at", "notification_error",
                  "acknowledged_at", "acknowledged_by", "acknowledgement", "confirmation", "confirm_run",
                  "confirm_value", "confirm_change_pct", "confirm_p_adjusted", "confirm_note", "created_at"]


class RegressionFilterSet(filters.FilterSet):
    id = IdListFilter(field_name="id")
    campaign = IdListFilter(field_name="campaign_id")
    run = IdListFilter(field_name="run_id")

    class Meta:
        model = Regression
        fields = ["id", "campaign", "run", "kind", "metric", "confirmation", "variant"]


# ---------------------------------------------------------------- history of one cell


class HistoryQuerySerializer(serializers.Serializer):
    """The cell whose history is asked for; unknown ids are a 400 naming the parameter."""

    campaign = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    target = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    scenario = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    threads = serializers.IntegerField(min_value=1, max_value=MAX_THREADS)
    variant = serializers.CharField(max_length=40, required=False, default="", allow_blank=True,
                                    help_text="The cell's settings variant ('' without variants).")
    limit = serializers.IntegerField(min_value=1, max_value=HISTORY_MAX_RUNS, required=False, default=60)

    def _existing(self, model: type[Any], pk: int, noun: str) -> Any:
        found = model.objects.filter(pk=pk).first()
        if found is None:
            raise serializers.ValidationError(f"no {noun} with id {pk}")
        return found

    def validate_campaign(self, value: int) -> Campaign:
        return self._existing(Campaign, value, "campaign")

    def validate_target(self, value: int) -> Target:
        return self._existing(Target, value, "target")

    def validate_scenario(self, value: int) -> Scenario:
        return self._existing(Scenario, value, "scenario")


class HistoryNamedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class HistoryCellSerializer(serializers.Serializer):
    campaign = HistoryNamedSerializer()
    target = HistoryNamedSerializer()
    scenario = HistoryNamedSerializer()
    threads = serializers.IntegerField()
    variant = serializers.CharField(allow_blank=True, help_text="The settings variant ('' without variants).")
    latency_pct = serializers.FloatField(help_text="The percentile of latency_pct_ms, e.g. 95.0.")


class HistoryPointSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    label = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # a field named like Field.label
    trigger = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    qps = serializers.FloatField(help_text="Median QPS of the run's repetitions of the cell.")
    repetitions = serializers.IntegerField()
    cv_pct = serializers.FloatField(allow_null=True, help_text="Coefficient of variation of the repetitions.")
    noisy = serializers.BooleanField(help_text="CV above the campaign's noise threshold.")
    latency_pct_ms = serializers.FloatField(allow_null=True, help_text="Median percentile latency.")
    regression = serializers.BooleanField()
    improvement = serializers.BooleanField()
    change_point = serializers.BooleanField(help_text="The cell's history changes level at this run.")


class HistoryBandSerializer(serializers.Serializer):
    mean = serializers.FloatField(help_text="Baseline QPS: the geometric mean the regression check tests against.")
    low = serializers.FloatField(help_text="mean × (1 − threshold).")
    high = serializers.FloatField(help_text="mean × (1 + threshold).")
    threshold_pct = serializers.FloatField()
    run_ids = serializers.ListField(child=serializers.IntegerField())
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label


class HistoryChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Regression.Kind.choices)
    metric = serializers.ChoiceField(choices=Regression.Metric.choices)
    baseline_value = serializers.FloatField()
    current_value = serializers.FloatField()
    change_pct = serializers.FloatField()
    p_value = serializers.FloatField(allow_null=True)
    p_adjusted = serializers.FloatField(allow_null=True)
    method = serializers.CharField()
    detector = serializers.ChoiceField(choices=Regression.Detector.choices)
    explanation = serializers.CharField(help_text="Annotations at or near a change point.")


class HistoryAnnotationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    run_id = serializers.IntegerField(allow_null=True)
    at = serializers.DateTimeField()
    text = serializers.CharField()
    kind = serializers.ChoiceField(choices=Annotation.Kind.choices)


class HistoryResponseSerializer(serializers.Serializer):
    cell = HistoryCellSerializer()
    points = HistoryPointSerializer(many=True, help_text="One per succeeded run that measured the cell, oldest first.")
    baseline = HistoryBandSerializer(allow_null=True, help_text="What the newest point is judged against; null "
                                                                "when there is no baseline yet.")
    changes = HistoryChangeSerializer(many=True, help_text="Regressions and improvements stored for the cell.")
    annotations = HistoryAnnotationSerializer(many=True, help_text="Notes on the runs shown or on the target.")


def _id_parameter(name: str, description: str, maximum: int = MAX_ID) -> OpenApiParameter:
    return OpenApiParameter(name, {"type": "integer", "minimum": 1, "maximum": maximum}, OpenApiParameter.QUERY,
                            required=True, description=description)


class AcknowledgeSerializer(StrictInputMixin, serializers.Serializer):
    note = serializers.CharField(max_length=500, allow_blank=True, default="")


class RegressionViewSet(ReadOnlyViewSet):
    """Regressions and improvements found by comparing runs with their campaign's baseline."""

    @extend_schema(request=AcknowledgeSerializer, responses={200: RegressionSerializer})
    @action(detail=True, methods=["post"])
    def acknowledge(self, request: Request, pk: str | None = None) -> Response:
        """Marks the change as looked at, with a note of what was found (again: the note is replaced)."""
        body = AcknowledgeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        regression = monitoring.regression_acknowledge(regression=self.get_object(), user=request.user,
                                                       note=body.validated_data["note"])
        return Response(RegressionSerializer(regression).data)

    queryset = Regression.objects.order_by("-created_at", "-id")
    serializer_class = RegressionSerializer
    filterset_class = RegressionFilterSet
    ordering_fields = ["id", "created_at", "change_pct"]

    @extend_schema(
        parameters=[
            _id_parameter("campaign", "The campaign's id."),
            _id_parameter("target", "The cell's target id."),
            _id_parameter("scenario", "The cell's scenario id."),
            _id_parameter("threads", "The cell's thread count.", MAX_THREADS),
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": HISTORY_MAX_RUNS},
                             OpenApiParameter.QUERY, description="At most this many runs, the newest (default 60)."),
        ],
        responses={200: HistoryResponseSerializer},
        description="One cell's QPS over the campaign's succeeded runs (geometric mean of repetitions, percentile "
                    "latency, noisy flag), the baseline band the newest run is judged against (geometric mean ± the "
                    "campaign's regression threshold) and the regressions and improvements of the cell.",
    )
    @action(detail=False, methods=["get"], url_path="history", pagination_class=None, filterset_class=None,
            filter_backends=[])
    def history(self, request: Request) -> Response:
        query = HistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        campaign, target, scenario = data["campaign"], data["target"], data["scenario"]
        history = monitoring.cell_history(campaign=campaign, target_id=target.pk, scenario_id=scenario.pk,
                                          threads=data["threads"], variant=data["variant"], limit=data["limit"])
        cell = {"campaign": {"id": campaign.pk, "name": campaign.name}, "target": {"id": target.pk, "name": target.name},
                "scenario": {"id": scenario.pk, "name": scenario.name}, "threads": data["threads"],
                "variant": data["variant"],
                "latency_pct": scenario.percentile}
        return Response(HistoryResponseSerializer({"cell": cell, **history}).data)


# ---------------------------------------------------------------- annotations


class AnnotationSerializer(StrictInputMixin, ModelCleanMixin, serializers.ModelSerializer):
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True)
    edited_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True)
    at = serializers.DateTimeField(required=False, help_text="Default: the run's start, or now.")

    class Meta:
        model = Annotation
        fields = ["id", "run", "target", "at", "text", "kind", "created_by", "created_at", "edited_by", "edited_at"]
        read_only_fields = ["kind", "created_by", "created_at", "edited_by", "edited_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "at" not in attrs and self.instance is None:
            run: Run | None = attrs.get("run")
            attrs["at"] = (run.started_at or run.created_at) if run is not None else timezone.now()
        if self.instance is None or "text" in attrs:  # a PATCH that leaves the text out keeps it
            attrs["text"] = (attrs.get("text") or "").strip()
            if not attrs["text"]:
                raise serializers.ValidationError({"text": "write the note"})
        return super().validate(attrs)

    # Through the one write path (campaigns.services.annotations).
    def create(self, validated_data: dict[str, Any]) -> Annotation:
        return services.annotation_create(user=validated_data.pop("created_by", None), **validated_data)

    def update(self, instance: Annotation, validated_data: dict[str, Any]) -> Annotation:
        validated_data.pop("created_by", None)
        return services.annotation_update(annotation=instance, **validated_data)


class AnnotationFilterSet(filters.FilterSet):
    id = IdListFilter(field_name="id")
    run = IdListFilter(field_name="run_id")
    target = IdListFilter(field_name="target_id")
    campaign = IdListFilter(field_name="run__campaign_id")

    class Meta:
        model = Annotation
        fields = ["id", "run", "target", "campaign", "kind"]


class AnnotationViewSet(ModelViewSet):
    """Notes on runs and targets: written by users, or recorded by benchapp when a target's server version or a
    snapshotted setting changed between two runs (kind auto). Shown on history charts and run pages."""

    queryset = Annotation.objects.select_related("created_by", "edited_by").order_by("at", "id")
    serializer_class = AnnotationSerializer
    filterset_class = AnnotationFilterSet
    ordering_fields = ["id", "at", "created_at"]
    # Operators write notes; a note is changed or deleted by its author or an admin (Annotation.is_editable_by),
    # and the last editor is recorded.
    delete_role = roles.OPERATOR

    def check_object_permissions(self, request: Request, obj: Any) -> None:
        super().check_object_permissions(request, obj)
        if request.method not in permissions.SAFE_METHODS and not obj.is_editable_by(request.user):
            raise exceptions.PermissionDenied("only the note's author or an admin can change or delete it")

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        serializer.save(created_by=self.request.user)

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        serializer.save(edited_by=self.request.user, edited_at=timezone.now())
