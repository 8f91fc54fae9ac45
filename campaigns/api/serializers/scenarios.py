"""Serializers of scenarios, and of a pasted sysbench command read into one (scenarios/from-command/)."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from campaigns import services
from campaigns.api.fields import FastReadMixin, ModelCleanMixin, StrictInputMixin
from campaigns.api.serializers.base import ServiceWriteMixin
from campaigns.models import Dataset, Scenario, WorkloadVersion
from campaigns.sysbench.catalogue import TESTS
from campaigns.sysbench.cmdline import MAX_COMMAND_CHARS

TEST_CHOICES = sorted(TESTS)


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


class FromCommandSerializer(StrictInputMixin, serializers.Serializer):
    command = serializers.CharField(max_length=MAX_COMMAND_CHARS, trim_whitespace=False,
                                    help_text="A sysbench command line as pasted (0.5 or 1.0 spelling).")
    default_test = serializers.ChoiceField(choices=TEST_CHOICES, required=False,
                                           help_text="Assumed when the command names no test.")
    # A field named save (the serializer's own save() is not used here).
    save = serializers.BooleanField(  # type: ignore[assignment]
        default=False, help_text="Also create the scenario (needs name, and dataset for a database test: a host "
                                 "test's scenario has no tables).")
    name = serializers.CharField(max_length=200, required=False)
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all(), required=False)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("save"):
            # What is missing (a dataset is needed by a database test only) is said once the command's test is
            # known: ScenarioViewSet.from_command.
            if attrs.get("name") and Scenario.objects.filter(name=attrs["name"]).exists():
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
