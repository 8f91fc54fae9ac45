"""django-csp's middleware, with benchapp's one policy built once instead of on every response.

django-csp 4 builds the Content-Security-Policy header from the settings on every response, twice (the policy and
the report-only one, empty here): about a tenth of a cached API answer's time in Python. The header only differs
when a response asks for a nonce or carries a per-view change (django-csp's decorators); those responses go through
django-csp as they are, and every other one gets the header built once from the same settings, by django-csp's
own build_policy. Changing the settings (tests' override_settings) builds it again.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict
from functools import cache
from http import HTTPStatus
from typing import Any

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, PolicyParts
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseServerError, JsonResponse
from django.template import TemplateDoesNotExist, loader
from django.utils.html import escape
from django.views import defaults

from benchapp import requestid

# What makes a response's header its own (set by csp.decorators).
_PER_RESPONSE = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")
_DEBUG_PAGES = (HTTPStatus.INTERNAL_SERVER_ERROR, HTTPStatus.NOT_FOUND)


@cache
def _headers() -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """(header, value, the response attribute exempting it, excluded path prefixes), for the policy and the
    report-only policy, from the settings as they are now."""
    out = []
    for header, report_only, exempt, setting in ((HEADER, False, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
                                                 (HEADER_REPORT_ONLY, True, "_csp_exempt_ro",
                                                  "CONTENT_SECURITY_POLICY_REPORT_ONLY")):
        value = build_policy(**asdict(PolicyParts()), report_only=report_only)
        prefixes = tuple((getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ())
        if value:
            out.append((header, value, exempt, prefixes))
    return tuple(out)


def _settings_changed(*, setting: str, **_: Any) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _headers.cache_clear()


setting_changed.connect(_settings_changed)


class CSPMiddleware(DjangoCSPMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(
                getattr(response, name, None) is not None for name in _PER_RESPONSE):
            return super().process_response(request, response)
        if response.status_code in _DEBUG_PAGES and settings.DEBUG:
            return response
        for header, value, exempt, prefixes in _headers():
            if header not in response and not getattr(response, exempt, False) \
                    and not request.path_info.startswith(prefixes):
                response[header] = value
        # As django-csp does: a nonce asked for after the header is written is an error, not a silent gap.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response


# ---------------------------------------------------------------- benchapp's database away

def database_away_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After, in the API's JSON or as a plain page, built without the database (no template, whose
    context processors would read the session and the user)."""
    from campaigns.api.exceptions import DATABASE_AWAY, RETRY_AFTER_S

    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": DATABASE_AWAY, "code": "database_unavailable"}, status=503)
    else:
        response = HttpResponse(
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>benchapp: back in a moment</title></head>"
            f"<body><h1>Back in a moment</h1><p>{escape(DATABASE_AWAY)}.</p></body></html>", status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseAwayMiddleware:
    """A page or API call that meets benchapp's database away (a restart, a dropped connection) answers 503 with
    Retry-After, never 500 (the API's exception handler does the same for DRF views; handler500 below for what
    fails outside a view, in another middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from campaigns.execution.dbretry import connection_drop, connection_lost

        if not connection_lost(exception):
            return None
        connection_drop()
        return database_away_response(request)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: the 500 page with the request's id (which its log lines carry), but 503 when the error was
    benchapp's database away. Rendered without the request's context: what broke may break a context processor."""
    from campaigns.execution.dbretry import connection_drop, connection_lost

    exc = sys.exc_info()[1]
    if exc is not None and connection_lost(exc):
        connection_drop()
        return database_away_response(request)
    try:
        template = loader.get_template(defaults.ERROR_500_TEMPLATE_NAME)
    except TemplateDoesNotExist:
        return defaults.server_error(request)
    request_id = getattr(request, "request_id", "") or requestid.current()
    return HttpResponseServerError(template.render({"request_id": request_id}))
