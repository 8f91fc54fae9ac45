"""The comparison page, its CSV and Markdown exports, and the print-ready white-paper report."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from campaigns import roles
from campaigns.comparison import (
    SIGNIFICANCE_NOTE,
    Selection,
    column_choices,
    comparison_layout,
    comparison_layout_cached,
    report_sections,
    table_header,
    table_parts,
    to_csv,
    to_markdown,
)
from campaigns.comparison.panel import cell_details, report_costs
from campaigns.comparison.published import published_links, table_keys
from campaigns.comparison.rows import ComparisonLayout
from campaigns.forms import ComparisonForm
from campaigns.models import Campaign, InstanceSpec, Product, PublishedResult, Run, Scenario, Target
from campaigns.views.base import role_required

CHOICES_SHOWN = 300


def _published_choices() -> tuple[dict[str, list[Any]], dict[int, set[int]]]:
    """Documents, products and their specs that have published figures, from one query."""
    documents: dict[str, str] = {}
    products: dict[int, str] = {}
    specs: dict[int, dict[int, str]] = {}
    for doc, title, product_id, product, spec_id, spec in (
            PublishedResult.objects.order_by("document", "product__name", "spec__cpu_cores", "spec__memory_gb")
            .values_list("document", "document_title", "product_id", "product__name", "spec_id", "spec__label")
            .distinct()):
        documents.setdefault(doc, f"seed {doc}: {title}"[:120])
        products.setdefault(product_id, f"{product} — seed {doc}")
        specs.setdefault(product_id, {})[spec_id] = spec
    choices: dict[str, list[Any]] = {
        "published": list(documents.items()),
        "published_product": list(products.items()),
        # Grouped by product, so the list says which spec belongs to which product (compare.js hides the others).
        "published_spec": [(products[p], list(by_id.items())) for p, by_id in specs.items()],
    }
    return choices, {p: set(by_id) for p, by_id in specs.items()}


def _choices() -> tuple[dict[str, list[Any]], dict[int, set[int]]]:
    published, published_specs = _published_choices()
    return {
        # Rows as tuples, not model instances: this runs on every comparison page.
        "targets": [(pk, f"{name} ({product})") for pk, name, product in
                    Target.objects.order_by("name").values_list("pk", "name", "product__name")[:CHOICES_SHOWN]],
        "products": list(Product.objects.order_by("name").values_list("pk", "name")[:CHOICES_SHOWN]),
        "campaign": list(Campaign.objects.filter(is_template=False).order_by("name")
                         .values_list("pk", "name")[:CHOICES_SHOWN]),
        "runs": [(pk, f"#{pk} {campaign} ({status}, {created_at:%Y-%m-%d %H:%M})") for pk, campaign, status, created_at in
                 Run.objects.order_by("-created_at").values_list("pk", "campaign__name", "status", "created_at")
                 [:CHOICES_SHOWN]],
        "scenarios": list(Scenario.objects.order_by("name").values_list("pk", "name")[:CHOICES_SHOWN]),
        "specs": list(InstanceSpec.objects.values_list("pk", "label")[:CHOICES_SHOWN]),
        **published,
    }, published_specs


def request_selection(request: HttpRequest) -> tuple[ComparisonForm, Selection | None]:
    """The comparison's form bound to the request's query, and the Selection it stands for (None when the query
    chooses nothing or is invalid: the form says why). The share views read a comparison's query the same way."""
    data: dict[str, Any] = {name: request.GET.get(name) if name in ComparisonForm.SCALARS else request.GET.getlist(name)
                            for name in ComparisonForm.base_fields
                            if name in request.GET and name not in ComparisonForm.SWITCHES}
    for switch in ComparisonForm.SWITCHES:
        if request.GET.get(switch) and data:
            data[switch] = request.GET[switch]
    choices, published_specs = _choices()
    form = ComparisonForm(data or None, choices=choices, published_specs=published_specs)
    if not data or not form.is_valid():
        return form, None
    return form, Selection(**{name: form.cleaned_data[name] for name in ComparisonForm.base_fields})


def _title(layout: ComparisonLayout) -> str:
    names = layout["names"]
    if not names:
        return "Comparison"
    if len(names) == 1:
        return f"{names[0]}: results"
    return f"{', '.join(names[:-1])} vs {names[-1]}"


def report_headers(layout: ComparisonLayout) -> None:
    """Each table's header and its per-metric parts, as the report prints them (also on a shared report)."""
    for table in layout["tables"]:
        table["header"] = table_header(table, layout["names"])
        table["parts"] = table_parts(table, layout["products"])


def _baselines(layout: ComparisonLayout | None, selection: Selection | None) -> list[dict[str, Any]]:
    """The other columns a user may make the baseline, each with the page's query that does it (kept in the URL)."""
    # Published figures are set beside the measured columns, after them: only measured columns can lead (a
    # document's tables that no measured table took in add published columns to every table).
    if layout is None or selection is None or layout["has_published"] or len(layout["products"]) < 2:
        return []
    out = []
    for column in layout["products"][1:]:
        chosen = column.get("run_id") or column["id"]
        out.append({"name": column["name"], "query": replace(selection, baseline=[chosen]).query_string()})
    return out


def _baseline_choices(layout: ComparisonLayout | None, selection: Selection | None) -> list[dict[str, Any]]:
    """Every measured column as a choice of the form's "Baseline" list (the chosen one, else the first, selected),
    so that the choice form says which column every Δ% is against and can change it (kept in the URL)."""
    if layout is None or selection is None or selection.published or len(layout["products"]) < 2:
        return []
    chosen = selection.baseline[0] if selection.baseline else None
    out = []
    for index, column in enumerate(layout["products"]):
        value = column.get("run_id") or column["id"]
        out.append({"value": value, "name": column["name"],
                    "selected": value == chosen if chosen is not None else index == 0})
    return out


@role_required(roles.VIEWER)
def compare(request: HttpRequest) -> HttpResponse:
    form, selection = request_selection(request)
    layout = comparison_layout_cached(selection) if selection is not None else None
    charts = {}
    if layout is not None:
        charts = {t["id"]: t["charts"] for t in layout["tables"]}
    return render(request, "campaigns/compare.html", {
        "form": form, "layout": layout, "selection": selection, "charts": charts,
        "query": selection.query_string() if selection else "", "title": _title(layout) if layout else "Compare",
        # The banner's switch: the same selection with "include untrusted cells" flipped.
        "switch_fields": replace(selection, untrusted=not selection.untrusted).query_pairs() if selection else [],
        "hidden_fields": ComparisonForm.HIDDEN, "baselines": _baselines(layout, selection),
        "baseline_choices": _baseline_choices(layout, selection),
        "significance_note": SIGNIFICANCE_NOTE, "columns": column_choices(layout) if layout else [],
        "histogram_url": (f"{reverse('api:comparison-cell-histogram')}?{selection.api_query()}"
                          if selection is not None and selection.measured() else ""),
        # What a measured cell's side panel shows (comparison.panel); its per-second charts come from the jobs API.
        "cell_details": cell_details(layout) if layout is not None and layout["tables"] else None,
        # Measured tables of seed scenarios, compared without the published figures: the way to set them beside.
        "published_links": (published_links(table_keys(layout["tables"]), selection.query_string())
                            if layout is not None and selection is not None and not selection.published
                            and not selection.published_product else []),
    })


def _layout_or_error(request: HttpRequest) -> ComparisonLayout | HttpResponse:
    """The comparison's layout, or a plain-text 400 saying why there is nothing to export."""
    form, selection = request_selection(request)
    if selection is None:
        errors = "; ".join(str(e) for errs in form.errors.values() for e in errs) or "choose what to compare"
        return HttpResponse(f"Nothing to export: {errors}\n", status=400, content_type="text/plain")
    return comparison_layout(selection)


@role_required(roles.VIEWER)
def compare_csv(request: HttpRequest) -> HttpResponse:
    layout = _layout_or_error(request)
    if isinstance(layout, HttpResponse):
        return layout
    response = HttpResponse(to_csv(layout), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="comparison.csv"'
    return response


@role_required(roles.VIEWER)
def compare_markdown(request: HttpRequest) -> HttpResponse:
    layout = _layout_or_error(request)
    if isinstance(layout, HttpResponse):
        return layout
    text = to_markdown(layout, title=_title(layout), report=report_sections(layout))
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="comparison.md"'
    return response


@role_required(roles.VIEWER)
def compare_report(request: HttpRequest) -> HttpResponse:
    """The print-ready page: environment, method, results and conclusions, like a white paper."""
    form, selection = request_selection(request)
    if selection is None:
        return render(request, "campaigns/compare.html", {"form": form, "layout": None, "title": "Compare"})
    layout = comparison_layout_cached(selection)
    report_headers(layout)
    return render(request, "campaigns/compare_report.html", {
        "layout": layout, "report": report_sections(layout), "title": _title(layout),
        "charts": {t["id"]: t["charts"] for t in layout["tables"]}, "query": selection.query_string(),
        "generated_at": timezone.now(), "significance_note": SIGNIFICANCE_NOTE, "columns": column_choices(layout),
        "report_costs": report_costs(layout),
    })
