"""The client hosts: each one's state and the facts it announced when it joined."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from campaigns import roles
from campaigns.models import ClientHost
from campaigns.views.base import role_required


@role_required(roles.VIEWER)
def host_list(request: HttpRequest) -> HttpResponse:
    hosts = list(ClientHost.objects.all())
    return render(request, "campaigns/host_list.html", {
        "hosts": hosts, "hosts_online": sum(1 for h in hosts if h.is_online()),
    })
