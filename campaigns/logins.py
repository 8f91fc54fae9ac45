"""Password logins under attack: whose address a request comes from, and which logins django-axes watches.

The login page and Django's admin login are watched by django-axes (settings: AXES_*): after
AXES_FAILURE_LIMIT failed logins from one address, or for one username, it refuses further attempts for
AXES_COOLOFF_TIME before any password is hashed, and shows registration/locked_out.html with a 429. The
API's token endpoint has its own throttles (campaigns.api.throttling), so axes leaves it alone: one
failure is counted once, and the API answers in JSON.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.contrib.sessions.backends import db
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase
from rest_framework.throttling import BaseThrottle


def client_address(request: HttpRequest) -> str:
    """The client's address as DRF's throttles see it: REMOTE_ADDR, or with REST_FRAMEWORK["NUM_PROXIES"]
    trusted proxies in front, the address the nearest of them saw in X-Forwarded-For. A client-set
    X-Forwarded-For is never believed without proxies configured, so it cannot dodge a limit."""
    return BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads request.META only


def is_api_login(request: HttpRequest, credentials: dict[str, Any] | None = None) -> bool:
    """AXES_WHITELIST_CALLABLE: axes neither counts nor refuses the API's logins (they are throttled)."""
    return request.path.startswith("/api/")


# How often an active session's expiry is pushed back: a save per request would be a database write per page
# and per poll of a watched run; once a minute makes the time-out at most that much early.
SESSION_REFRESH_S = 60
_SAVED_KEY = "_benchapp_seen"


class SessionStore(db.SessionStore):
    """Django's database sessions (SESSION_ENGINE = "campaigns.logins"), each save recording when it was made:
    the moment the session's expiry was last pushed back, for SessionIdleMiddleware."""

    def save(self, must_create: bool = False) -> None:
        self._session[_SAVED_KEY] = int(time.time())  # type: ignore[attr-defined]  # Django's own (not in stubs)
        super().save(must_create)


class SessionIdleMiddleware:
    """Ends a login session after BENCHAPP_SESSION_IDLE_S without a request (SESSION_COOKIE_AGE is set to it): a
    request of a logged-in session saved more than SESSION_REFRESH_S ago saves it again, which pushes its expiry
    back in the database and the cookie. After SessionMiddleware and AuthenticationMiddleware. API token requests
    have no session and are left alone (tokens have their own lifetime, BENCHAPP_TOKEN_TTL_DAYS)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code == 503:  # benchapp's database away (DatabaseAwayMiddleware): nothing to refresh
            return response
        session = getattr(request, "session", None)
        user = getattr(request, "user", None)
        try:
            if session is not None and user is not None and user.is_authenticated and session.session_key:
                saved = session.get(_SAVED_KEY)
                if not isinstance(saved, int) or time.time() - saved >= SESSION_REFRESH_S:
                    session.modified = True  # SessionMiddleware saves it, with a new expiry
        except DatabaseError:
            pass  # the database went away after the view answered: the session is refreshed on a later request
        return response
