"""Stores the per-query costs (campaigns.costs) of jobs judged before benchapp stored them."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.execution.jobcosts import jobs_costs_backfill


class Command(BaseCommand):
    help = ("Compute and store the per-query costs of succeeded jobs that have none (judged before costs existed), "
            "from their stored counters and seconds. Safe to run again.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="At most this many jobs.")

    def handle(self, *args: Any, limit: int | None, **options: Any) -> None:
        if limit is not None and limit < 1:
            raise CommandError("--limit must be 1 or more")
        self.stdout.write(f"costs stored for {jobs_costs_backfill(limit=limit)} job(s)")
