"""Exit 0 when the configured field key reads the database's encrypted values: a restore drill's last step."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.keycheck import FieldKeyMismatch, field_key_check


class Command(BaseCommand):
    help = ("Check that BENCHAPP_FIELD_KEY(S) reads the target passwords and webhook URLs stored in the database "
            "(the check every start makes); exit 1 naming the secrets file to restore when it reads none.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            field_key_check()
        except FieldKeyMismatch as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("field key: reads the stored secrets (or there are none)")
