"""Serializers of the catalogue of systems: products, instance specs, datasets."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from campaigns import services
from campaigns.api.fields import FastReadMixin, SizesBySpecField, StrictInputMixin
from campaigns.api.serializers.base import ServiceWriteMixin
from campaigns.models import Dataset, InstanceSpec, Product
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_TABLE_ROWS_REASON


class ProductSerializer(StrictInputMixin, FastReadMixin, serializers.ModelSerializer):
    class Meta:
        model = Product
        fields = ["id", "name", "engine", "version", "vendor", "notes", "created_at"]
        read_only_fields = ["created_at"]


class InstanceSpecSerializer(StrictInputMixin, FastReadMixin, serializers.ModelSerializer):
    class Meta:
        model = InstanceSpec
        fields = ["id", "label", "cpu_cores", "memory_gb", "storage_gb", "storage_type", "price_per_hour",
                  "currency", "notes"]
        extra_kwargs = {
            "cpu_cores": {"max_value": 100_000},
            "memory_gb": {"max_value": 10**9},
            "storage_gb": {"max_value": 10**12},
        }


class DatasetSerializer(ServiceWriteMixin, StrictInputMixin, FastReadMixin, serializers.ModelSerializer):
    sizes_by_spec = SizesBySpecField(
        required=False, help_text="Per instance spec label: [tables, rows per table], overriding the default."
    )

    class Meta:
        model = Dataset
        fields = ["id", "name", "tables", "table_size", "sizes_by_spec", "description"]
        extra_kwargs = {"table_size": {"error_messages": {
            "max_value": f"at most {MAX_TABLE_ROWS:,} rows per table: {MAX_TABLE_ROWS_REASON}"}}}

    def create(self, validated_data: dict[str, Any]) -> Dataset:
        return services.dataset_create(user=self._acting(validated_data), **validated_data)

    def update(self, instance: Dataset, validated_data: dict[str, Any]) -> Dataset:
        return services.dataset_update(dataset=instance, user=self._acting(validated_data), **validated_data)
