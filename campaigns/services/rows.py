"""The one way a row users make is written: fields set, the model's full validation, the save, in one transaction.

Each kind of row has its own keyword-only service functions (targets.py target_create, datasets.py, scenarios.py,
campaigns.py, annotations.py; schedules in campaigns.monitoring, share links in campaigns.sharing) and they all
end here. Forms, the API, the admin, imports, seeds, quick compare and management commands call those functions,
never save() (tests/test_write_paths.py reads the source to keep it so). A refusal is Django's ValidationError
keyed by field name: the API answers it with a 400 naming the field, forms show it beside the field.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import models, transaction

from campaigns.escaping import NAME_FIELDS, name_problem

M = TypeVar("M", bound=models.Model)


def acting_user(user: Any) -> Any:
    """The user to record as a row's creator: None for anonymous callers (commands, seeds, imports by the system)."""
    return user if getattr(user, "is_authenticated", False) else None


def row_write(row: M, fields: Mapping[str, Any], *, user: Any = None,
              m2m: Mapping[str, Iterable[models.Model] | None] | None = None, exclude: Sequence[str] = ()) -> M:
    """Sets `fields` on `row`, records `user` as the creator of a new row that has one, validates everything the
    model says (full_clean: fields, clean()'s cross-field rules, unique names and constraints), saves, and sets
    the many-to-many `m2m` (None leaves one as it is). Raises ValidationError, keyed by field, and stores nothing."""
    known = {f.name for f in row._meta.concrete_fields} | {f.attname for f in row._meta.concrete_fields}
    for name, value in fields.items():
        if name not in known:
            raise ValidationError({name: f"{type(row).__name__} has no field {name!r}"})
        setattr(row, name, value)
    for name in NAME_FIELDS:
        problem = name_problem(name, getattr(row, name, None))
        if problem is not None:
            raise ValidationError({name: problem})
    if row.pk is None and getattr(row, "created_by_id", "none") is None:
        row.created_by = acting_user(user)  # type: ignore[attr-defined]
    row.full_clean(exclude=list(exclude))
    with transaction.atomic():
        row.save()
        for name, values in (m2m or {}).items():
            if values is not None:
                getattr(row, name).set(list(values))
    return row
