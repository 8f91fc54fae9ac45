"""Serializers of campaigns: the campaign, its settings variants, its noise, and a launch's body."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from campaigns import services
from campaigns.addresses import emails_clean, webhook_url_clean
from campaigns.api.fields import (
    FastReadMixin,
    ModelCleanMixin,
    OperatorOnlyFieldsMixin,
    StrictInputMixin,
    ThreadsByKeyField,
    thread_list_field,
)
from campaigns.api.serializers.base import ServiceWriteMixin
from campaigns.models import Campaign, Scenario, Target
from campaigns.sysbench.catalogue import MAX_THREADS
from campaigns.webhooks import MAX_URL_CHARS as MAX_WEBHOOK_URL_CHARS


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
                  "scale_factor", "table_rows_min", "table_rows_max", "table_sizes", "keep_data", "run_time_s", "warmup_override_s",
                  "is_template",
                  "template_key", "regression_threshold_pct", "noise_cv_pct", "baseline_run", "baseline_last_n", "confirm_alarms",
                  "webhook_url", "has_webhook", "notify_emails", "no_worker_notify_min", "client_hosts", "client_tries",
                  "job_tries", "target_wait_s", "quiet_s", "remeasure_spoiled", "job_order", "share_server", "sla_ms", "adaptive_ladder",
                  "ladder_resolution_pct", "profile_server", "created_by",
                  "created_at",
                  "updated_at"]
        # Templates come from load_seed_templates only: a key the seeds page cannot link to broke it.
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


class LaunchSerializer(StrictInputMixin, serializers.Serializer):
    # A field named like Field.label, the field's own caption: DRF keeps declared fields apart from attributes.
    label = serializers.CharField(required=False, allow_blank=True, max_length=200,  # type: ignore[assignment]
                                  default="")
