"""What to compare: ids from the query string and the selects of the comparison page."""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


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
    sla_ms = forms.FloatField(
        required=False, min_value=0.001, max_value=10_000_000, label="Latency limit (ms)",
        help_text="On the percentile the jobs measured: each product's highest throughput that keeps it. Blank: "
                  "the campaign's limit, if it has one.")
    # Switches set from the banner above the comparison, not from the list of what to compare.
    SWITCHES = ("trusted_only", "untrusted")
    # Set from the comparison itself (the banner's switch, the baseline links), carried as hidden fields.
    HIDDEN = ("trusted_only", "untrusted", "baseline")

    # Fields of one value, not a list of ids.
    SCALARS = ("sla_ms",)
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
