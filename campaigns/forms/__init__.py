"""HTML forms of the web UI, one module per area of pages (catalogue, scenarios, campaigns, compare, schedules,
quick compare, tokens) on top of base (rows written through their service) and fields (shared fields and widgets).

Model forms run the models' own clean() (Target, Scenario, Campaign), so the browser shows the same
rules as the API. Two things are special:

* A target's password is write-only: the field never renders a value, and leaving it blank on an
  edit keeps the stored password (catalogue.TargetForm).
* A scenario form is built for one sysbench test: it has one field per option of that test (from
  the catalogue), blank meaning "sysbench's default", so a scenario stores only what differs (scenarios.ScenarioForm).

The names below are the ones the rest of the app imports from `campaigns.forms`.
"""
from __future__ import annotations

from campaigns.forms.base import RowForm, SharedRowForm, form_errors_add
from campaigns.forms.campaigns import CampaignForm
from campaigns.forms.catalogue import DatasetForm, InstanceSpecForm, ProductForm, TargetForm
from campaigns.forms.compare import ComparisonForm, FastSelect, FastSelectMultiple, IdListField
from campaigns.forms.fields import (
    CreatorCheckboxSelectMultiple,
    ThreadsField,
    ThreadsMapField,
    VariantsField,
    format_threads,
    mark_mine,
    parse_threads,
    target_label,
)
from campaigns.forms.quick import (
    QUICK_DRIVER_CHOICES,
    QUICK_MAX_TIME_S,
    QuickCompareForm,
    QuickTargetForm,
    quick_test_choices,
)
from campaigns.forms.scenarios import (
    MANAGED_OPTIONS,
    OPTION_PREFIX,
    CommandPasteForm,
    ScenarioForm,
    option_field_name,
    preset_choices,
    test_choices,
)
from campaigns.forms.schedules import SCHEDULE_PRESETS, ScheduleForm
from campaigns.forms.tokens import ApiTokenForm

__all__ = [
    "MANAGED_OPTIONS", "OPTION_PREFIX", "QUICK_DRIVER_CHOICES", "QUICK_MAX_TIME_S", "SCHEDULE_PRESETS",
    "ApiTokenForm", "CampaignForm", "CommandPasteForm", "ComparisonForm", "CreatorCheckboxSelectMultiple",
    "DatasetForm", "FastSelect", "FastSelectMultiple", "IdListField", "InstanceSpecForm", "ProductForm",
    "QuickCompareForm", "QuickTargetForm", "RowForm", "ScenarioForm", "ScheduleForm", "SharedRowForm", "TargetForm",
    "ThreadsField", "ThreadsMapField", "VariantsField", "form_errors_add", "format_threads", "mark_mine",
    "option_field_name", "parse_threads", "preset_choices", "quick_test_choices", "target_label", "test_choices",
]
