"""Settings variants against real servers of the test's own (a MariaDB and a PostgreSQL cluster on spare ports,
never the machine's shared ones): refused at save time, applied before each job, seen in force from the server
while the job measures, and put back after the run, after a cancel and, by the reconciler, after a crash."""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client as PageClient

from campaigns import roles, services
from campaigns.comparison.query import comparison_build
from campaigns.execution import variants as execution_variants
from campaigns.execution.dispatch import run_advance
from campaigns.execution.phases import JobFailure, target_connection
from campaigns.execution.results import job_close
from campaigns.execution.turns import target_busy
from campaigns.execution.variants import settings_changes_sweep, variant_apply
from campaigns.models import Campaign, Job, Run, SettingsChange, Target
from campaigns.services.plans import campaign_plan
from tests.conftest import record_measurement, wait_for
from tests.factories import DatasetFactory, ProductFactory, ScenarioFactory
from tests.helpers.servers import MariaDBServer, PostgresServer, free_port
from tests.helpers.users import client_for, make_user

# One pytest-xdist process runs the module (make test): its servers (module fixtures) are made once, not in each.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("variants-servers")]

MYSQL_SETTING = "innodb_flush_log_at_trx_commit"
PG_SETTING = "synchronous_commit"
# Two variants of one dynamic setting per server, both unlike the servers' own values (1, on).
VARIANTS = [
    {"name": "lazy", "mysql": {MYSQL_SETTING: "2"}, "pgsql": {PG_SETTING: "off"}},
    {"name": "lazier", "mysql": {MYSQL_SETTING: "0"}, "pgsql": {PG_SETTING: "local"}},
]
WANTED = {("mysql", "lazy"): "2", ("mysql", "lazier"): "0", ("pgsql", "lazy"): "off", ("pgsql", "lazier"): "local"}
ORIGINAL = {"mysql": "1", "pgsql": "on"}


@pytest.fixture(scope="module")
def own_mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    server = MariaDBServer(tmp_path_factory.mktemp("variants-mariadb"), free_port())
    try:
        done = server.sql("CREATE DATABASE sbtest; CREATE USER 'plain'@'127.0.0.1';"
                          " GRANT ALL ON sbtest.* TO 'plain'@'127.0.0.1'")
        assert done.returncode == 0, done.stderr
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[PostgresServer]:
    server = PostgresServer(free_port())
    try:
        done = server.sql("CREATE DATABASE sbtest")
        assert done.returncode == 0, done.stderr
        yield server
    finally:
        server.stop()


def _targets(mariadb: MariaDBServer, postgres: PostgresServer, suffix: str = "") -> tuple[Target, Target]:
    maria = services.target_create(name=f"MariaDB (local){suffix}", product=ProductFactory(name=f"MariaDB{suffix}"),
                                   driver="mysql", host="127.0.0.1", port=mariadb.port, database="sbtest",
                                   user="root")
    pg = services.target_create(name=f"PostgreSQL (local){suffix}",
                                product=ProductFactory(name=f"PostgreSQL{suffix}", engine="postgresql"),
                                driver="pgsql", host="127.0.0.1", port=postgres.port, database="sbtest",
                                user="postgres")
    return maria, pg


def _server_value(target: Target, mariadb: MariaDBServer, postgres: PostgresServer) -> str:
    if target.driver == "mysql":
        done = mariadb.sql(f"SELECT @@GLOBAL.{MYSQL_SETTING}")
    else:  # a new session: what sysbench's sessions see
        done = postgres.sql(f"SHOW {PG_SETTING}")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _originals_back(mariadb: MariaDBServer, postgres: PostgresServer) -> None:
    assert mariadb.sql(f"SELECT @@GLOBAL.{MYSQL_SETTING}").stdout.strip() == ORIGINAL["mysql"]
    assert postgres.sql(f"SHOW {PG_SETTING}").stdout.strip() == ORIGINAL["pgsql"]
    # ALTER SYSTEM RESET: postgresql.auto.conf holds nothing of ours any more.
    assert postgres.sql(f"SELECT count(*) FROM pg_file_settings WHERE name = '{PG_SETTING}'"
                        " AND sourcefile LIKE '%auto.conf'").stdout.strip() == "0"


@pytest.mark.django_db(transaction=True)
def test_each_job_runs_under_its_variant_and_the_servers_get_their_settings_back(
        celery_worker_process: Any, own_mariadb: MariaDBServer, own_postgres: PostgresServer) -> None:
    started = time.monotonic()
    maria, pg = _targets(own_mariadb, own_postgres)
    scenario = ScenarioFactory(name="variants point select", time_s=3,
                               dataset=DatasetFactory(name="variants-tiny", tables=1, table_size=1000))
    campaign = services.campaign_create(name="variants", targets=[maria, pg], scenarios=[scenario], threads=[1, 2],
                                        variants=VARIANTS)
    plan = campaign_plan(campaign=campaign)
    assert plan["job_count"] == 2 * 2 * 2 and plan["variants"] == ["lazy", "lazier"]
    # Interleaved: per thread count, each server under each variant in turn.
    assert [(j["target"] == maria.name, j["variant"], j["threads"]) for j in plan["jobs"][:4]] == [
        (True, "lazy", 1), (True, "lazier", 1), (False, "lazy", 1), (False, "lazier", 1)]
    assert plan["jobs"][2]["variant_settings"] == {PG_SETTING: "off"}

    run = services.campaign_launch(campaign=campaign)
    # From the server itself, while each job measures: what its sessions get.
    seen: dict[int, set[str]] = {}
    deadline = time.monotonic() + 240
    while True:
        run.refresh_from_db()
        if run.is_finished():
            break
        assert time.monotonic() < deadline, "the run did not finish in 240 s"
        measuring = list(Job.objects.filter(run=run, status=Job.Status.RUNNING, phase=Job.Phase.RUN,
                                            measured_at__isnull=True).select_related("target"))
        for job in measuring:
            value = _server_value(job.target, own_mariadb, own_postgres)
            # Counted only if the job was still measuring after the read (it did not end meanwhile).
            if Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, phase=Job.Phase.RUN,
                                  measured_at__isnull=True).exists():
                seen.setdefault(job.pk, set()).add(value)
        time.sleep(0.1)
    jobs = list(run.jobs.select_related("target").order_by("position"))
    assert [j.status for j in jobs] == [Job.Status.SUCCEEDED] * 8, [j.error for j in jobs]
    for job in jobs:
        wanted = WANTED[(job.target.driver, job.variant)]
        setting = MYSQL_SETTING if job.target.driver == "mysql" else PG_SETTING
        assert seen.get(job.pk) == {wanted}, (job.pk, job.variant, seen.get(job.pk))
        # What was read back before the job, and what the settings snapshot says was in force.
        snapshot = job.server_snapshot
        assert snapshot["variant"]["name"] == job.variant
        assert snapshot["variant"]["settings"][setting] == {
            "wanted": wanted, "got": wanted, "original": ORIGINAL[job.target.driver]}
        assert snapshot["before"]["settings"][setting].split()[0] == wanted
    _originals_back(own_mariadb, own_postgres)
    assert SettingsChange.objects.filter(job__run=run).count() == 8
    assert not SettingsChange.objects.filter(job__run=run, restored_at__isnull=True).exists()

    # The comparison puts the variants side by side as it puts products.
    comparison = comparison_build(run_ids=[run.pk])
    assert [p["name"] for p in comparison["products"]] == [
        "MariaDB · lazier", "MariaDB · lazy", "PostgreSQL · lazier", "PostgreSQL · lazy"]
    rows = comparison["groups"][0]["rows"]
    assert [r["threads"] for r in rows] == [1, 2] and all(c is not None for r in rows for c in r["cells"])
    record_measurement(f"settings variants: 2 variants x 2 threads x 2 servers (8 jobs of 3 s) end to end in "
                       f"{time.monotonic() - started:.0f} s")


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_run_gets_the_servers_settings_back(
        celery_worker_process: Any, own_mariadb: MariaDBServer, own_postgres: PostgresServer) -> None:
    maria, pg = _targets(own_mariadb, own_postgres, suffix=" 2")
    scenario = ScenarioFactory(name="variants long select", time_s=120,
                               dataset=DatasetFactory(name="variants-tiny-2", tables=1, table_size=1000))
    for target in (maria, pg):
        campaign = services.campaign_create(name=f"variants cancel {target.driver}", targets=[target],
                                            scenarios=[scenario], threads=[1], variants=VARIANTS[:1])
        run = services.campaign_launch(campaign=campaign)
        job = run.jobs.get()
        wanted = WANTED[(target.driver, "lazy")]
        wait_for(lambda job=job: Job.objects.filter(pk=job.pk, phase=Job.Phase.RUN).exists(), timeout_s=60,
                 what=f"the {target.driver} job to measure")
        assert _server_value(target, own_mariadb, own_postgres) == wanted
        services.run_cancel(run=run)
        wait_for(lambda target=target: _server_value(target, own_mariadb, own_postgres) == ORIGINAL[target.driver],
                 timeout_s=60, what=f"{target.driver}'s setting back after the cancel")
        wait_for(lambda run=run: Run.objects.get(pk=run.pk).is_finished(), timeout_s=60, what="the run to end")
        assert Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED
        assert not SettingsChange.objects.filter(job=job, restored_at__isnull=True).exists()
    _originals_back(own_mariadb, own_postgres)


@pytest.fixture
def own_queue(settings: Any) -> str:
    """A queue of this test's own: the session's worker (and its reconciler) leaves its runs alone."""
    settings.CELERY_TASK_DEFAULT_QUEUE = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-variants"
    return settings.CELERY_TASK_DEFAULT_QUEUE


@pytest.mark.django_db(transaction=True)
def test_the_reconciler_puts_back_what_a_dead_worker_left_changed(
        own_mariadb: MariaDBServer, own_postgres: PostgresServer, own_queue: str) -> None:
    maria, pg = _targets(own_mariadb, own_postgres, suffix=" 3")
    scenario = ScenarioFactory(dataset=DatasetFactory(name="variants-tiny-3", tables=1, table_size=100))
    campaign = services.campaign_create(name="variants crash", targets=[maria, pg], scenarios=[scenario],
                                        threads=[1], variants=VARIANTS)
    run = Run.objects.create(campaign=campaign, status=Run.Status.FAILED, queue=own_queue)
    for target, setting, value in ((maria, MYSQL_SETTING, "2"), (pg, PG_SETTING, "off")):
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=1, status=Job.Status.FAILED,
                                 variant="lazy", variant_settings={setting: value},
                                 error="worker lost: client-a stopped beating")
        # What variant_apply leaves when its worker dies right after the change: the originals recorded, the
        # server changed, nothing put back.
        SettingsChange.objects.create(job=job, target=target, variant="lazy", wanted={setting: value},
                                      originals={setting: {"value": ORIGINAL[target.driver], "in_auto_conf": False}})
    assert own_mariadb.sql(f"SET GLOBAL {MYSQL_SETTING} = 2").returncode == 0
    assert own_postgres.sql(f"ALTER SYSTEM SET {PG_SETTING} = off").returncode == 0
    assert own_postgres.sql("SELECT pg_reload_conf()").returncode == 0
    wait_for(lambda: own_postgres.sql(f"SHOW {PG_SETTING}").stdout.strip() == "off", timeout_s=10,
             what="the reload")
    assert settings_changes_sweep() == 2
    _originals_back(own_mariadb, own_postgres)
    assert settings_changes_sweep() == 0


@pytest.mark.django_db(transaction=True)
def test_settings_a_server_cannot_take_at_run_time_are_refused_when_the_campaign_is_saved(
        own_mariadb: MariaDBServer, own_postgres: PostgresServer, settings: Any) -> None:
    maria, pg = _targets(own_mariadb, own_postgres, suffix=" 4")
    plain = services.target_create(name="MariaDB as plain", product=maria.product, driver="mysql", host="127.0.0.1",
                                   port=own_mariadb.port, database="sbtest", user="plain")

    def refusal(targets: list[Target], variants: list[dict[str, Any]]) -> str:
        with pytest.raises(ValidationError) as caught:
            services.campaign_create(name="refused", targets=targets, variants=variants)
        return " ".join(caught.value.message_dict["variants"])

    # innodb_log_buffer_size and shared_buffers are on the allowlist, but need a restart.
    text = refusal([maria, pg], [{"name": "big", "mysql": {"innodb_log_buffer_size": "16M"},
                                  "pgsql": {"shared_buffers": "256MB"}}])
    assert ("target 'MariaDB (local) 4', variant 'big': innodb_log_buffer_size: read-only at run time (it needs a "
            "server restart)") in text
    assert "variant 'big': shared_buffers: takes effect only at a server restart (context postmaster)" in text
    # A setting an administrator added that this server does not have.
    settings.BENCHAPP_VARIANT_SETTINGS_EXTRA = "mysql no_such_setting int 0..10"
    assert "no such global variable" in refusal([maria], [{"name": "x", "mysql": {"no_such_setting": "1"}}])
    settings.BENCHAPP_VARIANT_SETTINGS_EXTRA = ""
    assert "synchronous_commit: 'never' is not one of" in refusal([pg], [{"name": "x", "pgsql": {PG_SETTING: "never"}}])
    assert "user 'plain' may not change it" in refusal([plain], [{"name": "x", "mysql": {MYSQL_SETTING: "2"}}])
    # Names and values never reach a server unchecked.
    assert "is not a setting's name" in refusal([maria], [{"name": "x", "mysql": {"sync_binlog=0; DROP": "1"}}])
    assert "is not a plain value" in refusal([maria], [{"name": "x", "mysql": {"sync_binlog": "0; DROP TABLE t"}}])
    # An unreachable target: a clear error, soon (the connect time-out), nothing stored.
    gone = services.target_create(name="gone", product=maria.product, driver="mysql", host="127.0.0.1",
                                  port=free_port(), database="sbtest", user="root")
    began = time.monotonic()
    assert "cannot check the settings on target 'gone': connection refused" in refusal(
        [gone], [{"name": "x", "mysql": {MYSQL_SETTING: "2"}}])
    assert time.monotonic() - began < 15
    assert not Campaign.objects.filter(name="refused").exists()
    # Nothing changed on the servers by the checks.
    _originals_back(own_mariadb, own_postgres)


@pytest.mark.django_db(transaction=True)
def test_a_job_fails_naming_the_setting_its_server_did_not_take_and_its_end_puts_the_rest_back(
        own_mariadb: MariaDBServer, own_postgres: PostgresServer, own_queue: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The values are out of the allowlist's bounds, which variant_apply holds first: past it, the server's own
    # answer is what this test reads.
    monkeypatch.setattr(execution_variants, "allowlist_problem", lambda driver, wanted: "")
    maria, pg = _targets(own_mariadb, own_postgres, suffix=" 5")
    scenario = ScenarioFactory(dataset=DatasetFactory(name="variants-tiny-5", tables=1, table_size=100))
    campaign = services.campaign_create(name="variants odd", targets=[maria, pg], scenarios=[scenario], threads=[1])
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, queue=own_queue)
    sync_binlog_before = own_mariadb.sql("SELECT @@GLOBAL.sync_binlog").stdout.strip()
    cases = (
        # MariaDB takes 7 as its largest value (3) with a warning: the read-back says so.
        (maria, {"sync_binlog": "7", MYSQL_SETTING: "7"}, f"{MYSQL_SETTING}: wanted 7, the server has 3"),
        # PostgreSQL refuses the value outright.
        (pg, {PG_SETTING: "sometimes"}, f"{PG_SETTING} = sometimes: refused by the server"),
    )
    for target, settings, message in cases:
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=1, status=Job.Status.PREPARING,
                                 phase=Job.Phase.PREPARE, variant="odd", variant_settings=settings)
        job = Job.objects.select_related("target", "scenario", "run").get(pk=job.pk)
        with pytest.raises(JobFailure) as caught:
            variant_apply(job, target_connection(target=target))
        assert message in str(caught.value) and "settings variant 'odd'" in str(caught.value)
        job_close(job, status=Job.Status.FAILED, error=str(caught.value))
        assert not SettingsChange.objects.filter(job=job, restored_at__isnull=True).exists()
    assert own_mariadb.sql("SELECT @@GLOBAL.sync_binlog").stdout.strip() == sync_binlog_before
    _originals_back(own_mariadb, own_postgres)


# Every setting once wrongly accepted at save, and the bounds cases: (driver, setting, value, what the 400 says).
REFUSED = [
    ("mysql", "general_log_file", "ibdata1", "names a file"),
    ("mysql", "general_log_file", "aria_log_control", "names a file"),
    ("mysql", "general_log", "ON", "refused for good (logging"),
    ("mysql", "slow_query_log_file", "ib_logfile0", "names a file"),
    ("mysql", "init_connect", "x", "refused for good"),
    ("mysql", "require_secure_transport", "ON", "authentication"),
    ("mysql", "read_only", "ON", "read-only mode"),
    ("mysql", "max_connections", "10", "connection limits"),
    ("mysql", "local_infile", "ON", "refused for good"),
    ("mysql", "sql_log_off", "ON", "refused for good (logging"),
    ("mysql", "innodb_doublewrite", "OFF", "data safety"),
    ("mysql", "innodb_buffer_pool_size", "1TiB", "is more than the server's memory"),
    ("mysql", "sort_buffer_size", "100000G", "is more than the server's memory"),
    ("mysql", "innodb_flush_log_at_trx_commit", "7", "is more than its highest value here, 3"),
    ("mysql", "innodb_io_capacity", "10", "is less than its lowest value here, 100"),
    ("mysql", "transaction_isolation", "CHAOS", "is not one of READ-UNCOMMITTED"),
    ("mysql", "innodb_adaptive_hash_index", "maybe", "is not on or off"),
    ("mysql", "no_such_thing", "1", "not on benchapp's allowlist"),
    ("pgsql", "archive_command", "x", "names a command"),
    ("pgsql", "restore_command", "x", "names a command"),
    ("pgsql", "ssl_passphrase_command", "x", "refused for good"),
    ("pgsql", "archive_library", "x", "library"),
    ("pgsql", "session_preload_libraries", "atk_nonexistent", "library"),
    ("pgsql", "local_preload_libraries", "x", "library"),
    ("pgsql", "dynamic_library_path", "x", "refused for good"),
    ("pgsql", "log_directory", "..", "names a file or a directory"),
    ("pgsql", "log_filename", ".profile", "names a file or a directory"),
    ("pgsql", "log_filename", "postgresql.auto.conf", "names a file or a directory"),
    ("pgsql", "log_file_mode", "0666", "names a file or a directory"),
    ("pgsql", "fsync", "off", "data safety"),
    ("pgsql", "full_page_writes", "off", "data safety"),
    ("pgsql", "zero_damaged_pages", "on", "data safety"),
    ("pgsql", "ignore_checksum_failure", "on", "data safety"),
    ("pgsql", "allow_system_table_mods", "on", "data safety"),
    ("pgsql", "log_statement", "all", "logging"),
    ("pgsql", "default_transaction_read_only", "on", "read-only mode"),
    ("pgsql", "statement_timeout", "1", "time-outs"),
    ("pgsql", "password_encryption", "md5", "authentication"),
    ("pgsql", "max_connections", "10", "connection limits"),
    ("pgsql", "work_mem", "2TB", "is more than the server's memory"),
    ("pgsql", "checkpoint_timeout", "10s", "is less than its lowest value here, 30 s"),
    ("pgsql", "effective_io_concurrency", "5000", "is more than its highest value here, 1000"),
    ("pgsql", "synchronous_commit", "never", "is not one of on, off"),
    ("pgsql", "random_page_cost", "cheap", "is not a number"),
    ("pgsql", "no_such_thing", "1", "not on benchapp's allowlist"),
]
# Allowlisted settings, each unlike the servers' defaults: (driver, setting, value written, as a new session reads it).
ALLOWED = [
    ("mysql", "innodb_io_capacity", "1234", "1234"),
    ("mysql", "sort_buffer_size", "4M", "4194304"),
    ("mysql", "tx_isolation", "READ-COMMITTED", "READ-COMMITTED"),
    ("mysql", "innodb_adaptive_hash_index", "ON", "1"),
    ("mysql", "table_open_cache", "1000", "1000"),
    ("pgsql", "work_mem", "64MB", "64MB"),
    ("pgsql", "random_page_cost", "1.1", "1.1"),
    ("pgsql", "jit", "off", "off"),
    ("pgsql", "checkpoint_timeout", "10min", "10min"),
    ("pgsql", "effective_io_concurrency", "8", "8"),
]


def _new_session_value(driver: str, name: str, mariadb: MariaDBServer, postgres: PostgresServer) -> str:
    done = mariadb.sql(f"SELECT @@GLOBAL.{name}") if driver == "mysql" else postgres.sql(f"SHOW {name}")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.django_db(transaction=True)
def test_each_refused_setting_is_a_400_naming_target_variant_and_setting_and_the_allowlisted_apply_and_restore(
        own_mariadb: MariaDBServer, own_postgres: PostgresServer, own_queue: str) -> None:
    maria, pg = _targets(own_mariadb, own_postgres, suffix=" 6")
    target_of = {"mysql": maria, "pgsql": pg}
    api = client_for(make_user(roles.OPERATOR, "allowlist-op"))
    for driver, name, value, why in REFUSED:
        target = target_of[driver]
        answer = api.post("/api/v1/campaigns/", {"name": f"refused {name}", "targets": [target.pk],
                                                 "variants": [{"name": "bad", driver: {name: value}}]}, format="json")
        assert answer.status_code == 400, (name, value, answer.json())
        text = " ".join(answer.json()["variants"])
        assert f"target '{target.name}', variant 'bad': {name}: " in text and why in text, (name, text)
    assert not Campaign.objects.filter(name__startswith="refused ").exists()

    # The allowlisted ones save, apply (read back from a new session) and go back as the job ends.
    variant = {"name": "tuned", "mysql": {n: v for d, n, v, _ in ALLOWED if d == "mysql"},
               "pgsql": {n: v for d, n, v, _ in ALLOWED if d == "pgsql"}}
    answer = api.post("/api/v1/campaigns/", {"name": "tuned", "targets": [maria.pk, pg.pk],
                                             "variants": [variant]}, format="json")
    assert answer.status_code == 201, answer.json()
    campaign = Campaign.objects.get(pk=answer.json()["id"])
    assert campaign.variants[0]["mysql"]["sort_buffer_size"] == "4194304"  # written as bytes: SET GLOBAL's unit
    before = {(d, n): _new_session_value(d, n, own_mariadb, own_postgres) for d, n, _, _ in ALLOWED}
    scenario = ScenarioFactory(dataset=DatasetFactory(name="variants-tiny-6", tables=1, table_size=100))
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, queue=own_queue)
    for target in (maria, pg):
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=1, status=Job.Status.PREPARING,
                                 phase=Job.Phase.PREPARE, variant="tuned",
                                 variant_settings=campaign.variants[0][target.driver])
        job = Job.objects.select_related("target", "scenario", "run").get(pk=job.pk)
        variant_apply(job, target_connection(target=target))
        for driver, name, _, read in ALLOWED:
            if driver == target.driver:
                assert _new_session_value(driver, name, own_mariadb, own_postgres) == read, name
        job_close(job, status=Job.Status.SUCCEEDED)
    for driver, name, _, _ in ALLOWED:
        assert _new_session_value(driver, name, own_mariadb, own_postgres) == before[(driver, name)], name
    _originals_back(own_mariadb, own_postgres)


@pytest.fixture
def lockable_postgres() -> Iterator[PostgresServer]:
    """A cluster of the test's own that a variant may lock out or break: its logging collector on, so that
    log_directory and log_filename decide where the server writes."""
    server = PostgresServer(free_port(), options=("logging_collector=on",))
    try:
        assert server.sql("CREATE DATABASE sbtest").returncode == 0
        yield server
    finally:
        server.stop()


def _bypassed_job(run: Run, target: Target, scenario: Any, settings: dict[str, str]) -> Job:
    """A job whose variant settings were written into the database, past every check of the services."""
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=1, status=Job.Status.PREPARING,
                             phase=Job.Phase.PREPARE, variant="evil", variant_settings=settings)
    return Job.objects.select_related("target", "scenario", "run").get(pk=job.pk)


@pytest.mark.django_db(transaction=True)
def test_a_lock_out_and_a_log_into_the_config_file_are_refused_and_if_bypassed_put_back_before_measuring(
        lockable_postgres: PostgresServer, own_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    server = lockable_postgres
    pg = services.target_create(name="PostgreSQL (lockable)", product=ProductFactory(name="PG lockable",
                                                                                     engine="postgresql"),
                                driver="pgsql", host="127.0.0.1", port=server.port, database="sbtest",
                                user="postgres")
    lock_out = {"session_preload_libraries": "atk_nonexistent"}
    config_log = {"log_directory": ".", "log_filename": "postgresql.auto.conf", "log_statement": "all"}
    for settings in (lock_out, config_log):
        with pytest.raises(ValidationError) as caught:
            services.campaign_create(name="evil", targets=[pg], variants=[{"name": "evil", "pgsql": settings}])
        text = " ".join(caught.value.message_dict["variants"])
        assert all(f"target 'PostgreSQL (lockable)', variant 'evil': {name}: refused for good" in text
                   for name in settings), text
    scenario = ScenarioFactory(dataset=DatasetFactory(name="variants-tiny-7", tables=1, table_size=100))
    campaign = services.campaign_create(name="evil bypassed", targets=[pg], scenarios=[scenario], threads=[1])
    # A job row written past the services' checks is refused before anything reaches the server.
    for settings in (lock_out, config_log):
        job = _bypassed_job(Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, queue=own_queue), pg,
                            scenario, settings)
        with pytest.raises(JobFailure, match="refused before it reached the server: .*refused for good"):
            variant_apply(job, target_connection(target=pg))
        assert not SettingsChange.objects.filter(job=job).exists(), "nothing was changed, nothing to put back"
        job_close(job, status=Job.Status.FAILED, error="refused")
        run_advance(run_id=job.run_id)
    # With that check bypassed too, the kept session puts the change back before anything measures.
    monkeypatch.setattr(execution_variants, "allowlist_problem", lambda driver, wanted: "")
    for settings, cause in ((lock_out, "a new session cannot log in and run a query"),
                            (config_log, "the server's configuration files no longer parse")):
        run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, queue=own_queue)
        job = _bypassed_job(run, pg, scenario, settings)
        with pytest.raises(JobFailure) as caught:
            variant_apply(job, target_connection(target=pg))
        message = str(caught.value)
        assert f"settings variant 'evil': after the change {cause}" in message, message
        assert "put back at once through a session kept open for that, and the job failed before measuring" in message
        job_close(job, status=Job.Status.FAILED, error=message)
        run_advance(run_id=run.pk)
        job.refresh_from_db()
        run.refresh_from_db()
        assert job.status == Job.Status.FAILED and job.measured_at is None and cause in job.error
        assert run.status == Run.Status.FAILED
        change = SettingsChange.objects.get(job=job)
        assert change.restored_at is not None and change.held_at is None
        # A new session gets in, the settings are the server's own again, and the files parse.
        for name in settings:
            assert server.sql(f"SELECT source FROM pg_settings WHERE name = '{name}'").stdout.strip() == "default"
        assert server.sql("SELECT count(*) FROM pg_file_settings WHERE error IS NOT NULL").stdout.strip() == "0"
        server.restart()
        assert server.sql("SELECT 1").stdout.strip() == "1"


@pytest.mark.django_db(transaction=True)
def test_a_restore_that_fails_fails_the_job_and_run_with_the_statements_and_holds_the_server_until_confirmed(
        own_mariadb: MariaDBServer, own_queue: str) -> None:
    root = services.target_create(name="MariaDB (held)", product=ProductFactory(name="MariaDB held"), driver="mysql",
                                  host="127.0.0.1", port=own_mariadb.port, database="sbtest", user="root")
    # The variant's change was made as root; by the job's end the target logs in as a user that may no longer
    # change global variables (its rights taken away meanwhile): the server answers, and refuses the restore.
    plain = services.target_create(name="MariaDB (held, plain)", product=root.product, driver="mysql",
                                   host="127.0.0.1", port=own_mariadb.port, database="sbtest", user="plain")
    before = own_mariadb.sql("SELECT @@GLOBAL.innodb_io_capacity").stdout.strip()
    scenario = ScenarioFactory(dataset=DatasetFactory(name="variants-tiny-8", tables=1, table_size=100))
    campaign = services.campaign_create(name="variants held", targets=[plain], scenarios=[scenario], threads=[1])
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, queue=own_queue)
    job = Job.objects.create(run=run, target=plain, scenario=scenario, threads=1, status=Job.Status.RUNNING,
                             phase=Job.Phase.RUN, variant="io", variant_settings={"innodb_io_capacity": "1500"})
    SettingsChange.objects.create(job=job, target=plain, variant="io", wanted={"innodb_io_capacity": "1500"},
                                  originals={"innodb_io_capacity": {"value": before, "in_auto_conf": False}})
    assert own_mariadb.sql("SET GLOBAL innodb_io_capacity = 1500").returncode == 0
    job_close(Job.objects.select_related("target").get(pk=job.pk), status=Job.Status.SUCCEEDED)
    run_advance(run_id=run.pk)
    job.refresh_from_db()
    run.refresh_from_db()
    statement = f"SET GLOBAL innodb_io_capacity = {before};"
    assert job.status == Job.Status.FAILED and run.status == Run.Status.FAILED
    assert job.error.startswith(f"settings NOT put back on 127.0.0.1:{own_mariadb.port}: a DBA must run, as a "
                                f"superuser: {statement} The server is held"), job.error
    assert "user 'plain'" in job.error or "denied" in job.error.lower()
    change = SettingsChange.objects.get(job=job)
    assert change.is_held() and change.dba_sql == statement and change.restored_at is None
    # The API, the job page and the run page say it, with the statement.
    api = client_for(make_user(roles.OPERATOR, "held-op"))
    assert statement in api.get(f"/api/v1/jobs/{job.pk}/").json()["error"]
    page = PageClient()
    page.force_login(make_user(roles.OPERATOR, "held-page-op"))
    for url in (f"/jobs/{job.pk}/", f"/runs/{run.pk}/"):
        html = page.get(url).content.decode()
        assert 'data-testid="settings-held"' in html and statement in html and 'data-testid="settings-confirm"' in html
    # Nobody tries again, and no job starts on the server, on any of its targets, until a person confirms.
    assert settings_changes_sweep() == 0
    other = Job.objects.create(run=Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, queue=own_queue),
                               target=root, scenario=scenario, threads=1, status=Job.Status.QUEUED)
    busy = target_busy(Job.objects.select_related("target").get(pk=other.pk))
    assert busy is not None and busy.reason.startswith("held: the settings variant 'io'")
    assert own_mariadb.sql(statement).returncode == 0  # the DBA's part
    answer = api.post(f"/api/v1/targets/{root.pk}/settings-confirm/", {}, format="json")
    assert answer.status_code == 200 and answer.json() == {"confirmed": 1}
    change.refresh_from_db()
    assert not change.is_held() and change.confirmed_by is not None and change.restored_at is not None
    assert target_busy(Job.objects.select_related("target").get(pk=other.pk)) is None
    assert own_mariadb.sql("SELECT @@GLOBAL.innodb_io_capacity").stdout.strip() == before
