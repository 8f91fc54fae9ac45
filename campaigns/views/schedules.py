"""Schedules of a campaign: add, enable or pause, delete (Nightly campaigns)."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns import monitoring, roles
from campaigns.forms import ScheduleForm
from campaigns.models import Campaign, CampaignSchedule
from campaigns.views.base import role_required
from campaigns.views.campaigns import campaign_page


@role_required(roles.OPERATOR)
@require_POST
def schedule_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Adds a schedule; a refused one re-renders the campaign's page with the errors at the fields, as typed."""
    campaign = get_object_or_404(Campaign, pk=pk)
    form = ScheduleForm(request.POST, instance=CampaignSchedule(campaign=campaign))
    if form.is_valid():
        try:
            schedule = monitoring.schedule_save(schedule=form.instance, user=request.user)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            # Said inside the schedules section, where the page lands (#schedules), not at the top of the page.
            return HttpResponseRedirect(reverse("campaigns-detail", args=[campaign.pk])
                                        + f"?schedule_saved={schedule.pk}#schedules")
    return campaign_page(request, campaign.pk, schedule_form=form)


@role_required(roles.OPERATOR)
@require_POST
def schedule_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = get_object_or_404(CampaignSchedule, pk=pk)
    schedule.enabled = not schedule.enabled
    monitoring.schedule_save(schedule=schedule, user=request.user)  # its owner or an admin (else a 403)
    messages.success(request, f"Schedule {'enabled' if schedule.enabled else 'paused'}.")
    return HttpResponseRedirect(reverse("campaigns-detail", args=[schedule.campaign_id]) + "#schedules")


@role_required(roles.ADMIN)
@require_POST
def schedule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = get_object_or_404(CampaignSchedule, pk=pk)
    campaign_id = schedule.campaign_id
    monitoring.schedule_delete(schedule=schedule, user=request.user)
    messages.success(request, "Schedule deleted.")
    return HttpResponseRedirect(reverse("campaigns-detail", args=[campaign_id]) + "#schedules")
