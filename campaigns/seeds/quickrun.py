"""A reduced-scale run of seed templates on real targets, in one call: the white papers' table shapes filled with
numbers measured here, in minutes rather than the documents' days.

suite_launch() instantiates each chosen template at a small scale (template_instantiate: shorter measured time,
thread lists capped at what a small server accepts, as many clients as there are client hosts online) and
launches the instances one after the other: each run waits for the previous one (Run.waits_for), so two
templates never measure each other or overwrite each other's tables on a target.

The defaults are what runs seeds 001 and 003 on this project's two local demo targets in under ten minutes on
a 2-core machine; bench/quick_run.py measures that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign, ClientHost, Run, Target
from campaigns.seeds.services import template_instantiate
from campaigns.services import StateConflict, campaign_launch, campaign_plan

# The white papers a quick run covers unless told otherwise (issue "Seed white papers": seeds 001 and 003).
DEFAULT_TEMPLATES = ("seed-001", "seed-003")
# Templates whose scenarios need a MySQL-compatible server (their table DDL is MySQL's).
MYSQL_ONLY_TEMPLATES = frozenset({"seed-002"})


@dataclass(frozen=True)
class QuickRunOptions:
    """How far a quick run reduces the documents' campaigns."""

    scale_factor: float = 0.001
    run_time_s: int = 4
    warmup_s: int = 1
    max_threads: int = 64
    # Rows per table after scaling: at least enough that 64 writing threads do not queue on a few rows'
    # locks, at most what both local servers load in seconds (seed 001's 1 TB table is 4 M rows at 0.001).
    table_rows_min: int | None = 10_000
    table_rows_max: int | None = 1_000_000

    def check(self) -> None:
        """Raises ValidationError naming the field for values a run cannot use."""
        errors: dict[str, str] = {}
        if not 0 < self.scale_factor <= 1:
            errors["scale_factor"] = "must be more than 0 and at most 1"
        if not 1 <= self.run_time_s <= 3600:
            errors["run_time_s"] = "must be between 1 and 3600 seconds"
        if not 0 <= self.warmup_s <= 3600:
            errors["warmup_s"] = "must be between 0 and 3600 seconds"
        if not 1 <= self.max_threads <= 100_000:
            errors["max_threads"] = "must be between 1 and 100000"
        for name in ("table_rows_min", "table_rows_max"):
            value = getattr(self, name)
            if value is not None and not 1 <= value <= 10**12:
                errors[name] = "must be between 1 and 10^12 rows"
        if (self.table_rows_min is not None and self.table_rows_max is not None
                and self.table_rows_min > self.table_rows_max and "table_rows_min" not in errors):
            errors["table_rows_min"] = "must not be more than table_rows_max"
        if errors:
            raise ValidationError(errors)


def _templates(keys: list[str]) -> list[Campaign]:
    if not keys:
        raise ValidationError({"templates": "choose at least one template"})
    found = {c.template_key: c for c in Campaign.objects.filter(is_template=True, template_key__in=keys)}
    missing = [key for key in keys if key not in found]
    if missing:
        raise ValidationError({"templates": f"no template {', '.join(missing)} (run manage.py load_seed_templates)"})
    return [found[key] for key in dict.fromkeys(keys)]


def _targets_for(template: Campaign, targets: list[Target]) -> list[Target]:
    if template.template_key in MYSQL_ONLY_TEMPLATES:
        return [t for t in targets if t.driver == Target.Driver.MYSQL]
    return list(targets)


def suite_preview(*, template_keys: list[str], targets: list[Target], options: QuickRunOptions) -> list[dict[str, Any]]:
    """What suite_launch would run, without writing anything: per template, its targets, jobs and duration."""
    options.check()
    if not targets:
        raise ValidationError({"targets": "choose at least one target"})
    rows = []
    with transaction.atomic():
        for template in _templates(template_keys):
            chosen = _targets_for(template, targets)
            if not chosen:
                rows.append({"template": template.template_key, "name": template.name, "targets": [],
                             "jobs": 0, "estimated_s": 0, "skipped": "needs a MySQL or MariaDB target"})
                continue
            instance = _instance(template, chosen, options, name=f"preview {template.template_key}")
            plan = campaign_plan(campaign=instance)
            rows.append({"template": template.template_key, "name": template.name,
                         "targets": [t.name for t in chosen], "jobs": len(plan["jobs"]),
                         "estimated_s": plan["estimated_duration_s"], "skipped": ""})
        transaction.set_rollback(True)
    return rows


def _instance(template: Campaign, targets: list[Target], options: QuickRunOptions, *, name: str | None = None
              ) -> Campaign:
    online = ClientHost.objects.online().count()
    return template_instantiate(
        template=template, targets=targets, scale_factor=options.scale_factor, name=name,
        run_time_s=options.run_time_s, warmup_s=options.warmup_s, max_threads=options.max_threads,
        clients_max=max(1, online), plain_ddl=True, table_rows_min=options.table_rows_min,
        table_rows_max=options.table_rows_max,
    )


def suite_launch(
    *, template_keys: list[str], targets: list[Target], options: QuickRunOptions, user: Any = None,
    trigger: str = Run.Trigger.MANUAL,
) -> list[Run]:
    """Instantiates each template for these targets and queues the runs one behind the other.

    The first run starts at once unless a run is already going on one of these targets; then it waits for
    that one. A template none of the targets can run (seed 002 without a MySQL target) is left out. Raises
    ValidationError naming the field for bad input; writes nothing unless every run is queued.
    """
    options.check()
    if not targets:
        raise ValidationError({"targets": "choose at least one target"})
    templates = _templates(template_keys)
    stamp = timezone.localtime().strftime("%Y-%m-%d %H:%M")
    runs: list[Run] = []
    with transaction.atomic():
        previous = (Run.objects.active().filter(jobs__target__in=targets).order_by("-created_at").first())
        for template in templates:
            chosen = _targets_for(template, targets)
            if not chosen:
                continue
            name = f"{template.name} · quick run {stamp}"
            n = 1
            while Campaign.objects.filter(name=name).exists():
                n += 1
                name = f"{template.name} · quick run {stamp} #{n}"
            instance = _instance(template, chosen, options, name=name)
            try:
                run = campaign_launch(campaign=instance, user=user, trigger=trigger, after=previous,
                                      label=f"quick run at scale {options.scale_factor:g}")
            except StateConflict as exc:
                raise ValidationError({"templates": f"{template.template_key}: {exc}"}) from None
            runs.append(run)
            previous = run
        if not runs:
            raise ValidationError({"targets": "none of the chosen targets can run these templates"})
    return runs
