"""Viewset of client hosts."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import roles
from campaigns.api.fields import NoInputSerializer
from campaigns.api.serializers.hosts import ClientHostSerializer
from campaigns.api.views.base import ModelViewSet
from campaigns.filtersets import ClientHostFilterSet
from campaigns.services import client_access


class ClientHostViewSet(ModelViewSet):
    """Client hosts register themselves (worker heartbeats); only admins change or remove them, or revoke them."""

    queryset = client_access.hosts_with_access()
    serializer_class = ClientHostSerializer
    filterset_class = ClientHostFilterSet
    ordering_fields = ["id", "hostname", "cores", "memory_gb", "last_heartbeat"]
    write_role = roles.ADMIN
    list_cached = False  # "online" follows the clock: a silent host goes offline with no write

    @extend_schema(request=None, responses={200: ClientHostSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str | None = None) -> Response:
        """Ends the host's own credentials at once (client_access.client_host_revoke): its database role and Redis
        user; its next heartbeat fails. 400 naming `hostname` when it was never issued any."""
        host = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        client_access.client_host_revoke(hostname=host.hostname, user=request.user)
        return Response(self.get_serializer(self.get_queryset().get(pk=host.pk)).data)
