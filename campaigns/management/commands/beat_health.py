"""Exit 0 while Celery beat sends its tasks: the beat container's (or unit's) health check.

`manage.py beat_health` runs benchapp/liveness.py without Django's set-up (manage.py); this command is the same
check for call_command."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchapp import liveness


class Command(BaseCommand):
    requires_system_checks: list[str] = []
    help = ("Exit 0 when beat sent a task within --max-age seconds (default 6 reconcile intervals, at least 120 s); "
            "else exit 1 saying why. Reads the broker's Redis only.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-age", type=float, default=max(120.0, 6 * settings.BENCHAPP_RECONCILE_S),
                            dest="max_age_s")

    def handle(self, *args: Any, max_age_s: float, **options: Any) -> None:
        ok, line = liveness.beat_verdict(max_age_s=max_age_s)
        if not ok:
            raise CommandError(line)
        self.stdout.write(line)
