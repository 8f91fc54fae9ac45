"""Serializers of jobs, their clients and attempts, and of a job's live samples and series."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns.api.fields import FastReadMixin
from campaigns.api.serializers.results import ResultBriefSerializer
from campaigns.models import Job, JobClient


class JobAttemptSerializer(serializers.Serializer):
    """One measurement of a job: the earlier ones were lost to the infrastructure; the last is the current one."""

    attempt = serializers.IntegerField(read_only=True)
    started_at = serializers.DateTimeField(read_only=True, allow_null=True)
    ended_at = serializers.DateTimeField(read_only=True, allow_null=True)
    cause = serializers.CharField(read_only=True, allow_blank=True,
                                  help_text="why the attempt was lost (the job's error for the current one)")
    t_s = serializers.FloatField(read_only=True, allow_null=True, help_text="seconds it had measured when lost")
    text = serializers.CharField(read_only=True, help_text='e.g. "attempt 1 lost at t = 6 s: client host c1 lost '
                                                           'while measuring …"')


class JobSerializer(FastReadMixin, serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="run.campaign_id", read_only=True)
    target_name = serializers.CharField(source="target.name", read_only=True)
    product = serializers.IntegerField(source="target.product_id", read_only=True)
    product_name = serializers.CharField(source="target.product.name", read_only=True)
    spec = serializers.IntegerField(source="target.spec_id", read_only=True, allow_null=True)
    spec_label = serializers.CharField(source="target.spec.label", read_only=True, allow_null=True, default=None)
    scenario_name = serializers.CharField(source="scenario.name", read_only=True)
    test = serializers.CharField(source="scenario.test", read_only=True)
    result = ResultBriefSerializer(read_only=True, allow_null=True)
    waiting = serializers.SerializerMethodField(
        help_text='What a waiting job waits for, in words ("waiting: target X unreachable since 21:14:31 '
                  '(connection refused …), next try in 40 s"); "" when it does not wait.')
    attempts = JobAttemptSerializer(source="attempt_history", many=True, read_only=True,
                                    help_text="Every measurement of the job, the current one last.")
    prepare_wall_s = serializers.FloatField(
        read_only=True, allow_null=True,
        help_text="Seconds this job spent preparing its dataset (sysbench cleanup and prepare, or the loader); "
                  "null when it prepared nothing (the dataset was ready on the target, or the scenario never "
                  "prepares).")

    check_outcome = serializers.CharField(
        read_only=True, help_text="the workload's own check after the measurement (Workload.check_command): passed, "
                                  "failed, not_run (it could not run), or \"\" when the workload has none")
    check_output = serializers.CharField(read_only=True, help_text="the end of what that check printed")

    class Meta:
        model = Job
        fields = ["id", "run", "campaign", "target", "target_name", "product", "product_name", "spec", "spec_label",
                  "scenario", "scenario_name", "test", "variant", "variant_settings", "threads", "added_for", "repetition",
                  "position", "tables", "table_size", "time_s", "warmup_s", "clients_needed", "status", "phase", "error", "wait_reason", "waiting",
                  "unreachable_since", "next_try_at", "attempt", "attempts", "command_line", "start_skew_ms",
                  "wall_time_s", "cache_hit_ratio", "cache_warning", "verdict", "imported", "claimed_by", "queued_at",
                  "started_at", "finished_at", "result", "prepare_progress", "prepare_wall_s", "notes",
                  "check_outcome", "check_output"]
        read_only_fields = fields

    def get_waiting(self, job: Job) -> str:
        return job.waiting_text()


class JobClientAttemptSerializer(serializers.Serializer):
    """One send of a client's share to a host: the last is the client's current one."""

    attempt = serializers.IntegerField(read_only=True)
    host = serializers.CharField(read_only=True, allow_blank=True)
    sent_at = serializers.DateTimeField(read_only=True, allow_null=True)
    ended_at = serializers.DateTimeField(read_only=True, allow_null=True)
    outcome = serializers.CharField(read_only=True, allow_blank=True,
                                    help_text="lost (sent to another host), or the client's status for the last one")
    cause = serializers.CharField(read_only=True, allow_blank=True)


class JobClientSerializer(FastReadMixin, serializers.ModelSerializer):
    """One sysbench process of a job (its command line carries *** for the password)."""

    attempts = JobClientAttemptSerializer(source="attempt_history", many=True, read_only=True,
                                          help_text="Every send of this client's share, the current one last.")

    class Meta:
        model = JobClient
        fields = ["index", "host_name", "threads", "status", "command_line", "exit_code", "sysbench_version",
                  "same_host", "host_facts", "error", "summary", "started_at", "finished_at", "wall_time_s", "attempt",
                  "attempts", "profile"]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    """A job with its server snapshots (settings and counters before and after), its clients and its
    latency histogram."""

    clients = JobClientSerializer(many=True, read_only=True)
    latency_histogram = serializers.SerializerMethodField(
        help_text="The whole job's latency histogram: [bucket value in ms, count] pairs, every client's buckets "
                  "summed; null when there is none (result.latency_percentiles_missing says why).")

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "findings", "server_snapshot", "server_window", "clients",
                  "latency_histogram"]
        read_only_fields = fields

    def get_latency_histogram(self, job: Job) -> list[list[float]] | None:
        return job.latency_histogram(list(job.clients.all()))


class SampleSerializer(serializers.Serializer):
    """One second of a job: rates summed over its clients, latency the worst client's."""

    t = serializers.FloatField()
    clients = serializers.IntegerField(help_text="How many clients reported this second.")
    threads = serializers.IntegerField()
    tps = serializers.FloatField()
    qps = serializers.FloatField()
    reads_per_s = serializers.FloatField()
    writes_per_s = serializers.FloatField()
    other_per_s = serializers.FloatField()
    errors_per_s = serializers.FloatField()
    reconnects_per_s = serializers.FloatField()
    latency_pct_ms = serializers.FloatField(allow_null=True)


class SamplesQuerySerializer(serializers.Serializer):
    since = serializers.FloatField(required=False, min_value=-1e12, max_value=1e12,
                                   help_text="Only seconds with t greater than this.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=10_000, default=10_000)


class LatencyMetaSerializer(serializers.Serializer):
    pct = serializers.FloatField(allow_null=True, help_text="The percentile of latency_pct_ms, e.g. 95.0.")
    aggregate = serializers.CharField(help_text="How clients' percentiles combine: max.")
    label = serializers.CharField(help_text="worst client")  # type: ignore[assignment]  # a field, as above


class SamplesResponseSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    status = serializers.CharField()
    phase = serializers.CharField()
    finished = serializers.BooleanField()
    clients = serializers.IntegerField()
    summed = serializers.ListField(child=serializers.CharField())
    latency = LatencyMetaSerializer()
    last_t = serializers.FloatField(allow_null=True)
    more = serializers.BooleanField()
    samples = SampleSerializer(many=True)


class SeriesQuerySerializer(serializers.Serializer):
    full = serializers.BooleanField(required=False, default=False, help_text="The whole series, not downsampled.")
    method = serializers.ChoiceField(choices=["minmax", "lttb"], required=False, default="minmax")
    max_points = serializers.IntegerField(required=False, min_value=10, max_value=1000, default=1000)


@extend_schema_field({"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2,
                                                 "items": {"type": "number", "nullable": True}}})
class PointsField(serializers.ListField):
    pass


class SeriesResponseSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    status = serializers.CharField()
    finished = serializers.BooleanField()
    total_points = serializers.IntegerField()
    downsampled = serializers.BooleanField()
    method = serializers.CharField(allow_null=True)
    max_points = serializers.IntegerField(allow_null=True)
    latency = LatencyMetaSerializer()
    series = serializers.DictField(child=PointsField(), help_text="Per metric: [[t, value], …] in time order.")
