"""A campaign's schedule: a preset or a cron expression."""
from __future__ import annotations

from typing import Any

from django import forms

from campaigns import monitoring

# Presets first, nightly the one a new schedule starts at; "" (custom) is what a form posted without a preset means.
SCHEDULE_PRESETS = [("nightly", "Nightly, at 02:00"), ("weekly", "Weekly, Mondays at 02:00"),
                    ("hours", "Every N hours"), ("", "Custom: the cron expression below")]
PRESET_CRONS = {"nightly": "0 2 * * *", "weekly": "0 2 * * 1"}


def preset_of(cron: str) -> tuple[str, int | None]:
    """The preset (and N for every N hours) that writes a cron expression, else ("", None): a custom cron."""
    for preset, expression in PRESET_CRONS.items():
        if cron == expression:
            return preset, None
    parts = cron.split()
    if len(parts) == 5 and parts[0] == "0" and parts[1].startswith("*/") and parts[2:] == ["*", "*", "*"]:
        hours = parts[1][2:]
        if hours.isdigit() and 1 <= int(hours) <= 23:
            return "hours", int(hours)
    return "", None


class ScheduleForm(forms.ModelForm):
    """A nightly (or any cron) launch of a campaign: a preset (nightly, weekly, every N hours) or a cron expression
    (with @nightly, @daily, @weekly and @hourly accepted)."""

    preset = forms.ChoiceField(choices=SCHEDULE_PRESETS, required=False, label="When", initial="nightly")
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
        if self.instance.pk and self.instance.cron:  # an existing schedule starts at its own preset, or custom
            preset, hours = preset_of(self.instance.cron)
            self.initial.setdefault("preset", preset)
            if hours:
                self.initial.setdefault("every_hours", hours)

    def clean(self) -> dict[str, Any]:
        from campaigns.models.monitoring import cron_expand

        super().clean()
        data = self.cleaned_data
        preset, hours = data.get("preset"), data.get("every_hours")
        if preset == "hours" and not hours:
            if "every_hours" not in self.errors:
                self.add_error("every_hours", "Say every how many hours (1 to 23).")
        elif preset:
            written = PRESET_CRONS.get(preset) or f"0 */{hours} * * *"
            typed = data.get("cron")
            # Without JavaScript the cron field shows beside a preset: a different expression typed there is not
            # silently replaced by the preset's.
            if typed and cron_expand(typed) != written:
                self.add_error("cron", "To use this cron expression choose “Custom” under When; or leave it empty "
                                       "for the preset.")
            else:
                data["cron"] = written
        elif not data.get("cron") and "cron" not in self.errors:
            self.add_error("cron", "Choose when: a preset above, or a cron expression.")
        if data.get("cron"):
            data["cron"] = cron_expand(data["cron"])
            self.instance.cron = data["cron"]
        return data
