"""Share links on the web: made from the comparison or report page, listed and revoked on /share-links/, and the
shared page itself (/s/<token>/), which needs no login.

The shared page shows only the link's frozen comparison (campaigns.sharing): no navigation, no link into the app,
no query parameter read. The report's environment and method lose every target address, port and endpoint option
and every client host name (campaigns.comparison.redaction). An unknown, expired or revoked token is one plain
404, and every answer is counted against the client address's budget (BENCHAPP_SHARE_RATE_ADDRESS) first.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from campaigns import roles, sharing
from campaigns.comparison import SIGNIFICANCE_NOTE, comparison_layout, report_sections, to_csv
from campaigns.comparison.panel import report_costs
from campaigns.comparison.redaction import report_redacted
from campaigns.logins import client_address
from campaigns.models import ShareLink
from campaigns.ratelimit import RateUnavailable, rate_take
from campaigns.views.base import role_required
from campaigns.views.compare import report_headers, request_selection


class ShareForm(forms.Form):
    shows = forms.ChoiceField(choices=ShareLink.Shows.choices, initial=ShareLink.Shows.COMPARISON)
    expires_in_days = forms.IntegerField(
        label="Expires in (days)", min_value=1, max_value=sharing.MAX_DAYS, initial=sharing.DEFAULT_DAYS,
        help_text=f"1 to {sharing.MAX_DAYS} days; the link stops working then, or when revoked.")


def _list_page(request: HttpRequest, *, form: ShareForm | None = None, created: dict[str, Any] | None = None,
               errors: list[str] | None = None, status: int = 200) -> HttpResponse:
    links = list(sharing.share_links_visible(request.user)[:200])
    rows = [{"link": link, "state": link.state(), "may_revoke": sharing.may_revoke(link=link, user=request.user),
             "open_url": reverse("compare-report" if link.shows == ShareLink.Shows.REPORT else "compare") + "?"
             + sharing.selection_of(link).query_string()} for link in links]
    response = render(request, "campaigns/share_links.html", {
        "rows": rows, "form": form, "created": created, "errors": errors or [], "title": "Share links",
        "max_days": sharing.MAX_DAYS, "all_links": roles.can_admin(request.user)}, status=status)
    if created:
        # The page holds a token that is shown once: never kept by a cache, never sent on as a referrer.
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "no-referrer"
    return response


@role_required(roles.OPERATOR)
def share_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request)


@role_required(roles.OPERATOR)
@require_POST
def share_create(request: HttpRequest) -> HttpResponse:
    """POST /compare/share/?<the comparison's query>: a new link to that comparison (or its report)."""
    form = ShareForm(request.POST)
    compare_form, selection = request_selection(request)
    if selection is None:
        problems = [str(e) for errs in compare_form.errors.values() for e in errs] or ["choose what to compare"]
        return _list_page(request, errors=[f"Nothing to share: {p}" for p in problems], status=400)
    if not form.is_valid():
        return _list_page(request, form=form, status=400)
    try:
        link, token = sharing.share_link_create(user=request.user, selection=selection,
                                                shows=form.cleaned_data["shows"],
                                                expires_in_days=form.cleaned_data["expires_in_days"])
    except ValidationError as exc:
        if hasattr(exc, "error_dict"):
            for name, messages in exc.message_dict.items():
                form.add_error(name if name in form.fields else None, messages)
            return _list_page(request, form=form, status=400)
        return _list_page(request, errors=exc.messages, status=400)
    url = request.build_absolute_uri(reverse("shared", args=[token]))
    return _list_page(request, created={"link": link, "url": url}, status=201)


@role_required(roles.OPERATOR)
@require_POST
def share_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    link = get_object_or_404(sharing.share_links_visible(request.user), pk=pk)
    try:
        sharing.share_link_revoke(link=link, user=request.user)
    except PermissionError as exc:
        raise PermissionDenied(str(exc)) from None
    return _list_page(request)


# ---------------------------------------------------------------- the shared page (no login)


def _private(response: HttpResponse) -> HttpResponse:
    response["X-Robots-Tag"] = "noindex, nofollow, noarchive"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, no-store"
    # Django would log the path of a 404 or 429 with its token; the log filter masks it too (settings.LOGGING).
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def _not_found() -> HttpResponse:
    """One answer for an unknown, expired or revoked token: nothing says which."""
    return _private(HttpResponse("Not found.\n", status=404, content_type="text/plain; charset=utf-8"))


def _open(request: HttpRequest, token: str) -> ShareLink | HttpResponse:
    try:
        wait_s = rate_take(scope="share-address", ident=client_address(request),
                           rate=settings.BENCHAPP_SHARE_RATE_ADDRESS)
    except RateUnavailable:
        return _private(HttpResponse("Shared pages are paused; try again in a minute.\n", status=503,
                                     content_type="text/plain; charset=utf-8"))
    if wait_s is not None:
        response = HttpResponse("Too many requests; try again later.\n", status=429,
                                content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(max(1, round(wait_s)))
        return _private(response)
    link = sharing.share_link_open(token=token)
    return _not_found() if link is None else link


@require_GET
def shared(request: HttpRequest, token: str) -> HttpResponse:
    """The link's comparison or report, read-only; query parameters are ignored (the choice is the link's)."""
    link = _open(request, token)
    if isinstance(link, HttpResponse):
        return link
    selection = sharing.selection_of(link)
    layout = comparison_layout(selection)
    charts = {t["id"]: t["charts"] for t in layout["tables"]}
    context: dict[str, Any] = {
        "layout": layout, "charts": charts, "title": sharing.comparison_title(layout["names"]), "link": link,
        "token": token, "shared": True, "base_template": "campaigns/share_base.html", "query": "",
        "significance_note": SIGNIFICANCE_NOTE, "generated_at": timezone.now(),
    }
    if link.shows == ShareLink.Shows.REPORT:
        report_headers(layout)
        context["report"] = report_redacted(report_sections(layout), selection=selection)
        context["report_costs"] = report_costs(layout)
        return _private(render(request, "campaigns/compare_report.html", context))
    return _private(render(request, "campaigns/shared_compare.html", context))


@require_GET
def shared_csv(request: HttpRequest, token: str) -> HttpResponse:
    """The shared comparison's cells as CSV (the comparison page's export; it names no host, port or client)."""
    link = _open(request, token)
    if isinstance(link, HttpResponse):
        return link
    response = HttpResponse(to_csv(comparison_layout(sharing.selection_of(link))), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="comparison.csv"'
    return _private(response)
