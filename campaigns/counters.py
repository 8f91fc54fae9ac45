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


def histogram_observe(name: str, observed: dict[str, float], buckets: tuple[float, ...], *, label: str) -> None:
    """One observation per value of `label` (observed: label value -> seconds) in a histogram kept as counters
    (name_bucket with le, name_count, name_sum), in one round trip; never fails its caller. Counted when it happens,
    so /metrics reads a few fields whatever the number of rows, and the series never go down."""
    if not observed:
        return
    try:
        key = KEY.format(queue=settings.CELERY_TASK_DEFAULT_QUEUE)
        pipe = _client().pipeline(transaction=False)
        for value_label, value in observed.items():
            labels = {label: value_label}
            for bound in buckets:
                if value <= bound:
                    pipe.hincrbyfloat(key, field(f"{name}_bucket", {**labels, "le": str(float(bound))}), 1)
            pipe.hincrbyfloat(key, field(f"{name}_count", labels), 1)
            if value > 0:
                pipe.hincrbyfloat(key, field(f"{name}_sum", labels), value)
        pipe.execute()
    except Exception as exc:
        log.warning("histogram %s not counted: %s", name, type(exc).__name__)


def counters_read(client: Any) -> dict[str, float]:
    raw = client.hgetall(KEY.format(queue=settings.CELERY_TASK_DEFAULT_QUEUE)) or {}
    return {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}
