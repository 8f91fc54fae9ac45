"""Exit 0 while this host's Celery worker sends heartbeats: the worker container's (or unit's) health check."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.observability import health


class Command(BaseCommand):
    # Run every few seconds by a health check: no system checks (they import every view).
    requires_system_checks: list[str] = []
    help = ("Exit 0 when the worker of this host (BENCHAPP_HOSTNAME, or --hostname) sent its heartbeat within "
            "--max-age seconds (default BENCHAPP_HOST_OFFLINE_S); else exit 1 saying why.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hostname", default=settings.BENCHAPP_HOSTNAME)
        parser.add_argument("--max-age", type=float, default=settings.BENCHAPP_HOST_OFFLINE_S, dest="max_age_s")

    def handle(self, *args: Any, hostname: str, max_age_s: float, **options: Any) -> None:
        age_s = health.worker_heartbeat_age_s(hostname)
        if age_s is None:
            raise CommandError(f"worker {hostname}: no heartbeat yet (not joined)")
        if age_s > max_age_s:
            raise CommandError(f"worker {hostname}: last heartbeat {age_s:.0f} s ago (more than {max_age_s:g} s)")
        self.stdout.write(f"worker {hostname}: heartbeat {age_s:.1f} s ago")
