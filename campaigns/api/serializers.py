"""Serializers: fields listed explicitly, secrets write-only, model invariants through Model.clean().

ModelSerializer already bounds every integer by the column's range and refuses NaN/infinite
floats; JSON columns get a typed field here (a dict of thread lists, not "any JSON"), so a wrong
type is a 400 naming the field and the OpenAPI schema says what is expected.
"""
from __future__ import annotations

from typing import Any, cast

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns import roles, services
from campaigns.addresses import emails_clean, webhook_url_clean
from campaigns.api.fields import (
    FastReadMixin,
    ModelCleanMixin,
    OperatorOnlyFieldsMixin,
    SizesBySpecField,
    StrictInputMixin,
    ThreadsByKeyField,
    thread_list_field,
)
from campaigns.execution import host_heartbeats, run_no_worker
from campaigns.models import (
    Campaign,
    ClientHost,
    Dataset,
    InstanceSpec,
    Job,
    JobClient,
    JobResult,
    Product,
    Run,
    Scenario,
    Target,
    WorkloadVersion,
)
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_TABLE_ROWS_REASON, MAX_THREADS, TESTS
from campaigns.sysbench.cmdline import MAX_COMMAND_CHARS
from campaigns.webhooks import MAX_URL_CHARS as MAX_WEBHOOK_URL_CHARS

TEST_CHOICES = sorted(TESTS)
MAX_PASSWORD_CHARS = 1024


# ---------------------------------------------------------------- catalogue of systems


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


class ServiceWriteMixin:
    """create() and update() through the row's service function (campaigns.services: one write path per kind of
    row, with the model's full validation); a refusal there is a Django ValidationError, answered 400 by field.
    The view passes the acting user as `created_by` (BaseViewSet.perform_create) or it is the request's."""

    def _acting(self, validated_data: dict[str, Any]) -> Any:
        request = getattr(self, "context", {}).get("request")
        return validated_data.pop("created_by", None) or getattr(request, "user", None)


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
                  "is_demo", "created_at", "updated_at"]
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


class ScenarioSerializer(ServiceWriteMixin, StrictInputMixin, FastReadMixin, ModelCleanMixin,
                         serializers.ModelSerializer):
    clean_normalises = ("options", "test")

    test = serializers.ChoiceField(choices=TEST_CHOICES, required=False,
                                   help_text="a bundled test; left out for a workload of one's own, whose version "
                                             "sets it (workload:<name>@v<number>)")
    workload_version = serializers.PrimaryKeyRelatedField(
        queryset=WorkloadVersion.objects.all(), required=False, allow_null=True,
        help_text="a version of a workload of one's own (/api/v1/workload-versions/): its options are validated "
                  "against what `sysbench <entry> help` said of it")
    options = serializers.DictField(
        required=False,
        help_text="sysbench options of the test under their names (e.g. {\"skip-trx\": true, "
                  "\"point-selects\": 1}); validated against the test's option catalogue.",
    )
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)

    class Meta:
        model = Scenario
        fields = ["id", "name", "test", "workload_version", "dataset", "dataset_name", "options", "time_s", "warmup_s",
                  "report_interval_s", "percentile", "prepare_mode", "cleanup", "prepare_threads", "table_ddl",
                  "preset", "description", "created_at"]
        read_only_fields = ["created_at"]
        extra_kwargs = {
            "time_s": {"max_value": 30 * 86400},
            "warmup_s": {"max_value": 86400},
            "report_interval_s": {"max_value": 3600},
            "prepare_threads": {"max_value": 1024},
            "table_ddl": {"max_length": 100_000},
            # A host test's scenario (cpu, memory, fileio, threads, mutex) needs none: it has no tables.
            "dataset": {"required": False},
        }

    def create(self, validated_data: dict[str, Any]) -> Scenario:
        return services.scenario_create(user=self._acting(validated_data), **validated_data)

    def update(self, instance: Scenario, validated_data: dict[str, Any]) -> Scenario:
        return services.scenario_update(scenario=instance, user=self._acting(validated_data), **validated_data)


class RunBundleSerializer(StrictInputMixin, serializers.Serializer):
    """A run bundle (docs/bundle.md): its top-level keys are checked here, the rest by services.bundle_import,
    which names the part it refuses."""

    format = serializers.CharField(help_text='"benchapp-run"')
    version = serializers.IntegerField(min_value=1)
    exported_at = serializers.CharField(required=False)
    source = serializers.DictField(required=False)  # type: ignore[assignment]  # a field named like Field.source
    campaign = serializers.DictField()
    run = serializers.DictField()
    targets = serializers.ListField(child=serializers.DictField())
    scenarios = serializers.ListField(child=serializers.DictField())
    round_trips = serializers.ListField(child=serializers.DictField(), required=False)
    jobs = serializers.ListField(child=serializers.DictField())


class CampaignNoiseSerializer(serializers.Serializer):
    runs = serializers.IntegerField(help_text="Succeeded runs the noise was measured on (the last 20 at most).")
    cv_within_pct = serializers.FloatField(allow_null=True, help_text="CV of one repetition's QPS within its run.")
    cv_between_pct = serializers.FloatField(allow_null=True, help_text="CV of a run's mean QPS from run to run.")
    between_only_pct = serializers.FloatField(allow_null=True,
                                              help_text="The part of the run-to-run CV repetitions cannot reduce.")
    repetitions = serializers.IntegerField(help_text="The campaign's repetitions today.")
    baseline_runs = serializers.IntegerField(help_text="Runs a regression check compares against.")
    recommended = serializers.DictField(
        child=serializers.IntegerField(allow_null=True),
        help_text="Per change size in % ('15', '30'): the repetitions that catch it 9 times in 10; null when none "
                  "would.")


class VariantSerializer(serializers.Serializer):
    """One settings variant: its name and the server settings it gives targets of each driver."""

    name = serializers.CharField(max_length=40, help_text="Shown beside the product in comparisons.")
    mysql = serializers.DictField(child=serializers.CharField(max_length=100), required=False,
                                  help_text="SET GLOBAL settings for MySQL and MariaDB targets, e.g. "
                                            "{\"innodb_flush_log_at_trx_commit\": \"2\"}.")
    pgsql = serializers.DictField(child=serializers.CharField(max_length=100), required=False,
                                  help_text="ALTER SYSTEM settings for PostgreSQL targets (no restart), e.g. "
                                            "{\"synchronous_commit\": \"off\"}.")


class CampaignSerializer(ServiceWriteMixin, StrictInputMixin, OperatorOnlyFieldsMixin, FastReadMixin, ModelCleanMixin,
                         serializers.ModelSerializer):
    """A campaign; `webhook_url` is write-only (often a secret Slack URL): set it, or send "" to clear it;
    leaving the key out keeps the stored one. `has_webhook` says whether one is set."""

    webhook_url = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=MAX_WEBHOOK_URL_CHARS,
        help_text="Write-only. Omit to keep the stored webhook; an empty string clears it. Public http(s) "
                  "addresses only, unless the administrator allowed private ones.",
    )
    has_webhook = serializers.BooleanField(read_only=True)
    targets = serializers.PrimaryKeyRelatedField(many=True, queryset=Target.objects.all(), required=False)
    scenarios = serializers.PrimaryKeyRelatedField(many=True, queryset=Scenario.objects.all(), required=False)
    threads = thread_list_field(required=False, help_text="Thread counts to run, e.g. [8, 16, 32].")
    threads_by_spec = ThreadsByKeyField(required=False, help_text="Per instance spec label: its thread counts.")
    threads_by_scenario = ThreadsByKeyField(required=False, help_text="Per scenario name: its thread counts.")
    variants = serializers.ListField(
        child=VariantSerializer(), required=False, max_length=20,
        help_text="Settings variants crossed with targets, scenarios and threads; checked on the targets when saved "
                  "(a setting needing a restart or refused to the target's user is a 400 naming it).")
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True)
    operator_only_fields = ("notify_emails",)

    class Meta:
        model = Campaign
        fields = ["id", "name", "description", "targets", "scenarios", "threads", "threads_by_spec",
                  "threads_by_scenario", "variants", "repetitions", "clients_min", "clients_per_threads",
                  "scale_factor", "table_rows_min", "table_rows_max", "keep_data", "run_time_s", "warmup_override_s",
                  "is_template",
                  "template_key", "regression_threshold_pct", "noise_cv_pct", "baseline_run", "baseline_last_n",
                  "webhook_url", "has_webhook", "notify_emails", "no_worker_notify_min", "client_hosts", "client_tries",
                  "job_tries", "target_wait_s", "created_by", "created_at",
                  "updated_at"]
        # Templates come from load_seed_templates only: a key the seeds page cannot link to broke it (#21).
        read_only_fields = ["is_template", "template_key", "created_at", "updated_at"]
        extra_kwargs = {
            "clients_min": {"max_value": 1000},
            "clients_per_threads": {"min_value": 1, "max_value": MAX_THREADS},
            "regression_threshold_pct": {"max_value": 10**6},
            "noise_cv_pct": {"max_value": 10**6},
            "baseline_last_n": {"max_value": 1000},
            "run_time_s": {"max_value": 30 * 86400},
            "warmup_override_s": {"max_value": 86400},
            "table_rows_min": {"max_value": 10**12},
            "table_rows_max": {"max_value": 10**12},
        }

    def validate_webhook_url(self, value: str) -> str:
        return webhook_url_clean(value)

    def create(self, validated_data: dict[str, Any]) -> Campaign:
        return services.campaign_create(user=self._acting(validated_data), **validated_data)

    def update(self, instance: Campaign, validated_data: dict[str, Any]) -> Campaign:
        return services.campaign_update(campaign=instance, user=self._acting(validated_data), **validated_data)

    def validate_notify_emails(self, value: str) -> str:
        return emails_clean(value)



# ---------------------------------------------------------------- runs, jobs, results


class RunSerializer(OperatorOnlyFieldsMixin, FastReadMixin, serializers.ModelSerializer):
    """A run with its jobs counted by state (annotated by the viewset's queryset); its idempotency_key is shown to
    operators and admins only."""

    # Declared (not read-only) only so that the schema does not call it required: viewers never get it.
    idempotency_key = serializers.CharField(allow_null=True, required=False,
                                            help_text="Operators and admins only; absent for viewers.")
    operator_only_fields = ("idempotency_key",)

    campaign_name = serializers.CharField(source="campaign.name", read_only=True)
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True)
    jobs_total = serializers.IntegerField(read_only=True)
    jobs_pending = serializers.IntegerField(read_only=True)
    jobs_active = serializers.IntegerField(read_only=True)
    jobs_succeeded = serializers.IntegerField(read_only=True)
    jobs_failed = serializers.IntegerField(read_only=True)
    jobs_cancelled = serializers.IntegerField(read_only=True)
    no_worker = serializers.SerializerMethodField(
        help_text="While no worker able to take the run's next job has beaten for 30 s: "
                  "{since, message}, e.g. 'no worker alive since 21:15:02: start one, see the Hosts page'; else null.")

    def get_no_worker(self, run: Run) -> dict[str, Any] | None:
        if run.is_finished():
            return None
        # One query for the hosts of a whole page of runs (the context is shared by a list's items).
        context = cast(dict[str, Any], self.context)
        if "_host_heartbeats" not in context:
            context["_host_heartbeats"] = host_heartbeats()
        hosts = context["_host_heartbeats"]
        absent = run_no_worker(run=run, hosts=hosts)
        return absent.as_dict() if absent else None

    class Meta:
        model = Run
        fields = ["id", "campaign", "campaign_name", "status", "trigger", "label", "idempotency_key", "error",
                  "created_by", "created_at", "started_at", "finished_at", "evaluated_at", "waits_for", "rerun_of",
                  "rerun",
                  "jobs_total", "jobs_pending", "jobs_active", "jobs_succeeded", "jobs_failed", "jobs_cancelled",
                  "no_worker"]
        read_only_fields = fields


class LaunchSerializer(StrictInputMixin, serializers.Serializer):
    # A field named like Field.label, the field's own caption: DRF keeps declared fields apart from attributes.
    label = serializers.CharField(required=False, allow_blank=True, max_length=200,  # type: ignore[assignment]
                                  default="")


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
                  "steady_qps", *LATENCY_DISTRIBUTION_FIELDS]
        read_only_fields = fields


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

    class Meta:
        model = Job
        fields = ["id", "run", "campaign", "target", "target_name", "product", "product_name", "spec", "spec_label",
                  "scenario", "scenario_name", "test", "variant", "variant_settings", "threads", "repetition",
                  "position", "tables", "table_size", "time_s", "warmup_s", "clients_needed", "status", "phase", "error", "wait_reason", "waiting",
                  "unreachable_since", "next_try_at", "attempt", "attempts", "command_line", "start_skew_ms",
                  "wall_time_s", "cache_hit_ratio", "cache_warning", "verdict", "imported", "claimed_by", "queued_at",
                  "started_at", "finished_at", "result", "prepare_progress", "notes"]
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
                  "attempts"]
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
                  "other_per_s", "transactions", "queries", "ignored_errors", "reconnects", "events", "duration_s",
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


# ---------------------------------------------------------------- live samples and series


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


# ---------------------------------------------------------------- comparisons


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


# ---------------------------------------------------------------- scenarios from a pasted command


class FromCommandSerializer(StrictInputMixin, serializers.Serializer):
    command = serializers.CharField(max_length=MAX_COMMAND_CHARS, trim_whitespace=False,
                                    help_text="A sysbench command line as pasted (0.5 or 1.0 spelling).")
    default_test = serializers.ChoiceField(choices=TEST_CHOICES, required=False,
                                           help_text="Assumed when the command names no test.")
    # A field named save (the serializer's own save() is not used here).
    save = serializers.BooleanField(  # type: ignore[assignment]
        default=False, help_text="Also create the scenario (needs name and dataset).")
    name = serializers.CharField(max_length=200, required=False)
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all(), required=False)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("save"):
            missing = {f: "needed to save the scenario" for f in ("name", "dataset") if not attrs.get(f)}
            if missing:
                raise serializers.ValidationError(missing)
            if Scenario.objects.filter(name=attrs["name"]).exists():
                raise serializers.ValidationError({"name": "a scenario with this name already exists"})
        return attrs


class TargetHintSerializer(serializers.Serializer):
    driver = serializers.CharField(required=False)
    host = serializers.CharField(required=False)
    port = serializers.JSONField(required=False, help_text="A port number, or a comma-separated list as written.")
    socket = serializers.CharField(required=False)
    user = serializers.CharField(required=False)
    db = serializers.CharField(required=False)


class ProposedScenarioSerializer(serializers.Serializer):
    test = serializers.CharField()
    options = serializers.DictField()
    time_s = serializers.IntegerField()
    report_interval_s = serializers.IntegerField()
    percentile = serializers.FloatField()


class FromCommandResponseSerializer(serializers.Serializer):
    test = serializers.CharField()
    command = serializers.CharField(allow_null=True)
    tables = serializers.IntegerField(allow_null=True)
    table_size = serializers.IntegerField(allow_null=True)
    threads = serializers.ListField(child=serializers.IntegerField())
    time_s = serializers.IntegerField(allow_null=True)
    events = serializers.IntegerField(allow_null=True)
    options = serializers.DictField()
    target_hint = TargetHintSerializer()
    warnings = serializers.ListField(child=serializers.CharField())
    placeholders = serializers.ListField(child=serializers.CharField())
    proposed = ProposedScenarioSerializer(help_text="The scenario fields this command maps to.")
    notes = serializers.ListField(child=serializers.CharField(),
                                 help_text="What the command said that the scenario does not keep, and where it goes.")
    scenario = ScenarioSerializer(allow_null=True, help_text="The created scenario when save was true.")


# ---------------------------------------------------------------- hosts and users


class ClientHostSerializer(StrictInputMixin, FastReadMixin, serializers.ModelSerializer):
    online = serializers.SerializerMethodField()

    class Meta:
        model = ClientHost
        fields = ["id", "hostname", "queue", "cores", "memory_gb", "sysbench_version", "labels", "address",
                  "cpu_model", "kernel", "client_versions", "clock_offset_ms", "clock_rtt_ms", "self_measurement",
                  "started_at", "last_heartbeat", "online"]
        # Facts are what the host announced when it joined (and measured of itself), not an operator's to edit.
        read_only_fields = ["started_at", "last_heartbeat", "address", "cpu_model", "kernel", "client_versions",
                            "clock_offset_ms", "clock_rtt_ms", "self_measurement"]
        extra_kwargs = {"cores": {"max_value": 100_000}, "memory_gb": {"min_value": 0, "max_value": 10**9}}

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_online(self, host: ClientHost) -> bool:
        return host.is_online()


class UserSerializer(StrictInputMixin, serializers.ModelSerializer):
    """A login with its role; the password is write-only and checked by Django's validators."""

    role = serializers.ChoiceField(choices=list(roles.ROLES), allow_null=True, required=False,
                                   help_text="viewer, operator or admin; null for no role.")
    password = serializers.CharField(write_only=True, required=False, max_length=MAX_PASSWORD_CHARS,
                                     trim_whitespace=False, style={"input_type": "password"})

    class Meta:
        model = get_user_model()
        fields = ["id", "username", "email", "first_name", "last_name", "is_active", "role", "password",
                  "date_joined", "last_login"]
        read_only_fields = ["date_joined", "last_login"]

    def to_representation(self, user: Any) -> dict[str, Any]:
        data = super().to_representation(user)
        data["role"] = self._role(user)
        return data

    @staticmethod
    def _role(user: Any) -> str | None:
        if user.is_superuser:
            return roles.ADMIN
        # groups are prefetched by the viewset: no query per user.
        names = {g.name for g in user.groups.all()}
        best = None
        for role in roles.ROLES:
            if role in names:
                best = role
        return best

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        password = attrs.get("password")
        if self.instance is None and not password:
            raise serializers.ValidationError({"password": "a new user needs a password"})
        if password:
            # Django's validators (settings.AUTH_PASSWORD_VALIDATORS), a new user's too: similarity to the
            # username and e-mail being sent needs them on a user object.
            user = self.instance or get_user_model()(**{k: attrs.get(k, "") for k in
                                                        ("username", "email", "first_name", "last_name")})
            try:
                password_validation.validate_password(password, user)
            except DjangoValidationError as exc:
                raise serializers.ValidationError({"password": exc.messages}) from None
        return attrs

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Any:
        role = validated_data.pop("role", None)
        password = validated_data.pop("password")
        user = get_user_model()(**validated_data)
        user.set_password(password)
        user.save()
        self._set_role(user, role)
        return user

    @transaction.atomic
    def update(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        has_role = "role" in validated_data
        role = validated_data.pop("role", None)
        password = validated_data.pop("password", None)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        if password:
            instance.set_password(password)
        instance.save()
        if has_role:
            self._set_role(instance, role)
        return instance

    @staticmethod
    def _set_role(user: Any, role: str | None) -> None:
        role_groups = Group.objects.filter(name__in=roles.ROLES)
        user.groups.remove(*role_groups)
        if role:
            group, _ = Group.objects.get_or_create(name=role)
            user.groups.add(group)
        # groups may be prefetched on this instance; drop the cache so the response shows the new role.
        getattr(user, "_prefetched_objects_cache", {}).pop("groups", None)
        user.__dict__.pop("_benchapp_groups", None)


class TokenRequestSerializer(StrictInputMixin, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=MAX_PASSWORD_CHARS, trim_whitespace=False,
                                     style={"input_type": "password"}, write_only=True)


class TokenResponseSerializer(serializers.Serializer):
    token = serializers.CharField()
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)
