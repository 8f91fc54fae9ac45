"""Password logins under attack: whose address a request comes from, and which logins django-axes watches.

The login page and Django's admin login are watched by django-axes (settings: AXES_*): after
AXES_FAILURE_LIMIT failed logins from one address, or for one username, it refuses further attempts for
AXES_COOLOFF_TIME before any password is hashed, and shows registration/locked_out.html with a 429. The
API's token endpoint has its own throttles (campaigns.api.throttling), so axes leaves it alone: one
failure is counted once, and the API answers in JSON.
"""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.throttling import BaseThrottle


def client_address(request: HttpRequest) -> str:
    """The client's address as DRF's throttles see it: REMOTE_ADDR, or with REST_FRAMEWORK["NUM_PROXIES"]
    trusted proxies in front, the address the nearest of them saw in X-Forwarded-For. A client-set
    X-Forwarded-For is never believed without proxies configured, so it cannot dodge a limit."""
    return BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads request.META only


def is_api_login(request: HttpRequest, credentials: dict[str, Any] | None = None) -> bool:
    """AXES_WHITELIST_CALLABLE: axes neither counts nor refuses the API's logins (they are throttled)."""
    return request.path.startswith("/api/")
