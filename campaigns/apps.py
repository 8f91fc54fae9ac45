from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
        from django.db.models.signals import post_migrate

        from benchapp import requestid
        from campaigns import cache, worker_signals
        from campaigns.settings_allowlist import AllowlistConfigError, extras_parse

        # Settings an administrator adds to the variants' allowlist: a malformed entry, or one refused for good,
        # stops the start rather than being ignored.
        try:
            extras_parse(settings.BENCHAPP_VARIANT_SETTINGS_EXTRA)
        except AllowlistConfigError as exc:
            raise ImproperlyConfigured(f"BENCHAPP_VARIANT_SETTINGS_EXTRA: {exc}") from None

        # Cached comparisons are outdated by model signals, in every process that writes.
        cache.signals_connect()
        # The worker start-up, heartbeat and reconcile hooks; they only act inside a Celery worker.
        worker_signals.signals_connect()
        # The request id travels from a request into the tasks it starts (a message header).
        requestid.celery_signals_connect()
        # A client host's grants name the models' columns and tables: after each migrate they are put back as the
        # models now say (nothing on a database that has no client hosts, such as a test database).
        # (Imported when a migrate runs, not here: a client host's worker loads none of the services.)
        post_migrate.connect(_client_access_after_migrate, sender=self, dispatch_uid="campaigns.client_access")


def _client_access_after_migrate(**kwargs: Any) -> None:
    from campaigns.services.client_access import client_access_after_migrate

    client_access_after_migrate(**kwargs)
