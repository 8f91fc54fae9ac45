"""The seed white papers page: their campaign templates, instances of them, and the one-click quick run.

A quick run instantiates the chosen templates at a reduced scale on the chosen targets (by default seeds 001
and 003 on the local demo MariaDB and PostgreSQL) and queues the runs one after the other
(campaigns.seeds.quickrun). Its results then open on the comparison page beside the documents' figures.
"""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns import roles
from campaigns.comparison.published import published_links, published_tables, template_keys
from campaigns.models import Campaign, Run, Target
from campaigns.seeds.quickrun import DEFAULT_TEMPLATES, QuickRunOptions, suite_launch, suite_preview
from campaigns.seeds.services import template_instantiate
from campaigns.seeds.templates import TEMPLATES
from campaigns.services import DEMO_TARGET_NAMES
from campaigns.views.base import role_required, rows_that_render

DOCUMENT_BY_KEY = {t.key: t.document for t in TEMPLATES}


def _template_choices() -> list[tuple[str, str]]:
    return [(c.template_key, c.name) for c in
            Campaign.objects.filter(is_template=True).exclude(template_key="").order_by("template_key")]


class ReductionForm(forms.Form):
    """Targets and how far to reduce: shared by the quick run and a single template's instance."""

    targets = forms.ModelMultipleChoiceField(
        queryset=Target.objects.select_related("product").order_by("name"), widget=forms.CheckboxSelectMultiple,
        help_text="Seed 002's scenario needs a MySQL or MariaDB target; other targets skip it.",
    )
    scale_factor = forms.FloatField(min_value=1e-9, max_value=1.0, initial=QuickRunOptions.scale_factor,
                                    help_text="Rows (and tables) of every dataset are multiplied by this.")
    run_time_s = forms.IntegerField(label="Measured seconds per job", min_value=1, max_value=3600,
                                    initial=QuickRunOptions.run_time_s)
    warmup_s = forms.IntegerField(label="Warm-up seconds per job", min_value=0, max_value=3600,
                                  initial=QuickRunOptions.warmup_s)
    max_threads = forms.IntegerField(
        label="Thread ceiling", min_value=1, max_value=100_000, initial=QuickRunOptions.max_threads,
        help_text="Thread counts above it run at it (MariaDB's default max_connections is 151, PostgreSQL's 100).",
    )

    table_rows_min = forms.IntegerField(
        label="Rows per table, at least", min_value=1, max_value=10**12, required=False,
        initial=QuickRunOptions.table_rows_min, help_text="After scaling; empty for no floor.",
    )
    table_rows_max = forms.IntegerField(
        label="Rows per table, at most", min_value=1, max_value=10**12, required=False,
        initial=QuickRunOptions.table_rows_max, help_text="After scaling; empty for no ceiling.",
    )

    def __init__(self, *args: Any, target_choices: list[tuple[Any, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The page shows one form per template: their target lists are read once and shared (choices shown
        # only; a posted form still validates against the queryset).
        if target_choices is not None:
            cast(forms.ModelMultipleChoiceField, self.fields["targets"]).widget.choices = target_choices

    def options(self) -> QuickRunOptions:
        data = self.cleaned_data
        return QuickRunOptions(scale_factor=data["scale_factor"], run_time_s=data["run_time_s"],
                               warmup_s=data["warmup_s"], max_threads=data["max_threads"],
                               table_rows_min=data.get("table_rows_min"), table_rows_max=data.get("table_rows_max"))

    def add_errors(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc.messages)
            return
        for field_name, errors in exc.message_dict.items():
            self.add_error(field_name if field_name in self.fields else None, errors)


class QuickRunForm(ReductionForm):
    templates = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple,
                                          help_text="Run one after the other, in this order.")
    field_order = ["templates", "targets"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["templates"]).choices = _template_choices()


def _quick_form_initial() -> dict[str, Any]:
    return {"templates": list(DEFAULT_TEMPLATES),
            "targets": list(Target.objects.filter(name__in=DEMO_TARGET_NAMES).values_list("pk", flat=True))}


def _page(request: HttpRequest, *, quick_form: QuickRunForm | None = None, preview: list[dict[str, Any]] | None = None,
          status: int = 200, template_form: ReductionForm | None = None) -> HttpResponse:
    """The page; `template_form`, a bound form of one template (its prefix is the key), shows in its row, open,
    with its errors at its fields and what was typed kept."""
    templates = list(
        Campaign.objects.filter(is_template=True).order_by("template_key").prefetch_related("scenarios__dataset")
    )
    published = published_tables()
    published_documents = {row[0] for row in published}
    instances = list(
        Campaign.objects.filter(is_template=False).exclude(template_key="").order_by("-created_at")
        .prefetch_related(Prefetch("runs", queryset=Run.objects.order_by("-created_at")))[:20]
    )
    rows = []
    for campaign in instances:
        last = campaign.runs.all()[0] if campaign.runs.all() else None
        document = DOCUMENT_BY_KEY.get(campaign.template_key, "")
        # Only the products with figures for this template's tables: seed 000's two parts share a document.
        links = published_links(template_keys(campaign.template_key), f"campaign={campaign.pk}", published)
        rows.append({"campaign": campaign, "run": last, "document": document, "published": links[0] if links else None})
    initial = _quick_form_initial()
    target_choices = list(ReductionForm.base_fields["targets"].choices)  # type: ignore[attr-defined]

    def template_row(t: Campaign) -> dict[str, Any]:
        return {"campaign": t, "document": DOCUMENT_BY_KEY.get(t.template_key, ""),
                "instantiate_url": reverse("seeds-instantiate", args=[t.template_key]),
                "datasets": sorted({s.dataset.name for s in t.scenarios.all()}),
                "scenario_count": len(t.scenarios.all()),
                "has_published": DOCUMENT_BY_KEY.get(t.template_key) in published_documents,
                # One form per template, its fields prefixed with the key: ids stay unique on the page.
                "form": (template_form if template_form is not None and template_form.prefix == t.template_key
                         else ReductionForm(prefix=t.template_key, initial=initial, target_choices=target_choices)),
                "open": template_form is not None and template_form.prefix == t.template_key}

    context = {
        "templates": rows_that_render(templates, template_row, page="seeds"),
        "quick_form": quick_form or QuickRunForm(initial=initial, target_choices=target_choices), "preview": preview, "instances": rows, "can_edit": roles.can_edit(request.user),
    }
    return render(request, "campaigns/seeds.html", context, status=status)


@role_required(roles.VIEWER)
def seed_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


@role_required(roles.OPERATOR)
@require_POST
def seed_quick_run(request: HttpRequest) -> HttpResponse:
    form = QuickRunForm(request.POST)
    if not form.is_valid():
        return _page(request, quick_form=form, status=400)
    keys = form.cleaned_data["templates"]
    targets = list(form.cleaned_data["targets"])
    try:
        if "preview" in request.POST:
            return _page(request, quick_form=form,
                         preview=suite_preview(template_keys=keys, targets=targets, options=form.options()))
        runs = suite_launch(template_keys=keys, targets=targets, options=form.options(), user=request.user,
                            trigger=Run.Trigger.MANUAL)
    except ValidationError as exc:
        form.add_errors(exc)
        return _page(request, quick_form=form, status=400)
    messages.success(request, f"Quick run queued: {len(runs)} run{'s' if len(runs) != 1 else ''} "
                              f"({', '.join(f'#{r.pk}' for r in runs)}), one after the other.")
    return HttpResponseRedirect(reverse("run-detail", args=[runs[0].pk]))


@role_required(roles.OPERATOR)
@require_POST
def seed_instantiate(request: HttpRequest, key: str) -> HttpResponse:
    template = get_object_or_404(Campaign, is_template=True, template_key=key)
    form = ReductionForm(request.POST, prefix=key)
    if form.is_valid():
        options = form.options()
        try:
            campaign = template_instantiate(
                template=template, targets=list(form.cleaned_data["targets"]), scale_factor=options.scale_factor,
                run_time_s=options.run_time_s, warmup_s=options.warmup_s, max_threads=options.max_threads,
                plain_ddl=True, table_rows_min=options.table_rows_min, table_rows_max=options.table_rows_max,
                user=request.user,
            )
        except ValidationError as exc:
            form.add_errors(exc)
        except ValueError as exc:
            form.add_error(None, f"Not created: {exc}")
        else:
            messages.success(request, f"Campaign “{campaign.name}” created from the template: check its plan, then launch.")
            return HttpResponseRedirect(reverse("campaigns-detail", args=[campaign.pk]))
    # The errors at the fields, in the template's own row, with what was typed kept.
    return _page(request, template_form=form)
