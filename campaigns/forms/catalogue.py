"""The catalogue's rows: products, instance specs, datasets and targets.

A target's password is write-only: the field never renders a value, and leaving it blank on an edit keeps the
stored password."""
from __future__ import annotations

import re
from typing import Any, cast

from django import forms

from campaigns import services
from campaigns.forms.base import RowForm, SharedRowForm
from campaigns.models import Dataset, InstanceSpec, Product, Target


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
        fields = ["name", "kind", "product", "spec", "driver", "host", "port", "database", "user", "workloads_allowed"]
        labels = {"workloads_allowed": "Uploaded workloads may run on it"}
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
