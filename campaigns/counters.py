"""Counters of events, kept in the broker's Redis at the moment they happen, for /metrics.

A counter derived from row counts goes down when rows are deleted (a run deleted takes its regression checks along),
which Prometheus reads as a reset and rate() as nonsense. These only ever go up: the worker that checks a run, finds
a regression or sends a notification adds to them (HINCRBYFLOAT on one hash per installation). A Redis that lost its
data starts them at 0 again, which Prometheus handles as the reset it is.
"""
from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

KEY = "benchapp:metrics:{queue}:counters"


def _client() -> Any:
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=1, socket_timeout=2)


def field(name: str, labels: dict[str, str] | None = None) -> str:
    return name + "".join(f"|{k}={v}" for k, v in sorted((labels or {}).items()))


def counter_add(name: str, amount: float = 1.0, **labels: str) -> None:
    """Adds to a counter; never fails its caller (a metric must not fail a regression check)."""
    if amount <= 0:
        return
    try:
        _client().hincrbyfloat(KEY.format(queue=settings.CELERY_TASK_DEFAULT_QUEUE), field(name, labels), amount)
    except Exception as exc:
        log.warning("counter %s not counted: %s", name, type(exc).__name__)


def counters_read(client: Any) -> dict[str, float]:
    raw = client.hgetall(KEY.format(queue=settings.CELERY_TASK_DEFAULT_QUEUE)) or {}
    return {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}
