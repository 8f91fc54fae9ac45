"""A campaign's schedule: a preset or a cron expression."""
from __future__ import annotations

from typing import Any

from django import forms

from campaigns import monitoring

SCHEDULE_PRESETS = [("", "Custom: the cron expression below"), ("nightly", "Nightly, at 02:00"),
                    ("weekly", "Weekly, Mondays at 02:00"), ("hours", "Every N hours")]


class ScheduleForm(forms.ModelForm):
    """A nightly (or any cron) launch of a campaign: a preset (nightly, weekly, every N hours) or a cron expression
    (with @nightly, @daily, @weekly and @hourly accepted)."""

    preset = forms.ChoiceField(choices=SCHEDULE_PRESETS, required=False, label="When")
    every_hours = forms.IntegerField(min_value=1, max_value=23, required=False, label="Every N hours: N",
                                     help_text="For “Every N hours”: the runs start at 00:00 and every N hours after.")
    field_order = ["preset", "every_hours", "cron", "timezone", "label", "enabled"]

    class Meta:
        from campaigns.models import CampaignSchedule

        model = CampaignSchedule
        fields = ["label", "cron", "timezone", "enabled"]
        labels = {"cron": "Cron expression", "timezone": "Time zone"}
        help_texts = {"cron": "minute hour day month weekday, e.g. <code>0 2 * * *</code> for 02:00 every night; "
                              "or <code>@nightly</code>, <code>@daily</code>, <code>@weekly</code>, "
                              "<code>@hourly</code>.",
                      "timezone": "An IANA name such as UTC or Europe/Paris."}

    def save(self, commit: bool = True) -> Any:
        """Through campaigns.monitoring.schedule_save, which keeps the Celery beat entry in step."""
        return monitoring.schedule_save(schedule=self.instance) if commit else self.instance

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cron"].required = False  # a preset writes it; clean() asks for one or the other

    def clean(self) -> dict[str, Any]:
        from campaigns.models.monitoring import cron_expand

        super().clean()
        data = self.cleaned_data
        preset, hours = data.get("preset"), data.get("every_hours")
        if preset == "hours" and not hours and "every_hours" not in self.errors:
            self.add_error("every_hours", "Say every how many hours (1 to 23).")
        elif preset:
            data["cron"] = {"nightly": "0 2 * * *", "weekly": "0 2 * * 1"}.get(preset) or f"0 */{hours} * * *"
        elif not data.get("cron") and "cron" not in self.errors:
            self.add_error("cron", "Choose when: a preset above, or a cron expression.")
        if data.get("cron"):
            data["cron"] = cron_expand(data["cron"])
            self.instance.cron = data["cron"]
        return data
