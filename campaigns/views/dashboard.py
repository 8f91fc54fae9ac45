"""The dashboard: runs in progress with their progress, recent runs, client hosts, regressions."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from campaigns import monitoring, roles
from campaigns.models import ClientHost, Run, Target
from campaigns.views.base import role_required
from campaigns.views.runs import progress, runs_with_progress

ACTIVE_SHOWN = 20
RECENT_SHOWN = 15
REGRESSIONS_SHOWN = 20


@role_required(roles.VIEWER)
def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    active = list(runs_with_progress().filter(status__in=Run.ACTIVE)
                  .order_by("-created_at")[:ACTIVE_SHOWN])
    recent = list(runs_with_progress().filter(status__in=Run.FINISHED)
                  .order_by("-finished_at", "-id")[:RECENT_SHOWN])
    hosts = list(ClientHost.objects.all())
    regressions = list(monitoring.recent_regressions()[:REGRESSIONS_SHOWN])
    # Nothing measured yet (no run, whatever its state): the page says what to do first.
    first_steps = not active and not recent and not Run.objects.exists()
    return render(request, "campaigns/dashboard.html", {
        "active_runs": [(run, progress(run, now=now)) for run in active],
        "recent_runs": [(run, progress(run, now=now)) for run in recent],
        "hosts": hosts, "hosts_online": sum(1 for h in hosts if h.is_online()),
        "can_edit": roles.can_edit(request.user),
        "regressions": regressions,
        "first_steps": first_steps,
        "target_count": Target.objects.count() if first_steps else None,
    })
