"""Serializers of client hosts."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns.api.fields import FastReadMixin, StrictInputMixin
from campaigns.models import ClientHost


class ClientHostSerializer(StrictInputMixin, FastReadMixin, serializers.ModelSerializer):
    online = serializers.SerializerMethodField()
    access = serializers.SerializerMethodField()

    class Meta:
        model = ClientHost
        fields = ["id", "hostname", "queue", "cores", "memory_gb", "sysbench_version", "labels", "address",
                  "cpu_model", "kernel", "client_versions", "clock_offset_ms", "clock_rtt_ms", "self_measurement",
                  "started_at", "last_heartbeat", "online", "access"]
        # Facts are what the host announced when it joined (and measured of itself), not an operator's to edit.
        read_only_fields = ["started_at", "last_heartbeat", "address", "cpu_model", "kernel", "client_versions",
                            "clock_offset_ms", "clock_rtt_ms", "self_measurement"]
        extra_kwargs = {"cores": {"max_value": 100_000}, "memory_gb": {"min_value": 0, "max_value": 10**9}}

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_online(self, host: ClientHost) -> bool:
        return host.is_online()

    @extend_schema_field(OpenApiTypes.STR)
    def get_access(self, host: ClientHost) -> str:
        """"own" (credentials of its own), "revoked", or "shared" (the server's, or a host that joined before client
        hosts had credentials of their own)."""
        return host.access_state()
