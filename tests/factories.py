"""factory_boy factories for the domain models."""
from __future__ import annotations

import os

import factory
from factory.django import DjangoModelFactory

from campaigns import models
from tests.helpers.pg_targets import pg_target_port


class ProductFactory(DjangoModelFactory):
    class Meta:
        model = models.Product
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"Product {n}")
    engine = models.Product.Engine.MARIADB
    version = "10.11"


class InstanceSpecFactory(DjangoModelFactory):
    class Meta:
        model = models.InstanceSpec
        django_get_or_create = ("label",)

    label = factory.Sequence(lambda n: f"{n + 1}-core {4 * (n + 1)} GB MEM")
    cpu_cores = factory.Sequence(lambda n: n + 1)
    memory_gb = factory.Sequence(lambda n: 4.0 * (n + 1))


class TargetFactory(DjangoModelFactory):
    """A target on the local MariaDB's test database, root with an empty password."""

    class Meta:
        model = models.Target
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"target-{n}")
    product = factory.SubFactory(ProductFactory)
    spec = factory.SubFactory(InstanceSpecFactory)
    driver = models.Target.Driver.MYSQL
    host = "127.0.0.1"
    port = 3306
    database = os.environ.get("BENCHAPP_TEST_TARGET_DB", "bench_test")
    user = "root"

    @factory.post_generation
    def password(obj: models.Target, create: bool, extracted: str | None, **kwargs: object) -> None:  # noqa: N805
        obj.set_password(extracted or "")
        if create:
            obj.save()


class PgTargetFactory(TargetFactory):
    product = factory.SubFactory(ProductFactory, name="PostgreSQL test", engine=models.Product.Engine.POSTGRESQL)
    driver = models.Target.Driver.PGSQL
    # The targets cluster (tests/helpers/pg_targets.py): benchapp's own is closed to sysbench.
    port = factory.LazyFunction(pg_target_port)
    user = "postgres"


class DatasetFactory(DjangoModelFactory):
    class Meta:
        model = models.Dataset
        django_get_or_create = ("name",)

    name = "tiny"
    tables = 2
    table_size = 1000


class ScenarioFactory(DjangoModelFactory):
    class Meta:
        model = models.Scenario

    name = factory.Sequence(lambda n: f"scenario-{n}")
    test = "oltp_point_select"
    dataset = factory.SubFactory(DatasetFactory)
    # A steady 200 transactions per second (all threads together): the tests check what benchapp does with a run,
    # not how fast the server goes, and a run at full speed spends both cores on sysbench and the server while
    # make test's other processes wait for them. A test about throughput or saturation passes options of its own.
    options = factory.LazyFunction(lambda: {"rate": 200})
    time_s = 3
    report_interval_s = 1
    percentile = 95.0
    cleanup = models.Scenario.Cleanup.KEEP


class CampaignFactory(DjangoModelFactory):
    class Meta:
        model = models.Campaign
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"campaign-{n}")
    threads = factory.LazyFunction(lambda: [2])
    # A test's job judged spoiled by the suite's own load (other test processes' sysbench on this host) is not
    # measured again behind its back: the tests of that rule ask for it (tests/test_remeasure_spoiled.py).
    remeasure_spoiled = False
    quiet_s = 0
    # Its alarms are told at once: the tests of confirming them first ask for it (tests/test_confirm_alarms.py).
    confirm_alarms = False

    @factory.post_generation
    def targets(obj: models.Campaign, create: bool, extracted: list[models.Target] | None, **kwargs: object) -> None:  # noqa: N805
        if extracted:
            obj.targets.set(extracted)

    @factory.post_generation
    def scenarios(obj: models.Campaign, create: bool, extracted: list[models.Scenario] | None, **kwargs: object) -> None:  # noqa: N805
        if extracted:
            obj.scenarios.set(extracted)

    @factory.post_generation
    def webhook_url(obj: models.Campaign, create: bool, extracted: str | None, **kwargs: object) -> None:  # noqa: N805
        if extracted:
            obj.set_webhook_url(extracted)
            if create:
                obj.save(update_fields=["webhook_url_encrypted"])


class RunFactory(DjangoModelFactory):
    class Meta:
        model = models.Run

    campaign = factory.SubFactory(CampaignFactory)
    status = models.Run.Status.SUCCEEDED


class JobFactory(DjangoModelFactory):
    class Meta:
        model = models.Job

    run = factory.SubFactory(RunFactory)
    target = factory.SubFactory(TargetFactory)
    scenario = factory.SubFactory(ScenarioFactory)
    threads = 4
    status = models.Job.Status.SUCCEEDED


class JobResultFactory(DjangoModelFactory):
    class Meta:
        model = models.JobResult

    job = factory.SubFactory(JobFactory)
    qps = 1000.0
    tps = 50.0
    latency_avg_ms = 2.0
    latency_pct = 95.0
    latency_pct_ms = 3.0

