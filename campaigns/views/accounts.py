"""Logging in, and password reset only where a reset e-mail can really be sent.

With the console, file, in-memory or dummy e-mail backend a reset "e-mail" is written to the server's log or
nowhere: a reset link in a log lets whoever reads the log take over any account, and a link sent nowhere helps
nobody. So the reset pages exist (and the login page offers them) only with a real backend such as SMTP.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponseBase

NOT_REAL_MAIL = frozenset({
    "django.core.mail.backends.console.EmailBackend", "django.core.mail.backends.filebased.EmailBackend",
    "django.core.mail.backends.locmem.EmailBackend", "django.core.mail.backends.dummy.EmailBackend",
})


def password_reset_offered() -> bool:
    return settings.EMAIL_BACKEND not in NOT_REAL_MAIL


def reset_view(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A reset page that is a 404 unless e-mail really leaves this server."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not password_reset_offered():
            raise Http404("password reset needs a real e-mail backend (EMAIL_BACKEND)")
        return view(request, *args, **kwargs)

    return wrapped


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "password_reset_offered": password_reset_offered()}
