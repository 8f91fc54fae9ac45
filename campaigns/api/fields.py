"""Building blocks of the API's serializers: fast read-only rendering, strict input (unknown and read-only
fields refused), Model.clean() on writes, choice errors that never echo the value sent, and typed fields for the
JSON columns (thread lists per label, dataset sizes per spec)."""
from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import QueryDict
from rest_framework import serializers

from campaigns import roles
from campaigns.api.exceptions import django_validation_detail
from campaigns.escaping import NAME_FIELDS, name_problem
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_TABLE_ROWS_REASON, MAX_THREADS
from campaigns.sysbench.threads import MAX_THREAD_VALUES

MAX_LABEL_CHARS = 200
# A choice error lists the choices when there are at most this many (a role, a driver); a longer list (every
# sysbench test) is left to the API schema.
MAX_LISTED_CHOICES = 12

# Fields whose representation is the attribute itself (already int, float, str, bool, list or dict
# as the database driver returns it).
_AS_IS = (serializers.CharField, serializers.IntegerField, serializers.FloatField, serializers.BooleanField,
          serializers.ChoiceField, serializers.ListField, serializers.DictField, serializers.JSONField)
_Getter = Callable[[Any, Any], Any]


class FastReadMixin:
    """Renders rows several times faster than DRF's generic Field.get_attribute/to_representation.

    A list of 50 jobs spends most of its time in DRF's per-field machinery (and in building the
    serializer's fields for every request). This builds, once per serializer class, a plan of one
    getter per readable field: attribute chains, foreign keys read from their `_id` column,
    nested serializers, method fields. A field it does not know falls back to DRF (and the plan is
    then kept per instance, since such a field may depend on the request). Same output as DRF's.
    """

    _plans: dict[type, list[tuple[str, _Getter]]] = {}

    def _fast_plan(self) -> list[tuple[str, _Getter]]:
        plan = FastReadMixin._plans.get(type(self)) or self.__dict__.get("_plan")
        if plan is None:
            shareable = True
            plan = []
            for field in self._readable_fields:  # type: ignore[attr-defined]
                getter, context_free = self._getter(field)
                shareable &= context_free
                plan.append((field.field_name, getter))
            if shareable:
                FastReadMixin._plans[type(self)] = plan
            else:
                self.__dict__["_plan"] = plan
        return plan

    def _getter(self, field: serializers.Field) -> tuple[_Getter, bool]:
        if isinstance(field, serializers.SerializerMethodField):
            name = field.method_name
            return (lambda serializer, instance: getattr(serializer, name)(instance)), True
        attrs = list(field.source_attrs)
        if isinstance(field, serializers.PrimaryKeyRelatedField) and len(attrs) == 1:
            attrs = [self.Meta.model._meta.get_field(attrs[0]).attname]  # type: ignore[attr-defined]
            return _chain(attrs, None), True
        if isinstance(field, serializers.ManyRelatedField) and isinstance(
            field.child_relation, serializers.PrimaryKeyRelatedField
        ):
            return _chain(attrs, lambda manager: [obj.pk for obj in manager.all()]), True
        if isinstance(field, serializers.SlugRelatedField):
            return _chain([*attrs, field.slug_field], None), True
        if isinstance(field, _AS_IS) and not isinstance(field, serializers.BaseSerializer):
            return _chain(attrs, None), True
        if isinstance(field, FastReadMixin | serializers.ListSerializer | serializers.DateTimeField
                      | serializers.DecimalField):
            return _chain(attrs, field.to_representation), True

        any_field: Any = field  # whatever its kind: the closure keeps no narrowing

        def fallback(serializer: Any, instance: Any) -> Any:
            value = any_field.get_attribute(instance)
            return None if value is None else any_field.to_representation(value)

        return fallback, False

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return {name: getter(self, instance) for name, getter in self._fast_plan()}


class OperatorOnlyFieldsMixin:
    """`operator_only_fields` are read by operators and admins only: a viewer's answer (or one built without a
    request) leaves them out (a campaign's notify_emails, a run's idempotency_key, which the bundle export
    treats as secret too). Cached lists are keyed by the caller's role, so a viewer never gets an operator's."""

    operator_only_fields: tuple[str, ...] = ()

    def _reader_operates(self) -> bool:
        operates = self.__dict__.get("_operates")
        if operates is None:
            request = self.context.get("request")  # type: ignore[attr-defined]
            user = getattr(request, "user", None)
            operates = self.__dict__["_operates"] = bool(user is not None and roles.can_edit(user))
        return operates

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)  # type: ignore[misc]
        if self.operator_only_fields and not self._reader_operates():
            for name in self.operator_only_fields:
                data.pop(name, None)
        return data


def _chain(attrs: list[str], convert: Callable[[Any], Any] | None) -> _Getter:
    def get(serializer: Any, instance: Any) -> Any:
        value = instance
        for attr in attrs:
            try:
                value = getattr(value, attr)
            except ObjectDoesNotExist:
                return None
            if value is None:
                return None
        if inspect.ismethod(value):
            value = value()
        if convert is None or value is None:
            return value
        return convert(value)

    return get


class StrictInputMixin:
    """Refuses a body naming a field the serializer does not take: unknown, or read-only.

    DRF ignores both silently, so a typo ("template" for "templates") falls back to a default and a
    read-only field ("is_template") looks accepted. Every serializer that reads a request body has this
    mixin first; the 400 names each such field. Nested serializers check their own level.
    """

    # A form post through the browsable API carries Django's CSRF token among its fields.
    _FORM_EXTRAS = frozenset({"csrfmiddlewaretoken"})

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors = self.input_field_errors(data)
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]

    def input_field_errors(self, data: Mapping[str, Any]) -> dict[str, list[str]]:
        fields = self.fields  # type: ignore[attr-defined]
        writable = sorted(name for name, field in fields.items() if not field.read_only)
        errors = {}
        for name in data:
            if name in self._FORM_EXTRAS and isinstance(data, QueryDict):
                continue
            field = fields.get(name)
            if field is None:
                known = ", ".join(writable) or "none"
                errors[str(name)[:100]] = [f"unknown field: this request takes {known}"]
            elif field.read_only:
                errors[name] = ["read-only: it cannot be set"]
            elif name in NAME_FIELDS and (problem := name_problem(name, data[name])) is not None:
                errors[name] = [problem]
        return errors


def choice_refusal(field: serializers.ChoiceField) -> str:
    """The message for a value that is not one of `field`'s choices: which field, and its choices when there are
    few. Never the value itself: DRF's own message ('"{input}" is not a valid choice.') sends back whatever the
    client sent, a script for a page that shows the error or a password typed into the wrong field."""
    name = field.field_name or getattr(field.parent, "field_name", "") or "this field"
    choices = [str(key) if str(key) else '""' for key in field.choices]
    if len(choices) <= MAX_LISTED_CHOICES:
        return f"the value is not one of the choices of {name}: {', '.join(choices)}"
    return f"the value is not one of the {len(choices)} choices of {name} (/api/schema/ lists them)"


def _choice_fail(self: serializers.Field, key: str, **kwargs: Any) -> NoReturn:
    if key == "invalid_choice" and isinstance(self, serializers.ChoiceField):
        raise serializers.ValidationError(choice_refusal(self), code=key)
    serializers.Field.fail(self, key, **kwargs)


# Project-wide, on DRF's own class: every ChoiceField (declared in a serializer, made by a ModelSerializer for a
# model field with choices, MultipleChoiceField, a ListField's child) refuses a value with choice_refusal. Every
# API module imports this one, so it is in place before any request is validated.
serializers.ChoiceField.fail = _choice_fail  # type: ignore[method-assign]


class NoInputSerializer(StrictInputMixin, serializers.Serializer):
    """The body of an action that takes none (plan, check, cancel): empty, or any field is a 400."""


class ModelCleanMixin:
    """Runs Model.clean() on the instance the request would produce, as a form would.

    clean() sees the stored values overlaid with the request's, so a partial update is checked
    in context (changing only `options` is validated against the stored `test`). Fields that
    clean() normalises (Scenario.options becomes canonical) are carried back into the data.
    """

    clean_normalises: tuple[str, ...] = ()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)  # type: ignore[misc]
        model = self.Meta.model  # type: ignore[attr-defined]
        instance = copy.copy(self.instance) if self.instance is not None else model()  # type: ignore[attr-defined]
        concrete = {f.name for f in model._meta.concrete_fields}
        for name, value in attrs.items():
            if name in concrete:
                setattr(instance, name, value)
        try:
            instance.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(django_validation_detail(exc)) from None
        for name in self.clean_normalises:
            attrs[name] = getattr(instance, name)
        return attrs


def thread_list_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_THREADS),
        max_length=MAX_THREAD_VALUES, **kwargs,
    )


class ThreadsByKeyField(serializers.DictField):
    """{label: [threads, …]}, keyed by an instance spec label or a scenario name."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=thread_list_field(min_length=1), **kwargs)

    def to_internal_value(self, data: Any) -> dict[str, list[int]]:
        value = super().to_internal_value(data)
        for key in value:
            if not key or len(key) > MAX_LABEL_CHARS:
                raise serializers.ValidationError(f"keys are labels of 1 to {MAX_LABEL_CHARS} characters")
        if len(value) > 1000:
            raise serializers.ValidationError("at most 1,000 entries")
        return value


class SizesBySpecField(serializers.DictField):
    """{spec label: [tables, rows per table]}."""

    def __init__(self, **kwargs: Any) -> None:
        child = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=10**12),
                                      min_length=2, max_length=2)
        super().__init__(child=child, **kwargs)

    def to_internal_value(self, data: Any) -> dict[str, list[int]]:
        value = super().to_internal_value(data)
        for key, (tables, _rows) in value.items():
            if not key or len(key) > MAX_LABEL_CHARS:
                raise serializers.ValidationError(f"keys are spec labels of 1 to {MAX_LABEL_CHARS} characters")
            if tables > 100_000:
                raise serializers.ValidationError(f"{key[:60]}: at most 100,000 tables")
            if _rows > MAX_TABLE_ROWS:
                raise serializers.ValidationError(
                    f"{key[:60]}: at most {MAX_TABLE_ROWS:,} rows per table ({MAX_TABLE_ROWS_REASON})")
        if len(value) > 1000:
            raise serializers.ValidationError("at most 1,000 entries")
        return value
