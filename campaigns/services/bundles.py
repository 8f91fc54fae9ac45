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
import math
import re
import socket
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DataError, IntegrityError, models, transaction
from django.utils import timezone

from campaigns.execution import transitions
from campaigns.models import (
    Attempt,
    Campaign,
    ClientSend,
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
    checks,
)
from campaigns.seconds import Kind, seconds_rows
from campaigns.services.campaigns import campaign_create, campaign_update
from campaigns.services.datasets import dataset_create
from campaigns.services.scenarios import scenario_create
from campaigns.services.targets import target_create
from campaigns.services.workloads import workload_export, workload_import
from campaigns.settings_variants import settings_problem, variants_problem
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_THREADS

BUNDLE_FORMAT = "benchapp-run"
# 2: a job's earlier attempts and a client's earlier sends are lists of rows ("attempts", "sends"); version 1
# carried them as each row's "earlier_attempts", which is still read.
BUNDLE_VERSION = 2

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
    Attempt: {"id", "job"},
    ClientSend: {"id", "client"},
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
    sends: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for send in ClientSend.objects.filter(client__job_id__in=job_ids).order_by("client_id", "number"):
        sends[send.client_id].append(_row(send))
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    names = ["job_id", "pk", *[f.name for f in _fields(JobClient)]]
    for values in JobClient.objects.filter(job_id__in=job_ids).order_by("job_id", "pk").values_list(*names):
        grouped[values[0]].append({**dict(zip(names[2:], values[2:], strict=True)), "sends": sends.get(values[1], [])})
    per_job["clients"] = grouped
    attempts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for attempt in Attempt.objects.filter(job_id__in=job_ids).order_by("job_id", "number"):
        attempts[attempt.job_id].append(_row(attempt))
    per_job["attempts"] = attempts
    # Every attempt's seconds, whether still rows or packed (campaigns.seconds), as the rows they were.
    every_attempt: dict[int, int | None] = dict.fromkeys(job_ids)
    for key, kind, model in (("samples", Kind.INTERVAL, IntervalSample), ("host_samples", Kind.HOST, HostSample),
                             ("server_samples", Kind.SERVER, ServerSample)):
        fields = [f.name for f in _fields(model)]
        seconds: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in seconds_rows(kind, every_attempt, fields=[n for n in fields if n not in ("attempt", "client_index")]):
            seconds[row["job_id"]].append({n: row[n] for n in fields})
        per_job[key] = seconds
    return {
        "format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "exported_at": timezone.now(),
        "source": {"host": socket.gethostname(), "run_id": run.pk, "campaign_id": campaign.pk},
        "campaign": _row(campaign),
        "run": _row(run),
        "targets": [{"key": t.pk, **_row(t), "product": _row(t.product), "spec": _row(t.spec) if t.spec else None}
                    for t in targets.values()],
        "scenarios": [{"key": s.pk, **_row(s), "dataset": _row(s.dataset), **workload_export(s)}
                      for s in scenarios.values()],
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
#
# A bundle is untrusted input: whoever posts it chose every value in it. Each row goes through the checks the
# forms and the API apply (the model's full_clean, its clean() rules, the forms' limits) plus the shapes that
# pages read back (campaigns.models.checks), and a refusal names the part and the field. Rows are never bound
# to what another user made: see _named_row.

# Rows of measurements: every float of theirs is a finite figure, never negative.
_MEASURED: tuple[type[models.Model], ...] = (Job, JobClient, JobResult, IntervalSample, HostSample, RoundTrip,
                                             Attempt)
# The forms' limits on fields the models bound loosely: (model, field) -> (least, most).
_BOUNDS: dict[tuple[type[models.Model], str], tuple[float, float | None]] = {
    (Job, "threads"): (1, MAX_THREADS), (Job, "tables"): (1, 100_000), (Job, "table_size"): (1, MAX_TABLE_ROWS),
    (Job, "repetition"): (1, 100), (Job, "clients_needed"): (1, 10_000), (Job, "time_s"): (1, None),
    (Job, "attempt"): (1, 100), (Job, "cache_hit_ratio"): (0, 1),
    (JobClient, "threads"): (1, MAX_THREADS), (JobClient, "index"): (0, 10_000), (JobClient, "attempt"): (1, 100),
    (IntervalSample, "threads"): (0, MAX_THREADS), (IntervalSample, "attempt"): (1, 100),
    (HostSample, "attempt"): (1, 100), (ServerSample, "attempt"): (1, 100),
    (Attempt, "number"): (1, 99), (ClientSend, "number"): (1, 99),
    (JobResult, "latency_pct"): (0, 100),
}
_SHAPES: dict[tuple[type[models.Model], str], Callable[[Any], str | None]] = {
    (Job, "server_snapshot"): checks.server_snapshot_problem, (Job, "findings"): checks.findings_problem,
    (JobClient, "summary"): checks.client_summary_problem, (JobClient, "histogram"): checks.histogram_problem,
    (JobClient, "profile"): checks.profile_problem,
    (ServerSample, "rates"): checks.number_map_problem, (ServerSample, "gauges"): checks.number_map_problem,
    (Campaign, "variants"): variants_problem, (Job, "variant_settings"): settings_problem,
}
# Times a run could have: from this year to a day ahead of this install's clock.
_EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
MAX_JOBS = 10_000
# Fields that say nothing of what a row is: a row of the importer's with every other field equal is the same row.
_NEVER_COMPARED = {"id", "name", "created_by", "created_at", "updated_at", "password_encrypted", "is_demo"}


def _value(model: type[models.Model], field: models.Field[Any, Any], value: Any) -> Any:
    """One bundle value as the field stores it; raises BundleRejected (without the row's name) or ValueError."""
    if value is None:
        if not field.null:
            raise BundleRejected("may not be null")
        return None
    if isinstance(field, models.DateTimeField):
        if not isinstance(value, str):
            raise BundleRejected("not an ISO 8601 time")
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise BundleRejected("not an ISO 8601 time") from None
        if value.tzinfo is None:
            raise BundleRejected("an ISO 8601 time with its UTC offset was expected")
        try:
            in_utc = value.astimezone(dt.UTC)
        except OverflowError:
            raise BundleRejected("out of range") from None
        if not _EARLIEST <= in_utc <= timezone.now() + dt.timedelta(days=1):
            raise BundleRejected(f"out of range (from {_EARLIEST:%Y-%m-%d} to now)")
        return in_utc
    if isinstance(field, models.JSONField):
        problem = checks.json_problem(value)
        shape = _SHAPES.get((model, field.name))
        default = field.get_default()
        if problem is None and shape is not None:
            problem = shape(value)
        elif problem is None and isinstance(default, (dict, list)) and not isinstance(value, type(default)):
            problem = "must be an object" if isinstance(default, dict) else "must be a list"
        if problem:
            raise BundleRejected(problem)
        return value
    if isinstance(field, ArrayField):
        if not isinstance(value, list):
            raise BundleRejected("must be a list")
        items = [_value(model, field.base_field, item) for item in value]
        field.run_validators(items)
        return items
    if isinstance(field, (models.IntegerField, models.FloatField)):
        problem = checks.number_problem(value, integer=isinstance(field, models.IntegerField)) \
            if not isinstance(value, str) else None
        if problem:
            raise BundleRejected(problem)
        value = field.to_python(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise BundleRejected("not a finite number")
        bounds = _BOUNDS.get((model, field.name))
        if bounds is None and isinstance(field, models.FloatField) and model in _MEASURED:
            bounds = (0, None)
        if bounds is not None and (value < bounds[0] or (bounds[1] is not None and value > bounds[1])):
            raise BundleRejected(f"out of range ({bounds[0]:g} to {'any' if bounds[1] is None else f'{bounds[1]:g}'})")
    elif isinstance(field, models.BooleanField):
        if not isinstance(value, bool):
            raise BundleRejected("true or false was expected")
    elif not isinstance(value, str):
        raise BundleRejected("text was expected")
    else:
        value = field.to_python(value)
    field.validate(value, None)
    field.run_validators(value)
    return value


def _parsed(model: type[models.Model], data: Any, where: str) -> dict[str, Any]:
    """The bundle's values for the model's exportable fields, converted and checked field by field."""
    if not isinstance(data, dict):
        raise BundleRejected(f"{where}: an object was expected")
    out = {}
    for field in _fields(model):
        if field.name not in data:
            continue
        try:
            out[field.name] = _value(model, field, data[field.name])
        except BundleRejected as exc:
            raise BundleRejected(f"{where}.{field.name}: {exc}") from None
        except ValidationError as exc:
            raise BundleRejected(f"{where}.{field.name}: {'; '.join(exc.messages)}") from None
        except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
            raise BundleRejected(f"{where}.{field.name}: {str(exc)[:200]}") from None
    return out


def _cleaned(row: models.Model, where: str, *, exclude: tuple[str, ...] = ()) -> None:
    """The row's full_clean (its own rules: a scenario's options, a target's endpoint, a campaign's limits)."""
    try:
        row.full_clean(exclude=list(exclude), validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        part = where if field == NON_FIELD_ERRORS else f"{where}.{field}"
        raise BundleRejected(f"{part}: {'; '.join(messages)}") from None


def _fresh_name(model: type[models.Model], key: str, name: str) -> str:
    """`name` when no row of the model has it, else "name (imported)", "name (imported 2)", …"""
    limit = getattr(model._meta.get_field(key), "max_length", None) or 200
    manager = model._default_manager
    for n in range(1, 1000):
        suffix = "" if n == 1 and not manager.filter(**{key: name}).exists() else \
            " (imported)" if n == 1 else f" (imported {n})"
        candidate = name[:limit - len(suffix)] + suffix
        if not manager.filter(**{key: candidate}).exists():
            return candidate
    raise BundleRejected(f"{key}: too many rows named {name[:60]!r} already")


def _shared_row(model: type[models.Model], key: str, values: dict[str, Any], where: str) -> Any:
    """Products and instance specs are a shared catalogue, owned by nobody: found by name, else created."""
    if not values.get(key):
        raise BundleRejected(f"{where}.{key}: missing")
    found = model._default_manager.filter(**{key: values[key]}).first()
    if found is not None:
        return found
    row = model(**values)
    _cleaned(row, where)
    row.save()
    return row


def _named_row(row: models.Model, values: dict[str, Any], where: str, *, user: Any,
               exclude: tuple[str, ...] = (), same: bool = True) -> Any:
    """A target, scenario, dataset or campaign of the bundle: checked, then the importer's own row of that name
    when there is one (and, with `same`, it holds the bundle's values), else a new row of the importer's; a name
    taken by another row gets " (imported)". Nothing is ever attached to another user's row."""
    name = values.get("name")
    if not name:
        raise BundleRejected(f"{where}.name: missing")
    _cleaned(row, where, exclude=exclude)
    model = type(row)
    owner = user if getattr(user, "is_authenticated", False) else None
    if owner is not None:
        compared = [f for f in model._meta.concrete_fields
                    if f.name not in _NEVER_COMPARED and (f.name in values or f.is_relation)]
        # Its own row of that name, or one an earlier import of the same bundle made ("name (imported 2)").
        mine = model._default_manager.filter(created_by=owner, name__regex=_imported_names(name)).order_by("pk")
        for candidate in sorted(mine, key=lambda r: getattr(r, "name", "") != name):
            if not same or all(getattr(candidate, f.attname) == getattr(row, f.attname) for f in compared):
                return candidate
    fields = {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields if f.name not in _LOCAL_ONLY}
    fields["name"] = _fresh_name(model, "name", name)
    with _refusal_named(where):
        return _CREATE[model](owner, fields)


# A new row of the bundle is written by its model's service, as from the pages and the API.
_CREATE: dict[type[models.Model], Callable[[Any, dict[str, Any]], Any]] = {
    Target: lambda owner, fields: target_create(by=owner, **fields),  # `user` is a target's own field
    Dataset: lambda owner, fields: dataset_create(user=owner, **fields),
    Scenario: lambda owner, fields: scenario_create(user=owner, **fields),
    # An imported campaign's settings variants are history: its targets (no password, often another site's) are
    # not asked; a launch of it would still refuse, job by job, a setting its server does not take.
    Campaign: lambda owner, fields: campaign_create(user=owner, check_variants=False, **fields),
}
_LOCAL_ONLY = {"id", "created_by", "created_at", "updated_at", "password_encrypted", "webhook_url_encrypted"}


@contextmanager
def _refusal_named(where: str) -> Iterator[None]:
    """A service's ValidationError as a BundleRejected naming the bundle's part and the field."""
    try:
        yield
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items())) if hasattr(exc, "error_dict") \
            else (NON_FIELD_ERRORS, exc.messages)
        part = where if field == NON_FIELD_ERRORS else f"{where}.{field}"
        raise BundleRejected(f"{part}: {'; '.join(messages)}") from None


def _imported_names(name: str) -> str:
    return rf"^{re.escape(name)}( \(imported( [0-9]+)?\))?$"


def _bundle_key(item: dict[str, Any], name: str, where: str) -> str | int:
    key = item.get(name)
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise BundleRejected(f"{where}.{name}: a bundle key (text or a whole number) was expected")
    return key


def _listed(bundle: dict[str, Any], key: str) -> list[Any]:
    value = bundle.get(key)
    if value is None and key == "round_trips":
        return []
    if not isinstance(value, list):
        raise BundleRejected(f"{key}: a list was expected")
    return value


def _unique_rows(model: type[models.Model], rows: list[dict[str, Any]], where: str) -> None:
    """Rows of one job that the model's unique constraints allow once (a second `t` of a client, a second index)."""
    for constraint in model._meta.constraints:
        if not isinstance(constraint, models.UniqueConstraint) or constraint.condition is not None:
            continue
        names = [n for n in constraint.fields if n not in ("job", "run")]
        seen: set[tuple[Any, ...]] = set()
        for i, row in enumerate(rows):
            key = tuple(row.get(n, cast(Any, model._meta.get_field(n)).get_default()) for n in names)
            if key in seen:
                raise BundleRejected(f"{where}[{i}]: a second row with the same {', '.join(names)}")
            seen.add(key)


def bundle_import(*, bundle: Any, user: Any = None) -> Run:
    """Stores a bundle as an imported run (trigger import), with its own campaign, targets (without a password:
    set one to run them here), scenarios and datasets: the importer's rows of those names when they hold the same
    values (any campaign of theirs of that name), new rows of the importer's otherwise ("X (imported)" when the
    name is taken). Products and specs are shared, found by name. Jobs keep their outcome, verdict and every
    figure, marked imported. All or nothing: a refused bundle stores nothing, and the message names the part."""
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise BundleRejected(f"format: not a benchapp run bundle (expected \"{BUNDLE_FORMAT}\")")
    version = bundle.get("version")
    if not isinstance(version, int) or not 1 <= version <= BUNDLE_VERSION:
        raise BundleRejected(f"version: {version!r} is not a bundle version this benchapp reads (1 to {BUNDLE_VERSION})")
    for key in ("campaign", "run", "targets", "scenarios", "jobs"):
        if key not in bundle:
            raise BundleRejected(f"{key}: missing")
    jobs = _listed(bundle, "jobs")
    if not jobs:
        raise BundleRejected("jobs: a bundle holds at least one job")
    if len(jobs) > MAX_JOBS:
        raise BundleRejected(f"jobs: at most {MAX_JOBS:,} jobs in a bundle")
    source: dict[str, Any] = bundle["source"] if isinstance(bundle.get("source"), dict) else {}
    try:
        with transaction.atomic():
            return _bundle_store(bundle, jobs, source, user)
    except (IntegrityError, DataError) as exc:
        first_line = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise BundleRejected(f"bundle: refused by the database ({first_line})") from None


def _bundle_store(bundle: dict[str, Any], jobs: list[Any], source: dict[str, Any], user: Any) -> Run:
    targets: dict[Any, Target] = {}
    for n, item in enumerate(_listed(bundle, "targets")):
        where = f"targets[{n}]"
        if not isinstance(item, dict):
            raise BundleRejected(f"{where}: an object was expected")
        key = _bundle_key(item, "key", where)
        product = _shared_row(Product, "name", _parsed(Product, item.get("product"), f"{where}.product"),
                              f"{where}.product")
        spec_data = item.get("spec")
        spec = _shared_row(InstanceSpec, "label", _parsed(InstanceSpec, spec_data, f"{where}.spec"),
                           f"{where}.spec") if spec_data is not None else None
        values = _parsed(Target, item, where)
        targets[key] = _named_row(Target(product=product, spec=spec, **values), values, where, user=user,
                                  exclude=("password_encrypted",))
    scenarios: dict[Any, Scenario] = {}
    for n, item in enumerate(_listed(bundle, "scenarios")):
        where = f"scenarios[{n}]"
        if not isinstance(item, dict):
            raise BundleRejected(f"{where}: an object was expected")
        key = _bundle_key(item, "key", where)
        dataset_values = _parsed(Dataset, item.get("dataset"), f"{where}.dataset")
        dataset = _named_row(Dataset(**dataset_values), dataset_values, f"{where}.dataset", user=user)
        values = _parsed(Scenario, item, where)
        try:
            version = workload_import(item.get("workload"), f"{where}.workload", user=user)
        except ValueError as exc:
            raise BundleRejected(str(exc)) from None
        scenarios[key] = _named_row(Scenario(dataset=dataset, workload_version=version, **values), values, where,
                                    user=user)
    campaign_values = _parsed(Campaign, bundle["campaign"], "campaign")
    campaign = _named_row(Campaign(**campaign_values), campaign_values, "campaign", user=user, same=False)
    with _refusal_named("campaign"):
        campaign = campaign_update(campaign=campaign, check_variants=False,
                                   targets={*campaign.targets.all(), *targets.values()},
                                   scenarios={*campaign.scenarios.all(), *scenarios.values()})
    run_values = _parsed(Run, bundle["run"], "run")
    host = str(source.get("host", "another benchapp"))[:100]
    run_id = source.get("run_id") if isinstance(source.get("run_id"), int) else "?"
    label = f"imported from {host} run #{run_id}"
    run = transitions.run_create_imported(
        campaign=campaign, trigger=Run.Trigger.IMPORT,
        label=(f"{label}: {run_values['label']}" if run_values.get("label") else label)[:200],
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    for n, item in enumerate(jobs):
        _job_store(run, item, f"jobs[{n}]", targets, scenarios)
    trips = []
    for n, item in enumerate(_listed(bundle, "round_trips")):
        where = f"round_trips[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("target"), (str, int)) \
                or item["target"] not in targets:
            raise BundleRejected(f"{where}.target: not among the bundle's targets")
        trips.append((targets[item["target"]], _parsed(RoundTrip, item, where)))
    _unique_rows(RoundTrip, [{"target": t.pk, **v} for t, v in trips], "round_trips")
    for target, values in trips:
        trip = RoundTrip.objects.create(run=run, target=target, **values)
        if values.get("measured_at"):  # auto_now_add wrote the import's time over the measurement's
            RoundTrip.objects.filter(pk=trip.pk).update(measured_at=values["measured_at"])
    transitions.run_close(run=run)
    return run


def _job_store(run: Run, item: Any, where: str, targets: dict[Any, Target], scenarios: dict[Any, Scenario]) -> None:
    if not isinstance(item, dict):
        raise BundleRejected(f"{where}: an object was expected")
    target_key, scenario_key = item.get("target"), item.get("scenario")
    if not isinstance(target_key, (str, int)) or not isinstance(scenario_key, (str, int)) \
            or target_key not in targets or scenario_key not in scenarios:
        raise BundleRejected(f"{where}: its target or scenario is not among the bundle's")
    values = _parsed(Job, item, where)
    result = _parsed(JobResult, item["result"], f"{where}.result") if item.get("result") is not None else None
    clients, sends = [], []
    for i, c in enumerate(_job_list(item, "clients", where)):
        clients.append(_parsed(JobClient, c, f"{where}.clients[{i}]"))
        sends.append(_earlier_rows(ClientSend, c, "sends", f"{where}.clients[{i}]"))
    _unique_rows(JobClient, clients, f"{where}.clients")
    attempts = _earlier_rows(Attempt, item, "attempts", where)
    sample_models: tuple[tuple[str, type[models.Model]], ...] = (
        ("samples", IntervalSample), ("host_samples", HostSample), ("server_samples", ServerSample))
    samples = {}
    for key, model in sample_models:
        rows = [_parsed(model, r, f"{where}.{key}[{i}]") for i, r in enumerate(_job_list(item, key, where))]
        _unique_rows(model, rows, f"{where}.{key}")
        samples[key] = (model, rows)
    try:
        job = transitions.job_create_bundled(run=run, target=targets[target_key], scenario=scenarios[scenario_key],
                                             **{**values, "imported": True})
    except transitions.IllegalTransition as exc:
        raise BundleRejected(f"{where}.status: {exc}") from None
    if result is not None:
        JobResult.objects.create(job=job, **{**result, "source": JobResult.Source.IMPORTED})
    transitions.clients_create_bundled(job=job, clients=clients, sends=sends)
    transitions.attempts_create_bundled(job=job, attempts=attempts)
    for model, rows in samples.values():
        model._default_manager.bulk_create([model(job=job, **r) for r in rows], batch_size=5000)


# A version 1 bundle's "earlier_attempts" item: its keys as the rows' fields are named.
_V1_NAMES = {"attempt": "number"}


def _earlier_rows(model: type[models.Model], item: Any, key: str, where: str) -> list[dict[str, Any]]:
    """A job's earlier attempts or a client's earlier sends, as rows of `model`: the bundle's `key` list, or a
    version 1 bundle's earlier_attempts. Each is checked like any row; numbers are distinct."""
    if not isinstance(item, dict):
        return []
    old = item.get("earlier_attempts")
    if key not in item and old is not None:
        if not isinstance(old, list):
            raise BundleRejected(f"{where}.earlier_attempts: a list was expected")
        key, listed = "earlier_attempts", [{_V1_NAMES.get(k, k): v for k, v in row.items()} if isinstance(row, dict)
                                           else row for row in old]
    else:
        listed = _job_list(item, key, where)
    rows = [_parsed(model, row, f"{where}.{key}[{i}]") for i, row in enumerate(listed)]
    for i, row in enumerate(rows):
        missing = [f.name for f in _fields(model) if f.name not in row and not f.has_default() and not f.null
                   and not f.blank]
        if missing:
            raise BundleRejected(f"{where}.{key}[{i}].{missing[0]}: missing")
    numbers = [row["number"] for row in rows]
    if len(set(numbers)) != len(numbers):
        raise BundleRejected(f"{where}.{key}: an attempt number is listed twice")
    return rows


def _job_list(item: dict[str, Any], key: str, where: str) -> list[Any]:
    rows = item.get(key)
    if rows is None:
        return []
    if not isinstance(rows, list):
        raise BundleRejected(f"{where}.{key}: a list was expected")
    return rows
