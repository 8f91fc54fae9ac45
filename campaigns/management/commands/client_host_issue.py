"""Issues one client host's own credentials and prints its env file for scripts/join-client.sh."""
from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.services import client_access


class Command(BaseCommand):
    help = ("Issue a client host its own PostgreSQL role (row-level security: its own jobs only) and Redis ACL user "
            "(the broker's queues only), and write its env file (0600) for scripts/join-client.sh --env-file. "
            "Issued again, the host gets new passwords. --install-only puts the client group's grants and policies "
            "in place and issues nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("hostname", nargs="?", help="the client host's name (BENCHAPP_HOSTNAME there)")
        parser.add_argument("--output", help="where to write its env file (default: var/clients/HOSTNAME.env)")
        parser.add_argument("--server-address", help="the address the host reaches this machine by")
        parser.add_argument("--pg-port", type=int, help="PostgreSQL's port as the host reaches it")
        parser.add_argument("--redis-port", type=int, help="Redis's port as the host reaches it")
        parser.add_argument("--labels", help="its labels, comma-separated (a campaign may pick hosts by label): given "
                                             "here, never by the host; left out, those it was issued stay")
        parser.add_argument("--install-only", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["install_only"]:
            client_access.client_access_install()
            self.stdout.write("client host access installed (group role, grants, row-level security)")
            return
        if not options["hostname"]:
            raise CommandError("hostname: required (or --install-only)")
        try:
            issued = client_access.client_host_issue(
                hostname=options["hostname"], server_address=options["server_address"], pg_port=options["pg_port"],
                redis_port=options["redis_port"],
                labels=None if options["labels"] is None else options["labels"].split(","))
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        path = options["output"] or os.path.join("var", "clients", f"{issued.hostname}.env")
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(issued.env_text())
        os.chmod(path, 0o600)
        # The passwords go to the file only, never to the terminal or a log.
        self.stdout.write(f"issued {issued.hostname}: PostgreSQL role {issued.db_role}, Redis user "
                          f"{issued.redis_user}; wrote {path} (0600): copy it to the host, give it to "
                          "scripts/join-client.sh --env-file there, then delete the copy")
