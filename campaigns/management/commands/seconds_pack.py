"""Pack the per-second rows of every attempt that ended (beat does it every minute): campaigns.seconds."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.seconds import seconds_pack_due


class Command(BaseCommand):
    help = ("Pack the per-second rows of attempts that ended (earlier attempts, and jobs closed more than "
            "BENCHAPP_SECONDS_PACK_AFTER_S ago) into one compact row per kind and client, until none is left; "
            "--batch attempts per transaction.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=200)

    def handle(self, *args: Any, batch: int, **options: Any) -> None:
        if batch < 1:
            raise CommandError(f"--batch must be 1 or more, not {batch}")
        total = 0
        while done := seconds_pack_due(limit=batch):
            total += done
        self.stdout.write(f"seconds: {total} attempt{'s' if total != 1 else ''} packed")
