"""Viewset of targets, with their connection check (targets/{id}/check/)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import services
from campaigns.api.fields import NoInputSerializer
from campaigns.api.serializers.targets import TargetCheckSerializer, TargetSerializer
from campaigns.api.views.base import ModelViewSet
from campaigns.filtersets import TargetFilterSet
from campaigns.models import Target


@extend_schema_view(
    check=extend_schema(
        request=None,
        responses={200: TargetCheckSerializer, 400: OpenApiResponse(description="The target cannot be reached "
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
    serializer_class = TargetSerializer
    filterset_class = TargetFilterSet
    ordering_fields = ["id", "name", "host", "port", "driver", "created_at", "updated_at"]

    @extend_schema(request=None, responses={200: OpenApiResponse(description="{confirmed: how many held settings "
                                                                       "changes were confirmed}")},
                   description="Confirms that the settings benchapp could not put back on the target's server (the "
                               "job's error gives the statements a DBA must run) were put back by hand: the server "
                               "takes jobs again.")
    @action(detail=True, methods=["post"], url_path="settings-confirm")
    def settings_confirm(self, request: Request, pk: str | None = None) -> Response:
        target = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        return Response({"confirmed": services.settings_confirm(target=target, user=request.user)})

    @action(detail=True, methods=["post"])
    def check(self, request: Request, pk: str | None = None) -> Response:
        target = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        return Response(services.target_check(target=target, user=request.user))
