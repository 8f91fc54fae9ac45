"""Server-rendered pages. Views parse, call one service or queryset, and render."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from campaigns.models import ClientHost, Run


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    context = {
        "active_runs": Run.objects.active().select_related("campaign")[:20],
        "recent_runs": Run.objects.finished().select_related("campaign")[:20],
        "hosts": ClientHost.objects.all(),
    }
    return render(request, "campaigns/dashboard.html", context)
