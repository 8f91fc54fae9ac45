"""Loads the seed documents' published result tables (campaigns/fixtures/published/*.csv)."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count

from campaigns.models import PublishedResult
from campaigns.seeds.published import PublishedDataError, load_published


class Command(BaseCommand):
    help = "Load the published result tables of the seed white papers (idempotent; a malformed file stores nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--directory", help="folder of <id>_*.csv files (default: campaigns/fixtures/published)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            counts = load_published(directory=options["directory"])
        except (PublishedDataError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from None
        write_counts(self.stdout.write, counts)


def write_counts(write: Any, counts: dict[str, int]) -> None:
    """Rows per document, then per table as stored."""
    per_table = (PublishedResult.objects.filter(document__in=counts).order_by()
                 .values("document", "table_ref").annotate(rows=Count("id")).order_by("document", "table_ref"))
    tables: dict[str, list[str]] = {}
    for entry in per_table:
        tables.setdefault(entry["document"], []).append(f"    {entry['rows']:4d}  {entry['table_ref']}")
    for document, rows in counts.items():
        write(f"document {document}: {rows} published rows")
        for line in tables.get(document, []):
            write(line)
