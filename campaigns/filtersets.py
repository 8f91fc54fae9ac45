"""FilterSets shared by the HTML lists and the REST API (NB filtersets.py).

Each FilterSet filters one model's list by the fields people narrow it by, plus `q`, a free-text
search over names. They are plain django-filter FilterSets: an HTML view binds one to
request.GET and renders `filterset.form`; the API's DjangoFilterBackend uses the same classes
and turns an invalid value into a 400 naming the parameter. Filters on ids accept a
comma-separated list (`?target=1,2`), which both the comparison links and scripts use.
"""
from __future__ import annotations

import datetime as dt

from django import forms
from django.db import models
from django.db.models import Q, QuerySet
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField

from campaigns.models import (
    Campaign,
    ClientHost,
    Dataset,
    InstanceSpec,
    Job,
    JobResult,
    Product,
    Run,
    Scenario,
    Target,
)

# Bounds for numeric filters: a value outside them is a 400 for that parameter, never a literal
# PostgreSQL refuses (Django already turns out-of-range integer lookups into empty results).
MAX_NUMBER = 10**15
# What a run's succeeded jobs' verdicts say (RunQuerySet.with_validity).
RUN_VALIDITY = [("trusted", "trusted (every judged job valid)"), ("untrusted", "untrusted (a job suspect or invalid)"),
                ("invalid", "invalid (a job invalid)")]


class IntegerFilter(filters.NumberFilter):
    """A whole number: `1.5` or `1e3` is a 400 rather than silently truncated."""

    field_class = forms.IntegerField


class IdListFilter(filters.BaseInFilter, IntegerFilter):
    """`?field=1,2,3`: rows whose field is any of these ids."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("lookup_expr", "in")
        super().__init__(*args, **kwargs)


class UTCDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time, moved to UTC: PostgreSQL refuses offsets beyond ±15:59 that ISO allows."""

    def to_python(self, value: object) -> dt.datetime | None:
        parsed = super().to_python(value)
        if parsed is None or parsed.tzinfo is None:
            return parsed
        try:
            return parsed.astimezone(dt.UTC)
        except OverflowError:
            raise forms.ValidationError("the date is out of range", code="invalid") from None


class DateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UTCDateTimeField


def bounded(field_name: str, lookup_expr: str, *, whole: bool = True) -> filters.NumberFilter:
    """A `>=`/`<=` filter on a number, refusing values no row could have."""
    cls = IntegerFilter if whole else filters.NumberFilter
    return cls(field_name=field_name, lookup_expr=lookup_expr, min_value=-MAX_NUMBER, max_value=MAX_NUMBER)


_INTEGER_FIELDS = (
    models.AutoField, models.BigAutoField, models.SmallAutoField, models.IntegerField, models.BigIntegerField,
    models.SmallIntegerField, models.PositiveIntegerField, models.PositiveBigIntegerField,
    models.PositiveSmallIntegerField,
)


class SearchFilterSet(filters.FilterSet):
    """Adds `q`: a case-insensitive substring search over `search_fields`.

    Integer columns listed in Meta.fields filter through IntegerFilter, so `?tables=1e999999`
    is a 400 instead of a huge number built in memory.
    """

    FILTER_DEFAULTS = {
        **filters.FilterSet.FILTER_DEFAULTS,
        **{field: {"filter_class": IntegerFilter} for field in _INTEGER_FIELDS},
    }

    search_fields: tuple[str, ...] = ("name",)

    q = filters.CharFilter(method="search", label="Search", max_length=200)

    def get_form_class(self) -> type[forms.Form]:
        """The filters' form, whose choice errors name the parameter and never repeat the value sent (Django's
        "Select a valid choice. X is not one of the available choices." would send a script or a mistyped secret
        back to whoever shows the error)."""
        form_class = super().get_form_class()
        for name, field in form_class.base_fields.items():
            if isinstance(field, forms.ChoiceField | forms.ModelChoiceField):
                words = f"the value is not one of the choices of {name}"
                field.error_messages = {**field.error_messages, "invalid_choice": words, "invalid_pk_value": words,
                                        "invalid_list": f"{name} takes a list of choices"}
        return form_class

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        value = value.strip()
        if not value:
            return queryset
        condition = Q()
        for field in self.search_fields:
            condition |= Q(**{f"{field}__icontains": value})
        return queryset.filter(condition)


class MineFilterSet(SearchFilterSet):
    """Adds `mine`: with `?mine=true`, only the rows the requesting user created (`created_by`).

    The HTML lists and the API bind the FilterSet with the request; without one (or anonymous), `mine` matches
    nothing rather than everything.
    """

    mine = filters.BooleanFilter(method="filter_mine", label="Mine only")

    def filter_mine(self, queryset: QuerySet, name: str, value: bool | None) -> QuerySet:
        if not value:
            return queryset
        user = getattr(self.request, "user", None)
        if user is None or not user.is_authenticated:
            return queryset.none()
        return queryset.filter(created_by=user)


class ProductFilterSet(SearchFilterSet):
    search_fields = ("name", "vendor", "version")

    id = IdListFilter(field_name="id")
    engine = filters.MultipleChoiceFilter(choices=Product.Engine.choices)

    class Meta:
        model = Product
        fields = ["id", "engine", "vendor"]


class InstanceSpecFilterSet(SearchFilterSet):
    search_fields = ("label", "storage_type")

    id = IdListFilter(field_name="id")
    cpu_cores_min = bounded("cpu_cores", "gte")
    cpu_cores_max = bounded("cpu_cores", "lte")
    memory_gb_min = bounded("memory_gb", "gte", whole=False)
    memory_gb_max = bounded("memory_gb", "lte", whole=False)

    class Meta:
        model = InstanceSpec
        fields = ["id", "cpu_cores", "storage_type"]


class TargetFilterSet(MineFilterSet):
    search_fields = ("name", "host", "product__name")

    id = IdListFilter(field_name="id")
    product = IdListFilter(field_name="product_id")
    spec = IdListFilter(field_name="spec_id")
    engine = filters.MultipleChoiceFilter(field_name="product__engine", choices=Product.Engine.choices)
    driver = filters.MultipleChoiceFilter(choices=Target.Driver.choices)

    class Meta:
        model = Target
        fields = ["id", "product", "spec", "driver", "host", "is_demo"]


class DatasetFilterSet(MineFilterSet):
    id = IdListFilter(field_name="id")

    class Meta:
        model = Dataset
        fields = ["id", "tables"]


class ScenarioFilterSet(MineFilterSet):
    search_fields = ("name", "test", "description")

    id = IdListFilter(field_name="id")
    dataset = IdListFilter(field_name="dataset_id")
    test = filters.CharFilter(max_length=100)

    class Meta:
        model = Scenario
        fields = ["id", "dataset", "test", "prepare_mode", "cleanup", "preset"]


class CampaignFilterSet(MineFilterSet):
    search_fields = ("name", "description")

    id = IdListFilter(field_name="id")
    target = IdListFilter(field_name="targets", distinct=True)
    scenario = IdListFilter(field_name="scenarios", distinct=True)
    created_after = DateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = DateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Campaign
        fields = ["id", "is_template", "template_key"]


class RunFilterSet(MineFilterSet):
    search_fields = ("label", "campaign__name")

    id = IdListFilter(field_name="id")
    campaign = IdListFilter(field_name="campaign_id")
    status = filters.MultipleChoiceFilter(choices=Run.Status.choices)
    trigger = filters.MultipleChoiceFilter(choices=Run.Trigger.choices)
    created_after = DateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = DateTimeFilter(field_name="created_at", lookup_expr="lt")
    validity = filters.ChoiceFilter(
        choices=RUN_VALIDITY, method="filter_validity", label="Validity",
        help_text="trusted: finished, every judged job valid; untrusted: a job suspect or invalid; invalid: a job "
                  "invalid.")

    class Meta:
        model = Run
        fields = ["id", "campaign", "status", "trigger", "validity"]

    def filter_validity(self, queryset: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
        return queryset.with_validity(value) if value else queryset  # type: ignore[attr-defined]


class JobFilterSet(SearchFilterSet):
    search_fields = ("scenario__name", "target__name", "error")

    id = IdListFilter(field_name="id")
    run = IdListFilter(field_name="run_id")
    campaign = IdListFilter(field_name="run__campaign_id")
    target = IdListFilter(field_name="target_id")
    product = IdListFilter(field_name="target__product_id")
    spec = IdListFilter(field_name="target__spec_id")
    scenario = IdListFilter(field_name="scenario_id")
    dataset = IdListFilter(field_name="scenario__dataset_id")
    status = filters.MultipleChoiceFilter(choices=Job.Status.choices)
    threads = IdListFilter(field_name="threads")
    threads_min = bounded("threads", "gte")
    threads_max = bounded("threads", "lte")
    finished_after = DateTimeFilter(field_name="finished_at", lookup_expr="gte")
    finished_before = DateTimeFilter(field_name="finished_at", lookup_expr="lt")

    class Meta:
        model = Job
        fields = ["id", "run", "target", "scenario", "status", "imported"]


class JobResultFilterSet(SearchFilterSet):
    """Results filter through their job: the same parameters as jobs, minus status (results exist once)."""

    search_fields = ("job__scenario__name", "job__target__name")

    id = IdListFilter(field_name="id")
    job = IdListFilter(field_name="job_id")
    run = IdListFilter(field_name="job__run_id")
    campaign = IdListFilter(field_name="job__run__campaign_id")
    target = IdListFilter(field_name="job__target_id")
    product = IdListFilter(field_name="job__target__product_id")
    spec = IdListFilter(field_name="job__target__spec_id")
    scenario = IdListFilter(field_name="job__scenario_id")
    dataset = IdListFilter(field_name="job__scenario__dataset_id")
    job_status = filters.MultipleChoiceFilter(field_name="job__status", choices=Job.Status.choices)
    source = filters.MultipleChoiceFilter(choices=JobResult.Source.choices)
    threads_min = bounded("job__threads", "gte")
    threads_max = bounded("job__threads", "lte")
    created_after = DateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = DateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = JobResult
        fields = ["id", "job", "source"]


class ClientHostFilterSet(SearchFilterSet):
    search_fields = ("hostname",)

    online = filters.BooleanFilter(method="filter_online")

    class Meta:
        model = ClientHost
        fields = ["hostname"]

    def filter_online(self, queryset: QuerySet, name: str, value: bool | None) -> QuerySet:
        if value is None:
            return queryset
        online = ClientHost.objects.online().values("pk")
        return queryset.filter(pk__in=online) if value else queryset.exclude(pk__in=online)
