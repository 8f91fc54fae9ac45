"""Viewset of client hosts."""
from __future__ import annotations

from campaigns import roles
from campaigns.api.serializers.hosts import ClientHostSerializer
from campaigns.api.views.base import ModelViewSet
from campaigns.filtersets import ClientHostFilterSet
from campaigns.models import ClientHost


class ClientHostViewSet(ModelViewSet):
    """Client hosts register themselves (worker heartbeats); only admins change or remove them."""

    queryset = ClientHost.objects.all()
    serializer_class = ClientHostSerializer
    filterset_class = ClientHostFilterSet
    ordering_fields = ["id", "hostname", "cores", "memory_gb", "last_heartbeat"]
    write_role = roles.ADMIN
    list_cached = False  # "online" follows the clock: a silent host goes offline with no write
