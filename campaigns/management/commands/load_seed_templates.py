"""Loads the seed campaign templates and the seed documents' published results (run by `make run`)."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.management.commands.load_published_results import write_counts
from campaigns.seeds.published import PublishedDataError, load_published
from campaigns.seeds.services import template_load_all


class Command(BaseCommand):
    help = "Create or refresh the six seed campaign templates, then load the published result tables."

    def handle(self, *args: Any, **options: Any) -> None:
        for template in template_load_all():
            self.stdout.write(f"template {template.template_key}: {template.name} "
                              f"({template.scenarios.count()} scenarios)")
        try:
            counts = load_published()
        except (PublishedDataError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from None
        write_counts(self.stdout.write, counts)
