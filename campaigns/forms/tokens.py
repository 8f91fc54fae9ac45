"""API tokens: a new token's name."""
from __future__ import annotations

from django import forms


class ApiTokenForm(forms.Form):
    """A new API token of the user: its name (the API tokens page)."""

    name = forms.CharField(max_length=100, label="Name", help_text="What it is for, e.g. “nightly CI”.")
