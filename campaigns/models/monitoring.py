"""Nightly campaigns: schedules, what each firing did, and the regressions found in the results."""
from __future__ import annotations

import zoneinfo
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models
from django_celery_beat.models import PeriodicTask

from campaigns import roles
from campaigns.models.core import Campaign, Run, Scenario, Target

# Shorthands a schedule accepts for its cron expression, written out before it is stored. "@nightly" is not cron's
# own, but what people type for "every night": 02:00, when a shared machine is quietest.
CRON_ALIASES = {
    "@nightly": "0 2 * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@hourly": "0 * * * *",
}


def cron_expand(value: str) -> str:
    """A schedule's cron expression with its shorthand (@nightly, @daily, …) written out; anything else as given."""
    text = value.strip()
    return CRON_ALIASES.get(text.lower(), text)


def validate_cron(value: str) -> None:
    from celery.schedules import crontab

    parts = cron_expand(value).split()
    if len(parts) != 5:
        raise ValidationError("a cron expression has five fields: minute hour day-of-month month day-of-week")
    minute, hour, day_of_month, month_of_year, day_of_week = parts
    try:
        # By keyword: crontab's positional order is minute, hour, day_of_week, day_of_month, month_of_year, not
        # cron's (beat builds the schedule from these same five fields by name, campaigns.monitoring.schedules).
        crontab(minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month_of_year,
                day_of_week=day_of_week)
    except Exception as exc:  # celery's parser raises several kinds on odd input; all mean "invalid"
        raise ValidationError(f"not a valid cron expression: {str(exc)[:200]}") from None


@lru_cache(maxsize=1)
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) | {"UTC"}


def validate_timezone(value: str) -> None:
    # Membership, not ZoneInfo(value): arbitrary text would reach the file system (and may raise OSError).
    if value not in _time_zones():
        raise ValidationError(f"unknown time zone {value[:80]!r} (use an IANA name such as Europe/Paris)")


class CampaignSchedule(models.Model):
    """A recurring launch of a campaign (e.g. every night at 02:00 Europe/Paris).

    Celery beat fires it through a django-celery-beat PeriodicTask kept in step with this row; a
    firing while the campaign's previous run is still going is skipped and recorded.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="schedules")
    label = models.CharField(max_length=200, blank=True)
    cron = models.CharField(max_length=100, validators=[validate_cron], help_text="minute hour day month weekday")
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])
    enabled = models.BooleanField(default=True)
    periodic_task = models.OneToOneField(PeriodicTask, on_delete=models.SET_NULL, null=True, blank=True,
                                         related_name="+")
    last_fired_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Who added it: only they, or an admin, may change it (None for rows older than the field: the campaign's
    # creator, else admins only).
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", editable=False)

    class Meta:
        ordering = ["campaign_id", "id"]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.cron} {self.timezone}"

    def owner_id(self) -> int | None:
        """Whose schedule this is: who added it, else (an older row) who made its campaign."""
        return self.created_by_id or self.campaign.created_by_id

    def may_edit(self, user: Any) -> bool:
        """Whether `user` may change, pause or delete it: its owner (an operator still) or an admin."""
        if roles.can_admin(user):
            return True
        return roles.can_edit(user) and self.owner_id() is not None and self.owner_id() == user.pk


class ScheduleFiring(models.Model):
    """One moment a schedule fired: the run it launched, or why it skipped."""

    class Outcome(models.TextChoices):
        LAUNCHED = "launched"
        SKIPPED = "skipped"

    schedule = models.ForeignKey(CampaignSchedule, on_delete=models.CASCADE, related_name="firings")
    fired_at = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-fired_at"]

    def __str__(self) -> str:
        return f"{self.schedule} {self.outcome} at {self.fired_at:%Y-%m-%d %H:%M}"


class Regression(models.Model):
    """A cell (target × scenario × threads × settings variant) of a run that moved beyond the campaign's threshold,
    significantly, against its baseline, or where the cell's history changes level (a change point): a
    regression when throughput fell or latency rose, an improvement the other way."""

    class Kind(models.TextChoices):
        REGRESSION = "regression"
        IMPROVEMENT = "improvement"

    class Metric(models.TextChoices):
        QPS = "qps"
        LATENCY = "latency_pct_ms"

    class Detector(models.TextChoices):
        THRESHOLD = "threshold", "threshold against the baseline"
        CHANGE_POINT = "change_point", "change point in the history"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="regressions")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="regressions")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="+")
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="+")
    threads = models.PositiveIntegerField()
    # The settings variant of the cell ("" without variants): each variant is judged against its own history.
    variant = models.CharField(max_length=40, blank=True, default="")
    metric = models.CharField(max_length=20, choices=Metric.choices)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    baseline_value = models.FloatField()
    current_value = models.FloatField()
    change_pct = models.FloatField()
    p_value = models.FloatField(null=True, blank=True)
    # The p-value after the Benjamini–Hochberg correction over every cell and metric tested in the run: the one
    # that decided (null where the test gave no p-value, e.g. identical repetitions).
    p_adjusted = models.FloatField(null=True, blank=True)
    method = models.CharField(max_length=120)
    # threshold: this run against its baseline (run_evaluate). change_point: the cell's history changes level at
    # this run (E-Divisive means over the scheduled runs, campaigns.changepoints), found after found_in_run.
    detector = models.CharField(max_length=20, choices=Detector.choices, default=Detector.THRESHOLD)
    # The annotations at or near a change point (a server upgrade, a setting changed), quoted with it.
    explanation = models.TextField(blank=True)
    # Someone looked at it: who, when and what they found ("expected: flush=2 on purpose").
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                        related_name="+")
    acknowledgement = models.CharField(max_length=500, blank=True)
    found_in_run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    baseline_run_ids = ArrayField(models.BigIntegerField(), default=list)
    baseline_label = models.CharField(max_length=200)
    notified_at = models.DateTimeField(null=True, blank=True)
    notification_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Confirmation(models.TextChoices):
        """Whether the alarm was measured again before anyone was told (Campaign.confirm_alarms)."""

        NONE = "", "not measured again (the campaign does not confirm, or a change point)"
        PENDING = "pending", "being measured again"
        CONFIRMED = "confirmed", "confirmed by measuring again"
        NOT_CONFIRMED = "not_confirmed", "not confirmed: measured again, within noise"
        UNCONFIRMED = "unconfirmed", "could not be measured again"

    confirmation = models.CharField(max_length=14, choices=Confirmation.choices, blank=True, default="")
    confirm_run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                    help_text="the run that measured the alarmed cell again")
    confirm_value = models.FloatField(null=True, blank=True, help_text="the metric measured again")
    confirm_change_pct = models.FloatField(null=True, blank=True)
    confirm_p_adjusted = models.FloatField(null=True, blank=True)
    confirm_note = models.CharField(max_length=300, blank=True, help_text="why it was not measured again, or how")

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["run", "target", "scenario", "threads", "variant", "metric",
                                                       "detector"], name="regression_unique_cell_detector")]

    def __str__(self) -> str:
        return f"{self.kind} {self.metric} {self.change_pct:+.1f}% in run #{self.run_id}"

    def confirmation_text(self) -> str:
        """"confirmed by run #12: −31.2 %", "not confirmed: run #12 measured −2.1 %, within noise", …; "" when it
        was not asked."""
        fresh = f"{self.confirm_change_pct:+.1f} %" if self.confirm_change_pct is not None else "nothing"
        if self.confirmation == self.Confirmation.CONFIRMED:
            return f"confirmed by run #{self.confirm_run_id}: {fresh}"
        if self.confirmation == self.Confirmation.NOT_CONFIRMED and self.confirm_note:
            return f"not confirmed: {self.confirm_note}"
        if self.confirmation == self.Confirmation.NOT_CONFIRMED:
            return f"not confirmed: run #{self.confirm_run_id} measured {fresh}, within noise"
        if self.confirmation == self.Confirmation.PENDING:
            return f"being measured again by run #{self.confirm_run_id}"
        if self.confirmation == self.Confirmation.UNCONFIRMED:
            return f"not measured again: {self.confirm_note}"
        return ""


class Annotation(models.Model):
    """A note on a run, or on a point in time of a target ("upgraded to 10.11.6", "innodb_flush_log_at_trx_commit=2"),
    written by a user or recorded by benchapp when a target's server version or one of the settings it snapshots
    changed between two runs (kind auto). History charts and run pages show them; a change point quotes those at
    or near it."""

    class Kind(models.TextChoices):
        USER = "user"
        AUTO = "auto", "recorded by benchapp"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="annotations")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, null=True, blank=True, related_name="annotations")
    at = models.DateTimeField(help_text="When it happened (default: the run's start, or now).")
    text = models.CharField(max_length=500)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.USER)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The last change after it was written: only its author or an admin edits a note (campaigns.api.schedules).
    edited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="+")
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]
        constraints = [models.CheckConstraint(condition=models.Q(run__isnull=False) | models.Q(target__isnull=False),
                                              name="annotation_run_or_target",
                                              violation_error_message="an annotation belongs to a run or a target")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.text[:60]}"

    def is_editable_by(self, user: Any) -> bool:
        """Whether `user` may change or delete this note: its author (an operator still), or an admin; a note
        benchapp recorded (no author) only an admin."""
        return roles.can_admin(user) or (
            self.created_by_id is not None and self.created_by_id == getattr(user, "pk", None) and roles.can_edit(user))

    def clean(self) -> None:
        if self.run_id is None and self.target_id is None:
            raise ValidationError({"run": "an annotation belongs to a run or a target: give one of them"})
        if not (self.text or "").strip():
            raise ValidationError({"text": "write the note"})
