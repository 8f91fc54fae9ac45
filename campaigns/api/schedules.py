"""API for nightly campaigns: schedules (kept in step with Celery beat) and the regressions found."""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django_filters import rest_framework as filters
from rest_framework import mixins, serializers

from campaigns import monitoring, roles
from campaigns.api.views import BaseViewSet, ModelViewSet
from campaigns.filtersets import IdListFilter
from campaigns.models import CampaignSchedule, Regression, ScheduleFiring


class ScheduleFiringSerializer(serializers.ModelSerializer):
    class Meta:
        model = ScheduleFiring
        fields = ["id", "fired_at", "outcome", "run", "reason"]


class ScheduleSerializer(serializers.ModelSerializer):
    recent_firings = serializers.SerializerMethodField()

    class Meta:
        model = CampaignSchedule
        fields = ["id", "campaign", "label", "cron", "timezone", "enabled", "last_fired_at", "created_at",
                  "recent_firings"]
        read_only_fields = ["last_fired_at", "created_at"]

    def get_recent_firings(self, obj: CampaignSchedule) -> list[dict[str, Any]]:
        firings = sorted(obj.firings.all(), key=lambda f: f.fired_at, reverse=True)[:5]
        return ScheduleFiringSerializer(firings, many=True).data

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

    def create(self, validated_data: dict[str, Any]) -> CampaignSchedule:
        return monitoring.schedule_save(schedule=CampaignSchedule(**validated_data))

    def update(self, instance: CampaignSchedule, validated_data: dict[str, Any]) -> CampaignSchedule:
        for key, value in validated_data.items():
            setattr(instance, key, value)
        return monitoring.schedule_save(schedule=instance)


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
    delete_role = roles.OPERATOR

    def perform_destroy(self, instance: CampaignSchedule) -> None:
        with transaction.atomic():
            monitoring.schedule_delete(schedule=instance)


class RegressionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Regression
        fields = ["id", "campaign", "run", "target", "scenario", "threads", "metric", "kind", "baseline_value",
                  "current_value", "change_pct", "p_value", "method", "baseline_run_ids", "baseline_label",
                  "notified_at", "notification_error", "created_at"]


class RegressionFilterSet(filters.FilterSet):
    id = IdListFilter(field_name="id")
    campaign = IdListFilter(field_name="campaign_id")
    run = IdListFilter(field_name="run_id")

    class Meta:
        model = Regression
        fields = ["id", "campaign", "run", "kind", "metric"]


class RegressionViewSet(BaseViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Regressions and improvements found by comparing runs with their campaign's baseline."""

    queryset = Regression.objects.order_by("-created_at", "-id")
    serializer_class = RegressionSerializer
    filterset_class = RegressionFilterSet
    ordering_fields = ["id", "created_at", "change_pct"]
