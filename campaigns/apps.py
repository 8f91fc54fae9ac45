from __future__ import annotations

from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the worker start-up and heartbeat hooks; they only act inside a Celery worker.
        from campaigns import worker_signals  # noqa: F401
