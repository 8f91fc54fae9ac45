"""Creates the demo targets for the local MariaDB and PostgreSQL, a smoke scenario and a login."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from campaigns.services import demo_load


class Command(BaseCommand):
    help = "Load demo targets (local MariaDB and PostgreSQL), a smoke scenario and an admin login."

    def handle(self, *args: Any, **options: Any) -> None:
        # From BENCHAPP_ADMIN_PASSWORD, else generated for this installation on first start (var/secrets.env).
        password = settings.BENCHAPP_ADMIN_PASSWORD
        user_model = get_user_model()
        user = None
        if not user_model.objects.filter(username="admin").exists():
            user = user_model(username="admin", is_staff=True, is_superuser=True)
            try:  # a generated password passes; one chosen in the environment is held to the same rules as any
                password_validation.validate_password(password, user)
            except ValidationError as exc:
                raise CommandError(f"BENCHAPP_ADMIN_PASSWORD: {' '.join(exc.messages)}") from None
        created = demo_load()
        for line in created:
            self.stdout.write(line)
        if user is not None:
            user.set_password(password)
            user.save()
            self.stdout.write(f"Log in as admin / {password} (shown this once; it is also in var/secrets.env, "
                              "readable by you only; set BENCHAPP_ADMIN_PASSWORD before the first start to choose "
                              "another)")
        else:
            self.stdout.write("Log in as admin with the password you set before.")
