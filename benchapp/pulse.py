"""The worker's and beat's side of benchapp/liveness.py: the consumer's pulse and beat's record of what it sent.

Imports no model: benchapp/celery.py loads it before the apps are.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any

from celery import bootsteps

from benchapp import drain
from benchapp.liveness import _settings, beat_key, consumer_key, expected_queues, redis_client

log = logging.getLogger(__name__)

# monotonic time of the consumer's last pulse that found it consuming (read by the database heartbeat's thread).
_last_pulse: float | None = None


def pulse_fresh(max_age_s: float) -> bool:
    """Whether the consumer pulsed (consuming) within max_age_s: the database heartbeat beats only then."""
    return _last_pulse is not None and time.monotonic() - _last_pulse <= max_age_s


def consumer_state(consumer: Any) -> tuple[bool, str]:
    """(consuming every expected queue, why not)."""
    task_consumer = getattr(consumer, "task_consumer", None)
    if task_consumer is None or getattr(consumer, "connection", None) is None:
        return False, "no broker connection"
    missing = [q for q in expected_queues() if not task_consumer.consuming_from(q)]
    return (not missing), (f"not consuming {', '.join(missing)}" if missing else "")


def pulse_write(*, hostname: str, consuming: bool, why: str, draining: bool) -> None:
    interval_s = _settings().BENCHAPP_HEARTBEAT_S
    value = json.dumps({"at": time.time(), "consuming": consuming, "why": why, "draining": draining})
    redis_client().set(consumer_key(hostname), value, ex=max(600, int(interval_s * 60)))


class ConsumerPulse(bootsteps.StartStopStep):
    """A step of Celery's consumer: its timer, in the consumer's own loop, writes the pulse while it consumes."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        self.tref: Any = None
        self.warned = ""
        super().__init__(parent, **kwargs)

    def start(self, parent: Any) -> None:
        # The first pulse after one interval: the consumer starts consuming once its loop runs, after this step.
        interval_s = _settings().BENCHAPP_HEARTBEAT_S
        self.tref = parent.timer.call_repeatedly(interval_s, self.pulse, (parent,), priority=10)

    def stop(self, parent: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    def pulse(self, consumer: Any) -> None:
        global _last_pulse
        consuming, why = consumer_state(consumer)
        draining = drain.is_draining()
        if consuming:
            _last_pulse = time.monotonic()
            self.warned = ""
        elif why != self.warned and not draining and _last_pulse is not None:
            log.warning("worker consumer: %s; its heartbeat stops until it consumes again", why)
            self.warned = why
        try:
            pulse_write(hostname=_settings().BENCHAPP_HOSTNAME, consuming=consuming, why=why, draining=draining)
        except Exception as exc:  # Redis away: the consumer is reconnecting too; the pulse resumes with it
            log.debug("worker pulse not written: %s", type(exc).__name__)


# ---------------------------------------------------------------- beat's side

def beat_sent(sender: Any = None, **kwargs: Any) -> None:
    """before_task_publish, in the beat process: beat just sent a task."""
    try:
        redis_client().set(beat_key(), json.dumps({"at": time.time(), "task": str(sender or "")}), ex=7 * 86400)
    except Exception as exc:  # the publish itself will fail and say so
        log.debug("beat's send not recorded: %s", type(exc).__name__)


# ---------------------------------------------------------------- every publisher: when a message was sent

SENT_AT_HEADER = "benchapp_sent_at"


def stamp_sent_at(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """before_task_publish, in every process: the message carries the time it was sent, so that /metrics can say how
    long the oldest message of each queue has waited (benchapp_celery_queue_oldest_age_seconds)."""
    if headers is not None:
        headers.setdefault(SENT_AT_HEADER, time.time())
