#!/usr/bin/env python
"""Django's command-line entry point for benchapp."""
from __future__ import annotations

import os
import sys

# Commands that read no stored secret, or that must work whatever the key (the health checks of a running process,
# the checks of `make check`): the others refuse to start when the field key reads none of the database's encrypted
# values (campaigns/keycheck.py: a database restored without its var/secrets.env).
KEYLESS_COMMANDS = {"help", "--help", "-h", "version", "--version", "check", "makemigrations", "collectstatic",
                    "worker_health", "beat_health"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    if len(sys.argv) > 1 and sys.argv[1] in ("worker_health", "beat_health"):
        # Run every few seconds by a health check: Redis read, no Django set-up, no PostgreSQL, no Celery app
        # (benchapp/liveness.py).
        os.environ["BENCHAPP_LIVENESS_ONLY"] = "1"
        from benchapp.liveness import main as liveness_main

        sys.exit(liveness_main(sys.argv[1:]))
    from django.core.management import execute_from_command_line

    if len(sys.argv) > 1 and sys.argv[1] not in KEYLESS_COMMANDS:
        import django

        django.setup()
        from campaigns.keycheck import start_refused_unless_key_reads

        start_refused_unless_key_reads()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
