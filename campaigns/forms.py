"""HTML forms of the web UI.

Model forms run the models' own clean() (Target, Scenario, Campaign), so the browser shows the same
rules as the API. Two things are special:

* A target's password is write-only: the field never renders a value, and leaving it blank on an
  edit keeps the stored password.
* A scenario form is built for one sysbench test: it has one field per option of that test (from
  the catalogue), blank meaning "sysbench's default", so a scenario stores only what differs.
"""
from __future__ import annotations

import math
import re
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from campaigns import jsonlimits, monitoring, services
from campaigns.addresses import emails_clean, webhook_url_clean
from campaigns.models import Campaign, Dataset, InstanceSpec, Product, Scenario, Target
from campaigns.models.workloads import version_for_label, workload_test_choices
from campaigns.settings_variants import VariantError, variants_format, variants_parse
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
from campaigns.sysbench.threads import ThreadListError, format_thread_list, parse_thread_list
from campaigns.webhooks import MAX_URL_CHARS as MAX_WEBHOOK_URL_CHARS

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


class RowForm(forms.ModelForm):
    """A form for a row users make: save_by(user=…) hands its cleaned fields to the row's service function
    (campaigns.services: one write path per kind of row, with the model's full validation); save() is refused so
    that no page writes past it."""

    def save(self, commit: bool = True) -> Any:
        raise NotImplementedError(f"{type(self).__name__}: use save_by(user=…), which writes through the service")

    def save_by(self, *, user: Any) -> Any:
        raise NotImplementedError

    def field_values(self, *skip: str) -> dict[str, Any]:
        """The cleaned values of the form's model fields (many-to-many and `skip` left out)."""
        m2m = {f.name for f in self._meta.model._meta.many_to_many}
        return {name: self.cleaned_data[name] for name in self._meta.fields or ()
                if name in self.cleaned_data and name not in m2m and name not in skip}


def form_errors_add(form: forms.BaseForm, exc: ValidationError) -> None:
    """A service's refusal shown on the form: beside its field when the form has it, above the form otherwise."""
    for field, messages in (exc.message_dict if hasattr(exc, "error_dict") else {None: exc.messages}).items():
        form.add_error(field if field in form.fields else None, messages)


class SharedRowForm(forms.ModelForm):
    """Products and instance specs: a shared catalogue nobody owns, written by the form itself."""

    def save_by(self, *, user: Any) -> Any:
        return self.save()


class ProductForm(SharedRowForm):
    class Meta:
        model = Product
        fields = ["name", "engine", "version", "vendor", "notes"]
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}


class InstanceSpecForm(SharedRowForm):
    class Meta:
        model = InstanceSpec
        fields = ["label", "cpu_cores", "memory_gb", "storage_gb", "storage_type", "price_per_hour", "currency",
                  "notes"]
        labels = {"memory_gb": "Memory (GB)", "storage_gb": "Storage (GB)", "cpu_cores": "CPU cores"}
        help_texts = {"price_per_hour": "Optional: comparisons then show QPS per unit of price."}
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}


class DatasetForm(RowForm):
    sizes_by_spec = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        label="Sizes per spec",
        help_text="Optional, one line per spec: <code>spec label = tables × rows</code>, e.g. "
                  "<code>8-core 32 GB MEM = 300 × 5000000</code>.",
    )

    class Meta:
        model = Dataset
        fields = ["name", "tables", "table_size", "sizes_by_spec", "description"]
        labels = {"table_size": "Rows per table"}
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound and self.instance.pk and self.instance.sizes_by_spec:
            self.initial["sizes_by_spec"] = "\n".join(
                f"{label} = {pair[0]} × {pair[1]}" for label, pair in self.instance.sizes_by_spec.items()
            )

    def clean_sizes_by_spec(self) -> dict[str, list[int]]:
        result: dict[str, list[int]] = {}
        for number, line in enumerate(self.cleaned_data["sizes_by_spec"].splitlines(), start=1):
            if not line.strip():
                continue
            match = re.fullmatch(r"\s*(.+?)\s*=\s*(\d{1,6})\s*[×xX*]\s*(\d{1,13})\s*", line)
            if not match:
                raise forms.ValidationError(f"line {number}: write 'spec label = tables × rows'")
            tables, rows = int(match.group(2)), int(match.group(3))
            if tables < 1 or rows < 1:
                raise forms.ValidationError(f"line {number}: tables and rows must be at least 1")
            result[match.group(1)] = [tables, rows]
        return result

    def save_by(self, *, user: Any) -> Dataset:
        if self.instance.pk is None:
            return services.dataset_create(user=user, **self.field_values())
        return services.dataset_update(dataset=self.instance, user=user, **self.field_values())


class TargetForm(RowForm):
    """The password is write-only: never rendered back; blank on an edit keeps the stored one."""

    password = forms.CharField(
        required=False, strip=False, max_length=500,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_password = forms.BooleanField(required=False, label="Remove the stored password")

    class Meta:
        model = Target
        fields = ["name", "kind", "product", "spec", "driver", "host", "port", "database", "user"]
        help_texts = {"driver": "mysql for MySQL and MariaDB, pgsql for PostgreSQL.",
                      "kind": "A client host is measured by host tests (cpu, memory, fileio, threads, mutex): give "
                              "its registered name as the host and leave driver, port, database and user empty.",
                      "host": "The server's address; for a client host, its name as the Hosts page lists it."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["product"]).queryset = Product.objects.order_by("name")
        cast(forms.ModelChoiceField, self.fields["spec"]).queryset = InstanceSpec.objects.all()
        self.fields["kind"].required = False  # left out: a database server, as before the field existed
        if self.instance.pk and self.instance.has_password():
            self.fields["password"].help_text = ("A password is stored. Leave blank to keep it (it is removed "
                                                 "if the driver, host, port, user or database changes).")
        else:
            self.fields["password"].help_text = "Leave blank for none."
            del self.fields["clear_password"]

    def clean_kind(self) -> str:
        return self.cleaned_data.get("kind") or self.instance.kind or Target.Kind.DATABASE

    def save_by(self, *, user: Any) -> Target:
        password = self.cleaned_data.get("password") or ("" if self.cleaned_data.get("clear_password") else None)
        if self.instance.pk is None:
            return services.target_create(by=user, password=password or "", **self.field_values())
        return services.target_update(target=self.instance, by=user, password=password, **self.field_values())

    def save_notices(self) -> list[str]:
        """What saving did that was not asked for, for the page to say (Target.save() may clear the password)."""
        return [Target.PASSWORD_CLEARED_MESSAGE] if self.instance.password_cleared else []


# ---------------------------------------------------------------- scenarios


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
        if not data.get("dataset") and not TESTS[self.test_name].host:  # a host test has no tables
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
        if dataset is None and TESTS[self.test_name].host:
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


# ---------------------------------------------------------------- campaigns


def parse_threads(text: str) -> list[int]:
    """A thread list field's text, by the one thread-list rule (campaigns.sysbench.threads)."""
    try:
        return parse_thread_list(text).values
    except ThreadListError as exc:
        raise forms.ValidationError(str(exc)) from None


format_threads = format_thread_list


class ThreadsField(forms.CharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 500)
        kwargs.setdefault("help_text", "Comma-separated, e.g. <code>1, 8, 64</code>, or a ladder "
                                       "<code>2~3000</code> (powers of two plus both ends).")
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return format_threads(value) if isinstance(value, list) else value

    def clean(self, value: Any) -> list[int]:
        text = super().clean(value)
        return parse_threads(text) if text else []


class ThreadsMapField(forms.CharField):
    """Lines of `name = 1, 2, 4` → {"name": [1, 2, 4]}."""

    widget = forms.Textarea(attrs={"rows": 2})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{k} = {format_threads(v)}" for k, v in value.items())
        if isinstance(value, str) and value.startswith("{"):
            try:
                return self.prepare_value(jsonlimits.loads(value))
            except ValueError:  # not JSON, or nested too deep to be a thread map: shown as typed
                return value
        return value

    def clean(self, value: Any) -> dict[str, list[int]]:
        text = super().clean(value)
        result: dict[str, list[int]] = {}
        for number, line in enumerate((text or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, threads = line.rpartition("=")
            if not sep or not name.strip():
                raise forms.ValidationError(f"line {number}: write 'name = 1, 2, 4'")
            try:
                result[name.strip()] = parse_threads(threads)
            except forms.ValidationError as exc:
                raise forms.ValidationError(f"line {number}: {exc.messages[0]}") from None
        return result


class VariantsField(forms.CharField):
    """Lines of `name: mysql setting=value …; pgsql setting=value` → the campaign's settings variants."""

    widget = forms.Textarea(attrs={"rows": 3})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return variants_format(value)
        if isinstance(value, str) and value.startswith("["):
            try:
                return self.prepare_value(jsonlimits.loads(value))
            except (ValueError, TypeError, KeyError):
                return value
        return value

    def clean(self, value: Any) -> list[dict[str, Any]]:
        text = super().clean(value)
        try:
            return variants_parse(text or "")
        except VariantError as exc:
            raise forms.ValidationError(str(exc)) from None


class CreatorCheckboxSelectMultiple(forms.CheckboxSelectMultiple):
    """Checkboxes of model rows, each marked `data-mine="true"` or `"false"` for the user the form is shown to,
    so that the picker (picker.js) can offer "Mine only". Unmarked until `user_id` is set."""

    user_id: int | None = None

    def create_option(self, name: str, value: Any, label: Any, selected: Any, index: int,
                      subindex: int | None = None, attrs: dict[str, Any] | None = None) -> dict[str, Any]:
        option = super().create_option(name, value, label, selected, index, subindex=subindex, attrs=attrs)
        instance = getattr(value, "instance", None)
        if self.user_id is not None and instance is not None and hasattr(instance, "created_by_id"):
            option["attrs"]["data-mine"] = "true" if instance.created_by_id == self.user_id else "false"
        return option


def mark_mine(form: forms.BaseForm, user: Any, *field_names: str) -> None:
    """Marks the rows `user` created in the form's creator-aware checkbox lists (for "Mine only")."""
    for name in field_names:
        widget = form.fields[name].widget
        if isinstance(widget, CreatorCheckboxSelectMultiple):
            widget.user_id = user.pk if getattr(user, "is_authenticated", False) else None


def _target_label(target: Target) -> str:
    return f"{target.name} ({target.product.name}{', ' + target.spec.label if target.spec else ''})"


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
                  "table_rows_min", "table_rows_max", "run_time_s", "warmup_override_s", "keep_data", "regression_threshold_pct", "noise_cv_pct",
                  "baseline_last_n", "notify_emails", "no_worker_notify_min", "client_hosts", "client_tries",
                  "job_tries", "target_wait_s"]
        labels = {"clients_min": "Client hosts per job", "clients_per_threads": "One more client per … threads",
                  "scale_factor": "Scale factor", "keep_data": "Keep the data after the run",
                  "run_time_s": "Seconds per job (override)", "warmup_override_s": "Warm-up seconds (override)",
                  "table_rows_min": "Rows per table, at least", "table_rows_max": "Rows per table, at most",
                  "regression_threshold_pct": "Regression threshold (%)", "noise_cv_pct": "Noisy above CV (%)",
                  "baseline_last_n": "Baseline: last N scheduled runs", "notify_emails": "E-mail recipients",
                  "client_hosts": "Client hosts", "client_tries": "Tries per client share",
                  "no_worker_notify_min": "Tell them after … minutes without a worker",
                  "job_tries": "Measurements per job", "target_wait_s": "Wait for an unreachable target (s)"}
        help_texts = {
            "clients_per_threads": "Optional: seed 001's rule is 2 clients, one more per 1,000 threads.",
            "scale_factor": "Shrinks every dataset's rows (and tables) for a smoke run: 0.001 is 1/1000th.",
            "repetitions": "Each cell runs this many times; comparisons show the geometric mean and the spread.",
            "run_time_s": "Optional: every job measures this long, whatever its scenario says (smoke runs).",
            "notify_emails": "One per line (or separated by commas); regressions and improvements are sent here.",
            "no_worker_notify_min": "A run whose workers are all dead says so at once; after this many minutes the "
                                    "webhook and the e-mail recipients are told (0: at once).",
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
        targets.label_from_instance = _target_label  # type: ignore[method-assign,assignment]
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
                 "job_tries", "target_wait_s")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        for name in self.DEFAULTED:
            if cleaned.get(name) is None:
                default = cast(Any, Campaign._meta.get_field(name)).default
                kept = getattr(self.instance, name, None) if self.instance.pk else None
                cleaned[name] = kept if kept is not None else default
        return cleaned

    def clean_scale_factor(self) -> float:
        value = self.cleaned_data["scale_factor"]
        if value is not None and not math.isfinite(value):
            raise forms.ValidationError("a number between 0 and 1")
        return value


# ---------------------------------------------------------------- comparisons


class IdListField(forms.Field):
    """Ids from repeated parameters (`?targets=1&targets=2`) or comma-separated (`?targets=1,2`)."""

    widget = forms.SelectMultiple

    def __init__(self, *, choices: Any = (), **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.choices = choices
        self.widget.choices = choices

    def to_python(self, value: Any) -> list[int]:
        if value in (None, "", []):
            return []
        items = value if isinstance(value, (list, tuple)) else [value]
        ids: list[int] = []
        for item in items:
            for part in str(item).split(","):
                part = part.strip()
                if not part:
                    continue
                if not part.isdigit() or len(part) > 18:
                    raise forms.ValidationError(f"'{part[:20]}' is not an id")
                ids.append(int(part))
        if len(ids) > 200:
            raise forms.ValidationError("at most 200 ids")
        return list(dict.fromkeys(ids))


def _attrs_html(attrs: dict[str, Any]) -> str:
    """A widget's attributes as django/forms/widgets/attrs.html writes them (True: the name alone; False: left out)."""
    return "".join(f" {escape(name)}" if value is True else f' {escape(name)}="{escape(str(value))}"'
                   for name, value in attrs.items() if value is not False)


class _SelectWrittenHere:
    """A select written here rather than through the form renderer's templates, in the same markup: the
    comparison's choice form has hundreds of options, and a template include per option took about 10 ms of every
    comparison page's server time."""

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        widget = self.get_context(name, value, attrs)["widget"]  # type: ignore[attr-defined]
        out = [f'<select name="{escape(widget["name"])}"{_attrs_html(widget["attrs"])}>']
        for group_name, options, _index in widget["optgroups"]:
            if group_name:
                out.append(f'\n  <optgroup label="{escape(group_name)}">')
            for option in options:
                out.append(f'\n  <option value="{escape(str(option["value"]))}"{_attrs_html(option["attrs"])}>'
                           f'{escape(option["label"])}</option>')
            if group_name:
                out.append("\n  </optgroup>")
        out.append("\n</select>")
        return mark_safe("".join(out))  # noqa: S308  # every interpolated text above is escaped


class FastSelect(_SelectWrittenHere, forms.Select):
    pass


class FastSelectMultiple(_SelectWrittenHere, forms.SelectMultiple):
    pass


class ComparisonForm(forms.Form):
    """What to compare: any mix of targets, products, runs, campaigns and scenarios (at least one), optionally with
    a published product (and one of its published specs) set beside the measured tables of seed scenarios."""

    targets = IdListField(label="Targets")
    products = IdListField(label="Products")
    campaign = IdListField(label="Campaigns")
    runs = IdListField(label="Runs")
    scenarios = IdListField(label="Scenarios")
    specs = IdListField(label="Only specs")
    published = forms.MultipleChoiceField(required=False, label="Published figures (seed white papers)")
    published_product = IdListField(
        label="Beside a published product",
        help_text="Its published figures go beside the measured tables of seed scenarios, per core where the "
                  "specs differ.")
    published_spec = IdListField(
        label="…on its published spec",
        help_text="Leave blank for the published spec nearest to each measured one.")
    trusted_only = forms.BooleanField(
        required=False, label="Only trusted cells",
        help_text="Leave out the cells whose validity verdict is suspect or invalid.")
    untrusted = forms.BooleanField(
        required=False, label="Include untrusted cells",
        help_text="Count suspect and invalid cells in the conclusions (the table shows them either way).")
    baseline = IdListField(label="Baseline", help_text="The product (or run) every Δ% is against.")
    # Switches set from the banner above the comparison, not from the list of what to compare.
    SWITCHES = ("trusted_only", "untrusted")
    # Set from the comparison itself (the banner's switch, the baseline links), carried as hidden fields.
    HIDDEN = ("trusted_only", "untrusted", "baseline")

    # Fields that take one id at most: a plain select with an empty choice.
    SINGLE = ("published_product", "published_spec")

    def __init__(self, *args: Any, choices: dict[str, list[Any]],
                 published_specs: dict[int, set[int]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The specs each published product has figures on, to refuse a spec of another product.
        self.published_specs = published_specs or {}
        for name, options in choices.items():
            field = cast(forms.ChoiceField, self.fields[name])
            field.choices = options
            if name in self.SINGLE:
                field.widget = FastSelect(choices=[("", "—"), *options])
            else:
                field.widget = FastSelectMultiple(choices=options, attrs={"size": min(8, max(3, len(options)))})

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if not any(data.get(k) for k in ("targets", "products", "campaign", "runs", "scenarios", "published")):
            raise forms.ValidationError("Choose what to compare: targets, products, a campaign, runs, scenarios "
                                        "or published figures.")
        product, spec = data.get("published_product") or [], data.get("published_spec") or []
        if len(product) > 1:
            self.add_error("published_product", "Choose one published product.")
        elif product and product[0] not in self.published_specs:
            self.add_error("published_product", "No published figures for this product.")
        if len(data.get("baseline") or []) > 1:
            self.add_error("baseline", "Choose one baseline.")
        if len(spec) > 1:
            self.add_error("published_spec", "Choose one published spec.")
        elif spec and not product:
            self.add_error("published_spec", "Choose the published product first.")
        elif spec and len(product) == 1 and spec[0] not in self.published_specs.get(product[0], set()):
            self.add_error("published_spec", "The product has no published figures on this spec.")
        return data


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


# ---------------------------------------------------------------- quick compare

QUICK_DRIVER_CHOICES = [("mysql", "MySQL / MariaDB (port 3306)"), ("pgsql", "PostgreSQL (port 5432)")]
QUICK_MAX_TIME_S = 3600


def quick_test_choices() -> list[tuple[str, str]]:
    """sysbench 1.0's database tests, from the catalogue, with their one-line descriptions."""
    return [(name, name) for name, spec in TESTS.items() if not spec.legacy and not spec.host]


class QuickTargetForm(forms.Form):
    """A target added inline on the quick compare page, with its product and spec (chosen or new).

    Its fields are prefixed `new_` so that they sit in the same <form> as the comparison; it is "filled" as soon as
    a name or a host is typed, and then every field it needs is required.
    """

    new_name = forms.CharField(required=False, max_length=200, label="Name")
    new_driver = forms.ChoiceField(choices=QUICK_DRIVER_CHOICES, initial="mysql", label="Driver")
    new_host = forms.CharField(required=False, max_length=255, label="Host")
    new_port = forms.IntegerField(required=False, min_value=1, max_value=65535, label="Port",
                                  help_text="Blank: the driver's default (3306 or 5432).")
    new_database = forms.CharField(required=False, max_length=128, label="Database", initial="sbtest")
    new_user = forms.CharField(required=False, max_length=128, label="User")
    new_password = forms.CharField(
        required=False, strip=False, max_length=500, label="Password",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted, never shown again. Leave blank for none.")
    new_product = forms.ModelChoiceField(queryset=Product.objects.none(), required=False, label="Product",
                                         empty_label="— a new product (below) —")
    new_product_name = forms.CharField(required=False, max_length=200, label="New product: name")
    new_product_engine = forms.ChoiceField(choices=[("", "—"), *Product.Engine.choices], required=False,
                                           label="engine")
    new_spec = forms.ModelChoiceField(queryset=InstanceSpec.objects.none(), required=False, label="Spec",
                                      empty_label="— none, or a new spec (below) —")
    new_spec_label = forms.CharField(required=False, max_length=200, label="New spec: label")
    new_spec_cpu_cores = forms.IntegerField(required=False, min_value=1, max_value=100_000, label="CPU cores")
    new_spec_memory_gb = forms.FloatField(required=False, min_value=0, max_value=1_000_000, label="memory (GB)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["new_product"]).queryset = Product.objects.order_by("name")
        cast(forms.ModelChoiceField, self.fields["new_spec"]).queryset = InstanceSpec.objects.order_by("label")

    def is_filled(self) -> bool:
        return self.is_bound and any(str(self.data.get(f, "")).strip() for f in ("new_name", "new_host"))

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        for name in ("new_name", "new_host", "new_database", "new_user"):
            if not data.get(name) and name not in self.errors:
                self.add_error(name, "Required to add a target.")
        if not data.get("new_product"):
            for name in ("new_product_name", "new_product_engine"):
                if not data.get(name) and name not in self.errors:
                    self.add_error(name, "Required for a new product (or choose an existing product).")
        if not data.get("new_spec") and data.get("new_spec_label"):
            for name in ("new_spec_cpu_cores", "new_spec_memory_gb"):
                if data.get(name) is None and name not in self.errors:
                    self.add_error(name, "Required for a new spec.")
        return data


class QuickCompareForm(forms.Form):
    """What to compare: ticked targets and tests, one dataset shape, a thread ladder, duration, repetitions."""

    targets = forms.ModelMultipleChoiceField(queryset=Target.objects.none(), required=False,
                                             widget=CreatorCheckboxSelectMultiple, label="Targets")
    tests = forms.MultipleChoiceField(choices=quick_test_choices, required=False,
                                      widget=forms.CheckboxSelectMultiple, label="sysbench tests")
    tables = forms.IntegerField(min_value=1, max_value=100_000, initial=4, label="Tables")
    table_size = forms.IntegerField(min_value=1, max_value=MAX_TABLE_ROWS, initial=10_000, label="Rows per table")
    threads = ThreadsField(label="Thread ladder", initial="1, 4, 16, 64")
    time_s = forms.IntegerField(min_value=1, max_value=QUICK_MAX_TIME_S, initial=10, label="Duration per job (s)")
    repetitions = forms.IntegerField(min_value=1, max_value=100, initial=3, label="Repetitions",
                                     help_text="Each cell runs this many times; comparisons show the geometric mean, "
                                               "the spread and whether a difference is larger than the noise.")
    name = forms.CharField(required=False, max_length=150, label="Name (optional)",
                           help_text="Blank: “Quick compare” and the date.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        targets = cast(forms.ModelMultipleChoiceField, self.fields["targets"])
        targets.queryset = Target.objects.select_related("product", "spec").order_by("name")
        targets.label_from_instance = _target_label  # type: ignore[method-assign,assignment]

    def check_matrix(self, *, extra_targets: int = 0) -> bool:
        """Field errors for an empty matrix (no target, no test); True when there is something to run."""
        if not self.is_valid():
            return False
        if not self.cleaned_data["targets"] and not extra_targets:
            self.add_error("targets", "Tick at least one target, or add one below.")
        if not self.cleaned_data["tests"]:
            self.add_error("tests", "Tick at least one sysbench test.")
        return not self.errors


class ApiTokenForm(forms.Form):
    """A new API token of the user: its name (the API tokens page)."""

    name = forms.CharField(max_length=100, label="Name", help_text="What it is for, e.g. “nightly CI”.")
