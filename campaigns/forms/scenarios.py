"""Scenarios: a form built for one sysbench test, with one field per option of that test (from the catalogue),
blank meaning "sysbench's default", so a scenario stores only what differs; and the "Paste a sysbench command" box."""
from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction

from campaigns import services
from campaigns.forms.base import RowForm
from campaigns.models import Dataset, Scenario
from campaigns.models.workloads import version_for_label, workload_test_choices
from campaigns.sysbench.catalogue import (
    INT32_MAX,
    MAX_TABLE_ROWS,
    TESTS,
    OptionError,
    OptionSpec,
    format_value,
    scenario_options,
    validate_options,
)
from campaigns.sysbench.presets import PRESETS

# Options a scenario never stores: the dataset (tables, rows), the campaign (threads) and the
# scenario's own fields (time, report interval, percentile) set them; benchapp always asks for the
# histogram and bounds the run itself with forced-shutdown.
MANAGED_OPTIONS = frozenset({
    "threads", "time", "report-interval", "percentile", "histogram", "forced-shutdown",
    "tables", "table-size", "oltp-tables-count", "oltp-table-size",
})
OPTION_PREFIX = "opt__"


def option_field_name(option: str) -> str:
    return OPTION_PREFIX + option.replace("-", "_")


def _option_field(spec: OptionSpec) -> forms.Field:
    default = "none" if spec.default in (None, "") else format_value(spec.default)
    limits = ""
    if spec.type in ("int", "float"):
        bounds = []
        if spec.min is not None and spec.min != 0:
            bounds.append(f"at least {format_value(spec.min)}")
        if spec.max is not None and spec.max < INT32_MAX:
            bounds.append(f"at most {format_value(spec.max)}")
        if spec.min == 0 and spec.max is not None and spec.max < INT32_MAX:
            bounds.insert(0, "at least 0")
        limits = f" {', '.join(bounds).capitalize()}." if bounds else ""
    help_text = f"{spec.help[:1].upper()}{spec.help[1:]}. Default: {default}.{limits}"
    label = spec.name
    attrs = {"placeholder": default}
    if spec.type == "int":
        return forms.IntegerField(required=False, label=label, help_text=help_text,
                                  min_value=None if spec.min is None else int(spec.min),
                                  max_value=None if spec.max is None else int(spec.max),
                                  widget=forms.NumberInput(attrs=attrs))
    if spec.type == "float":
        return forms.FloatField(required=False, label=label, help_text=help_text, min_value=spec.min,
                                max_value=spec.max, widget=forms.NumberInput(attrs={**attrs, "step": "any"}))
    if spec.type == "bool":
        return forms.ChoiceField(required=False, label=label, help_text=help_text,
                                 choices=[("", f"default ({default})"), ("on", "on"), ("off", "off")])
    if spec.type == "choice":
        return forms.ChoiceField(required=False, label=label, help_text=help_text,
                                 choices=[("", f"default ({default})")] + [(c, c) for c in spec.choices or ()])
    return forms.CharField(required=False, label=label, help_text=help_text, max_length=200,
                           widget=forms.TextInput(attrs=attrs))


def test_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    builtin = [(name, name) for name, spec in TESTS.items() if not spec.legacy and not spec.host]
    legacy = [(name, name) for name, spec in TESTS.items() if spec.legacy]
    host = [(name, name) for name, spec in TESTS.items() if spec.host]
    groups = [("sysbench 1.0 tests", builtin), ("sysbench 0.5 (legacy Lua)", legacy),
              ("host tests (measure a client host)", host)]
    own = workload_test_choices()
    return groups + ([("Workloads of one's own", own)] if own else [])


def preset_choices() -> list[tuple[str, str]]:
    return [("", "— none —")] + [(key, f"seed {p.seed}: {p.label}") for key, p in PRESETS.items()]


class ScenarioForm(RowForm):
    """A scenario of one test; `test` decides which option fields exist.

    The dataset is either an existing one or a new one made from the three new_dataset_* fields.
    """

    test = forms.ChoiceField(choices=test_choices, label="sysbench test")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all(), required=False,
                                     empty_label="— a new dataset (below) —")
    new_dataset_name = forms.CharField(required=False, max_length=200, label="New dataset: name")
    new_dataset_tables = forms.IntegerField(required=False, min_value=1, max_value=100000, label="tables")
    new_dataset_table_size = forms.IntegerField(required=False, min_value=1, max_value=MAX_TABLE_ROWS,
                                                label="rows per table")
    preset = forms.ChoiceField(choices=preset_choices, required=False, label="From a seed preset")

    class Meta:
        model = Scenario
        fields = ["name", "test", "dataset", "time_s", "warmup_s", "report_interval_s", "percentile",
                  "prepare_mode", "cleanup", "prepare_threads", "table_ddl", "preset", "description"]
        labels = {"time_s": "Duration (s)", "warmup_s": "Warm-up (s)", "report_interval_s": "Report interval (s)",
                  "percentile": "Latency percentile", "prepare_threads": "Prepare threads",
                  "table_ddl": "Custom CREATE TABLE"}
        widgets = {"description": forms.Textarea(attrs={"rows": 3}), "table_ddl": forms.Textarea(attrs={"rows": 3})}
        help_texts = {"table_ddl": "Optional: one CREATE TABLE {table} (…) with its table options, no comments, "
                                   "optionally ending with dbpartition by hash(col) or PARTITION BY HASH|KEY(col) "
                                   "PARTITIONS n. {table} stands for each table's name."}

    def __init__(self, *args: Any, test: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if test is None:
            test = (self.data.get("test") if self.is_bound else None) or self.initial.get("test") \
                or self.instance.test or "oltp_read_write"
        # A workload of one's own is chosen by its version's label; its options are those sysbench listed.
        self.workload_version = version_for_label(test)
        if test not in TESTS and self.workload_version is None:
            test = "oltp_read_write"
        self.test_name = test
        self.test_spec = self.workload_version.test_spec() if self.workload_version else TESTS[test]
        self.fields["test"].initial = test
        self.test_option_names: list[str] = []
        self.common_option_names: list[str] = []
        own = self.test_spec.options
        for name, spec in scenario_options(self.test_spec).items():
            if name in MANAGED_OPTIONS:
                continue
            field_name = option_field_name(name)
            self.fields[field_name] = _option_field(spec)
            (self.test_option_names if name in own else self.common_option_names).append(field_name)
            if not self.is_bound and name in (self.instance.options or {}) and field_name not in self.initial:
                self.initial[field_name] = format_value(self.instance.options[name])

    def option_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.test_option_names]

    def common_option_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.common_option_names]

    def common_options_set(self) -> bool:
        return any(self[name].value() not in (None, "") for name in self.common_option_names)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        options: dict[str, object] = {}
        where: dict[str, str] = {}
        for field_name in (*self.test_option_names, *self.common_option_names):
            value = data.get(field_name)
            if value in (None, ""):
                continue
            name = field_name[len(OPTION_PREFIX):].replace("_", "-")
            options[name] = value
            where[name] = field_name
        self.instance.workload_version = self.workload_version
        try:
            self.instance.options = validate_options(self.test_spec, options)
        except OptionError as exc:
            self.instance.options = {}
            field = where.get(exc.option.replace("_", "-"))
            self.add_error(field, exc.message if field else str(exc))
        if not data.get("dataset") and not self.test_spec.host:  # a host test has no tables
            missing = [f for f in ("new_dataset_name", "new_dataset_tables", "new_dataset_table_size")
                       if data.get(f) in (None, "")]
            for field in missing:
                if field not in self.errors:
                    self.add_error(field, "Required for a new dataset (or choose an existing dataset).")
            new_name = data.get("new_dataset_name")
            if new_name and Dataset.objects.filter(name=new_name).exists():
                self.add_error("new_dataset_name", "A dataset with this name exists: choose it above instead.")
        return data

    def _get_validation_exclusions(self) -> set[str]:
        exclude = set(super()._get_validation_exclusions())  # type: ignore[misc]  # Django's, not in the stubs
        exclude.add("dataset")
        return exclude

    @transaction.atomic
    def save_by(self, *, user: Any) -> Scenario:
        dataset = self.cleaned_data.get("dataset")
        if dataset is None and self.test_spec.host:
            dataset = services.host_test_dataset(user=user)
        elif dataset is None:
            dataset = services.dataset_create(user=user, name=self.cleaned_data["new_dataset_name"],
                                              tables=self.cleaned_data["new_dataset_tables"],
                                              table_size=self.cleaned_data["new_dataset_table_size"])
        fields = {**self.field_values("dataset"), "dataset": dataset, "options": self.instance.options,
                  "preset": self.cleaned_data.get("preset") or "", "workload_version": self.workload_version}
        if self.instance.pk is None:
            return services.scenario_create(user=user, **fields)
        return services.scenario_update(scenario=self.instance, user=user, **fields)


class CommandPasteForm(forms.Form):
    command = forms.CharField(
        label="sysbench command", max_length=65_536, strip=False, required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false",
                                     "placeholder": "sysbench --db-driver=mysql ... oltp_read_write run"}),
    )

    def clean_command(self) -> str:
        command = self.cleaned_data["command"]
        if not command.strip():
            raise forms.ValidationError("Paste a sysbench command first.")
        return command
