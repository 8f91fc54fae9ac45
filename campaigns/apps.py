from __future__ import annotations

from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from benchapp import requestid
        from campaigns import cache, worker_signals

        # Cached comparisons are outdated by model signals, in every process that writes.
        cache.signals_connect()
        # The worker start-up, heartbeat and reconcile hooks; they only act inside a Celery worker.
        worker_signals.signals_connect()
        # The request id travels from a request into the tasks it starts (a message header).
        requestid.celery_signals_connect()
