"""Quick compare: targets × sysbench tests × a thread ladder in one form, with the datasets, scenarios and
campaign made behind the scenes and named after their real shape ("oltp_read_write · 4 × 10,000").

The pieces are the ones a user would build by hand, built the same way (full_clean, then save), so that a
quick comparison is an ordinary campaign afterwards: its plan, runs, history and comparisons are the usual ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from campaigns.crypto import DecryptionError
from campaigns.models import Campaign, Dataset, InstanceSpec, Product, Run, Scenario, Target
from campaigns.probes import ProbeError
from campaigns.services.campaigns import campaign_create
from campaigns.services.datasets import dataset_create
from campaigns.services.launch import campaign_launch
from campaigns.services.plans import JOB_OVERHEAD_S, campaign_plan
from campaigns.services.scenarios import scenario_create
from campaigns.services.targets import target_check, target_create

# sysbench's defaults, which a user adding a target inline need not know.
DEFAULT_PORTS: dict[str, int] = {Target.Driver.MYSQL.value: 3306, Target.Driver.PGSQL.value: 5432}
# Names are unique; a clash with a row of another shape gets the first free " #n".
_MAX_NAME_TRIES = 100


@dataclass(frozen=True, slots=True)
class NewTarget:
    """A target typed into the quick compare form, with its product and spec (existing ones, or new ones
    named here). `port` None means the driver's default port."""

    name: str
    driver: str
    host: str
    port: int | None
    database: str
    user: str
    password: str
    product: Product | None = None
    product_name: str = ""
    product_engine: str = ""
    spec: InstanceSpec | None = None
    spec_label: str = ""
    spec_cpu_cores: int | None = None
    spec_memory_gb: float | None = None


@dataclass(frozen=True, slots=True)
class QuickMatrix:
    """What to compare: the targets, the tests, one dataset shape, the thread ladder, duration and repetitions."""

    targets: list[Target]
    tests: list[str]
    tables: int
    table_size: int
    threads: list[int]
    time_s: int
    repetitions: int
    name: str = ""


def _creator(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def shape_label(*, tables: int, table_size: int) -> str:
    return f"{tables} × {table_size:,}"


def _prefixed(exc: ValidationError, prefix: str, fields: dict[str, str] | None = None) -> ValidationError:
    """A model's ValidationError with its field names turned into the form's (`name` → `new_product_name`)."""
    if not hasattr(exc, "error_dict"):
        return exc
    fields = fields or {}
    return ValidationError({fields.get(name, f"{prefix}{name}"): errors for name, errors in exc.error_dict.items()})


def quick_target_create(*, new: NewTarget, user: Any) -> tuple[Target, dict[str, Any]]:
    """Creates a target (with its new product and spec, if any) once a connection to it has succeeded.

    Everything is validated first, then the connection is tested with the typed password, then all of it is saved
    in one transaction: a target that cannot be reached, or that the credential rules refuse (benchapp's own
    database or Redis, clear-text authentication), leaves nothing behind. Returns the target and what the check
    found (server version and settings). Raises ValidationError keyed by the quick form's field names.
    """
    driver = new.driver
    product = new.product
    if product is None:
        product = Product(name=new.product_name.strip(), engine=new.product_engine, vendor="")
        try:
            product.full_clean()
        except ValidationError as exc:
            raise _prefixed(exc, "new_product_", {"name": "new_product_name", "engine": "new_product_engine"}) from None
    spec = new.spec
    if spec is None and new.spec_label.strip():
        spec = InstanceSpec(label=new.spec_label.strip(), cpu_cores=new.spec_cpu_cores or 0,
                            memory_gb=new.spec_memory_gb if new.spec_memory_gb is not None else -1)
        try:
            spec.full_clean()
        except ValidationError as exc:
            raise _prefixed(exc, "new_spec_", {"label": "new_spec_label", "cpu_cores": "new_spec_cpu_cores",
                                               "memory_gb": "new_spec_memory_gb"}) from None
    target = Target(name=new.name.strip(), driver=driver, host=new.host.strip(),
                    port=new.port or DEFAULT_PORTS.get(driver, 0), database=new.database.strip(),
                    user=new.user.strip(), created_by=_creator(user))
    target.set_password(new.password)
    try:
        target.full_clean(exclude=["product", "spec"])
    except ValidationError as exc:
        raise _prefixed(exc, "new_") from None
    try:
        check = target_check(target=target, user=user)
    except (ProbeError, DecryptionError) as exc:
        raise ValidationError({"new_host": f"The connection test failed, so the target was not saved: {exc}"}) from None
    with transaction.atomic():
        if product.pk is None:
            product.save()
        if spec is not None and spec.pk is None:
            spec.save()
        target = target_create(by=user, password=new.password, product=product, spec=spec,
                               **{name: getattr(target, name) for name in ("name", *Target.ENDPOINT_FIELDS)})
    return target, check


def _free_name(model: type[Any], field: str, base: str, fits: Any) -> tuple[str, Any]:
    """The row named `base` if it fits (fits(row) is true), else the first free name `base #n`; (name, row|None)."""
    for n in range(1, _MAX_NAME_TRIES + 1):
        name = base if n == 1 else f"{base} #{n}"
        row = model.objects.filter(**{field: name}).first()
        if row is None:
            return name, None
        if fits(row):
            return name, row
    raise ValidationError(f"too many rows named like “{base}”")


def quick_dataset(*, tables: int, table_size: int, user: Any = None) -> Dataset:
    """The dataset named after its shape ("4 × 10,000 rows"), made if missing."""
    base = f"{shape_label(tables=tables, table_size=table_size)} rows"
    name, row = _free_name(Dataset, "name", base, lambda d: (d.tables, d.table_size, d.sizes_by_spec) ==
                           (tables, table_size, {}))
    if row is not None:
        return row
    return dataset_create(user=user, name=name, tables=tables, table_size=table_size,
                          description="Made by quick compare: sysbench's sbtest tables, nothing else.")


def quick_scenario(*, test: str, dataset: Dataset, time_s: int, user: Any = None) -> Scenario:
    """The plain scenario of a test on a dataset, named after both ("oltp_read_write · 4 × 10,000"): sysbench's
    defaults for every option, prepared once per target and dropped when the run ends."""
    base = f"{test} · {shape_label(tables=dataset.tables, table_size=dataset.table_size)}"

    def fits(s: Scenario) -> bool:
        return (s.test == test and s.dataset_id == dataset.pk and not s.options and not s.table_ddl
                and s.prepare_mode == Scenario.PrepareMode.AUTO and s.warmup_s == 0)

    name, row = _free_name(Scenario, "name", base, fits)
    if row is not None:
        return row
    return scenario_create(user=user, name=name, test=test, dataset=dataset, time_s=time_s, options={},
                           description="Made by quick compare: sysbench's defaults.")


def quick_campaign_create(*, matrix: QuickMatrix, user: Any = None) -> Campaign:
    """The campaign of a quick comparison, with its datasets and scenarios (reused when the same shape exists)."""
    if not matrix.targets or not matrix.tests or not matrix.threads:
        raise ValidationError("Tick at least one target and one test, and give at least one thread count.")
    with transaction.atomic():
        dataset = quick_dataset(tables=matrix.tables, table_size=matrix.table_size, user=user)
        scenarios = [quick_scenario(test=test, dataset=dataset, time_s=matrix.time_s, user=user)
                     for test in matrix.tests]
        base = matrix.name.strip() or f"Quick compare {timezone.localtime():%Y-%m-%d %H:%M}"
        name, _ = _free_name(Campaign, "name", base, lambda c: False)
        try:
            return campaign_create(
                user=user, targets=matrix.targets, scenarios=scenarios,
                name=name, threads=matrix.threads, repetitions=matrix.repetitions, run_time_s=matrix.time_s,
                warmup_override_s=0,
                description=(f"Quick compare: {', '.join(matrix.tests)} on "
                             f"{', '.join(t.name for t in matrix.targets)}, "
                             f"{shape_label(tables=matrix.tables, table_size=matrix.table_size)} rows."),
            )
        except ValidationError as exc:
            raise _prefixed(exc, "", {"run_time_s": "time_s"}) from None


@dataclass(frozen=True, slots=True)
class QuickPlan:
    """What a quick comparison's launch would do, shown before anything is kept: campaign_plan's jobs (in order,
    with their commands and estimates), how many, how long and how much data in all, and the matrix's shape the
    page sums it up with (targets × tests × thread counts × repetitions, each job's measured seconds plus about
    overhead_s of its own)."""

    jobs: list[dict[str, Any]]
    job_count: int
    estimated_duration_s: float
    estimated_duration: str
    estimated_dataset_bytes: int
    targets: int
    tests: int
    threads: int
    repetitions: int
    time_s: int
    overhead_s: float


def quick_compare_plan(*, matrix: QuickMatrix) -> QuickPlan:
    """The plan a launch would follow (campaign_plan's), made on rows that are rolled back: nothing is kept."""
    with transaction.atomic():
        campaign = quick_campaign_create(matrix=matrix)
        plan = campaign_plan(campaign=campaign)
        transaction.set_rollback(True)
    return QuickPlan(
        jobs=plan["jobs"], job_count=plan["job_count"], estimated_duration_s=plan["estimated_duration_s"],
        estimated_duration=plan["estimated_duration"], estimated_dataset_bytes=plan["estimated_dataset_bytes"],
        targets=len(matrix.targets), tests=len(matrix.tests), threads=len(matrix.threads),
        repetitions=matrix.repetitions, time_s=matrix.time_s, overhead_s=JOB_OVERHEAD_S,
    )


def quick_compare_launch(*, matrix: QuickMatrix, user: Any = None) -> Run:
    """Creates the campaign of a quick comparison and launches it; nothing is kept if the launch is refused."""
    with transaction.atomic():
        campaign = quick_campaign_create(matrix=matrix, user=user)
        return campaign_launch(campaign=campaign, user=user, label="quick compare")
