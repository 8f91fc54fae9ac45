"""Exit 0 while this host's Celery consumer consumes its queues: the worker container's (or unit's) health check.

`manage.py worker_health` runs benchapp/liveness.py without Django's set-up (manage.py); this command is the same
check for call_command."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchapp import liveness


class Command(BaseCommand):
    requires_system_checks: list[str] = []
    help = ("Exit 0 when the Celery consumer of this host (BENCHAPP_HOSTNAME, or --hostname) pulsed while consuming "
            "its queues within --max-age seconds (or drains); else exit 1 saying why. Reads the broker's Redis only.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hostname", default=settings.BENCHAPP_HOSTNAME)
        parser.add_argument("--max-age", type=float, default=max(30.0, 3 * settings.BENCHAPP_HEARTBEAT_S),
                            dest="max_age_s")

    def handle(self, *args: Any, hostname: str, max_age_s: float, **options: Any) -> None:
        ok, line = liveness.worker_verdict(hostname=hostname, max_age_s=max_age_s)
        if not ok:
            raise CommandError(line)
        self.stdout.write(line)
