"""Seed templates as Campaign rows, and copies of them that can run.

template_load_all() writes the definitions of campaigns/seeds/templates.py to the database (idempotent: it
updates what is there, creates what is missing). template_instantiate() copies a template into a normal
campaign with real targets and a scale factor; the template's scenarios and datasets are shared, not copied.

The thread rule of an instance is Campaign.threads_for_names(), the rule of every campaign: for one target and
one scenario, the pair "<scenario> @ <target's spec label>" when the template has it; else the template's plain
entry for the scenario; else its list for the target's spec label (threads_by_spec); else its default list.
Spec labels match exactly: a target on a spec the document did not test gets the default list (and the
datasets' default size). Where the pairs apply, the instance stores, per scenario, the union of its targets'
lists (a plain scenario entry, which the instance's own form and API can show and edit). That is exact when the targets share one spec, as when two products are compared on one instance class
(seed 001: instantiate once per spec); targets on several specs each run the union of those lists.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from campaigns.models import Campaign, Dataset, Scenario, Target
from campaigns.seeds.matching import PLAIN_DDL_SUFFIX
from campaigns.seeds.specs import spec_get_or_create
from campaigns.seeds.templates import PAIR_SEPARATOR, TEMPLATES, ScenarioDef, TemplateDef
from campaigns.services import (
    campaign_create,
    campaign_update,
    dataset_create,
    dataset_update,
    scenario_create,
    scenario_update,
)
from campaigns.sysbench.cmdline import scenario_fields
from campaigns.sysbench.ddl import partition_clause_split
from campaigns.sysbench.presets import PRESETS

# Preset options that are Scenario fields rather than options.
_FIELD_OPTIONS = ("percentile", "report-interval")


def _scenario_fields(definition: ScenarioDef, dataset: Dataset) -> dict[str, object]:
    preset = PRESETS[definition.preset]
    fields = scenario_fields(test=preset.test, options=preset.options, time_s=definition.time_s)
    options = {**fields.options, **definition.options}
    description = f"{preset.label} (preset {preset.key}, seed {preset.seed}). {definition.description}"
    return {
        "test": fields.test, "dataset": dataset, "options": options, "time_s": definition.time_s,
        "warmup_s": 0, "report_interval_s": fields.report_interval_s or 1, "percentile": float(definition.percentile),
        "table_ddl": definition.table_ddl, "preset": preset.key, "description": description,
    }


def _template_threads_by_scenario(definition: TemplateDef) -> dict[str, list[int]]:
    return {
        f"{scenario.name}{PAIR_SEPARATOR}{label}": list(threads)
        for scenario in definition.scenarios
        for label, threads in scenario.threads_by_spec.items()
    }


def template_load(*, definition: TemplateDef) -> Campaign:
    """Writes one template definition: its specs, datasets, scenarios and the template Campaign row."""
    for label in definition.specs:
        spec_get_or_create(label=label)
    datasets: dict[str, Dataset] = {}
    for ds in definition.datasets:
        fields: dict[str, Any] = {
            "tables": ds.tables, "table_size": ds.table_size, "description": ds.description,
            "sizes_by_spec": {label: [tables, rows] for label, (tables, rows) in ds.sizes_by_spec.items()}}
        found = Dataset.objects.filter(name=ds.name).first()
        datasets[ds.name] = (dataset_create(name=ds.name, **fields) if found is None
                             else dataset_update(dataset=found, **fields))
    scenarios = []
    for sd in definition.scenarios:
        found_scenario = Scenario.objects.filter(name=sd.name).first()
        values = _scenario_fields(sd, datasets[sd.dataset])
        scenarios.append(scenario_create(name=sd.name, **values) if found_scenario is None
                         else scenario_update(scenario=found_scenario, **values))
    campaign_fields: dict[str, Any] = {
        "name": definition.name, "description": definition.description, "threads": list(definition.threads),
        "threads_by_spec": {label: list(threads) for label, threads in definition.threads_by_spec.items()},
        "threads_by_scenario": _template_threads_by_scenario(definition), "clients_min": definition.clients_min,
        "clients_per_threads": definition.clients_per_threads, "scale_factor": 1.0}
    # A template names its specs through its datasets and thread lists; it never has targets.
    campaign = Campaign.objects.filter(is_template=True, template_key=definition.key).first()
    if campaign is None:
        return campaign_create(is_template=True, template_key=definition.key, scenarios=scenarios, **campaign_fields)
    return campaign_update(campaign=campaign, targets=[], scenarios=scenarios, **campaign_fields)


def template_load_all() -> list[Campaign]:
    """Every seed template, created or brought back to its definition; running it twice creates nothing new.

    Code owns these rows: edits made to a template's scenarios or datasets elsewhere are undone here. To
    customise one, instantiate it and change the instance.
    """
    with transaction.atomic():
        return [template_load(definition=definition) for definition in TEMPLATES]


def _instance_name(template: Campaign, scale_factor: float) -> str:
    base = f"{template.name} · scale {scale_factor:g}"
    name, n = base, 1
    while Campaign.objects.filter(name=name).exists():
        n += 1
        name = f"{base} #{n}"
    return name


# A clipped thread list keeping fewer points than this is scaled down instead, so the curve keeps its shape.
MIN_CURVE_POINTS = 3


def threads_fitted(threads: Iterable[int], cap: int | None) -> list[int]:
    """A thread list under a ceiling, for a reduced run on a small server (MariaDB's default max_connections
    is 151, PostgreSQL's 100).

    Counts above `cap` give way to the cap itself, once, and the document's low end stays as it is
    (seed 003's 2 … 3,000 → 2 … 64). When that would leave fewer than MIN_CURVE_POINTS points of a longer list,
    the whole list is scaled by cap / its largest count instead (seed 004's 50 … 1,000 → 3, 6, 13, 32, 64), so a
    curve is still a curve. A single count above the cap becomes the cap.
    """
    values = sorted({int(t) for t in threads})
    if cap is None or not values or values[-1] <= cap:
        return values
    kept = [t for t in values if t <= cap]
    if cap not in kept:
        kept.append(cap)
    if len(kept) >= MIN_CURVE_POINTS or len(kept) >= len(values):
        return kept
    factor = cap / values[-1]
    return sorted({max(1, round(t * factor)) for t in values})


def plain_ddl(ddl: str) -> str:
    """The seed 002 DDL without what only the DDM middleware understands (its partitioning clause, matched by
    the same strict pattern that lets it through the DDL check)."""
    body, clause = partition_clause_split(ddl.strip().removesuffix(";").rstrip())
    return body if clause is not None and clause.kind == "ddm" else ddl


def _scenario_plain_ddl(scenario: Scenario) -> Scenario:
    """A copy of a custom-DDL scenario whose table DDL a plain MySQL/MariaDB server accepts (kept in step)."""
    plain = plain_ddl(scenario.table_ddl)
    if plain == scenario.table_ddl:
        return scenario
    name = f"{scenario.name}{PLAIN_DDL_SUFFIX}"
    fields: dict[str, Any] = {
        model_field.attname: getattr(scenario, model_field.attname) for model_field in Scenario._meta.concrete_fields
        if not model_field.primary_key and model_field.name not in ("name", "created_at")}
    fields["table_ddl"] = plain
    fields["description"] = (f"{scenario.description} Here with the document's table structure minus its DDM "
                             "partitioning clause, which only the middleware understands.")
    found = Scenario.objects.filter(name=name).first()
    return scenario_create(name=name, **fields) if found is None else scenario_update(scenario=found, **fields)


def template_instantiate(
    *, template: Campaign, targets: list[Target], scale_factor: float, name: str | None = None,
    run_time_s: int | None = None, warmup_s: int | None = None, max_threads: int | None = None,
    clients_max: int | None = None, plain_ddl: bool = False, table_rows_min: int | None = None,
    table_rows_max: int | None = None, user: Any = None,
) -> Campaign:
    """A runnable copy of a template: these targets, this scale, the template's scenarios and client rule.

    The instance keeps the template's key (with is_template=False) so that its results can be set beside the
    document's published figures. A reduced run can cap every thread list (`max_threads`, see
    threads_fitted), keep rows per table in a window (`table_rows_min`/`table_rows_max`, see
    Campaign.dataset_size), cap the client count (`clients_max`, e.g. the client hosts online here) and, with
    `plain_ddl`, use the custom table DDL without its middleware-only clauses. Raises ValueError for a
    campaign that is not a template or for no targets, and ValidationError for a bad scale or a name already
    taken.
    """
    if not template.is_template:
        raise ValueError(f"campaign '{template.name}' is not a template")
    if not targets:
        raise ValueError("an instance needs at least one target")
    if max_threads is not None and max_threads < 1:
        raise ValueError("max_threads must be at least 1")
    scenarios = list(template.scenarios.order_by("name"))
    labels = sorted({t.spec.label if t.spec is not None else "" for t in targets})
    paired = {key.split(PAIR_SEPARATOR, 1)[0] for key in template.threads_by_scenario if PAIR_SEPARATOR in key}
    threads_by_scenario = {
        key: list(value) for key, value in template.threads_by_scenario.items() if PAIR_SEPARATOR not in key
    }
    for scenario in scenarios:
        if scenario.name in paired:
            union: set[int] = set()
            for label in labels:
                union.update(template.threads_for_names(spec_label=label or None, scenario_name=scenario.name))
            threads_by_scenario[scenario.name] = sorted(union)
    notes = [f"Instance of the template '{template.name}' at scale {scale_factor:g}."]
    if max_threads is not None:
        fitted = {key: threads_fitted(value, max_threads) for key, value in threads_by_scenario.items()}
        notes.append(f"Thread counts fitted under {max_threads}: counts above it run at it, or a list mostly above "
                     "it is scaled down whole to keep its curve.")
        # The mapping, so that a reader sets each measured count beside the document's.
        ladders = {(tuple(value), tuple(fitted[key])) for key, value in threads_by_scenario.items()
                   if list(value) != fitted[key]}
        if sorted(set(template.threads)) != threads_fitted(template.threads, max_threads):
            ladders.add((tuple(sorted(set(template.threads))), tuple(threads_fitted(template.threads, max_threads))))
        for old, new in sorted(ladders):
            notes.append(f"The document's threads {', '.join(f'{t:,}' for t in old)} run here as "
                         f"{', '.join(f'{t:,}' for t in new)}.")
        threads_by_scenario = fitted
    if table_rows_min is not None or table_rows_max is not None:
        notes.append(f"Rows per table kept between {table_rows_min or 1:,} and "
                     f"{'no limit' if table_rows_max is None else f'{table_rows_max:,}'} after scaling.")
    clients_min = template.clients_min
    if clients_max is not None and clients_max < clients_min:
        clients_min = max(1, clients_max)
        notes.append(f"The document uses {template.clients_min} client machines; this instance uses {clients_min}.")
    if plain_ddl:
        plain = [_scenario_plain_ddl(scenario) for scenario in scenarios]
        for old_scenario, new_scenario in zip(scenarios, plain, strict=True):
            if new_scenario is not old_scenario:
                notes.append(f"'{new_scenario.name}' creates its table with plain DDL (no DDM partitioning clause).")
                if old_scenario.name in threads_by_scenario:
                    threads_by_scenario[new_scenario.name] = threads_by_scenario.pop(old_scenario.name)
        scenarios = plain
    return campaign_create(
        user=user, targets=targets, scenarios=scenarios,
        name=name or _instance_name(template, scale_factor),
        description=" ".join(notes) + f"\n\n{template.description}",
        threads=threads_fitted(template.threads, max_threads),
        threads_by_spec={label: threads_fitted(value, max_threads) for label, value in template.threads_by_spec.items()},
        threads_by_scenario=threads_by_scenario,
        repetitions=template.repetitions,
        clients_min=clients_min,
        clients_per_threads=template.clients_per_threads,
        scale_factor=scale_factor,
        table_rows_min=table_rows_min,
        table_rows_max=table_rows_max,
        run_time_s=run_time_s,
        warmup_override_s=warmup_s,
        keep_data=template.keep_data,
        is_template=False,
        template_key=template.template_key,
        regression_threshold_pct=template.regression_threshold_pct,
        noise_cv_pct=template.noise_cv_pct,
        baseline_last_n=template.baseline_last_n,
    )
