"""Request middleware: the request id (first, so every later log line of the request carries it) and the latency
histogram by view."""
from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from benchapp import requestid
from campaigns.observability import metrics

_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


class RequestIdMiddleware:
    """Serves each request under an id: the client's X-Request-ID when sane, else a new one; sent back in the
    response's X-Request-ID (which gunicorn's access log writes) and carried into the tasks it starts."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        value = requestid.clean(request.headers.get(requestid.HEADER))
        request.request_id = value  # type: ignore[attr-defined]
        token = requestid.activate(value)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            requestid.deactivate(token)
        response[requestid.HEADER] = value
        match = getattr(request, "resolver_match", None)
        view = (match.view_name or match.route) if match else "<unmatched>"
        method = request.method if request.method in _METHODS else "other"
        metrics.request_observe(view=view, method=method or "other", status=response.status_code,
                                duration_s=time.perf_counter() - started)
        return response
