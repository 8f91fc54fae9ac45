"""Fields and widgets more than one form uses: thread lists and maps, settings variants, creator-aware
checkboxes ("Mine only")."""
from __future__ import annotations

from typing import Any

from django import forms

from campaigns import jsonlimits
from campaigns.models import Target
from campaigns.settings_variants import VariantError, variants_format, variants_parse
from campaigns.sysbench.threads import ThreadListError, format_thread_list, parse_thread_list


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


def target_label(target: Target) -> str:
    return f"{target.name} ({target.product.name}{', ' + target.spec.label if target.spec else ''})"
