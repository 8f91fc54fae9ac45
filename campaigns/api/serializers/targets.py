"""Serializers of targets (the password write-only) and of a target's connection check."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from campaigns import services
from campaigns.api.fields import FastReadMixin, ModelCleanMixin, StrictInputMixin
from campaigns.api.serializers.base import MAX_PASSWORD_CHARS, ServiceWriteMixin
from campaigns.models import Target


class TargetSerializer(ServiceWriteMixin, StrictInputMixin, FastReadMixin, ModelCleanMixin,
                       serializers.ModelSerializer):
    """A target; `password` is write-only: set it on create or update, it is never returned.

    Sending `"password": ""` clears it; leaving the key out keeps the stored one, unless the same
    request changes the driver, host, port, user or database: then the stored password is removed
    (it belongs to the old endpoint) and the answer says so with `password_cleared` and `notice`.
    """

    password = serializers.CharField(
        write_only=True, required=False, allow_blank=True, trim_whitespace=False,
        max_length=MAX_PASSWORD_CHARS, style={"input_type": "password"},
        help_text="Write-only. Omit to keep the stored password (removed anyway when the driver, host, port, "
                  "user or database changes); an empty string clears it.",
    )
    has_password = serializers.BooleanField(read_only=True)
    password_cleared = serializers.BooleanField(
        read_only=True, help_text="True in the answer to an update that removed the stored password because "
                                  "the endpoint changed and no password came with it.",
    )
    notice = serializers.SerializerMethodField(help_text="What an update did that was not asked for, or empty.")
    product_name = serializers.CharField(source="product.name", read_only=True)
    spec_label = serializers.CharField(source="spec.label", read_only=True, allow_null=True, default=None)
    endpoint = serializers.CharField(source="endpoint_label", read_only=True)

    class Meta:
        model = Target
        fields = ["id", "name", "kind", "product", "product_name", "spec", "spec_label", "driver", "host", "port",
                  "database", "user", "password", "has_password", "password_cleared", "notice", "endpoint",
                  "is_demo", "workloads_allowed", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]

    def get_notice(self, instance: Target) -> str:
        return Target.PASSWORD_CLEARED_MESSAGE if instance.password_cleared else ""

    def create(self, validated_data: dict[str, Any]) -> Target:
        by = self._acting(validated_data)
        return services.target_create(by=by, password=validated_data.pop("password", ""), **validated_data)

    def update(self, instance: Target, validated_data: dict[str, Any]) -> Target:
        by = self._acting(validated_data)
        return services.target_update(target=instance, by=by, password=validated_data.pop("password", None),
                                      **validated_data)


class TargetCheckSerializer(serializers.Serializer):
    version = serializers.CharField()
    settings = serializers.DictField(child=serializers.CharField())
