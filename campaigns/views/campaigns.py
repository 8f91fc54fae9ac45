"""Campaigns: build the matrix, see the plan (jobs, commands, estimates) and launch it."""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns import monitoring, roles, services
from campaigns.comparison.published import published_links, template_keys
from campaigns.filtersets import CampaignFilterSet
from campaigns.forms import CampaignForm, ScheduleForm, form_errors_add, mark_mine
from campaigns.models import Campaign, Run, Scenario, ScheduleFiring, Target
from campaigns.statistics import smallest_change_caught
from campaigns.sysbench.threads import ThreadListError, format_thread_list, parse_thread_list
from campaigns.views.base import Catalogue, Column, role_required

PLAN_ROWS_SHOWN = 300

CAMPAIGNS = Catalogue(
    key="campaigns", singular="campaign", plural="campaigns", model=Campaign, form_class=CampaignForm,
    filterset_class=CampaignFilterSet, detail=True,
    columns=[Column("Name", lambda c: c.name), Column("Targets", lambda c: c.target_count, numeric=True),
             Column("Scenarios", lambda c: c.scenario_count, numeric=True),
             Column("Threads", lambda c: ", ".join(str(t) for t in c.threads)),
             Column("Repetitions", lambda c: c.repetitions, numeric=True),
             Column("Scale", lambda c: f"{c.scale_factor:g}", numeric=True),
             Column("Runs", lambda c: c.run_count, numeric=True),
             Column("Last run", lambda c: c.last_run_at or "never")],
    queryset=lambda: Campaign.objects.annotate(
        target_count=Count("targets", distinct=True), scenario_count=Count("scenarios", distinct=True),
        run_count=Count("runs", distinct=True), last_run_at=Max("runs__created_at"),
    ).order_by("-created_at"),
)


@role_required(roles.VIEWER)
def campaign_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The campaign's matrix and its plan: every job, its exact commands, time and size, before launching."""
    return campaign_page(request, pk)


def campaign_page(request: HttpRequest, pk: int, *, schedule_form: ScheduleForm | None = None,
                  status: int = 200) -> HttpResponse:
    """The campaign's page; `schedule_form`, a bound schedule form refused, shows its errors at its fields."""
    campaign = get_object_or_404(
        Campaign.objects.prefetch_related(
            Prefetch("targets", queryset=Target.objects.select_related("product", "spec")),
            Prefetch("scenarios", queryset=Scenario.objects.select_related("dataset")),
        ), pk=pk,
    )
    plan = services.campaign_plan(campaign=campaign)
    runs = Run.objects.filter(campaign=campaign).with_verdicts().order_by("-created_at")[:10]
    schedules = list(campaign.schedules.all())
    firings = {f.schedule_id: f for f in ScheduleFiring.objects.filter(schedule__campaign=campaign)
               .order_by("schedule_id", "-fired_at").distinct("schedule_id")}
    active = any(not run.is_finished() for run in runs)
    cells = monitoring.history_cells(campaign=campaign)
    selected = _selected_cell(request, cells)
    history = None
    if selected is not None:
        history = {"target_id": selected["target_id"], "scenario_id": selected["scenario_id"],
                   "threads": selected["threads"], "variant": selected["variant"],
                   **monitoring.cell_history(campaign=campaign, target_id=selected["target_id"],
                                             scenario_id=selected["scenario_id"], threads=selected["threads"],
                                             variant=selected["variant"])}
    saved = request.GET.get("schedule_saved", "")
    pinned = campaign.baseline_run
    return render(request, "campaigns/campaign_detail.html", {
        "baseline_warning": monitoring.baseline_trust_warning(pinned) if pinned is not None else "",
        "threshold_warning": threshold_warning(campaign, monitoring.campaign_noise(campaign=campaign)),
        "schedule_saved": next((s for s in schedules if str(s.pk) == saved), None),
        "campaign": campaign, "plan": plan, "plan_jobs": plan["jobs"][:PLAN_ROWS_SHOWN],
        "plan_hidden": max(0, plan["job_count"] - PLAN_ROWS_SHOWN), "runs": runs, "active": active,
        "schedules": [(s, firings.get(s.pk)) for s in schedules], "schedule_form": schedule_form or ScheduleForm(),
        # In each schedule's own time zone, as its cron expression is read.
        "next_firings": {s.pk: f"{n:%Y-%m-%d %H:%M}" for s in schedules
                         if (n := monitoring.schedule_next_firing(s)) is not None},
        "can_edit": roles.can_edit(request.user), "can_admin": roles.can_admin(request.user),
        "history_cells": cells, "history_selected": selected, "history": history,
        "history_api_url": reverse("api:regression-history"),
        # A campaign made from a seed template: its results beside the document's published figures.
        "published_links": ([] if campaign.is_template else
                            published_links(template_keys(campaign.template_key), f"campaign={campaign.pk}")),
    }, status=status)


def _selected_cell(request: HttpRequest, cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The cell named by ?target=&scenario=&threads=&variant= (a link from a run's regression), else the first one."""
    wanted: list[Any] = []
    for name in ("target", "scenario", "threads"):
        value = request.GET.get(name, "")
        wanted.append(int(value) if value.isascii() and value.isdigit() and len(value) < 19 else None)
    wanted.append(request.GET.get("variant", ""))
    for cell in cells:
        if [cell["target_id"], cell["scenario_id"], cell["threads"], cell["variant"]] == wanted:
            return cell
    return cells[0] if cells else None


@role_required(roles.OPERATOR)
def campaign_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk) if pk else None
    if request.method == "POST":
        form = CampaignForm(request.POST, instance=campaign)
        saved = None
        if form.is_valid():
            try:
                saved = form.save_by(user=request.user)
            except ValidationError as exc:
                form_errors_add(form, exc)
        if saved is not None:
            messages.success(request, f"Campaign “{saved.name}” saved. Check its plan, then launch it.")
            return HttpResponseRedirect(reverse("campaigns-detail", args=[saved.pk]))
    else:
        initial: dict[str, Any] = {"threads": "1, 2"} if campaign is None else {}
        if campaign is None:
            initial.update(_initial_from_url(request))
        form = CampaignForm(instance=campaign, initial=initial)
    mark_mine(form, request.user, "targets", "scenarios")
    advice = noise_advice(monitoring.campaign_noise(campaign=campaign)) if campaign is not None else NO_NOISE_YET
    return render(request, "campaigns/campaign_form.html", {"form": form, "campaign": campaign,
                                                              "catalogue": CAMPAIGNS, "noise_advice": advice})


def threshold_warning(campaign: Campaign, noise: dict[str, Any]) -> str:
    """A warning beside the schedules when the campaign's regression threshold is below the smallest change its
    measured noise lets a run catch; "" when it is not, or before the noise is known."""
    if noise["cv_within_pct"] is None:
        return ""
    caught = smallest_change_caught(noise["cv_within_pct"], between_cv_pct=noise["between_only_pct"] or 0.0,
                                    repetitions=campaign.repetitions, baseline_runs=campaign.baseline_last_n)
    threshold = campaign.regression_threshold_pct
    if caught is not None and threshold >= caught:
        return ""
    noise_text = f"one repetition's QPS varies by {noise['cv_within_pct']:.1f}% (CV)"
    if noise["cv_between_pct"] is not None:
        noise_text += f" and a run's mean by {noise['cv_between_pct']:.1f}% from run to run"
    reach = (f"only changes of about {caught}% or more are caught 9 times in 10" if caught is not None
             else "no change under 200% is caught 9 times in 10")
    return (f"The regression threshold ({threshold:g}%) is below what this campaign's noise can detect: over its "
            f"last {noise['runs']} run{'s' if noise['runs'] != 1 else ''}, {noise_text}; with "
            f"{campaign.repetitions} repetition{'s' if campaign.repetitions != 1 else ''}, {reach}. Smaller "
            "slowdowns will mostly pass unseen: add repetitions (Edit campaign says how many), lengthen the jobs, "
            "or raise the threshold.")


def _initial_from_url(request: HttpRequest) -> dict[str, Any]:
    """A new campaign started from a scenario's "Run it on…": its scenarios and the pasted thread counts, from the
    URL (?scenarios=3&threads=8); anything that is not ids or a thread list is ignored."""
    initial: dict[str, Any] = {}
    ids = [int(v) for v in request.GET.getlist("scenarios")[:50] if v.isascii() and v.isdigit() and len(v) < 19]
    if ids:
        initial["scenarios"] = list(Scenario.objects.filter(pk__in=ids).values_list("pk", flat=True))
    threads = request.GET.get("threads", "")
    if threads and len(threads) <= 500:
        try:
            initial["threads"] = format_thread_list(parse_thread_list(threads).values)
        except ThreadListError:
            pass
    return initial


NO_NOISE_YET = ("Noise not measured yet: once a run has measured cells 2 or more times, this form says how many "
                "repetitions let the regression check catch a 15% change 9 times in 10.")


def noise_advice(noise: dict[str, Any]) -> str:
    """The campaign form's recommendation of repetitions, from monitoring.campaign_noise."""
    if noise["cv_within_pct"] is None:
        return NO_NOISE_YET
    parts = [f"Measured over the last {noise['runs']} run{'s' if noise['runs'] != 1 else ''}: one repetition's QPS "
             f"varies by {noise['cv_within_pct']:.1f}% (CV)"]
    if noise["cv_between_pct"] is not None:
        parts.append(f", a run's mean by {noise['cv_between_pct']:.1f}% from run to run")
    advice = []
    for change, needed in noise["recommended"].items():
        advice.append(f"a {change}% change needs {needed} repetition{'s' if needed != 1 else ''}" if needed else
                      f"no number of repetitions catches a {change}% change (the run-to-run noise alone is too "
                      "large: longer jobs, more baseline runs or a quieter machine)")
    return (f"{''.join(parts)}. To be caught 9 times in 10 against the last {noise['baseline_runs']} runs, "
            f"{'; '.join(advice)}. This campaign uses {noise['repetitions']}.")


@role_required(roles.OPERATOR)
@require_POST
def campaign_unpin_baseline(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    was = campaign.baseline_run_id
    monitoring.baseline_pin(campaign=campaign, run=None)
    if was:
        messages.success(request, f"Run #{was} is no longer the baseline: runs are judged against the last "
                                  f"{campaign.baseline_last_n} scheduled runs again.")
    return HttpResponseRedirect(reverse("campaigns-detail", args=[campaign.pk]) + "#history")


@role_required(roles.OPERATOR)
@require_POST
def campaign_launch(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    try:
        run = services.campaign_launch(campaign=campaign, user=request.user, trigger=Run.Trigger.MANUAL,
                                       label=request.POST.get("label", "")[:200])
    except services.StateConflict as exc:
        messages.error(request, f"Not launched: {exc}.")
        return HttpResponseRedirect(reverse("campaigns-detail", args=[campaign.pk]))
    messages.success(request, f"Run #{run.pk} launched.")
    return HttpResponseRedirect(reverse("run-detail", args=[run.pk]))
