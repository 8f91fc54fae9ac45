"""Viewsets of the catalogue of systems: products, instance specs, datasets."""
from __future__ import annotations

from campaigns.api.serializers.catalogue import DatasetSerializer, InstanceSpecSerializer, ProductSerializer
from campaigns.api.views.base import ModelViewSet
from campaigns.filtersets import DatasetFilterSet, InstanceSpecFilterSet, ProductFilterSet
from campaigns.models import Dataset, InstanceSpec, Product


class ProductViewSet(ModelViewSet):
    queryset = Product.objects.all()
    serializer_class = ProductSerializer
    filterset_class = ProductFilterSet
    ordering_fields = ["id", "name", "engine", "vendor", "version", "created_at"]


class InstanceSpecViewSet(ModelViewSet):
    queryset = InstanceSpec.objects.all()
    serializer_class = InstanceSpecSerializer
    filterset_class = InstanceSpecFilterSet
    ordering_fields = ["id", "label", "cpu_cores", "memory_gb", "storage_gb", "price_per_hour"]


class DatasetViewSet(ModelViewSet):
    queryset = Dataset.objects.all()
    serializer_class = DatasetSerializer
    filterset_class = DatasetFilterSet
    ordering_fields = ["id", "name", "tables", "table_size"]
