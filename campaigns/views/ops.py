"""What an operator's tools read: /healthz, /readyz (JSON, no login, nothing secret) and /metrics (Prometheus text,
for the addresses in BENCHAPP_METRICS_ALLOW, never through a proxy, or a request with the bearer token
BENCHAPP_METRICS_TOKEN)."""
from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from campaigns.execution.dbretry import connection_drop, connection_lost
from campaigns.logins import client_address
from campaigns.observability import health, metrics


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    ready, body = health.readiness()
    return JsonResponse(body, status=200 if ready else 503)


# Headers a reverse proxy adds: a request that carries one came through a proxy (or pretends to).
PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def metrics_allowed(request: HttpRequest) -> bool:
    """The bearer token, from anywhere; else an address of BENCHAPP_METRICS_ALLOW, but never through a proxy:
    behind one every request comes from the proxy's own (loopback) address, so a proxied request needs the token,
    whatever BENCHAPP_NUM_PROXIES says."""
    token = settings.BENCHAPP_METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return True
    if any(request.META.get(header) for header in PROXY_HEADERS):
        return False
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(address in network for network in settings.BENCHAPP_METRICS_ALLOW)


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        response = JsonResponse({"detail": "metrics are served to the addresses in BENCHAPP_METRICS_ALLOW (not "
                                           "through a proxy) or to a request with the bearer token "
                                           "BENCHAPP_METRICS_TOKEN"}, status=403)
        return response
    try:
        body = metrics.scrape()
    except Exception as exc:
        if not connection_lost(exc):
            raise
        # PostgreSQL is away: a 503 in the exposition format (benchapp_database_up 0), not the HTML error page.
        connection_drop()
        return HttpResponse(metrics.scrape_without_database(), status=503, content_type=metrics.CONTENT_TYPE)
    return HttpResponse(body, content_type=metrics.CONTENT_TYPE)
