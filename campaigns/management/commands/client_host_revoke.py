"""Revokes one client host's own credentials at once: as the Hosts page's Revoke button does."""
from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.services import client_access


class Command(BaseCommand):
    help = ("Revoke a client host's credentials: its PostgreSQL role can no longer log in and its sessions end, its "
            "Redis user is deleted (its connections closed). Its next heartbeat fails.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("hostname")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            access = client_access.client_host_revoke(hostname=options["hostname"])
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(f"revoked {access.hostname} at {access.revoked_at:%Y-%m-%d %H:%M:%S}")
