"""Client-host registration: a Celery worker announces its host, consumes the host's own
queue besides the shared one, and keeps a heartbeat while it lives."""
from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)
_stop = threading.Event()


@celeryd_after_setup.connect
def _add_host_queue(sender: Any, instance: Any, **kwargs: Any) -> None:
    from campaigns.services import host_queue

    instance.app.amqp.queues.select_add(host_queue(settings.BENCHAPP_HOSTNAME))


def _beat_forever(interval_s: float) -> None:
    from campaigns.services import host_heartbeat

    while not _stop.wait(interval_s):
        try:
            close_old_connections()
            host_heartbeat(hostname=settings.BENCHAPP_HOSTNAME)
        except Exception:  # a database hiccup must not end the heartbeat for good
            log.exception("heartbeat failed")


def _reconcile_forever(interval_s: float) -> None:
    """jobs_reconcile from the worker's main process, whatever its pool is doing (safe to run anywhere)."""
    from campaigns.services import jobs_reconcile

    while not _stop.wait(interval_s):
        try:
            close_old_connections()
            jobs_reconcile()
        except Exception:  # one failed pass (database restarting, say) must not end the loop
            log.exception("reconcile pass failed")


@worker_ready.connect
def _register_host(**kwargs: Any) -> None:
    from campaigns.services import host_heartbeat, local_host_facts

    facts = local_host_facts()
    host_heartbeat(hostname=settings.BENCHAPP_HOSTNAME, cores=facts["cores"],
                   memory_gb=facts["memory_gb"], version=facts["version"])
    threading.Thread(target=_beat_forever, args=(settings.BENCHAPP_HEARTBEAT_S,), daemon=True,
                     name="benchapp-heartbeat").start()
    if settings.BENCHAPP_RECONCILE_IN_WORKER:
        threading.Thread(target=_reconcile_forever, args=(settings.BENCHAPP_RECONCILE_S,), daemon=True,
                         name="benchapp-reconcile").start()
    log.info("client host %s registered", settings.BENCHAPP_HOSTNAME)


@worker_shutdown.connect
def _stop_heartbeat(**kwargs: Any) -> None:
    """A worker that stops cleanly takes its host offline at once: a job planned in the next minute
    must not count it (a killed worker is noticed by its silence instead)."""
    from django.utils import timezone

    from campaigns.execution import host_mark_offline

    _stop.set()
    try:
        close_old_connections()
        host_mark_offline(hostname=settings.BENCHAPP_HOSTNAME, heartbeat_before=timezone.now())
    except Exception:  # shutting down with the database gone: its silence will say the same later
        log.exception("could not mark host %s offline", settings.BENCHAPP_HOSTNAME)
