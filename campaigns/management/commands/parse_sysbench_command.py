"""Prints a pasted sysbench command line as a scenario, in JSON."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.sysbench.cmdline import CommandError as SysbenchCommandError
from campaigns.sysbench.cmdline import parse_command


class Command(BaseCommand):
    help = "Turn a sysbench command line (0.5 or 1.0 spelling) into a scenario, printed as JSON."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("command_line", nargs="+", help="the command, quoted as one argument")
        parser.add_argument("--test", dest="default_test", default=None,
                            help="the test to assume when the command names none (a command cut off mid-line)")

    def handle(self, *args: Any, **options: Any) -> None:
        text = " ".join(options["command_line"])
        try:
            parsed = parse_command(text, default_test=options["default_test"])
        except SysbenchCommandError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(parsed.to_dict(), indent=2))
