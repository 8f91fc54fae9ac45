"""Campaigns: the matrix (targets × scenarios × threads), its regression settings and notifications."""
from __future__ import annotations

import math
from typing import Any, cast

from django import forms

from campaigns import services
from campaigns.addresses import emails_clean, webhook_url_clean
from campaigns.forms.base import RowForm
from campaigns.forms.fields import (
    CreatorCheckboxSelectMultiple,
    ThreadsField,
    ThreadsMapField,
    VariantsField,
    target_label,
)
from campaigns.models import Campaign, Scenario, Target
from campaigns.webhooks import MAX_URL_CHARS as MAX_WEBHOOK_URL_CHARS


def _scenario_label(scenario: Scenario) -> str:
    return f"{scenario.name} ({scenario.test}, {scenario.dataset})"


class CampaignForm(RowForm):
    """The webhook URL is write-only, as a target's password: never rendered back; blank on an edit keeps it."""

    threads = ThreadsField(label="Threads")
    webhook_url = forms.CharField(
        required=False, strip=True, max_length=MAX_WEBHOOK_URL_CHARS, label="Webhook (Slack-compatible)",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    clear_webhook = forms.BooleanField(required=False, label="Remove the stored webhook")
    threads_by_spec = ThreadsMapField(
        required=False, label="Threads per spec",
        help_text="Optional, overrides Threads for targets on a spec: one line per spec, "
                  "<code>spec label = 64, 128</code>.")
    threads_by_scenario = ThreadsMapField(
        required=False, label="Threads per scenario",
        help_text="Optional, overrides both: <code>scenario name = 50, 100, 200</code>.")
    variants = VariantsField(
        required=False, max_length=20000, label="Settings variants",
        help_text="Optional: each job runs once per variant, under its server settings (put back after the job). "
                  "One per line: <code>flush=2: mysql innodb_flush_log_at_trx_commit=2 sync_binlog=0; pgsql "
                  "synchronous_commit=off</code>; <code>default:</code> changes nothing. Checked on the targets "
                  "when saved.")

    class Meta:
        model = Campaign
        fields = ["name", "description", "targets", "scenarios", "threads", "threads_by_spec",
                  "threads_by_scenario", "variants", "repetitions", "clients_min", "clients_per_threads", "scale_factor",
                  "table_rows_min", "table_rows_max", "table_sizes", "run_time_s", "warmup_override_s", "keep_data", "regression_threshold_pct", "noise_cv_pct",
                  "baseline_last_n", "confirm_alarms", "notify_emails", "no_worker_notify_min", "client_hosts", "client_tries",
                  "job_tries", "target_wait_s", "quiet_s", "remeasure_spoiled", "job_order", "share_server", "sla_ms",
                  "adaptive_ladder", "ladder_resolution_pct", "profile_server"]
        labels = {"adaptive_ladder": "Adaptive thread ladder", "ladder_resolution_pct": "Ladder resolution (%)",
                  "profile_server": "Profile the server's CPU (perf, local targets)",
                  "share_server": "Share servers and client hosts with other runs that share",
                  "job_order": "Order of the jobs",
                  "remeasure_spoiled": "Measure a spoiled job again",
                  "quiet_s": "Watch for quiet before each job (s)",
                  "sla_ms": "Latency limit (ms)",
                  "clients_min": "Client hosts per job", "clients_per_threads": "One more client per … threads",
                  "scale_factor": "Scale factor", "keep_data": "Keep the data after the run",
                  "run_time_s": "Seconds per job (override)", "warmup_override_s": "Warm-up seconds (override)",
                  "table_rows_min": "Rows per table, at least", "table_rows_max": "Rows per table, at most",
                  "table_sizes": "Sizes per table to sweep",
                  "regression_threshold_pct": "Regression threshold (%)", "noise_cv_pct": "Noisy above CV (%)",
                  "baseline_last_n": "Baseline: last N scheduled runs",
                  "confirm_alarms": "Measure an alarm again before telling anyone", "notify_emails": "E-mail recipients",
                  "client_hosts": "Client hosts", "client_tries": "Tries per client share",
                  "no_worker_notify_min": "Tell them after … minutes without a worker",
                  "job_tries": "Measurements per job", "target_wait_s": "Wait for an unreachable target (s)"}
        help_texts = {
            "clients_per_threads": "Optional: seed 001's rule is 2 clients, one more per 1,000 threads.",
            "scale_factor": "Shrinks every dataset's rows (and tables) for a smoke run: 0.001 is 1/1000th.",
            "table_sizes": "Optional, comma-separated: every scenario runs at each size per table (rows, or a "
                           "workload's own unit such as warehouses), like a thread count; the datasets keep their "
                           "tables. Overrides the datasets' sizes, the scale factor's rows and the rows window.",
            "repetitions": "Each cell runs this many times; comparisons show the geometric mean and the spread.",
            "run_time_s": "Optional: every job measures this long, whatever its scenario says (smoke runs).",
            "notify_emails": "One per line (or separated by commas); regressions and improvements are sent here.",
            "no_worker_notify_min": "A run whose workers are all dead says so at once; after this many minutes the "
                                    "webhook and the e-mail recipients are told (0: at once).",
            "share_server": "Off (the default), each job has its server (every database on it) and its client hosts "
                            "to itself: other runs' jobs wait. On, it measures beside other runs that share too "
                            "(a test of concurrent tenants); never on one database, never under a settings variant.",
            "client_tries": "A client host lost before its sysbench starts measuring: its share goes to another "
                            "eligible host, up to this many sends in all (1 to 5).",
            "job_tries": "A measurement spoiled by the infrastructure (worker or client host lost, target restarted "
                         "mid-run, sysbench killed by someone else) is measured again, up to this many in all (1 to 10).",
            "target_wait_s": "A job whose target cannot be reached waits and tries again with back-off; after this "
                             "many seconds (1800: 30 min) that target's jobs fail. 0 fails them at once.",
            "client_hosts": "Comma-separated host names or labels the jobs may run on (prepare and warm-up "
                            "included); empty: any online client host.",
        }
        widgets = {"targets": CreatorCheckboxSelectMultiple, "scenarios": CreatorCheckboxSelectMultiple,
                   "description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        targets = cast(forms.ModelMultipleChoiceField, self.fields["targets"])
        scenarios = cast(forms.ModelMultipleChoiceField, self.fields["scenarios"])
        targets.queryset = Target.objects.select_related("product", "spec").order_by("name")
        scenarios.queryset = Scenario.objects.select_related("dataset").order_by("name")
        # Per-form labels: Django calls label_from_instance on the field, so it is replaced on this instance.
        targets.label_from_instance = target_label  # type: ignore[method-assign,assignment]
        scenarios.label_from_instance = _scenario_label  # type: ignore[method-assign,assignment]
        # Regression settings have sensible defaults: a form that leaves them out keeps those.
        for name in self.DEFAULTED:
            self.fields[name].required = False
        if self.instance.pk and self.instance.has_webhook():
            self.fields["webhook_url"].help_text = "A webhook is set. Leave blank to keep it."
        else:
            self.fields["webhook_url"].help_text = "Optional: regressions and improvements are posted here."
            del self.fields["clear_webhook"]

    def clean_webhook_url(self) -> str:
        return webhook_url_clean(self.cleaned_data["webhook_url"])

    def clean_notify_emails(self) -> str:
        return emails_clean(self.cleaned_data["notify_emails"])

    def save_by(self, *, user: Any) -> Campaign:
        webhook_url = self.cleaned_data.get("webhook_url") or ("" if self.cleaned_data.get("clear_webhook") else None)
        m2m: dict[str, Any] = {"targets": self.cleaned_data.get("targets"), "scenarios": self.cleaned_data.get("scenarios")}
        if self.instance.pk is None:
            return services.campaign_create(user=user, webhook_url=webhook_url or "",
                                            **{k: v for k, v in m2m.items() if v is not None}, **self.field_values())
        return services.campaign_update(campaign=self.instance, user=user, webhook_url=webhook_url, **m2m,
                                        **self.field_values())

    DEFAULTED = ("regression_threshold_pct", "noise_cv_pct", "baseline_last_n", "client_tries", "no_worker_notify_min",
                 "job_tries", "target_wait_s", "job_order", "quiet_s", "ladder_resolution_pct")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        for name in self.DEFAULTED:
            if cleaned.get(name) in (None, ""):
                default = cast(Any, Campaign._meta.get_field(name)).default
                kept = getattr(self.instance, name, None) if self.instance.pk else None
                cleaned[name] = kept if kept is not None else default
        return cleaned

    def clean_scale_factor(self) -> float:
        value = self.cleaned_data["scale_factor"]
        if value is not None and not math.isfinite(value):
            raise forms.ValidationError("a number between 0 and 1")
        return value
