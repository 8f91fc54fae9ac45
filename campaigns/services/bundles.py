"""Portable results: a run as one JSON bundle, and a bundle imported into another benchapp.

A lab install and a central one exchange runs this way: the bundle carries everything a run's pages and
comparisons show (the campaign's matrix, targets without passwords, scenarios and datasets, every job with its
result, clients, per-second samples, host and server metrics, round trips, verdicts and snapshots), and nothing
secret: target passwords and webhook URLs are never exported, and commands and outputs are stored with `***`
already. The format is versioned (BUNDLE_VERSION) and described in docs/bundle.md.

Rows are written field by field from each model's own concrete fields (minus the ones listed as local below),
so a field added to a model travels without a change here; an importer ignores fields it does not know (a
newer bundle) and leaves out the ones a bundle lacks (an older one) to their defaults.
"""
from __future__ import annotations

import datetime as dt
import socket
from collections import defaultdict
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.models import (
    Campaign,
    Dataset,
    HostSample,
    InstanceSpec,
    IntervalSample,
    Job,
    JobClient,
    JobResult,
    Product,
    RoundTrip,
    Run,
    Scenario,
    ServerSample,
    Target,
)

BUNDLE_FORMAT = "benchapp-run"
BUNDLE_VERSION = 1

# Fields that mean something only on the install that made the row (ids, links to other rows, users, queues,
# the worker that claimed a job) or that are secret: never exported.
LOCAL_FIELDS: dict[type[models.Model], set[str]] = {
    Product: {"id", "created_at"},
    InstanceSpec: {"id"},
    Target: {"id", "product", "spec", "password_encrypted", "is_demo", "created_by", "created_at", "updated_at"},
    Dataset: {"id", "created_by"},
    Scenario: {"id", "dataset", "created_by", "created_at"},
    Campaign: {"id", "baseline_run", "webhook_url_encrypted", "notify_emails", "created_by", "is_template",
               "template_key", "created_at", "updated_at"},
    Run: {"id", "campaign", "idempotency_key", "created_by", "waits_for", "queue", "rerun_of", "rerun", "evaluated_at"},
    Job: {"id", "run", "target", "scenario", "claimed_by", "dispatch_count", "heartbeat_at", "release_at"},
    JobResult: {"id", "job", "created_at"},
    JobClient: {"id", "job", "pid", "heartbeat_at"},
    IntervalSample: {"id", "job"},
    HostSample: {"id", "job"},
    ServerSample: {"id", "job"},
    RoundTrip: {"id", "run", "target"},
}


class BundleRejected(ValueError):
    """A bundle that cannot be imported; the message names the part and why."""


def _fields(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    """The model's fields a bundle carries: never a link to another row (those are rebuilt from the bundle's own
    structure) nor a local or secret one."""
    local = LOCAL_FIELDS[model]
    return [f for f in model._meta.concrete_fields if f.name not in local and not f.is_relation]


def _row(obj: models.Model) -> dict[str, Any]:
    return {f.name: f.value_from_object(obj) for f in _fields(type(obj))}


def _values(model: type[models.Model], rows: Any) -> list[dict[str, Any]]:
    names = [f.name for f in _fields(model)]
    return [dict(zip(names, values, strict=True)) for values in rows.values_list(*names)]


def run_export(*, run: Run) -> dict[str, Any]:
    """The run as a bundle (a dict ready for JSON: encode it with DjangoJSONEncoder, as bundle_json does)."""
    campaign = run.campaign
    jobs = list(Job.objects.filter(run=run).select_related("target__product", "target__spec", "scenario__dataset")
                .order_by("position", "pk"))
    targets = {j.target_id: j.target for j in jobs}
    scenarios = {j.scenario_id: j.scenario for j in jobs}
    job_ids = [j.pk for j in jobs]
    results = {r.job_id: r for r in JobResult.objects.filter(job_id__in=job_ids)}
    per_job: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for key, model in (("clients", JobClient), ("samples", IntervalSample), ("host_samples", HostSample),
                       ("server_samples", ServerSample)):
        grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
        rows = model._default_manager.filter(job_id__in=job_ids).order_by("job_id", "pk")
        names = ["job_id", *[f.name for f in _fields(model)]]
        for values in rows.values_list(*names):
            grouped[values[0]].append(dict(zip(names[1:], values[1:], strict=True)))
        per_job[key] = grouped
    return {
        "format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "exported_at": timezone.now(),
        "source": {"host": socket.gethostname(), "run_id": run.pk, "campaign_id": campaign.pk},
        "campaign": _row(campaign),
        "run": _row(run),
        "targets": [{"key": t.pk, **_row(t), "product": _row(t.product), "spec": _row(t.spec) if t.spec else None}
                    for t in targets.values()],
        "scenarios": [{"key": s.pk, **_row(s), "dataset": _row(s.dataset)} for s in scenarios.values()],
        "round_trips": [{"target": r.target_id, **_row(r)} for r in RoundTrip.objects.filter(run=run).order_by("pk")],
        "jobs": [{
            "target": j.target_id, "scenario": j.scenario_id, **_row(j),
            "result": _row(results[j.pk]) if j.pk in results else None,
            **{key: per_job[key].get(j.pk, []) for key in per_job},
        } for j in jobs],
    }


def bundle_json(bundle: dict[str, Any]) -> str:
    import json

    return json.dumps(bundle, cls=DjangoJSONEncoder, separators=(",", ":"))


# ---------------------------------------------------------------- import


def _parsed(model: type[models.Model], data: Any, where: str) -> dict[str, Any]:
    """The bundle's values for the model's exportable fields, converted and validated field by field."""
    if not isinstance(data, dict):
        raise BundleRejected(f"{where}: an object was expected")
    out = {}
    for field in _fields(model):
        if field.name not in data:
            continue
        value = data[field.name]
        try:
            if value is not None and isinstance(field, models.DateTimeField) and isinstance(value, str):
                value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            elif value is not None and not isinstance(field, models.JSONField):
                value = field.to_python(value)
            if value is None and not field.null:
                continue
            limit = getattr(field, "max_length", None)
            if isinstance(value, str) and limit is not None and len(value) > limit:
                raise BundleRejected(f"{where}.{field.name}: longer than {limit} characters")
        except BundleRejected:
            raise
        except Exception as exc:
            raise BundleRejected(f"{where}.{field.name}: {exc}") from None
        out[field.name] = value
    return out


def _named(model: type[models.Model], key: str, values: dict[str, Any], where: str) -> Any:
    """The row of this name on this install, or a new one with the bundle's values."""
    if not values.get(key):
        raise BundleRejected(f"{where}.{key}: missing")
    found = model.objects.filter(**{key: values[key]}).first()  # type: ignore[attr-defined]
    return found if found is not None else model.objects.create(**values)  # type: ignore[attr-defined]


def bundle_import(*, bundle: Any, user: Any = None) -> Run:
    """Stores a bundle as an imported run (trigger import) of the campaign of the same name, creating the
    campaign, targets (without a password: set one to run them here), scenarios, datasets, products and specs
    this install does not have by those names. Jobs keep their outcome, verdict and every figure. All or
    nothing: a refused bundle stores nothing."""
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise BundleRejected(f"format: not a benchapp run bundle (expected \"{BUNDLE_FORMAT}\")")
    version = bundle.get("version")
    if not isinstance(version, int) or not 1 <= version <= BUNDLE_VERSION:
        raise BundleRejected(f"version: {version!r} is not a bundle version this benchapp reads (1 to {BUNDLE_VERSION})")
    for key in ("campaign", "run", "targets", "scenarios", "jobs"):
        if key not in bundle:
            raise BundleRejected(f"{key}: missing")
    if not isinstance(bundle["jobs"], list) or not bundle["jobs"]:
        raise BundleRejected("jobs: a bundle holds at least one job")
    source: dict[str, Any] = bundle["source"] if isinstance(bundle.get("source"), dict) else {}
    with transaction.atomic():
        targets: dict[Any, Target] = {}
        for n, item in enumerate(bundle["targets"] if isinstance(bundle["targets"], list) else []):
            where = f"targets[{n}]"
            product = _named(Product, "name", _parsed(Product, item.get("product"), f"{where}.product"), where)
            spec_data = item.get("spec")
            spec = _named(InstanceSpec, "label", _parsed(InstanceSpec, spec_data, f"{where}.spec"), where) \
                if spec_data else None
            values = _parsed(Target, item, where)
            target = Target.objects.filter(name=values.get("name")).first()
            if target is None:
                target = Target(product=product, spec=spec, **values)
                target.full_clean(exclude=["password_encrypted"])
                target.save()
            targets[item.get("key")] = target
        scenarios: dict[Any, Scenario] = {}
        for n, item in enumerate(bundle["scenarios"] if isinstance(bundle["scenarios"], list) else []):
            where = f"scenarios[{n}]"
            dataset = _named(Dataset, "name", _parsed(Dataset, item.get("dataset"), f"{where}.dataset"), where)
            values = _parsed(Scenario, item, where)
            scenario = Scenario.objects.filter(name=values.get("name")).first()
            if scenario is None:
                scenario = Scenario.objects.create(dataset=dataset, **values)
            scenarios[item.get("key")] = scenario
        campaign_values = _parsed(Campaign, bundle["campaign"], "campaign")
        campaign = _named(Campaign, "name", campaign_values, "campaign")
        campaign.targets.add(*targets.values())
        campaign.scenarios.add(*scenarios.values())
        run_values = _parsed(Run, bundle["run"], "run")
        label = f"imported from {source.get('host', 'another benchapp')} run #{source.get('run_id', '?')}"
        run = transitions.run_create_imported(
            campaign=campaign, trigger=Run.Trigger.IMPORT,
            label=(f"{label}: {run_values['label']}" if run_values.get("label") else label)[:200],
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        for n, item in enumerate(bundle["jobs"]):
            where = f"jobs[{n}]"
            if not isinstance(item, dict) or item.get("target") not in targets or item.get("scenario") not in scenarios:
                raise BundleRejected(f"{where}: its target or scenario is not among the bundle's")
            values = _parsed(Job, item, where)
            try:
                job = transitions.job_create_bundled(run=run, target=targets[item["target"]],
                                                     scenario=scenarios[item["scenario"]], **values)
            except transitions.IllegalTransition as exc:
                raise BundleRejected(f"{where}.status: {exc}") from None
            if item.get("result"):
                JobResult.objects.create(job=job, **_parsed(JobResult, item["result"], f"{where}.result"))
            clients = [_parsed(JobClient, c, f"{where}.clients[{i}]") for i, c in enumerate(item.get("clients") or [])]
            transitions.clients_create_bundled(job=job, clients=clients)
            sample_models: tuple[tuple[str, type[models.Model]], ...] = (
                ("samples", IntervalSample), ("host_samples", HostSample), ("server_samples", ServerSample))
            for key, model in sample_models:
                rows = item.get(key) or []
                if not isinstance(rows, list):
                    raise BundleRejected(f"{where}.{key}: a list was expected")
                made: list[models.Model] = [model(job=job, **_parsed(model, r, f"{where}.{key}[{i}]"))
                                            for i, r in enumerate(rows)]
                model._default_manager.bulk_create(made, batch_size=5000)
        for n, item in enumerate(bundle.get("round_trips") or []):
            if isinstance(item, dict) and item.get("target") in targets:
                values = _parsed(RoundTrip, item, f"round_trips[{n}]")
                trip = RoundTrip.objects.create(run=run, target=targets[item["target"]], **values)
                if values.get("measured_at"):  # auto_now_add wrote the import's time over the measurement's
                    RoundTrip.objects.filter(pk=trip.pk).update(measured_at=values["measured_at"])
        transitions.run_close(run=run)
    return run
