"""Imports sysbench logs made elsewhere as results of a target and scenario."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.models import Scenario, Target
from campaigns.services import ImportRejected, results_import


class Command(BaseCommand):
    help = "Store results from sysbench log files, marked as imported."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("files", nargs="+")
        parser.add_argument("--target", required=True, help="target name or id")
        parser.add_argument("--scenario", required=True, help="scenario name or id")

    def _lookup(self, model: Any, value: str, what: str) -> Any:
        found = model.objects.filter(name=value).first()
        if found is None and value.isdigit():
            found = model.objects.filter(pk=int(value)).first()
        if found is None:
            raise CommandError(f"--{what}: no {what} named or numbered {value!r}")
        return found

    def handle(self, *args: Any, **options: Any) -> None:
        target = self._lookup(Target, options["target"], "target")
        scenario = self._lookup(Scenario, options["scenario"], "scenario")
        files = []
        for name in options["files"]:
            try:
                files.append((name, Path(name).read_bytes().decode("utf-8", errors="replace")))
            except OSError as exc:
                raise CommandError(f"{name}: cannot read ({exc.strerror})") from None
        try:
            run = results_import(files=files, target=target, scenario=scenario)
        except ImportRejected as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self.stdout.write(f"imported {run.jobs.count()} log(s) as run #{run.pk}")
