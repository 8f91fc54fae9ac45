"""Re-encrypts every stored secret (target passwords, webhook URLs) with the first of BENCHAPP_FIELD_KEYS."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from campaigns.crypto import DecryptionError, encrypted_with_first_key, rotate_secret
from campaigns.models import Campaign, Target

ENCRYPTED = ((Target, "password_encrypted"), (Campaign, "webhook_url_encrypted"))


class Command(BaseCommand):
    help = ("Re-encrypt every stored target password and webhook URL with the first key of BENCHAPP_FIELD_KEYS "
            "(rows written with an older key, or with the development key benchapp used to ship). Client hosts "
            "hold no field key (the server seals each job's password for them): nothing to give them.")

    def handle(self, *args: Any, **options: Any) -> None:
        done, unreadable = 0, []
        with transaction.atomic():
            for model, field in ENCRYPTED:
                for pk, token in model.objects.exclude(**{field: ""}).values_list("pk", field):
                    if encrypted_with_first_key(token):
                        continue
                    try:
                        model.objects.filter(pk=pk).update(**{field: rotate_secret(token)})
                    except DecryptionError:
                        unreadable.append(f"{model.__name__} #{pk}")
                        continue
                    done += 1
        self.stdout.write(f"{done} secret(s) re-encrypted with the first key.")
        if unreadable:
            raise CommandError(f"{len(unreadable)} secret(s) no configured key can read (left as they were): "
                               + ", ".join(unreadable[:20]) + ". Re-enter them, or add their key to "
                               "BENCHAPP_FIELD_KEYS.")
