"""Serializers of job results (full and brief, with the latency distribution) and of a log import."""
from __future__ import annotations

from rest_framework import serializers

from campaigns.api.fields import FastReadMixin, StrictInputMixin
from campaigns.api.serializers.runs import RunSerializer
from campaigns.models import JobResult, Scenario, Target

LATENCY_DISTRIBUTION_FIELDS = ["latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms",
                               "latency_p999_ms", "latency_percentiles_missing"]


def _missing_field() -> serializers.SerializerMethodField:
    return serializers.SerializerMethodField(
        help_text="Why latency_p50_ms … latency_p999_ms (p99.9) are null (e.g. 'no latency histogram: sysbench ran "
                  "with --percentile=0'); null when they are there.")


class LatencyDistributionMixin:
    """latency_p50_ms … latency_p999_ms (p99.9) from the merged histogram, or all null with the reason
    (each serializer declares `latency_percentiles_missing = _missing_field()`: DRF collects declared fields
    from serializer classes only)."""

    def get_latency_percentiles_missing(self, result: JobResult) -> str | None:
        return result.latency_percentiles_missing or None


class ResultBriefSerializer(LatencyDistributionMixin, FastReadMixin, serializers.ModelSerializer):
    latency_percentiles_missing = _missing_field()

    class Meta:
        model = JobResult
        fields = ["id", "source", "tps", "qps", "latency_avg_ms", "latency_pct", "latency_pct_ms", "steady_tps",
                  "steady_qps", "ignored_errors", "counted", "counted_per_min", *LATENCY_DISTRIBUTION_FIELDS]
        read_only_fields = fields


class JobResultSerializer(LatencyDistributionMixin, FastReadMixin, serializers.ModelSerializer):
    """A job's final figures with what they are figures of: target, product, spec, scenario, threads."""

    latency_percentiles_missing = _missing_field()

    run = serializers.IntegerField(source="job.run_id", read_only=True)
    campaign = serializers.IntegerField(source="job.run.campaign_id", read_only=True)
    job_status = serializers.CharField(source="job.status", read_only=True)
    target = serializers.IntegerField(source="job.target_id", read_only=True)
    target_name = serializers.CharField(source="job.target.name", read_only=True)
    product = serializers.IntegerField(source="job.target.product_id", read_only=True)
    product_name = serializers.CharField(source="job.target.product.name", read_only=True)
    spec = serializers.IntegerField(source="job.target.spec_id", read_only=True, allow_null=True)
    spec_label = serializers.CharField(source="job.target.spec.label", read_only=True, allow_null=True, default=None)
    scenario = serializers.IntegerField(source="job.scenario_id", read_only=True)
    scenario_name = serializers.CharField(source="job.scenario.name", read_only=True)
    test = serializers.CharField(source="job.scenario.test", read_only=True)
    dataset = serializers.IntegerField(source="job.scenario.dataset_id", read_only=True)
    dataset_name = serializers.CharField(source="job.scenario.dataset.name", read_only=True)
    threads = serializers.IntegerField(source="job.threads", read_only=True)
    repetition = serializers.IntegerField(source="job.repetition", read_only=True)
    tables = serializers.IntegerField(source="job.tables", read_only=True)
    table_size = serializers.IntegerField(source="job.table_size", read_only=True)

    class Meta:
        model = JobResult
        fields = ["id", "job", "job_status", "run", "campaign", "target", "target_name", "product", "product_name",
                  "spec", "spec_label", "scenario", "scenario_name", "test", "dataset", "dataset_name", "threads",
                  "repetition", "tables", "table_size", "source", "tps", "qps", "reads_per_s", "writes_per_s",
                  "other_per_s", "transactions", "queries", "ignored_errors", "counted", "counted_per_min",
                  "reconnects", "events", "duration_s",
                  "latency_min_ms", "latency_avg_ms", "latency_max_ms", "latency_pct", "latency_pct_ms",
                  "latency_sum_ms", "steady_tps", "steady_qps", "steady_latency_pct_ms", *LATENCY_DISTRIBUTION_FIELDS,
                  "created_at", "host_figures"]
        read_only_fields = fields


# A host test's figures (host_figures, a mapping) stay out of the CSV: its headline is in qps and tps already.
RESULT_CSV_COLUMNS = [name for name in JobResultSerializer.Meta.fields if name != "host_figures"]


class ResultsImportSerializer(StrictInputMixin, serializers.Serializer):
    files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=False, max_length=255), min_length=1, max_length=100,
        help_text="One or more sysbench log files (UTF-8 text), each becoming one job of an imported run.",
    )
    target = serializers.PrimaryKeyRelatedField(queryset=Target.objects.select_related("spec"))
    scenario = serializers.PrimaryKeyRelatedField(queryset=Scenario.objects.select_related("dataset"))


class ResultsImportResponseSerializer(serializers.Serializer):
    run = RunSerializer()
    results = JobResultSerializer(many=True)
