"""Creates the demo targets for the local MariaDB and PostgreSQL, a smoke scenario and a login."""
from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from campaigns.services import demo_load


class Command(BaseCommand):
    help = "Load demo targets (local MariaDB and PostgreSQL), a smoke scenario and an admin login."

    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get("BENCHAPP_ADMIN_PASSWORD", "benchapp-admin")
        created = demo_load()
        for line in created:
            self.stdout.write(line)
        user_model = get_user_model()
        user, made = user_model.objects.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
        if made:
            user.set_password(password)
            user.save()
            self.stdout.write(f"Log in as admin / {password} (set BENCHAPP_ADMIN_PASSWORD to choose another)")
        else:
            self.stdout.write("Log in as admin with the password you set before.")
