"""The user's own API tokens (create, name, list, revoke; a new one shown once) and the API's getting-started page."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns import roles, services
from campaigns.forms import ApiTokenForm
from campaigns.models import ApiToken
from campaigns.views.base import role_required


def _tokens_page(request: HttpRequest, form: ApiTokenForm, new_key: str = "", new_name: str = "") -> HttpResponse:
    owner: Any = request.user  # role_required: a logged-in user
    tokens = list(ApiToken.objects.filter(user=owner).order_by("-created"))
    response = render(request, "campaigns/api_tokens.html", {
        "form": form, "tokens": tokens, "new_key": new_key, "new_name": new_name,
        "ttl_days": settings.BENCHAPP_TOKEN_TTL_DAYS, "api_base": request.build_absolute_uri("/api/v1/"),
    })
    # A page that shows a token once is never kept by a browser or a proxy.
    response["Cache-Control"] = "no-store"
    return response


@role_required(roles.VIEWER, own_account=True)
def api_tokens(request: HttpRequest) -> HttpResponse:
    """GET: the user's tokens. POST: a new named token, shown on the answer and never again."""
    if request.method != "POST":
        return _tokens_page(request, ApiTokenForm())
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return _tokens_page(request, form)
    key = services.token_issue(user=request.user, name=form.cleaned_data["name"])
    return _tokens_page(request, ApiTokenForm(), new_key=key, new_name=form.cleaned_data["name"])


@role_required(roles.VIEWER, own_account=True)
@require_POST
def api_token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """Revokes one of the user's own tokens (another user's is a 404, as if it did not exist)."""
    owner: Any = request.user
    token = get_object_or_404(ApiToken, pk=pk, user=owner)
    services.token_revoke(token=token)
    messages.success(request, f"Token “{token.name or token.prefix + '…'}” revoked: it no longer works.")
    return HttpResponseRedirect(reverse("api-tokens"))


@role_required(roles.VIEWER)
def api_quickstart(request: HttpRequest) -> HttpResponse:
    """Getting started with the API: a token, then a few calls with curl, linked from the API docs and the menu."""
    return render(request, "campaigns/api_quickstart.html", {
        "api_base": request.build_absolute_uri("/api/v1/"), "docs_url": "/api/docs/",
    })
