"""What every form of the web UI builds on: a row written through its service (RowForm), a shared catalogue
row written by the form itself (SharedRowForm), and a service's refusal shown on a form."""
from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError


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
