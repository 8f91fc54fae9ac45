"""Viewset of campaigns, with their plan, noise and launch."""
from __future__ import annotations

from django.db import transaction
from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import monitoring, services
from campaigns.api.exceptions import Conflict
from campaigns.api.fields import NoInputSerializer
from campaigns.api.serializers.campaigns import CampaignNoiseSerializer, CampaignSerializer, LaunchSerializer
from campaigns.api.serializers.runs import RunSerializer
from campaigns.api.views.base import ModelViewSet
from campaigns.api.views.runs import idempotency_key, run_queryset
from campaigns.filtersets import CampaignFilterSet
from campaigns.models import Campaign, Run, Scenario, Target


@extend_schema_view(
    plan=extend_schema(request=None, responses={200: OpenApiTypes.OBJECT},
                       description="What a launch would do: jobs in order, exact commands (password as ***), "
                                   "estimated duration and dataset size."),
    launch=extend_schema(
        request=LaunchSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER,
                                     description="Retrying with the same key returns the run the first request "
                                                 "created instead of starting another.")],
        responses={202: RunSerializer, 409: OpenApiResponse(description="A run is already in progress, or the "
                                                                        "campaign has no jobs.")},
    ),
)
class CampaignViewSet(ModelViewSet):
    queryset = Campaign.objects.select_related("created_by").prefetch_related(
        Prefetch("targets", queryset=Target.objects.only("id")),
        Prefetch("scenarios", queryset=Scenario.objects.only("id")),
    )
    serializer_class = CampaignSerializer
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

    @extend_schema(responses={200: CampaignNoiseSerializer})
    @action(detail=True, methods=["get"])
    def noise(self, request: Request, pk: str | None = None) -> Response:
        """The noise measured in the campaign's last runs and the repetitions it calls for (campaign_noise)."""
        return Response(CampaignNoiseSerializer(monitoring.campaign_noise(campaign=self.get_object())).data)

    @action(detail=True, methods=["post"])
    def launch(self, request: Request, pk: str | None = None) -> Response:
        """Starts a run of the campaign's plan (202 with the run; 409 while another run of it is active). An
        Idempotency-Key header makes a repeated request give back the same run instead of a second one."""
        campaign = self.get_object()
        body = LaunchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = idempotency_key(request)
        run = services.campaign_launch(campaign=campaign, user=request.user, trigger=Run.Trigger.API,
                                       idempotency_key=key, label=body.validated_data["label"])
        data = RunSerializer(run_queryset().get(pk=run.pk), context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED)
