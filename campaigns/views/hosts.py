"""The client hosts: each one's state and the facts it announced when it joined; an admin revokes one's own
credentials here."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns import roles
from campaigns.models import ClientHost
from campaigns.services import client_access
from campaigns.views.base import role_required


@role_required(roles.VIEWER)
def host_list(request: HttpRequest) -> HttpResponse:
    hosts = list(client_access.hosts_with_access())
    return render(request, "campaigns/host_list.html", {
        "hosts": hosts, "hosts_online": sum(1 for h in hosts if h.is_online()),
        "can_revoke": roles.has_role(request.user, roles.ADMIN),
    })


@role_required(roles.ADMIN)
@require_POST
def host_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """Revokes the host's own credentials (client_access.client_host_revoke): its next heartbeat fails."""
    host = get_object_or_404(ClientHost, pk=pk)
    try:
        client_access.client_host_revoke(hostname=host.hostname, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.message_dict.get("hostname", [str(exc)])))
    else:
        messages.success(request, f"Client host “{host.hostname}” revoked: its database role and Redis user are gone, "
                                  "its next heartbeat fails.")
    return HttpResponseRedirect(reverse("host-list"))
