"""Serializers of runs, and of a run bundle imported from another benchapp."""
from __future__ import annotations

from typing import Any, cast

from rest_framework import serializers

from campaigns.api.fields import FastReadMixin, OperatorOnlyFieldsMixin, StrictInputMixin
from campaigns.execution import host_heartbeats, run_no_worker
from campaigns.models import Run


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
    validity = serializers.SerializerMethodField(
        help_text="Its succeeded jobs by validity verdict: {valid, suspect, invalid, level, text}; level is "
                  "'invalid' when any job is, 'suspect' when any is, else ''; text says it in words "
                  "('24 of 24 jobs invalid'), '' when nothing is to be said.")
    status_text = serializers.SerializerMethodField(
        help_text="The status as the pages show it, with what the jobs' verdicts say: "
                  "'Succeeded · 24 of 24 jobs invalid'.")
    no_worker = serializers.SerializerMethodField(
        help_text="While no worker able to take the run's next job has beaten for 30 s: "
                  "{since, message}, e.g. 'no worker alive since 21:15:02: start one, see the Hosts page'; else null.")

    def get_validity(self, run: Run) -> dict[str, Any]:
        return run.verdicts().as_dict()

    def get_status_text(self, run: Run) -> str:
        return run.status_text()

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
                  "validity", "status_text", "no_worker"]
        read_only_fields = fields
