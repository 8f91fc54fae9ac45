"""Error reports to Sentry (sentry-sdk with its Django and Celery integrations) when SENTRY_DSN is set.

No personal data is sent (send_default_pii=False: no cookies, no user, no client address), and before_send scrubs
what could still carry a secret: values under a secret-sounding key anywhere in the event (a frame's local
`password`, a header `Authorization`, a setting `SECRET_KEY`), credentials inside URLs (redis://:pw@host), the
`password=` / `token` pairs of connection strings and error messages, and the exact values of this installation's
own secrets (SECRET_KEY, field keys, the broker's password, the API tokens a request carried).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

FILTERED = "[Filtered]"
_SECRET_KEY = re.compile(r"pass(word|wd)?|pwd|secret|token|api[_-]?key|authorization|cookie|session|csrf|dsn|"
                         r"webhook|credential|private|field_?key|^key$|signature", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s:]*:[^/@\s]*@", re.IGNORECASE)
# MYSQL_PWD=…, PGPASSWORD=…, password: '…': a quoted value up to its quote, a bare one up to a space, ';' or '&'
# (a password may hold commas).
_PAIRS = re.compile(r"(?P<key>(?:\b|_)(?:[a-z]*password|passwd|pwd|token|secret)\b\s*[=:]\s*)"
                    r"(?:(?P<q>['\"])[^'\"]*|(?P<bare>)[^\s'\";&]+)", re.IGNORECASE)
_TOKEN_HEADER = re.compile(r"\b(Token|Bearer)\s+[A-Za-z0-9._~+/=-]{8,}")


class Scrubber:
    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, FILTERED)
        value = _URL_CREDENTIALS.sub(rf"\g<scheme>{FILTERED}@", value)
        value = _PAIRS.sub(lambda m: f"{m['key']}{m['q'] or ''}{FILTERED}", value)
        return _TOKEN_HEADER.sub(rf"\1 {FILTERED}", value)

    def value(self, value: Any, depth: int = 0) -> Any:
        if depth > 30:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: FILTERED if isinstance(k, str) and _SECRET_KEY.search(k) and v not in (None, "")
                    else self.value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            pairs = [isinstance(v, list | tuple) and len(v) == 2 and isinstance(v[0], str) for v in value]
            if value and all(pairs):  # headers as [name, value] pairs
                return [[k, FILTERED if _SECRET_KEY.search(k) else self.value(v, depth + 1)] for k, v in value]
            return [self.value(v, depth + 1) for v in value]
        return value


def installation_secrets() -> list[str]:
    """This installation's own secrets, whose exact values never leave it."""
    from django.conf import settings

    found = [settings.SECRET_KEY, *settings.FIELD_ENCRYPTION_KEYS, getattr(settings, "BENCHAPP_METRICS_TOKEN", "")]
    for url in (settings.REDIS_URL, settings.BENCHAPP_CACHE_URL, settings.DATABASES["default"].get("PASSWORD", "")):
        match = re.search(r"://[^/@\s]*:([^/@\s]+)@", url or "")
        found.append(match.group(1) if match else url if url and "://" not in url else "")
    found.extend(_target_passwords())
    return [s for s in found if s]


def _target_passwords() -> list[str]:
    """Every target's password (an error's text may quote one however it was mangled, but its exact value at
    least never leaves); none when the database cannot be read while reporting."""
    try:
        from django.apps import apps

        # (By name: the settings import this module, and the layers contract keeps models out of them.)
        target = apps.get_model("campaigns", "Target")
        return [t.get_password() for t in target.objects.exclude(password_encrypted="").only("password_encrypted")]
    except Exception:  # reporting an error must not raise one
        return []


def before_send(event: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    scrubbed: dict[str, Any] = Scrubber(installation_secrets()).value(event)
    return scrubbed


def sentry_init(dsn: str, *, environment: str = "", release: str = "") -> None:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn, environment=environment or None, release=release or None, send_default_pii=False,
        integrations=[DjangoIntegration(), CeleryIntegration()], before_send=before_send,  # type: ignore[arg-type]
        before_send_transaction=before_send,  # type: ignore[arg-type]
        traces_sample_rate=0.0, max_request_body_size="never", include_local_variables=True,
    )
