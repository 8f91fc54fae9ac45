"""Quick compare: tick targets (or add one), tick sysbench tests, give a thread ladder, see the plan, launch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from campaigns import roles, services
from campaigns.comparison.advice import recent_cv_pct, repetitions_advice
from campaigns.forms import QuickCompareForm, QuickTargetForm, mark_mine
from campaigns.models import Target
from campaigns.views.base import role_required

PLAN_ROWS_SHOWN = 100


def _errors_to(form: Form, exc: ValidationError) -> None:
    """A service's ValidationError at the form's fields it names; the rest above the form."""
    if hasattr(exc, "error_dict"):
        for name, errors in exc.error_dict.items():
            form.add_error(name if name in form.fields else None, [e for err in errors for e in err.messages])
    else:
        form.add_error(None, exc.messages)


def _new_target(data: dict[str, Any]) -> services.NewTarget:
    return services.NewTarget(
        name=data["new_name"], driver=data["new_driver"], host=data["new_host"], port=data.get("new_port"),
        database=data["new_database"], user=data["new_user"], password=data.get("new_password") or "",
        product=data.get("new_product"), product_name=data.get("new_product_name") or "",
        product_engine=data.get("new_product_engine") or "", spec=data.get("new_spec"),
        spec_label=data.get("new_spec_label") or "", spec_cpu_cores=data.get("new_spec_cpu_cores"),
        spec_memory_gb=data.get("new_spec_memory_gb"),
    )


def _matrix(data: dict[str, Any], added: Target | None) -> services.QuickMatrix:
    targets = list(data["targets"])
    targets += [added] if added is not None and added not in targets else []
    return services.QuickMatrix(targets=targets, tests=list(data["tests"]), tables=data["tables"],
                       table_size=data["table_size"], threads=data["threads"], time_s=data["time_s"],
                       repetitions=data["repetitions"], name=data.get("name") or "")


@role_required(roles.OPERATOR)
@require_safe
def quick_compare(request: HttpRequest) -> HttpResponse:
    """One form for a whole comparison (targets ticked in the URL's `target` stay ticked). Its buttons post to views
    of their own: "Test the connection and add" (quick_add_target), "See the plan" (quick_plan, which keeps
    nothing) and "Launch" (quick_launch); a target typed in before either of the last two is added first."""
    wanted = [v for v in request.GET.getlist("target") if v.isascii() and v.isdigit() and len(v) < 19]
    return _render(request, QuickCompareForm(initial={"targets": wanted}), QuickTargetForm(), None, None, None)


@dataclass
class _Posted:
    """The posted forms, once the target typed in (if any) is added, ticked, and its fields emptied."""

    form: QuickCompareForm
    target_form: QuickTargetForm
    added: Target | None = None
    check: dict[str, Any] | None = None


def _posted(request: HttpRequest, *, adding: bool) -> _Posted | HttpResponse:
    """The posted forms after adding the typed target: when `adding` (the add button), or when one is typed in
    with the plan or the launch. A target refused (its fields, its connection) is the page with its errors."""
    form = QuickCompareForm(request.POST)
    target_form = QuickTargetForm(request.POST)
    if not adding and not target_form.is_filled():
        return _Posted(form, QuickTargetForm())  # left empty: nothing to check, nothing to show as an error
    if not target_form.is_valid():
        form.is_valid()  # its own errors show too, and what was typed stays
        return _render(request, form, target_form, None, None, None)
    try:
        added, check = services.quick_target_create(new=_new_target(target_form.cleaned_data), user=request.user)
    except ValidationError as exc:
        _errors_to(target_form, exc)
        form.is_valid()
        return _render(request, form, target_form, None, None, None)
    # The new target is ticked and its fields emptied, the rest of what was typed kept.
    data = request.POST.copy()
    data.setlist("targets", [*data.getlist("targets"), str(added.pk)])
    for name in target_form.fields:
        data.pop(name, None)
    return _Posted(QuickCompareForm(data), QuickTargetForm(), added, check)


def _back_to_the_page() -> HttpResponse:
    """A button's URL opened rather than posted to (a bookmark, a reload after a while): the page."""
    return HttpResponseRedirect(reverse("quick-compare"))


@role_required(roles.OPERATOR)
def quick_add_target(request: HttpRequest) -> HttpResponse:
    """"Test the connection and add": the typed target saved once its connection works, then ticked."""
    if request.method != "POST":
        return _back_to_the_page()
    posted = _posted(request, adding=True)
    if isinstance(posted, HttpResponse):
        return posted
    return _render(request, posted.form, posted.target_form, posted.added, posted.check, None)


@role_required(roles.OPERATOR)
def quick_plan(request: HttpRequest) -> HttpResponse:
    """"See the plan": campaign_plan's jobs and time for what is ticked, without keeping anything."""
    if request.method != "POST":
        return _back_to_the_page()
    posted = _posted(request, adding=False)
    if isinstance(posted, HttpResponse):
        return posted
    form, plan = posted.form, None
    if form.check_matrix():
        try:
            plan = services.quick_compare_plan(matrix=_matrix(form.cleaned_data, posted.added))
        except ValidationError as exc:
            _errors_to(form, exc)
    return _render(request, form, posted.target_form, posted.added, posted.check, plan)


@role_required(roles.OPERATOR)
def quick_launch(request: HttpRequest) -> HttpResponse:
    """"Launch": the campaign made and run; its run's page."""
    if request.method != "POST":
        return _back_to_the_page()
    posted = _posted(request, adding=False)
    if isinstance(posted, HttpResponse):
        return posted
    form = posted.form
    if form.check_matrix():
        try:
            run = services.quick_compare_launch(matrix=_matrix(form.cleaned_data, posted.added), user=request.user)
        except ValidationError as exc:
            _errors_to(form, exc)
        except services.StateConflict as exc:
            form.add_error(None, f"Not launched: {exc}.")
        else:
            messages.success(request, f"Run #{run.pk} of “{run.campaign.name}” launched.")
            return HttpResponseRedirect(reverse("run-detail", args=[run.pk]))
    return _render(request, form, posted.target_form, posted.added, posted.check, None)


def _render(request: HttpRequest, form: QuickCompareForm, target_form: QuickTargetForm, added: Target | None,
            check: dict[str, Any] | None, plan: services.QuickPlan | None) -> HttpResponse:
    mark_mine(form, request.user, "targets")
    return render(request, "campaigns/quick_compare.html", {
        "form": form, "target_form": target_form, "added": added, "check": check, "plan": plan,
        "plan_jobs": plan.jobs[:PLAN_ROWS_SHOWN] if plan else [],
        "plan_hidden": max(0, plan.job_count - PLAN_ROWS_SHOWN) if plan else 0,
        "default_ports": {str(k): v for k, v in services.DEFAULT_PORTS.items()},
        "repetitions_advice": repetitions_advice(*recent_cv_pct()),
        "target_open": target_form.is_bound or not form.fields["targets"].queryset.exists(),  # type: ignore[attr-defined]
    })
