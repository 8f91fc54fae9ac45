"""benchapp's domain: what is benchmarked, how, and what came out.

Products and instance specs describe the systems under test; a Target is one reachable endpoint of
a product on a spec. Datasets and Scenarios describe the sysbench workload. A Campaign is the
matrix (targets × scenarios × threads × repetitions); each launch of it is a Run made of Jobs,
and each Job is executed by one or more JobClients (sysbench processes on client hosts) whose
per-second reports are IntervalSamples and whose final figures become the JobResult.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from campaigns.addresses import emails_clean, emails_split
from campaigns.crypto import decrypt_secret, encrypt_secret
from campaigns.endpoints import own_service_problem
from campaigns.querysets import ClientHostQuerySet, JobQuerySet, RunQuerySet
from campaigns.settings_variants import VariantError, variants_clean
from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_TABLE_ROWS_REASON
from campaigns.sysbench.parser import merge_histograms
from campaigns.validity import RunVerdicts


class Product(models.Model):
    """A database product as a white paper names it (e.g. "TencentDB for MySQL 8.0").

    The engine says which family of server it is, which decides how benchapp reads its settings
    and status counters around each job.
    """

    class Engine(models.TextChoices):
        MYSQL = "mysql", "MySQL"
        MARIADB = "mariadb", "MariaDB"
        POSTGRESQL = "postgresql", "PostgreSQL"
        OTHER = "other", "Other"

    name = models.CharField(max_length=200, unique=True)
    engine = models.CharField(max_length=20, choices=Engine.choices)
    version = models.CharField(max_length=100, blank=True)
    vendor = models.CharField(max_length=200, blank=True)
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class InstanceSpec(models.Model):
    """A hardware or cloud instance class, such as "8-core 32 GB MEM".

    The price per hour is optional; where it is set, comparisons show throughput per unit of price.
    """

    label = models.CharField(max_length=200, unique=True)
    cpu_cores = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    memory_gb = models.FloatField(validators=[MinValueValidator(0.0)])
    storage_gb = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.0)])
    storage_type = models.CharField(max_length=100, blank=True)
    price_per_hour = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True, validators=[MinValueValidator(0)]
    )
    currency = models.CharField(max_length=8, blank=True, default="USD")
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["cpu_cores", "memory_gb", "label"]

    def __str__(self) -> str:
        return self.label

    def clean(self) -> None:
        from campaigns.models.checks import limit_problems

        problems = limit_problems(self)
        if problems:
            raise ValidationError(problems)


class SecretsDeferredManager(models.Manager[Any]):
    """A client host's worker never selects a model's encrypted columns: its database role may not read them (and
    has no key for them: campaigns.services.client_access). Every other process loads them as usual."""

    def __init__(self, *columns: str) -> None:
        super().__init__()
        self.secret_columns = columns

    def deconstruct(self) -> Any:
        as_manager, path, qs_class, _, kwargs = super().deconstruct()
        return as_manager, path, qs_class, self.secret_columns, kwargs

    def get_queryset(self) -> models.QuerySet[Any]:
        queryset = super().get_queryset()
        return queryset.defer(*self.secret_columns) if settings.BENCHAPP_WORKER_ROLE == "client" else queryset


class Target(models.Model):
    """One endpoint that sysbench connects to: a product running on an instance spec.

    The password is stored encrypted (see campaigns.crypto) and is never rendered back: forms and
    the API treat it as write-only, and every stored command line carries "***" in its place.
    Saving a target whose driver, host, port, user or database changed clears its stored password
    unless a password was set on this instance since it was loaded (save() enforces it, so the API,
    the pages and Django's admin all obey it): otherwise re-pointing a target at a server of one's
    own would hand that server the password. `password_cleared` says afterwards that it happened.
    """

    class Driver(models.TextChoices):
        MYSQL = "mysql", "mysql"
        PGSQL = "pgsql", "pgsql"

    class Kind(models.TextChoices):
        """What is measured: a database server (sysbench's OLTP tests), or a registered client host itself
        (sysbench's host tests: cpu, memory, fileio, threads, mutex; docs/host-tests.md)."""

        DATABASE = "database", "database server"
        CLIENT_HOST = "client_host", "client host (host tests)"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.DATABASE)
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="targets")
    spec = models.ForeignKey(
        InstanceSpec, on_delete=models.PROTECT, related_name="targets", null=True, blank=True
    )
    # A database target needs all of driver, port, database and user (clean()); a client-host target none: its
    # host is the registered client host's name, where its jobs run.
    driver = models.CharField(max_length=10, choices=Driver.choices, blank=True)
    host = models.CharField(max_length=255)
    port = models.PositiveIntegerField(null=True, blank=True,
                                       validators=[MinValueValidator(1), MaxValueValidator(65535)])
    database = models.CharField(max_length=128, blank=True)
    user = models.CharField(max_length=128, blank=True)
    password_encrypted = models.TextField(blank=True, default="", editable=False)
    is_demo = models.BooleanField(default=False)
    # Lua uploaded by users (workloads of one's own) runs on this target only when its owner or an admin says so:
    # such code gets the target's password and does what it likes with the server.
    workloads_allowed = models.BooleanField(
        default=False, help_text="Uploaded workloads (Lua of one's own) may run on this target; only its owner "
                                 "or an admin may change this")
    # Who added it, for "mine only" in lists and pickers (None for rows older than the field, and demo rows).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # A password belongs to the server it was typed for: pointed elsewhere, a target must be given it again.
    ENDPOINT_FIELDS = ("driver", "host", "port", "user", "database")
    PASSWORD_CLEARED_MESSAGE = (
        "The stored password was removed because the target's driver, host, port, user or database changed; "
        "enter the password again if the new endpoint needs one."
    )
    password_cleared = False
    _password_given = False

    objects = SecretsDeferredManager("password_encrypted")

    class Meta:
        ordering = ["name"]
        base_manager_name = "objects"  # a job's target, loaded by itself: without the encrypted password too

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.password_cleared = False
        if self.pk is not None and self.has_password() and not self._password_given and self._endpoint_changed():
            self.password_encrypted = ""
            self.password_cleared = True
            update_fields = kwargs.get("update_fields")
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "password_encrypted"}
        super().save(*args, **kwargs)
        self._password_given = False

    def _endpoint_changed(self) -> bool:
        """Whether the stored row points elsewhere than this instance (compared with the database, not with
        what was loaded, so that however the instance was obtained the rule holds)."""
        stored = Target.objects.filter(pk=self.pk).values_list(*self.ENDPOINT_FIELDS).first()
        if stored is None:
            return False
        return tuple(map(str, stored)) != tuple(str(getattr(self, name)) for name in self.ENDPOINT_FIELDS)

    def set_password(self, raw: str) -> None:
        self.password_encrypted = encrypt_secret(raw)
        self._password_given = True

    def get_password(self) -> str:
        return decrypt_secret(self.password_encrypted)

    def has_password(self) -> bool:
        return self.password_encrypted != ""

    def endpoint_label(self) -> str:
        if self.is_client_host():
            return f"client host {self.host}"
        return f"{self.driver}://{self.user}@{self.host}:{self.port}/{self.database}"

    def is_client_host(self) -> bool:
        """Whether this target is a client host measured by host tests (no database)."""
        return self.kind == self.Kind.CLIENT_HOST

    def clean(self) -> None:
        from campaigns.models.hosttests import client_host_target_problems
        from campaigns.sysbench.command import connection_problems

        if self.is_client_host():
            problems = client_host_target_problems(self)
            if problems:
                raise ValidationError(problems)
            return
        missing = {name: "This field is required for a database target." for name in ("driver", "port", "database",
                                                                                      "user")
                   if getattr(self, name) in (None, "")}
        if missing:
            raise ValidationError(missing)
        # These reach sysbench as option values (--mysql-host=…): checked as a scenario's options are,
        # so that whitespace, a line break or a leading dash never reads as another argument.
        problems = connection_problems(host=self.host, user=self.user, database=self.database)
        if not problems.get("host"):
            own = own_service_problem(host=self.host, port=self.port, database=self.database)
            if own:
                problems["host"] = own
        if problems:
            raise ValidationError(problems)


class Dataset(models.Model):
    """A named data profile: how many sbtest tables of how many rows.

    sizes_by_spec overrides tables × table_size for particular specs (seed 001's "big dataset"
    differs per instance class), keyed by InstanceSpec label. A campaign's scale factor shrinks
    the rows so the same campaign can be smoke-run small.
    """

    name = models.CharField(max_length=200, unique=True)
    tables = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(100000)])
    table_size = models.BigIntegerField(validators=[
        MinValueValidator(1),
        MaxValueValidator(MAX_TABLE_ROWS, message=f"at most {MAX_TABLE_ROWS:,} rows per table: {MAX_TABLE_ROWS_REASON}"),
    ])
    sizes_by_spec = models.JSONField(default=dict, blank=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.tables} × {self.table_size:,})"

    def clean(self) -> None:
        from campaigns.models.checks import sizes_by_spec_problem

        problem = sizes_by_spec_problem(self.sizes_by_spec)
        if problem:
            raise ValidationError({"sizes_by_spec": problem})
        if self.pk is not None:  # a new shape must not contradict what its scenarios' options say (Scenario.clean)
            from campaigns.sysbench.catalogue import dataset_option_conflict

            for name, options, size_option, size_unit in self.scenarios.values_list(
                    "name", "options", "workload_version__workload__size_option",
                    "workload_version__workload__size_unit"):
                conflict = dataset_option_conflict(options or {}, dataset_name=self.name, tables=self.tables,
                                                   table_size=self.table_size, size_option=size_option or "",
                                                   size_unit=size_unit or "rows")
                if conflict is not None:
                    field = "tables" if "tables" in conflict.option else "table_size"
                    raise ValidationError({field: f"contradicts the scenario '{name}', whose options say "
                                                  f"{conflict.option}={options[conflict.option]}: change or remove "
                                                  "that option first"})

    def size_for(self, spec: InstanceSpec | None, *, scale: float = 1.0) -> tuple[int, int]:
        """Tables and rows per table for a spec, after the scale factor."""
        tables, table_size = self.tables, self.table_size
        if spec is not None and spec.label in self.sizes_by_spec:
            tables, table_size = (int(v) for v in self.sizes_by_spec[spec.label])
        if scale != 1.0:
            # Rows shrink linearly; tables shrink too, but never below one, so a 250-table
            # dataset at scale 0.001 does not spend its time creating empty tables.
            tables = max(1, min(tables, math.ceil(tables * scale)))
            table_size = max(1, round(table_size * scale))
        return tables, table_size


class Scenario(models.Model):
    """A sysbench workload: the test, its options, the dataset it runs on and its timings.

    options holds validated, canonical sysbench option names (test and common options, never
    connection options, threads or time, which come from the campaign and the fields here).
    """

    class PrepareMode(models.TextChoices):
        AUTO = "auto", "prepare unless the same dataset is already prepared on the target"
        ALWAYS = "always", "always drop and prepare again"
        NEVER = "never", "never prepare: the data is already there"

    class Cleanup(models.TextChoices):
        KEEP = "keep", "keep the data"
        AFTER_JOB = "after_job", "drop the tables after each job"
        AFTER_RUN = "after_run", "drop the tables when the run ends"

    name = models.CharField(max_length=200, unique=True)
    test = models.CharField(max_length=100)
    # A workload of one's own (campaigns/models/workloads.py): then `test` is its label, set from the version.
    workload_version = models.ForeignKey("campaigns.WorkloadVersion", on_delete=models.PROTECT, null=True,
                                         blank=True, related_name="scenarios")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="scenarios")
    options = models.JSONField(default=dict, blank=True)
    time_s = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1)])
    warmup_s = models.PositiveIntegerField(default=0)
    report_interval_s = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    percentile = models.FloatField(
        default=95.0, validators=[MinValueValidator(0.0), MaxValueValidator(100.0)]
    )
    prepare_mode = models.CharField(max_length=10, choices=PrepareMode.choices, default=PrepareMode.AUTO)
    cleanup = models.CharField(max_length=10, choices=Cleanup.choices, default=Cleanup.AFTER_RUN)
    prepare_threads = models.PositiveIntegerField(default=4, validators=[MinValueValidator(1)])
    table_ddl = models.TextField(
        blank=True, help_text="Optional CREATE TABLE template; {table} is replaced by each table name."
    )
    preset = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from campaigns.models.checks import limit_problems
        from campaigns.sysbench.catalogue import OptionError, dataset_option_conflict, validate_options
        from campaigns.sysbench.ddl import table_ddl_error

        limits = limit_problems(self)
        if limits:
            raise ValidationError(limits)
        # It runs with the target's credentials: one checked CREATE TABLE, which must run on MySQL/MariaDB
        # or PostgreSQL targets (a launch checks it again for each target's own driver).
        if self.table_ddl:
            problem = table_ddl_error(self.table_ddl)
            if problem is not None:
                raise ValidationError({"table_ddl": f"refused: {problem}"})
        if self.percentile is not None and not float(self.percentile).is_integer():
            raise ValidationError({"percentile": "sysbench takes a whole percentile between 0 and 100"})

        version = self.workload_version
        if version is not None:
            self.test = version.label()
            if self.table_ddl:
                raise ValidationError({"table_ddl": "a workload of one's own creates its tables itself"})
        try:
            self.options = validate_options(self.test_spec(), self.options or {})
        except OptionError as exc:
            field = "test" if exc.option == "test" else "options"
            raise ValidationError({field: str(exc)}) from None
        dataset = self.dataset if self.dataset_id is not None else None
        if dataset is not None:
            spec = self.test_spec()
            conflict = dataset_option_conflict(self.options, dataset_name=dataset.name, tables=dataset.tables,
                                               table_size=dataset.table_size,
                                               size_option=getattr(spec, "size_option", ""),
                                               size_unit=getattr(spec, "size_unit", "rows"))
            if conflict is not None:
                raise ValidationError({"options": conflict.message})
        from campaigns.models.hosttests import host_scenario_clean

        host_scenario_clean(self)

    def clean_fields(self, exclude: Any = None) -> None:
        # A workload version names the test: set before the fields' own checks (`test` may not be blank).
        if self.workload_version_id is not None and self.workload_version is not None:
            self.test = self.workload_version.label()
        super().clean_fields(exclude=exclude)

    def size_noun(self) -> str:
        """What its dataset's size counts: a workload's declared unit ("warehouses"), else "rows"."""
        version = self.workload_version
        return version.workload.size_noun() if version is not None else "rows"

    def test_spec(self) -> Any:
        """The test as validate_options and build_argv take it: a bundled test's name, or a workload version's
        spec (from sysbench's help of its entry script)."""
        version = self.workload_version
        return version.test_spec() if version is not None else self.test


MAX_TABLE_SIZES = 16


def table_sizes_problem(sizes: object) -> str | None:
    """Why a campaign's table_sizes cannot be swept, or None: whole numbers from 1 to MAX_TABLE_ROWS, at most
    MAX_TABLE_SIZES of them, none twice."""
    if not isinstance(sizes, list):
        return "a list of sizes per table was expected, e.g. [1, 2, 4]"
    if len(sizes) > MAX_TABLE_SIZES:
        return f"{len(sizes)} sizes: a campaign sweeps at most {MAX_TABLE_SIZES}"
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_TABLE_ROWS:
            return f"{size!r}: each size is a whole number from 1 to {MAX_TABLE_ROWS:,}"
    if len(set(sizes)) != len(sizes):
        return "a size is given twice"
    return None


def hosts_allowed(choice: list[str], hostname: str, labels: list[str]) -> bool:
    """Whether a client host is among a campaign's choice (names or labels; an empty choice allows any)."""
    return not choice or hostname in choice or any(label in choice for label in labels)


class Campaign(models.Model):
    """A benchmark matrix: targets × scenarios × thread counts × repetitions.

    threads_by_spec and threads_by_scenario override the thread list (white papers pick a
    concurrency per instance class and per scenario). The client rule says how many client hosts
    one job uses: clients_min, plus one per clients_per_threads threads beyond that many.
    The webhook URL is stored encrypted and never shown again (forms and the API say only whether one is set).
    """

    # threads_by_scenario keys "<scenario name> @ <spec label>" hold one cell's list (seed 001's concurrency
    # differs per scenario and instance class).
    PAIR_SEPARATOR = " @ "

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    targets = models.ManyToManyField(Target, related_name="campaigns", blank=True)
    scenarios = models.ManyToManyField(Scenario, related_name="campaigns", blank=True)
    threads = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    threads_by_spec = models.JSONField(default=dict, blank=True)
    threads_by_scenario = models.JSONField(default=dict, blank=True)
    repetitions = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(100)]
    )
    clients_min = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    clients_per_threads = models.PositiveIntegerField(null=True, blank=True)
    scale_factor = models.FloatField(
        default=1.0, validators=[MinValueValidator(1e-9), MaxValueValidator(1.0)]
    )
    # A window for rows per table after the scale factor. A reduced run of a document whose datasets
    # differ by orders of magnitude (seed 001: 25,000 rows per table beside 4,000,000,000) needs both:
    # a few dozen rows turn a write test into a lock-contention test, billions spend the run preparing.
    table_rows_min = models.PositiveBigIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="After scaling, tables get at least this many rows (never more than the dataset's own size).",
    )
    table_rows_max = models.PositiveBigIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="After scaling, tables get at most this many rows.",
    )
    # Sizes per table swept like thread counts: every scenario runs at each (rows, or a workload's own unit such
    # as sysbench-tpcc's warehouses), its dataset's tables kept; the scale factor and the rows window then do not
    # apply. Empty: each dataset's own size.
    table_sizes = ArrayField(models.PositiveBigIntegerField(), default=list, blank=True)
    keep_data = models.BooleanField(default=False)
    run_time_s = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Measured seconds per job for every scenario (a smoke run); empty keeps each scenario's time.",
    )
    warmup_override_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="Warm-up seconds for every scenario; empty keeps each scenario's warm-up.",
    )
    is_template = models.BooleanField(default=False)
    template_key = models.CharField(max_length=100, blank=True)
    regression_threshold_pct = models.FloatField(default=5.0, validators=[MinValueValidator(0.0)])
    noise_cv_pct = models.FloatField(default=5.0, validators=[MinValueValidator(0.0)])
    baseline_run = models.ForeignKey(
        "Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    baseline_last_n = models.PositiveIntegerField(default=5, validators=[MinValueValidator(1)])
    # A cell that alarms is measured again at once (a confirmation run of the alarmed cells, interleaved), and only an
    # alarm its fresh measurement upholds is told by e-mail or webhook (campaigns.monitoring.confirmation).
    confirm_alarms = models.BooleanField(
        default=True, help_text="Measure a cell that alarms again at once, and tell anyone only when the alarm holds.")
    # The client hosts this campaign's jobs may run on, by host name or label; empty: any online host. No part of
    # a job (prepare, warm-up, the measured clients) runs on a host outside the choice.
    client_hosts = ArrayField(models.CharField(max_length=255), default=list, blank=True,
                              help_text="host names or labels; empty: any client host")
    # A job holds its target's server (every database on it) and its client hosts against every other run while it
    # prepares, warms up and measures (campaigns.execution.turns). Two campaigns that both share on purpose (a
    # test of concurrent tenants) measure beside each other on one server; never on one database.
    # A measurement spoiled from outside (other processes on its host, another job on its server, foreign queries
    # on the server, a stall past --time) is measured again within job_tries (execution.results).
    remeasure_spoiled = models.BooleanField(
        default=True,
        help_text="Measure a job again, within its measurements per job, when its verdict says something outside it "
                  "spoiled it (a busy host, another job on its server, foreign queries, a stall); the spoiled "
                  "attempt is kept as an earlier one.")

    # Quiet before measuring (execution.coordinator._quiet_wait): seconds its server and coordinating host are
    # watched before a job measures; 0: not watched.
    quiet_s = models.PositiveIntegerField(
        default=3, validators=[MaxValueValidator(60)],
        help_text="Seconds the server and the client host are watched for quiet before each job measures (others' "
                  "queries, a busy CPU); the job waits for quiet, at most a minute. 0: not watched.")

    # A latency limit its comparisons report against (comparison.curves): the highest throughput that keeps it.
    sla_ms = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.001), MaxValueValidator(10_000_000)],
        help_text="A latency limit in ms on the percentile its jobs measure (p95 by default), e.g. 50: its "
                  "comparisons report, per product, the highest throughput whose latency keeps it. Blank: none.")

    # An adaptive ladder (campaigns.ladder): once a run's planned jobs are done, it measures thread counts around
    # each ladder's peak, knee and latency limit until each is located to within the resolution; never beyond the
    # planned range, at most campaigns.ladder.MAX_ADDED counts per ladder.
    adaptive_ladder = models.BooleanField(
        default=False,
        help_text="After the planned thread counts, measure counts between them around each peak, knee and latency "
                  "limit until each is located to within the resolution (never beyond the planned range, at most 8 "
                  "more counts per target and scenario).")
    ladder_resolution_pct = models.PositiveIntegerField(
        default=25, validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="The adaptive ladder stops when the counts around a peak, knee or limit are this close (a gap of at "
                  "most this % of the lower count, or one thread): 25 locates a peak near 200 threads to ±50.")

    # A sampled on-CPU profile (perf) of the target server's process during each job's steady window, where the
    # server runs on the client host that measures it (execution.profiles); off by default: bench/profile_cost.py.
    profile_server = models.BooleanField(
        default=False,
        help_text="Sample the target server's process with perf during each job's steady window, where the server "
                  "runs on the client host (a local target): comparisons then show where its CPU went. Off by "
                  "default; it costs a little throughput.")

    class JobOrder(models.TextChoices):
        INTERLEAVED = "interleaved", "interleaved: each repetition of a thread count on every target and variant in turn"
        BLOCKED = "blocked", "blocked: every job of a target (and variant) before the next one's"

    # The order a run's jobs measure in (services.plans.campaign_expand). Interleaved, a drift of the machines'
    # load over the run falls on every target and variant alike instead of on whichever measured last.
    job_order = models.CharField(
        max_length=12, choices=JobOrder.choices, default=JobOrder.INTERLEAVED,
        help_text="interleaved (default): per scenario and thread count, each repetition runs on every target and "
                  "variant in turn, reversed every second repetition (A B, B A …), so a drift of the host's load "
                  "falls on all of them alike; blocked: "
                  "every job of one target and variant, then the next's.")
    share_server = models.BooleanField(
        default=False,
        help_text="Measure beside other runs that share too, on the same servers and client hosts (a test of "
                  "concurrent tenants); off: each job has its server and client hosts to itself.")
    # A client host lost before its sysbench started measuring costs the job nothing: its share is sent to another
    # eligible host, up to this many sends in all (campaigns.execution.resend).
    client_tries = models.PositiveIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(5)],
        help_text="Sends of a client's share in all, when its host is lost before it starts measuring (1 to 5).",
    )
    # When no worker able to take a run's next job has beaten for BENCHAPP_NO_WORKER_S, the run's pages say so at once;
    # after this many minutes the webhook and the e-mail recipients are told, once per absence (0: at once).
    no_worker_notify_min = models.PositiveIntegerField(
        default=10, validators=[MaxValueValidator(7 * 24 * 60)],
        help_text="Minutes without a live worker before the webhook and e-mail recipients are told (0: at once).",
    )
    # A job whose measurement the infrastructure spoiled (worker or pool child lost, client host lost while
    # measuring, sysbench killed by a signal benchapp did not send, the target restarted mid-run) is measured
    # again as a new attempt, up to this many measurements in all (campaigns.execution.attempts). Not
    # client_tries: that counts sends of one client's share before anything was measured, which cost no attempt.
    job_tries = models.PositiveIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(10)],
        help_text="Measurements of a job in all, when the infrastructure spoils one (1 to 10).",
    )
    # A target that cannot be reached (refused, reset, timed out, too many connections, read-only) pauses its
    # jobs, which try again with exponential back-off; only after this long does that target's work fail.
    target_wait_s = models.PositiveIntegerField(
        default=1800, validators=[MaxValueValidator(7 * 24 * 3600)],
        help_text="Seconds a job waits for an unreachable target before it fails (0: fail at once).",
    )
    # Often a secret (a Slack URL carries its token): encrypted like target passwords and write-only.
    webhook_url_encrypted = models.TextField(blank=True, default="", editable=False)
    notify_emails = models.TextField(blank=True)
    # Named sets of server settings crossed with targets, scenarios and threads (campaigns.settings_variants):
    # [{"name": "flush=2", "mysql": {"innodb_flush_log_at_trx_commit": "2"}, "pgsql": {...}}]; empty: none.
    variants = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SecretsDeferredManager("webhook_url_encrypted")

    class Meta:
        ordering = ["-created_at"]
        base_manager_name = "objects"  # a run's campaign, loaded by itself: without the encrypted webhook too

    def __str__(self) -> str:
        return self.name

    def set_webhook_url(self, raw: str) -> None:
        self.webhook_url_encrypted = encrypt_secret(raw)

    def get_webhook_url(self) -> str:
        return decrypt_secret(self.webhook_url_encrypted)

    def has_webhook(self) -> bool:
        return self.webhook_url_encrypted != ""

    def clean(self) -> None:
        from campaigns.models.checks import limit_problems, threads_map_problem, threads_problem

        problems = limit_problems(self)
        if (self.table_rows_min is not None and self.table_rows_max is not None
                and self.table_rows_min > self.table_rows_max):
            problems["table_rows_min"] = "must not be more than table_rows_max"
        sizes_problem = table_sizes_problem(self.table_sizes)
        if sizes_problem:
            problems["table_sizes"] = sizes_problem
        for name, check in (("threads", threads_problem), ("threads_by_spec", threads_map_problem),
                            ("threads_by_scenario", threads_map_problem)):
            problem = check(getattr(self, name))
            if problem:
                problems[name] = problem
        baseline = self.baseline_run if self.baseline_run_id is not None else None
        if baseline is not None and (self.pk is None or baseline.campaign_id != self.pk):
            problems["baseline_run"] = "the baseline must be a run of this campaign"
        try:
            self.notify_emails = emails_clean(self.notify_emails)
        except ValidationError as exc:
            problems["notify_emails"] = " ".join(exc.messages)
        try:
            self.variants = variants_clean(self.variants)
        except VariantError as exc:
            problems["variants"] = str(exc)
        if problems:
            raise ValidationError(problems)

    def recipients(self) -> list[str]:
        """The addresses news of this campaign is e-mailed to (notify_emails, one per line)."""
        return emails_split(self.notify_emails)

    def dataset_sizes(self, dataset: Dataset, spec: InstanceSpec | None) -> list[tuple[int, int]]:
        """Every (tables, size per table) a dataset runs at in this campaign: each of its table_sizes with the
        dataset's tables (after the scale factor), else the one dataset_size."""
        if not self.table_sizes:
            return [self.dataset_size(dataset, spec)]
        tables = dataset.size_for(spec, scale=self.scale_factor)[0]
        return [(tables, int(size)) for size in dict.fromkeys(self.table_sizes)]

    def dataset_size(self, dataset: Dataset, spec: InstanceSpec | None) -> tuple[int, int]:
        """Tables and rows per table of a dataset in this campaign: scaled, then kept in the rows window."""
        tables, rows = dataset.size_for(spec, scale=self.scale_factor)
        if self.table_rows_min is not None:
            full_rows = dataset.size_for(spec)[1]
            rows = max(rows, min(self.table_rows_min, full_rows))
        if self.table_rows_max is not None:
            rows = min(rows, self.table_rows_max)
        return tables, rows

    def clients_for(self, threads: int) -> int:
        """Client hosts one job needs: seed 001's "2 clients, one more per 1,000 threads"."""
        if not self.clients_per_threads:
            return self.clients_min
        extra = max(0, math.ceil((threads - self.clients_per_threads) / self.clients_per_threads))
        return self.clients_min + extra

    def threads_for(self, target: Target, scenario: Scenario) -> list[int]:
        """The thread list for one cell (see threads_for_names)."""
        return self.threads_for_names(spec_label=target.spec.label if target.spec is not None else None,
                                      scenario_name=scenario.name)

    def threads_for_names(self, *, spec_label: str | None, scenario_name: str) -> list[int]:
        """The thread list for a scenario on a spec, the one rule for campaigns and seed templates alike:
        the pair "<scenario> @ <spec label>" first (white papers pick a concurrency per scenario and spec),
        then the scenario's list, then the spec's, then the campaign's default list."""
        if spec_label is not None:
            pair = f"{scenario_name}{self.PAIR_SEPARATOR}{spec_label}"
            if pair in self.threads_by_scenario:
                return [int(t) for t in self.threads_by_scenario[pair]]
        if scenario_name in self.threads_by_scenario:
            return [int(t) for t in self.threads_by_scenario[scenario_name]]
        if spec_label is not None and spec_label in self.threads_by_spec:
            return [int(t) for t in self.threads_by_spec[spec_label]]
        return [int(t) for t in self.threads]


class Run(models.Model):
    """One execution of a campaign: the jobs it expanded to and their collective status.

    Its status follows its jobs (campaigns.execution.transitions.run_outcome): succeeded when all of them
    did, partially_succeeded when some did, failed when none did, cancelled when it was cancelled.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        PARTIALLY_SUCCEEDED = "partially_succeeded", "partially succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.SUCCEEDED, Status.PARTIALLY_SUCCEEDED, Status.FAILED, Status.CANCELLED)
    ACTIVE = (Status.PENDING, Status.RUNNING)

    class Trigger(models.TextChoices):
        MANUAL = "manual"
        API = "api"
        SCHEDULED = "scheduled"
        IMPORT = "import"
        CONFIRM = "confirm"  # the alarmed cells of a run, measured again before anyone is told

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    trigger = models.CharField(max_length=12, choices=Trigger.choices, default=Trigger.MANUAL)
    label = models.CharField(max_length=200, blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A run queued behind another (a suite of campaigns on the same targets) stays pending until
    # that run has finished, whatever its outcome: two runs on one target would measure each other
    # and overwrite each other's sbtest tables.
    waits_for = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="followers",
        help_text="This run starts when that run has finished.",
    )
    # The Celery queue its jobs were sent on. A reconciler repairs only the runs of its own queue, so
    # two installations (or two test sessions, or a test with a broker of its own) on one database never
    # re-send each other's jobs.
    queue = models.CharField(max_length=200, blank=True)
    # The id of the request (or the task) that launched it (benchapp/requestid.py): a job of the run that fails,
    # is measured again or ends invalid logs it, so that `grep <id>` finds the launch and its outcome, whichever
    # process (a reconciler, another host's worker) closed the job. Empty for a run no request started.
    request_id = models.CharField(max_length=100, blank=True, default="")
    # When the campaign's webhook and recipients were told that no worker was alive for this run; cleared when one
    # is back, so that a later absence is told again (campaigns.monitoring.runs_no_worker_notify, from beat).
    no_worker_notified_at = models.DateTimeField(null=True, blank=True)

    class Rerun(models.TextChoices):
        NONE = "", "a launch of the campaign"
        FAILED = "failed", "the failed and cancelled jobs of another run"
        ALL = "all", "every job of another run"
        CONFIRM = "confirm", "the cells of another run that alarmed, measured again before anyone is told"

    # "Retry failed jobs" and "Run again" make a new run of the jobs of an earlier one (not of the campaign as it
    # is now, which may have changed since): a comparison of the earlier run takes each cell from its latest
    # successful attempt, i.e. from its failed-job retries too.
    rerun_of = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="reruns")
    rerun = models.CharField(max_length=10, choices=Rerun.choices, blank=True, default=Rerun.NONE)
    # When the checks that follow a finished run (regressions, change points, annotations, notifications) were done:
    # a pipeline waits for this, not for a guessed delay, before it reads the run's regressions.
    evaluated_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "idempotency_key"], name="run_unique_idempotency_key"
            ),
            # Two runs of one campaign would measure each other and drop each other's tables. An import is
            # created and closed in one transaction and measures nothing: it may sit beside a live run.
            models.UniqueConstraint(
                fields=["campaign"], condition=models.Q(status__in=["pending", "running"]) & ~models.Q(trigger="import"),
                name="run_one_active_per_campaign",
                violation_error_message="the campaign already has a run in progress",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name} run #{self.pk}"

    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    def verdicts(self) -> RunVerdicts:
        """Its succeeded jobs by verdict: from RunQuerySet.with_verdicts()'s annotations where the row has them
        (a list of runs), else counted now."""
        annotated = [getattr(self, f"jobs_{verdict}", None) for verdict in ("valid", "suspect", "invalid")]
        if all(n is not None for n in annotated):
            return RunVerdicts(*(int(n) for n in annotated if n is not None))
        counts = dict(self.jobs.filter(status=Job.Status.SUCCEEDED).exclude(verdict="").order_by()
                      .values_list("verdict").annotate(n=models.Count("*")))
        return RunVerdicts(valid=counts.get("valid", 0), suspect=counts.get("suspect", 0),
                           invalid=counts.get("invalid", 0))

    def status_text(self, verdicts: RunVerdicts | None = None) -> str:
        """Its status with what its jobs' verdicts say (given, or counted): "Succeeded · 24 of 24 jobs invalid"."""
        spoiled = (verdicts or self.verdicts()).text()
        label = str(self.get_status_display())
        return f"{label} · {spoiled}" if spoiled else label


class Job(models.Model):
    """One cell of a run: a target × scenario × thread count × repetition.

    The job moves queued → preparing → running → succeeded | failed | cancelled (or waits for
    client hosts); only campaigns.execution.transitions changes its status and phase. Its sysbench
    processes are JobClients; its figures are the JobResult.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        WAITING = "waiting"
        PREPARING = "preparing"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Phase(models.TextChoices):
        """Where an active job is; "" before a coordinator claims it, "done" once it is closed."""

        NONE = "", "not started"
        PREPARE = "prepare", "preparing (target check, dataset, warm-up)"
        RUN = "run", "measuring"
        FINALIZING = "finalizing", "closing (results, snapshot, cleanup)"
        DONE = "done", "done"

    class Verdict(models.TextChoices):
        """Whether the job's figures can be believed (campaigns.validity); "" until it is judged."""

        NONE = "", "not judged"
        VALID = "valid"
        SUSPECT = "suspect"
        INVALID = "invalid"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
    ACTIVE = (Status.PREPARING, Status.RUNNING)
    PENDING = (Status.QUEUED, Status.WAITING)

    # Every column is either the current attempt's or the cell's (a test checks that none is both or neither).
    # A new attempt (transitions.job_requeue) starts each attempt column again from its default; the cell's
    # stay: what the cell is, its attempt counter and notes, and the dispatcher's bookkeeping (when it was
    # first queued, sent and claimed: the queue-wait figures and the run's turn order count from those).
    ATTEMPT_FIELDS = (
        "status", "phase", "error", "wait_reason", "command_line", "start_skew_ms", "wall_time_s", "server_snapshot",
        "cache_hit_ratio", "cache_warning", "verdict", "server_window", "findings", "claimed_by", "started_at",
        "finished_at", "heartbeat_at", "release_at", "prepare_progress", "prepare_wall_s", "warmup_started_at",
        "warmup_wall_s", "measured_at", "unreachable_since", "next_try_at", "check_outcome", "check_output",
        "server_work",
    )
    CELL_FIELDS = (
        "id", "run", "target", "scenario", "threads", "repetition", "position", "variant", "variant_settings",
        "tables", "table_size", "time_s", "warmup_s", "clients_needed", "imported", "dispatch_count", "queued_at",
        "dispatched_at", "claimed_at", "attempt", "notes", "added_for",
    )

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="jobs")
    target = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="jobs")
    scenario = models.ForeignKey(Scenario, on_delete=models.PROTECT, related_name="jobs")
    threads = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    repetition = models.PositiveIntegerField(default=1)
    position = models.PositiveIntegerField(default=0)
    # The campaign's settings variant this job runs under ("" without variants) and the settings it gives this
    # job's target, copied at launch (campaigns.execution.variants applies them and restores the originals).
    variant = models.CharField(max_length=40, blank=True, default="")
    variant_settings = models.JSONField(default=dict, blank=True)
    tables = models.PositiveIntegerField(default=1)
    table_size = models.BigIntegerField(default=1)
    time_s = models.PositiveIntegerField(null=True, blank=True, help_text="measured seconds (the scenario's unless the campaign overrides it)")
    warmup_s = models.PositiveIntegerField(null=True, blank=True)
    clients_needed = models.PositiveIntegerField(default=1)

    class AddedFor(models.TextChoices):
        PLANNED = "", "planned"
        PEAK = "peak", "added around the peak"
        KNEE = "knee", "added around the knee"
        SLA = "sla", "added around the latency limit"

    # Why the adaptive ladder (execution.ladder) added this job's thread count to its run; "" for a planned job.
    added_for = models.CharField(max_length=4, blank=True, choices=AddedFor.choices, default=AddedFor.PLANNED)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=20, blank=True, choices=Phase.choices, default=Phase.NONE)
    error = models.TextField(blank=True)
    wait_reason = models.CharField(max_length=300, blank=True)
    command_line = models.TextField(blank=True)
    start_skew_ms = models.FloatField(null=True, blank=True)
    wall_time_s = models.FloatField(null=True, blank=True)
    server_snapshot = models.JSONField(default=dict, blank=True)
    cache_hit_ratio = models.FloatField(null=True, blank=True)
    cache_warning = models.CharField(max_length=300, blank=True)
    verdict = models.CharField(max_length=10, blank=True, choices=Verdict.choices, default=Verdict.NONE)
    server_window = models.JSONField(default=dict, blank=True,
                                     help_text="the server's counters at the start and the end of the measurement")
    findings = models.JSONField(default=list, blank=True,
                                help_text="[{code, level, figure, message}], from campaigns.validity")
    # The server's own count of the work its target was asked for (probes.server_work_count), read by the server
    # itself when the job starts ("before") and when it closes ("after"): a client host may not write this column
    # (campaigns.services.client_access), so a host that forged its figures is contradicted by it (validity).
    server_work = models.JSONField(default=dict, blank=True,
                                   help_text="{driver, before, after}: the target server's work counter, read by "
                                             "benchapp's server as the job started and as it closed")
    imported = models.BooleanField(default=False)
    claimed_by = models.CharField(max_length=255, blank=True)
    dispatch_count = models.PositiveIntegerField(default=0)
    queued_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    release_at = models.DateTimeField(null=True, blank=True)
    prepare_progress = models.JSONField(
        null=True, blank=True,
        help_text="rows loaded so far by this job's prepare (MAX(id) per table), see campaigns.execution.datasets",
    )
    # Where a job's wall time goes (bench/job_gap.py, bench/quick_run.py): the dataset preparation this job did
    # (None when its dataset was ready), and its unmeasured warm-up's start and length.
    prepare_wall_s = models.FloatField(null=True, blank=True)
    warmup_started_at = models.DateTimeField(null=True, blank=True)
    warmup_wall_s = models.FloatField(null=True, blank=True)
    # Set once every client's sysbench has exited and the snapshot after the run is taken: the run's next job,
    # coordinated meanwhile, may start then (campaigns.execution.coordinator), before this one is closed.
    measured_at = models.DateTimeField(null=True, blank=True)
    # Which measurement of this cell the job is now (1 = the first). A job whose measurement was spoiled by
    # the infrastructure (worker or pool child lost, PostgreSQL or Redis restarted, client host lost, sysbench
    # killed by a signal benchapp did not send, target restarted mid-measurement) is measured again, up to the
    # campaign's tries; each earlier attempt is an Attempt row (job.attempts). Its per-second rows stay stored
    # under their own attempt number, apart from the one that counts.
    attempt = models.PositiveIntegerField(default=1)
    # A job waiting for its target (status waiting, wait_reason saying why): since when the target has been
    # unreachable, and when the job tries again (Celery's retry countdown). Both empty otherwise.
    unreachable_since = models.DateTimeField(null=True, blank=True)
    next_try_at = models.DateTimeField(null=True, blank=True)
    # The workload's check command (Workload.check_command), run on the target after the measurement: passed,
    # failed (the script said so), not_run (it could not be started or finish), "" when there is none; and the
    # end of what it printed, secrets redacted.
    class CheckOutcome(models.TextChoices):
        NONE = "", "not run"
        PASSED = "passed"
        FAILED = "failed"
        NOT_RUN = "not_run", "could not run"

    check_outcome = models.CharField(max_length=10, blank=True, default="", choices=CheckOutcome.choices)
    check_output = models.TextField(blank=True, default="")
    # What happened to the job beside its outcome, in sentences the job page and the API show ("the prepared
    # tables were missing on the target: the dataset was prepared again").
    notes = models.JSONField(default=list, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["run_id", "position", "id"]
        indexes = [models.Index(fields=["status", "run"])]

    def __str__(self) -> str:
        return f"job #{self.pk} {self.scenario.name} × {self.threads} thr on {self.target.name}"

    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    def run_time_s(self) -> int:
        return self.time_s if self.time_s is not None else self.scenario.time_s

    def warmup_time_s(self) -> int:
        return self.warmup_s if self.warmup_s is not None else self.scenario.warmup_s

    def latency_histogram(self, clients: list[JobClient] | None = None) -> list[list[float]] | None:
        """The whole job's latency histogram: [bucket ms, count] pairs, every client's buckets summed.

        None when the job's result has no latency distribution (result.latency_percentiles_missing
        says why) or some client has no histogram. `clients` saves a query when they are loaded.
        """
        try:
            result = self.result
        except ObjectDoesNotExist:
            return None
        if result.latency_percentiles_missing:
            return None
        histograms = [c.histogram for c in (clients if clients is not None else self.clients.all())]
        if not histograms or any(h is None for h in histograms):
            return None
        merged = merge_histograms([[(b[0], int(b[1])) for b in h] for h in histograms if h is not None])
        return [[value, count] for value, count in merged]

    def waiting_for_target(self) -> bool:
        """Whether the job waits for its unreachable target (and tries again at next_try_at)."""
        return self.status == self.Status.WAITING and self.unreachable_since is not None

    def waiting_text(self) -> str:
        """What the job waits for, in words: "waiting: target X unreachable since 21:14:31 (connection refused
        …), next try in 40 s"; "" when it does not wait."""
        if self.status != self.Status.WAITING:
            return ""
        if self.unreachable_since is None:
            return f"waiting: {self.wait_reason}" if self.wait_reason else "waiting"
        since = timezone.localtime(self.unreachable_since).strftime("%H:%M:%S")
        state = "blocked" if " blocked on the target" in self.wait_reason else "unreachable"
        text = f"waiting: target {self.target.name} {state} since {since} ({self.wait_reason})"
        if self.next_try_at is not None:
            left_s = (self.next_try_at - timezone.now()).total_seconds()
            if left_s >= 1:
                text += f", next try in {left_s:.0f} s"
            else:
                # Its try came while another job of the run (on another target) ran: it comes after that one.
                busy = Job.objects.filter(run_id=self.run_id, status__in=self.ACTIVE).exclude(pk=self.pk).values_list(
                    "position", flat=True).first()
                text += f", next try when job #{busy + 1} has finished" if busy is not None else ", next try now"
        return text

    def attempt_history(self) -> list[dict[str, Any]]:
        """Every measurement of this job, the current one last: {attempt, started_at, ended_at, cause, t_s, text}
        where text reads "attempt 1 lost at t = 6 s: client host vm lost while measuring …"."""
        earlier = [row.record() for row in self.attempts.all()] if self.attempt > 1 else []
        current = {"attempt": self.attempt, "started_at": self.started_at, "ended_at": self.finished_at,
                   "cause": self.error, "t_s": None, "text": f"attempt {self.attempt}: {self.status}"}
        return [*earlier, current]

    def last_lost(self) -> Any:
        """The attempt measured before this one (an Attempt row), None for a first attempt."""
        rows = list(self.attempts.all())
        return rows[-1] if rows else None

    @classmethod
    def attempt_fresh(cls) -> dict[str, Any]:
        """Every attempt column at its default: what a new attempt starts from (status queued)."""
        fields = {f.name: f for f in cls._meta.concrete_fields}
        return {name: fields[name].get_default() for name in cls.ATTEMPT_FIELDS}

    def duration_s(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class JobClient(models.Model):
    """One sysbench process of a job, on one client host, with its share of the threads.

    It keeps what that process did: the exact (redacted) command, its raw output, exit code and
    its own summary and latency histogram, from which the job's figures are merged.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        READY = "ready"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="clients")
    index = models.PositiveIntegerField(default=0)
    host_name = models.CharField(max_length=255, blank=True)
    threads = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    command_line = models.TextField(blank=True)
    raw_output = models.TextField(blank=True)
    prepare_output = models.TextField(blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    sysbench_version = models.CharField(max_length=50, blank=True)
    pid = models.IntegerField(null=True, blank=True)
    same_host = models.BooleanField(default=False, help_text="the target's address is this client host's own")
    # The host's facts as it announced them when it joined (ClientHost.facts()), copied when this client ran:
    # the job's environment stays what it was even after the host is upgraded or renamed.
    host_facts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # A client host's request that the server measure its job again (what spoiled it), written by the host itself on
    # its own client row (row-level security): the server's re-measure task acts only on such a request, so that a
    # message pushed to the shared queue cannot have another host's job measured again.
    remeasure_cause = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True)
    histogram = models.JSONField(null=True, blank=True)
    # A sampled on-CPU profile of the target server's process over the steady window, taken where the campaign asks
    # for one and the server runs on this client's host (execution.profiles): {samples, hz, window_s, symbols:
    # [[shared object, symbol, share %], ...], other_pct} or {error}; {} when none was asked for.
    profile = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # When its sysbench process exited (finished_at comes later: after the output is parsed and stored).
    exited_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    wall_time_s = models.FloatField(null=True, blank=True)
    # Which send of this client's share the row is now (1 = the first). A host lost before its sysbench started
    # measuring hands the row to another host (campaigns.execution.resend); each earlier send is a ClientSend row
    # (client.earlier_sends).
    attempt = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["job_id", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="jobclient_unique_index")]

    def __str__(self) -> str:
        return f"client {self.index} of job #{self.job_id}"

    def attempt_history(self) -> list[dict[str, Any]]:
        """Every send of this client's share, the current one last: host, sent and ended times, outcome, cause.

        The current send went out when the one before it ended (or, for the first, when the job started)."""
        earlier = [row.record() for row in self.earlier_sends.all()] if self.attempt > 1 else []
        sent_at = earlier[-1]["ended_at"] if earlier else self.job.started_at
        current = {"attempt": self.attempt, "host": self.host_name, "sent_at": sent_at,
                   "ended_at": self.finished_at, "outcome": self.status, "cause": self.error}
        return [*earlier, current]


class JobResult(models.Model):
    """The final figures of a job (summed over its clients), as sysbench printed them.

    The steady_* fields are the mean over report intervals after the warm-up, computed by
    benchapp beside sysbench's own whole-run figures. latency_pct is the percentile label
    (e.g. 95.0) that latency_pct_ms is for. latency_p50_ms … latency_p999_ms are the whole run's
    latency distribution (p50, p90, p95, p99, p99.9), read from the clients' `--histogram`
    buckets merged into one (exact to a bucket's width, about 1.8 %); they are all None when no
    histogram covers the whole run, and latency_percentiles_missing then says why (sysbench ran with
    --percentile=0, or with --report-checkpoints, or without --histogram); it is "" when they exist.
    """

    class Source(models.TextChoices):
        MEASURED = "measured"
        IMPORTED = "imported"

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="result")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.MEASURED)
    tps = models.FloatField(null=True, blank=True)
    qps = models.FloatField(null=True, blank=True)
    reads_per_s = models.FloatField(null=True, blank=True)
    writes_per_s = models.FloatField(null=True, blank=True)
    other_per_s = models.FloatField(null=True, blank=True)
    transactions = models.BigIntegerField(null=True, blank=True)
    queries = models.BigIntegerField(null=True, blank=True)
    ignored_errors = models.BigIntegerField(null=True, blank=True)
    # A workload's counted function (Workload.counted_function: sysbench-tpcc's new_order): its calls that ended
    # without an error, summed over the clients, and per minute of the run. None for other tests.
    counted = models.BigIntegerField(
        null=True, blank=True, help_text="calls of the workload's counted function that ended without an error")
    counted_per_min = models.FloatField(null=True, blank=True, help_text="those calls per minute of the run")
    reconnects = models.BigIntegerField(null=True, blank=True)
    events = models.BigIntegerField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    latency_min_ms = models.FloatField(null=True, blank=True)
    latency_avg_ms = models.FloatField(null=True, blank=True)
    latency_max_ms = models.FloatField(null=True, blank=True)
    latency_pct = models.FloatField(null=True, blank=True)
    latency_pct_ms = models.FloatField(null=True, blank=True)
    latency_sum_ms = models.FloatField(null=True, blank=True)
    steady_tps = models.FloatField(null=True, blank=True)
    steady_qps = models.FloatField(null=True, blank=True)
    steady_latency_pct_ms = models.FloatField(null=True, blank=True)
    latency_p50_ms = models.FloatField(null=True, blank=True)
    latency_p90_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    latency_p99_ms = models.FloatField(null=True, blank=True)
    latency_p999_ms = models.FloatField(null=True, blank=True, help_text="p99.9")
    latency_percentiles_missing = models.CharField(max_length=200, blank=True, default="",
                                                   help_text="why latency_p50_ms … latency_p999_ms are empty")
    # A host test's own figures (campaigns.sysbench.hosttests.HostFigures: events/s, MiB/s, reads/s, writes/s,
    # fsyncs/s, MiB/s read and written); its headline is in qps and its events/s in tps. Empty for database tests.
    host_figures = models.JSONField(default=dict, blank=True)
    # What each query cost the server and the client (campaigns.costs.job_costs), set when the job is judged;
    # empty for jobs judged before it existed (manage.py costs_backfill) and for imported results.
    costs = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    # Percentile key (as parser.LATENCY_PERCENTILES) -> field name.
    PERCENTILE_FIELDS: ClassVar[dict[str, str]] = {"50": "latency_p50_ms", "90": "latency_p90_ms", "95": "latency_p95_ms",
                         "99": "latency_p99_ms", "99.9": "latency_p999_ms"}

    def __str__(self) -> str:
        return f"result of job #{self.job_id}: {self.qps} qps"

    def latency_percentiles(self) -> list[tuple[str, float | None]]:
        """[("50", ms), ("90", ms), …, ("99.9", ms)]: the whole run's latency distribution."""
        return [(key, getattr(self, name)) for key, name in self.PERCENTILE_FIELDS.items()]


class IntervalSample(models.Model):
    """One per-second (per report interval) line of one client's sysbench output.

    The job's per-second figures are the sums over its clients at the same t; the latency
    percentile of a multi-client second is the worst client's (percentiles cannot be summed).
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="samples")
    client_index = models.PositiveSmallIntegerField(default=0)
    # The job's attempt (Job.attempt) this second belongs to: a lost attempt's seconds stay, apart.
    attempt = models.PositiveIntegerField(default=1, db_default=1)
    t = models.FloatField()
    threads = models.PositiveIntegerField()
    tps = models.FloatField()
    qps = models.FloatField()
    reads_per_s = models.FloatField()
    writes_per_s = models.FloatField()
    other_per_s = models.FloatField()
    latency_pct_ms = models.FloatField(null=True, blank=True)
    errors_per_s = models.FloatField()
    reconnects_per_s = models.FloatField()

    class Meta:
        ordering = ["job_id", "t", "client_index"]
        indexes = [models.Index(fields=["job", "t"])]
        # A second is stored once: sysbench printing a second twice (a stalled machine) cannot count it twice.
        constraints = [models.UniqueConstraint(fields=["job", "client_index", "attempt", "t"],
                                               name="interval_sample_once")]

    def __str__(self) -> str:
        return f"job #{self.job_id} t={self.t} qps={self.qps}"


class PreparedDataset(models.Model):
    """A dataset that sysbench prepared on a target, so later jobs can reuse it.

    The signature captures everything that changes the prepared tables (tables, rows, the
    table-shaping options and custom DDL); two scenarios with the same signature share data.
    """

    class Status(models.TextChoices):
        PREPARING = "preparing"
        READY = "ready"
        FAILED = "failed"
        DROPPED = "dropped"

    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="prepared_datasets")
    signature = models.CharField(max_length=500)
    tables = models.PositiveIntegerField()
    table_size = models.BigIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PREPARING)
    prepared_by = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True)
    prepared_at = models.DateTimeField(null=True, blank=True)
    prepare_s = models.FloatField(null=True, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    # Rows in its tables when its prepare was last seen (MAX(id) summed): how far a failed prepare got.
    rows_loaded = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["target", "signature"], name="prepared_unique_signature")
        ]

    def __str__(self) -> str:
        return f"{self.signature} on {self.target.name}"


class ClientHost(models.Model):
    """A machine with a benchapp Celery worker that runs sysbench as a client.

    Workers register themselves at start-up and send heartbeats; a host whose last heartbeat is
    older than BENCHAPP_HOST_OFFLINE_S is offline.
    """

    hostname = models.CharField(max_length=255, unique=True)
    queue = models.CharField(max_length=300)
    cores = models.PositiveIntegerField(default=1)
    memory_gb = models.FloatField(default=0)
    sysbench_version = models.CharField(max_length=50, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(default=timezone.now)
    # Set when benchapp took the host offline before its heartbeat went stale (a clean stop, a drain, a host found
    # silent by the reconciler), cleared by its next heartbeat: last_heartbeat stays the time it really beat.
    offline_since = models.DateTimeField(null=True, blank=True)
    # Where it stands ("ap-guangzhou-3", "near tdsql"): a campaign may choose its hosts by name or by label.
    # A worker announces its own (BENCHAPP_HOST_LABELS) when it joins; an operator may edit them.
    labels = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    # Its worker's BENCHAPP_WORKER_ROLE, announced at join: "all" (the server's: also the server queue) or "client";
    # /readyz wants one live "all" worker.
    role = models.CharField(max_length=10, blank=True)
    # Facts it announces when it joins (execution.hosts.local_host_facts): the address the server sees it
    # connect from, CPU model, kernel, client library versions, and its clock against PostgreSQL's.
    address = models.GenericIPAddressField(null=True, blank=True)
    cpu_model = models.CharField(max_length=200, blank=True)
    kernel = models.CharField(max_length=200, blank=True)
    client_versions = models.JSONField(default=dict, blank=True,
                                       help_text="mysqlclient, libmysqlclient, psycopg, libpq and Python versions")
    clock_offset_ms = models.FloatField(null=True, blank=True,
                                        help_text="this host's clock minus the server's (PostgreSQL's), at join")
    clock_rtt_ms = models.FloatField(null=True, blank=True,
                                     help_text="round trip of the clock reading: the offset is exact to half of it")
    # Its own speed, measured when it joins and every day (campaigns.execution.selfmeasure): {cpu_events_per_s,
    # memory_mib_per_s, measured_at, seconds}; and, while that runs, until when (no job starts on it meanwhile).
    self_measurement = models.JSONField(default=dict, blank=True)
    self_measuring_until = models.DateTimeField(null=True, blank=True)
    # The public half of the key pair its worker made in memory when it joined (campaigns.sealing): the server
    # seals each job's target password for it (SealedPassword). Empty: nothing can be sealed for it yet.
    public_key = models.CharField(max_length=64, blank=True)
    # How busy its CPUs were between its last two heartbeats (the hypervisor's steal left out), as its worker's
    # heartbeat reports it: a job whose clients run here waits for quiet on it like on its coordinating host
    # (execution.coordinator._quiet_wait). None: not reported yet.
    cpu_busy_pct = models.FloatField(null=True, blank=True)
    cpu_busy_from = models.DateTimeField(null=True, blank=True)
    cpu_busy_to = models.DateTimeField(null=True, blank=True)

    objects = ClientHostQuerySet.as_manager()

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return self.hostname

    FACT_FIELDS: ClassVar[tuple[str, ...]] = ("hostname", "address", "cpu_model", "cores", "memory_gb", "kernel",
                                              "sysbench_version", "client_versions", "clock_offset_ms",
                                              "clock_rtt_ms", "self_measurement")

    def facts(self) -> dict[str, Any]:
        """What the host announced when it joined, as a job's environment keeps it (JobClient.host_facts)."""
        return {name: getattr(self, name) for name in self.FACT_FIELDS}

    def self_measurement_text(self) -> str:
        """Its own speed in words ("cpu 1,234 events/s, memory 5,678 MiB/s, measured 2026-11-27 03:10")."""
        from campaigns.models.hosttests import self_measurement_text

        return self_measurement_text(self.self_measurement)

    def access_state(self) -> str:
        """"own" when it was issued credentials of its own (HostAccess), "revoked" once they were, else "shared"."""
        if hasattr(self, "access_issued"):  # services.client_access.hosts_with_access()
            issued, revoked_at = getattr(self, "access_issued"), getattr(self, "access_revoked_at")  # noqa: B009
        else:
            from campaigns.models.access import HostAccess

            found = list(HostAccess.objects.filter(hostname=self.hostname).values_list("revoked_at", flat=True)[:1])
            issued, revoked_at = bool(found), found[0] if found else None
        if not issued:
            return "shared"
        return "revoked" if revoked_at is not None else "own"

    def is_online(self) -> bool:
        age = (timezone.now() - self.last_heartbeat).total_seconds()
        return age <= settings.BENCHAPP_HOST_OFFLINE_S and self.offline_since is None
