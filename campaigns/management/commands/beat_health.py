"""Exit 0 while Celery beat sends its reconcile task: the beat container's (or unit's) health check."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.observability import health


class Command(BaseCommand):
    # Run every few seconds by a health check: no system checks (they import every view).
    requires_system_checks: list[str] = []
    help = ("Exit 0 when beat sent its reconcile task within --max-age seconds (default 300: django-celery-beat "
            "saves the time it sent it at least every 3 minutes); else exit 1 saying why.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-age", type=float, default=300.0, dest="max_age_s")

    def handle(self, *args: Any, max_age_s: float, **options: Any) -> None:
        age_s = health.beat_last_run_age_s()
        if age_s is None:
            raise CommandError(f"beat: {health.BEAT_ENTRY} never sent")
        if age_s > max_age_s:
            raise CommandError(f"beat: {health.BEAT_ENTRY} last sent {age_s:.0f} s ago (more than {max_age_s:g} s)")
        self.stdout.write(f"beat: {health.BEAT_ENTRY} sent {age_s:.1f} s ago")
