"""The dashboard: runs in progress with their progress, recent runs, client hosts, regressions."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from campaigns import monitoring, roles
from campaigns.models import ClientHost, Run, Target
from campaigns.services import runs_progress, runs_with_progress
from campaigns.views.base import role_required

ACTIVE_SHOWN = 20
RECENT_SHOWN = 15
REGRESSIONS_SHOWN = 20


@role_required(roles.VIEWER)
def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    active = list(runs_with_progress().filter(status__in=Run.ACTIVE)
                  .order_by("-created_at")[:ACTIVE_SHOWN])
    finished = list(runs_with_progress().filter(status__in=Run.FINISHED)
                    .order_by("-finished_at", "-id")[:RECENT_SHOWN])
    # Runs in progress head the recent runs whatever their age: a long run started yesterday is still news.
    recent = active + finished
    hosts = list(ClientHost.objects.all())
    regressions = list(monitoring.recent_regressions()[:REGRESSIONS_SHOWN])
    # Nothing measured yet (no run, whatever its state): the page says what to do first.
    first_steps = not recent and not Run.objects.exists()
    progress = runs_progress(recent, now=now)
    return render(request, "campaigns/dashboard.html", {
        "active_runs": list(zip(active, progress[:len(active)], strict=True)),
        "recent_runs": list(zip(recent, progress, strict=True)),
        "hosts": hosts, "hosts_online": sum(1 for h in hosts if h.is_online()),
        "can_edit": roles.can_edit(request.user),
        "regressions": regressions,
        "first_steps": first_steps,
        "target_count": Target.objects.count() if first_steps else None,
    })
