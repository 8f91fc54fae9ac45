"""Drain this host's worker before an upgrade: it finishes its job and takes no new one (campaigns.execution.drain)."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.execution.drain import DrainError, host_drain


class Command(BaseCommand):
    help = ("Ask the worker of this host (BENCHAPP_HOSTNAME, or --hostname) to stop taking jobs: it finishes the one it "
            "runs. With --wait S, wait up to S seconds for it to be idle (exit 1 if it is not): it may then be restarted "
            "without losing a job. A restart undoes the drain.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hostname", default=settings.BENCHAPP_HOSTNAME)
        parser.add_argument("--wait", type=float, default=0.0, dest="wait_s",
                            help="seconds to wait for the running tasks to end (0: do not wait)")

    def handle(self, *args: Any, hostname: str, wait_s: float, **options: Any) -> None:
        if wait_s < 0:
            raise CommandError("--wait must be 0 or more seconds")
        try:
            drained = host_drain(hostname=hostname, wait_s=wait_s)
        except DrainError as exc:
            raise CommandError(str(exc)) from None
        state = "idle" if drained.running == 0 else f"{drained.running} task(s) still running"
        self.stdout.write(f"worker {drained.node}: draining (stopped consuming {', '.join(drained.queues)}); {state}")
