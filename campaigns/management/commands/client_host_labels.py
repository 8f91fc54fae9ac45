"""Gives a client host (with credentials of its own) its labels: the server's to give, never the host's."""
from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.services import client_access


class Command(BaseCommand):
    help = ("Set the labels of a client host that was issued credentials of its own (manage.py client_host_issue): "
            "a campaign that picks its hosts by label sends them its jobs, so a host cannot choose its own.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("hostname", help="the client host's name")
        parser.add_argument("labels", help="its labels, comma-separated (\"\" for none)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            labels = client_access.client_host_labels_set(hostname=options["hostname"],
                                                          labels=options["labels"].split(","))
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(f"client host {options['hostname']}: labels {', '.join(labels) or '(none)'}")
