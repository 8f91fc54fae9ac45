"""Query serializers of comparisons and of one comparison cell's histogram."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers


class IdListParam(serializers.CharField):
    """`1,2,3` → [1, 2, 3]; at most 200 ids."""

    def to_internal_value(self, data: Any) -> list[int]:  # type: ignore[override]  # a CharField read as ids
        text = super().to_internal_value(data)
        items = [item.strip() for item in text.split(",") if item.strip()]
        if len(items) > 200:
            raise serializers.ValidationError("at most 200 ids")
        try:
            ids = [int(item) for item in items]
        except ValueError:
            raise serializers.ValidationError("a comma-separated list of ids") from None
        if any(i < 1 or i > 2**63 - 1 for i in ids):
            raise serializers.ValidationError("ids are positive integers")
        return ids


class ComparisonQuerySerializer(serializers.Serializer):
    targets = IdListParam(required=False, max_length=4000)
    products = IdListParam(required=False, max_length=4000)
    runs = IdListParam(required=False, max_length=4000)
    campaign = IdListParam(required=False, max_length=4000)
    scenarios = IdListParam(required=False, max_length=4000)
    specs = IdListParam(required=False, max_length=4000)
    threads = IdListParam(required=False, max_length=4000)
    trusted_only = serializers.BooleanField(required=False, default=False,
                                            help_text="Leave out cells whose validity verdict is suspect or invalid.")
    by_run = serializers.BooleanField(required=False, allow_null=True, default=None,
                                       help_text="One column per (product, run); by default when two or more runs "
                                                 "are named.")
    baseline = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1,
                                        help_text="The product (or, by run, the run) every Δ% is against.")
    sla_ms = serializers.FloatField(required=False, min_value=0.001, max_value=10_000_000,
                                    help_text="A latency limit in ms on the percentile the jobs measured (p95, "
                                              "p99): each curve gives the highest QPS that keeps to it.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not any(attrs.get(k) for k in ("targets", "products", "runs", "campaign", "scenarios")):
            raise serializers.ValidationError(
                {"non_field_errors": ["choose what to compare: targets, products, runs, campaign or scenarios"]})
        return attrs


class CellHistogramQuerySerializer(ComparisonQuerySerializer):
    """The comparison's filters plus the keys of one cell (its row and product)."""

    scenario = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="The cell's scenario id.")
    spec = serializers.CharField(allow_blank=True, max_length=20,
                                 help_text="The cell's instance spec id; empty or 'none' for targets without a spec.")
    concurrency = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="The cell's thread count.")
    table_size = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    tables = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    product = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="The cell's product id.")
    target = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False,
                                      help_text="The cell's target, where its product has a column per target.")
    variant = serializers.CharField(max_length=40, required=False, allow_blank=True,
                                    help_text="The cell's settings variant (\"\" for jobs without one); omitted: any.")

    def validate_spec(self, value: str) -> int | None:
        text = value.strip().lower()
        if text in ("", "none"):
            return None
        try:
            spec = int(text)
        except ValueError:
            raise serializers.ValidationError("an instance spec id, or empty / 'none' for no spec") from None
        if not 1 <= spec <= 2**63 - 1:
            raise serializers.ValidationError("an instance spec id is a positive integer")
        return spec
