"""Delete expired sessions and old access records, and keep old seconds coarser, now (beat does it daily):
campaigns.services.retention."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from campaigns.services.retention import retention_sweep


class Command(BaseCommand):
    help = ("Delete expired login sessions and django-axes access records older than BENCHAPP_ACCESS_LOG_KEEP_DAYS, "
            "and keep the seconds of jobs closed more than BENCHAPP_SECONDS_KEEP_DAYS ago at "
            "BENCHAPP_SECONDS_COARSE_S seconds a point; --dry-run only counts them.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", dest="dry_run")

    def handle(self, *args: Any, dry_run: bool, **options: Any) -> None:
        rows = retention_sweep(dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(f"retention: {verb} " + ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in rows.items()))
