"""Liveness and readiness.

Liveness (/healthz) only says the process answers. Readiness (/readyz) checks what a request or a launch needs:
PostgreSQL, the cache's Redis, the broker's Redis and at least one live worker with the `all` role (the one that
consumes the server queue: regression checks, schedules, notifications). Each check answers ok or a short error
naming the kind of failure and the host:port it tried, never a URL (which may carry a password).
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection

from campaigns.models import ClientHost

_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)


def _error(exc: BaseException) -> str:
    """The exception's kind and message, with any URL left out."""
    return f"{type(exc).__name__}: {_URL.sub('<url>', str(exc))}"[:300]


def _redis_ping(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    finally:
        client.close()


def check_postgresql() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_cache() -> None:
    _redis_ping(settings.BENCHAPP_CACHE_URL)


def check_broker() -> None:
    _redis_ping(settings.CELERY_BROKER_URL)


def check_worker() -> None:
    if not ClientHost.objects.online().filter(role="all").exists():
        raise LookupError("no worker with the `all` role has sent a heartbeat in the last "
                          f"{settings.BENCHAPP_HOST_OFFLINE_S:g} s")


READINESS: dict[str, Callable[[], None]] = {
    "postgresql": check_postgresql, "cache_redis": check_cache, "broker_redis": check_broker,
    "worker": check_worker,
}


def readiness() -> tuple[bool, dict[str, Any]]:
    """(ready, the JSON body): every check, ok or its error, and how long it took."""
    checks: dict[str, Any] = {}
    for name, check in READINESS.items():
        started = time.monotonic()
        try:
            if name == "worker" and not checks["postgresql"]["ok"]:
                raise RuntimeError("not checked: PostgreSQL is unavailable")
            check()
            checks[name] = {"ok": True}
        except Exception as exc:
            checks[name] = {"ok": False, "error": _error(exc)}
        checks[name]["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    ready = all(c["ok"] for c in checks.values())
    failing = [name for name, c in checks.items() if not c["ok"]]
    return ready, {"status": "ok" if ready else "unavailable", "failing": failing, "checks": checks}


# The worker's and beat's own checks (manage.py worker_health, beat_health) read the broker's Redis, not PostgreSQL:
# benchapp/liveness.py.
