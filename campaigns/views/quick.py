"""Quick compare: tick targets (or add one), tick sysbench tests, give a thread ladder, see the plan, launch."""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from campaigns import roles, services
from campaigns.comparison.advice import recent_cv_pct, repetitions_advice
from campaigns.forms import QuickCompareForm, QuickTargetForm, mark_mine
from campaigns.models import Target
from campaigns.views.base import role_required

PLAN_ROWS_SHOWN = 100
ACTIONS = ("add_target", "plan", "launch")


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


def _matrix(data: dict[str, Any], extra: list[Target]) -> services.QuickMatrix:
    targets = list(data["targets"])
    targets += [t for t in extra if t not in targets]
    return services.QuickMatrix(targets=targets, tests=list(data["tests"]), tables=data["tables"],
                       table_size=data["table_size"], threads=data["threads"], time_s=data["time_s"],
                       repetitions=data["repetitions"], name=data.get("name") or "")


@role_required(roles.OPERATOR)
def quick_compare(request: HttpRequest) -> HttpResponse:
    """One form for a whole comparison. Adding a target tests its connection before saving it; "See the plan"
    shows campaign_plan's jobs and time without keeping anything; "Launch" makes the campaign and runs it."""
    added: Target | None = None
    check: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    if request.method != "POST":
        wanted = [v for v in request.GET.getlist("target") if v.isascii() and v.isdigit() and len(v) < 19]
        form = QuickCompareForm(initial={"targets": wanted})
        return _render(request, form, QuickTargetForm(), None, None, None)

    action = request.POST.get("action", "plan")
    if action not in ACTIONS:
        action = "plan"
    form = QuickCompareForm(request.POST)
    target_form = QuickTargetForm(request.POST)
    if not target_form.is_filled() and action != "add_target":
        target_form = QuickTargetForm()  # left empty: nothing to check, nothing to show as an error
    else:
        if not target_form.is_valid():
            form.is_valid()  # its own errors show too, and what was typed stays
            return _render(request, form, target_form, None, None, None)
        try:
            added, check = services.quick_target_create(new=_new_target(target_form.cleaned_data),
                                                        user=request.user)
        except ValidationError as exc:
            _errors_to(target_form, exc)
            form.is_valid()
            return _render(request, form, target_form, None, None, None)
        # The new target is ticked and its fields emptied, the rest of what was typed kept.
        data = request.POST.copy()
        data.setlist("targets", [*data.getlist("targets"), str(added.pk)])
        for name in target_form.fields:
            data.pop(name, None)
        form = QuickCompareForm(data)
        target_form = QuickTargetForm()
        if action == "add_target":
            return _render(request, form, target_form, added, check, None)

    if not form.check_matrix():
        return _render(request, form, target_form, added, check, None)
    matrix = _matrix(form.cleaned_data, [added] if added else [])
    try:
        if action == "launch":
            run = services.quick_compare_launch(matrix=matrix, user=request.user)
            messages.success(request, f"Run #{run.pk} of “{run.campaign.name}” launched.")
            return HttpResponseRedirect(reverse("run-detail", args=[run.pk]))
        plan = services.quick_compare_plan(matrix=matrix)
        plan["matrix"] = {"targets": len(matrix.targets), "tests": len(matrix.tests), "threads": len(matrix.threads),
                          "repetitions": matrix.repetitions, "time_s": matrix.time_s,
                          "overhead_s": services.JOB_OVERHEAD_S}
    except ValidationError as exc:
        _errors_to(form, exc)
    except services.StateConflict as exc:
        form.add_error(None, f"Not launched: {exc}.")
    return _render(request, form, target_form, added, check, plan)


def _render(request: HttpRequest, form: QuickCompareForm, target_form: QuickTargetForm, added: Target | None,
            check: dict[str, Any] | None, plan: dict[str, Any] | None) -> HttpResponse:
    mark_mine(form, request.user, "targets")
    return render(request, "campaigns/quick_compare.html", {
        "form": form, "target_form": target_form, "added": added, "check": check, "plan": plan,
        "plan_jobs": plan["jobs"][:PLAN_ROWS_SHOWN] if plan else [],
        "plan_hidden": max(0, plan["job_count"] - PLAN_ROWS_SHOWN) if plan else 0,
        "default_ports": {str(k): v for k, v in services.DEFAULT_PORTS.items()},
        "repetitions_advice": repetitions_advice(*recent_cv_pct()),
        "target_open": target_form.is_bound or not form.fields["targets"].queryset.exists(),  # type: ignore[attr-defined]
    })
