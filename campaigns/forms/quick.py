"""Quick compare: ticked targets and tests, and a target added inline."""
from __future__ import annotations

from typing import Any, cast

from django import forms

from campaigns.forms.fields import CreatorCheckboxSelectMultiple, ThreadsField, target_label
from campaigns.models import InstanceSpec, Product, Target
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, TESTS

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
        targets.label_from_instance = target_label  # type: ignore[method-assign,assignment]

    def check_matrix(self, *, extra_targets: int = 0) -> bool:
        """Field errors for an empty matrix (no target, no test); True when there is something to run."""
        if not self.is_valid():
            return False
        if not self.cleaned_data["targets"] and not extra_targets:
            self.add_error("targets", "Tick at least one target, or add one below.")
        if not self.cleaned_data["tests"]:
            self.add_error("tests", "Tick at least one sysbench test.")
        return not self.errors
