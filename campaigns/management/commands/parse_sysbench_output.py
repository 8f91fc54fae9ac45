"""Prints a sysbench output file parsed, as JSON, storing nothing."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.sysbench.parser import parse_output


class Command(BaseCommand):
    help = "Parse a sysbench output file (1.0 or 0.5 format) and print it as JSON; nothing is stored."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file")
        parser.add_argument("--warmup", type=float, default=0.0, help="seconds of intervals left out of the steady-state summary")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        result = parse_output(text, warmup_s=options["warmup"])
        self.stdout.write(json.dumps(result.to_dict(), indent=2))
