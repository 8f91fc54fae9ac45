"""The Celery application. Configuration lives in settings as CELERY_* names."""
from __future__ import annotations

import functools
import os
from typing import Any

import redis
from celery import Celery
from kombu.transport import redis as kombu_redis

from benchapp.pulse import ConsumerPulse

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
# Celery runs Django's system checks when a worker or beat starts, and the URL checks import every view and the API
# (30-40 MB in each process, and in each pool process forked from it). Neither serves a view: `manage.py migrate`,
# which `make run`, docker-compose.yml and scripts/setup.sh run before them, checks the same project
# (bench/memory.py). BENCHAPP_CELERY_CHECKS=true runs them again.
if os.environ.get("BENCHAPP_CELERY_CHECKS", "").lower() not in ("1", "true", "yes", "on"):
    os.environ.setdefault("CELERY_SKIP_CHECKS", "1")


class BrokerConnectionClosed(redis.exceptions.ConnectionError):
    """A kombu channel of a broker connection that was already closed tried to open a new one."""


def _connparams_of_a_live_connection(original: Any) -> Any:
    """kombu 5.7.0's Redis channel, asked for a new connection after its broker connection was closed, fails with
    AttributeError("'NoneType' object has no attribute 'hostname'") instead of a connection error.

    How a worker gets there (Redis restarted under a job): on the connection loss, Celery's consumer
    calls Connection.collect(), which closes the transport's channels one after the other and then detaches the
    transport from the connection (transport.client = None). Closing a channel restores its unacknowledged
    messages (with acks_late: the running job's and the prefetched next job's); with Redis down, the first such
    restore raises a ConnectionError, which ends the loop, so the other channels stay open on a transport without
    a client. When one of them is closed later (or its QoS restores at collection), QoS.restore_unacked ->
    conn_or_acquire -> _create_client -> _connparams reads self.connection.client.hostname: AttributeError, which no
    `ignore_errors(connection, ...)` catches (it catches connection errors only), so it reaches the worker's
    blueprint as "CRITICAL Unrecoverable error" and the worker exits once its job is done.

    Raising a connection error instead lets kombu and Celery treat it as what it is: the restore is skipped and the
    consumer reconnects. Nothing is lost that PostgreSQL does not hold: the unacknowledged message stays in Redis's
    unacked set (restored after the visibility timeout) or went with Redis, and the reconciler sends a queued job
    again after BENCHAPP_REDISPATCH_S; the atomic claim makes a duplicate harmless (tests/test_redis_restart.py).
    """
    @functools.wraps(original)
    def connparams(self: Any, asynchronous: bool = False) -> Any:
        if self.connection is None or getattr(self.connection, "client", None) is None:
            raise BrokerConnectionClosed("the broker connection of this channel is closed (Redis restarted?)")
        return original(self, asynchronous=asynchronous)

    connparams.benchapp_guarded = True  # type: ignore[attr-defined]
    return connparams


_original_connparams = getattr(kombu_redis.Channel, "_connparams")  # noqa: B009 (kombu's stubs do not list it)
if not getattr(_original_connparams, "benchapp_guarded", False):
    setattr(kombu_redis.Channel, "_connparams", _connparams_of_a_live_connection(_original_connparams))  # noqa: B010

app = Celery("benchapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The worker's liveness is its consumer's: a step of the consumer pulses while it consumes (benchapp/liveness.py).
app.steps["consumer"].add(ConsumerPulse)
