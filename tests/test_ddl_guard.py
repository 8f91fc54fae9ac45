"""A scenario's table DDL runs with the target's credentials: only one checked CREATE TABLE
of benchapp's own table, re-rendered by sqlglot in the target's dialect, ever reaches a target.

Each attack below was a working one on main: saved through the API or the form, then run by a launch."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from campaigns import roles, services
from campaigns.execution.coordinator import dataset_ensure
from campaigns.execution.phases import JobFailure, target_connection
from campaigns.forms import ScenarioForm
from campaigns.models import PreparedDataset, Scenario
from campaigns.probes import ProbeError, execute_ddl
from campaigns.seeds.services import plain_ddl
from campaigns.seeds.templates import TEMPLATES
from campaigns.sysbench.command import Connection
from campaigns.sysbench.ddl import DdlError, table_ddl_error, table_ddl_render, table_ddl_statements
from tests.factories import CampaignFactory, DatasetFactory, PgTargetFactory, ScenarioFactory, TargetFactory
from tests.helpers.pg_targets import pg_target_port, pg_target_psql
from tests.helpers.users import API, client_for, make_user

COLUMNS = "(id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, PRIMARY KEY (id))"

# (DDL, a word the refusal names). Every one of them, on main, ran as written with the target's credentials.
ATTACKS = [
    (f"CREATE TABLE {{table}} {COLUMNS}; DROP DATABASE victim", "one statement"),
    (f"CREATE TABLE {{table}} {COLUMNS}; DROP DATABASE victim;", "one statement"),
    (f"CREATE TABLE {{table}} {COLUMNS} /*!50000 ; DROP DATABASE victim */", "comment"),
    (f"CREATE TABLE {{table}} {COLUMNS} /* ; DROP DATABASE victim */", "comment"),
    (f"CREATE TABLE {{table}} {COLUMNS} -- \nCOMMENT=''", "comment"),
    (f"CREATE TABLE {{table}} {COLUMNS} #\n", "comment"),
    ("CREATE TABLE {table} (c CHAR(3) DEFAULT 'a\\'); DROP DATABASE victim; SELECT (''", "backslash"),
    ("CREATE TABLE {table} AS SELECT * FROM victim.secrets", "SELECT"),
    ("CREATE TABLE {table} (id INT) SELECT * FROM victim.secrets", "SELECT"),
    ("CREATE TABLE {table} (id INT) AS SELECT user, password FROM mysql.user", "SELECT"),
    ("CREATE TABLE {table} LIKE victim.secrets", "LIKE"),
    ("CREATE TABLE victim.{table} (id INT)", "{table}"),
    ("CREATE TABLE secrets (id INT)", "{table}"),
    ("CREATE TABLE {table} (id INT) DATA DIRECTORY='/var/lib/mysql-files'", "unsupported"),
    ("CREATE TABLE {table} (id INT) INDEX DIRECTORY='/tmp'", "not valid"),
    ("CREATE TABLE {table} (id INT) ENGINE=CONNECT TABLE_TYPE=MYSQL CONNECTION='mysql://root@127.0.0.1/victim/secrets'",
     "ENGINE=CONNECT"),
    ("CREATE TABLE {table} (id INT) ENGINE=FEDERATED CONNECTION='mysql://root@127.0.0.1:3306/victim/secrets'",
     "ENGINE=FEDERATED"),
    ("CREATE TABLE {table} (id INT) ENGINE=SPIDER COMMENT='wrapper \"mysql\", table \"secrets\"'", "ENGINE=SPIDER"),
    ("CREATE TABLE {table} (id INT) CONNECTION='mysql://root@10.0.0.1/victim/secrets'", "CONNECTION"),
    ("CREATE TABLE {table} (id INT DEFAULT (SELECT COUNT(*) FROM victim.secrets))", "Subquery"),
    ("CREATE TABLE {table} (id INT, FOREIGN KEY (id) REFERENCES victim.secrets (id))", "ForeignKey"),
    ("CREATE OR REPLACE TABLE {table} (id INT)", "REPLACE"),
    ("CREATE TEMPORARY TABLE {table} (id INT)", "TEMPORARY"),
    ("CREATE VIEW {table} AS SELECT * FROM victim.secrets", "only CREATE TABLE"),
    ("DROP DATABASE victim", "only CREATE TABLE"),
    ("CREATE TABLE {table} (id INT) UNION=(victim.secrets)", "unsupported"),
    ("CREATE TABLE {table} (id INT) PARTITION BY HASH(id) PARTITIONS 4; DROP DATABASE victim", "one statement"),
    ("CREATE TABLE {table} (id INT) dbpartition by hash(id); DROP DATABASE victim", "one statement"),
    ("CREATE TABLE {table} (id INT) TABLESPACE=innodb_system", "TABLESPACE"),
]
PG_ATTACKS = [
    ("CREATE TABLE {table} (id INT DEFAULT pg_sleep(10))", "PG_SLEEP"),
    ("CREATE TABLE {table} (id INT GENERATED ALWAYS AS (pg_read_file('/etc/passwd')) STORED)", "not allowed"),
    ("CREATE TABLE {table} (LIKE victim.secrets INCLUDING ALL)", "LIKE"),
    ("CREATE TABLE {table} (id INT) INHERITS (victim.secrets)", "INHERITS"),
    ("CREATE TABLE {table} (id INT) TABLESPACE pg_global", "TableSpace"),
    ("CREATE TABLE {table} (id int PRIMARY KEY USING INDEX TABLESPACE pg_global)", "index options"),
    ("CREATE TABLE {table} (id INT) PARTITION BY HASH(id) PARTITIONS 4", "MySQL/MariaDB"),
]


@pytest.mark.parametrize(("ddl", "named"), ATTACKS, ids=[f"mysql-{i}" for i in range(len(ATTACKS))])
def test_an_attack_hidden_in_a_mysql_table_ddl_is_refused(ddl, named):
    with pytest.raises(DdlError) as caught:
        table_ddl_render(ddl, table="sbtest1", driver="mysql")
    assert named.lower() in str(caught.value).lower(), str(caught.value)


@pytest.mark.parametrize(("ddl", "named"), PG_ATTACKS, ids=[f"pgsql-{i}" for i in range(len(PG_ATTACKS))])
def test_an_attack_hidden_in_a_postgresql_table_ddl_is_refused(ddl, named):
    with pytest.raises(DdlError) as caught:
        table_ddl_render(ddl, table="sbtest1", driver="pgsql")
    assert named.lower() in str(caught.value).lower(), str(caught.value)


def test_what_runs_is_sqlglots_rendering_plus_the_rebuilt_partition_clause():
    ddl = ("create table {table} (id int unsigned not null auto_increment primary key, k integer default '0' not null)"
           "  Engine = InnoDB  partition  by  hash ( id )   partitions 8 ;")
    assert table_ddl_statements(ddl, tables=2, driver="mysql") == [
        "CREATE TABLE sbtest1 (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT DEFAULT '0' NOT NULL) "
        "ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS 8",
        "CREATE TABLE sbtest2 (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT DEFAULT '0' NOT NULL) "
        "ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS 8",
    ]
    ddm = "CREATE TABLE {table} (id INT) dbpartition by hash(id) tbpartition by hash(id) tbpartitions 4"
    assert table_ddl_render(ddm, table="sbtest1", driver="mysql") == (
        "CREATE TABLE sbtest1 (id INT) dbpartition by hash(id) tbpartition by hash(id) tbpartitions 4")
    key = "CREATE TABLE {table} (id INT) PARTITION BY LINEAR KEY(`id`) PARTITIONS 2"
    assert table_ddl_render(key, table="sbtest1", driver="mysql").endswith("PARTITION BY LINEAR KEY(`id`) PARTITIONS 2")
    pg = "CREATE UNLOGGED TABLE {table} (id SERIAL PRIMARY KEY, k INTEGER DEFAULT 0 NOT NULL) WITH (fillfactor=80)"
    assert table_ddl_render(pg, table="sbtest3", driver="pgsql").startswith("CREATE UNLOGGED TABLE sbtest3 (id INT")


def test_a_table_comment_is_a_string_but_comment_markers_and_semicolons_are_refused_even_inside_one():
    ddl = "CREATE TABLE {table} (id INT) COMMENT='made by the scenario''s DDL'"
    assert table_ddl_render(ddl, table="sbtest1", driver="mysql") == (
        "CREATE TABLE sbtest1 (id INT) COMMENT='made by the scenario''s DDL'")
    # Strict on purpose: the raw text is checked without trusting anyone's idea of where a string ends.
    for text in ("made by; the DDL", "see /* here", "a -- b", "#1"):
        with pytest.raises(DdlError):
            table_ddl_render(f"CREATE TABLE {{table}} (id INT) COMMENT='{text}'", table="sbtest1", driver="mysql")


def test_several_tables_need_the_placeholder_and_thousands_render_quickly():
    with pytest.raises(DdlError, match="must contain"):
        table_ddl_statements("CREATE TABLE sbtest1 (id INT)", tables=2, driver="mysql")
    statements = table_ddl_statements("CREATE TABLE `{table}` (id INT)", tables=5000, driver="mysql")
    assert statements[-1] == "CREATE TABLE `sbtest5000` (id INT)" and len(set(statements)) == 5000


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.key for t in TEMPLATES])
def test_every_seed_ddl_still_passes_and_its_plain_copy_too(template):
    for scenario in template.scenarios:
        if not scenario.table_ddl:
            continue
        assert table_ddl_error(scenario.table_ddl) is None
        rendered = table_ddl_render(scenario.table_ddl, table="sbtest1", driver="mysql")
        assert rendered.endswith(") dbpartition by hash(id)")
        plain = plain_ddl(scenario.table_ddl)
        assert "dbpartition" not in plain
        assert table_ddl_render(plain, table="sbtest1", driver="mysql") == rendered.removesuffix(
            " dbpartition by hash(id)")


# ---------------------------------------------------------------- through the API, the form and a launch


@pytest.fixture
def operator():
    return client_for(make_user(roles.OPERATOR))


@pytest.mark.django_db
@pytest.mark.parametrize(("ddl", "named"), ATTACKS[:8] + ATTACKS[14:17], ids=lambda v: str(v)[:30])
def test_saving_an_attack_through_the_api_is_a_400_on_table_ddl(operator, ddl, named):
    body = {"name": "evil", "test": "oltp_point_select", "dataset": DatasetFactory().pk, "table_ddl": ddl}
    response = operator.post(f"{API}/scenarios/", body, format="json")
    assert response.status_code == 400, response.content
    assert "table_ddl" in response.json() and "refused" in response.json()["table_ddl"][0]
    good = operator.post(f"{API}/scenarios/", {**body, "table_ddl": f"CREATE TABLE {{table}} {COLUMNS}"},
                         format="json")
    assert good.status_code == 201, good.content
    patch = operator.patch(f"{API}/scenarios/{good.json()['id']}/", {"table_ddl": ddl}, format="json")
    assert patch.status_code == 400 and "table_ddl" in patch.json()


@pytest.mark.django_db
def test_the_form_names_the_table_ddl_field():
    dataset = DatasetFactory()
    form = ScenarioForm(data={
        "name": "evil", "test": "oltp_point_select", "dataset": dataset.pk, "time_s": "10", "warmup_s": "0",
        "report_interval_s": "1", "percentile": "95", "prepare_mode": "auto", "cleanup": "keep",
        "prepare_threads": "2", "table_ddl": f"CREATE TABLE {{table}} {COLUMNS}; DROP DATABASE victim",
    })
    assert not form.is_valid()
    assert "one statement" in " ".join(form.errors["table_ddl"])


@pytest.mark.django_db
def test_a_stored_ddl_a_target_cannot_run_is_refused_at_launch_before_any_run_exists(operator):
    # Saved before this check existed (the factory skips full_clean), or valid for MySQL only.
    evil = ScenarioFactory(table_ddl=f"CREATE TABLE {{table}} {COLUMNS}; DROP DATABASE victim")
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[evil], threads=[1])
    with pytest.raises(services.ScenarioDdlRefused, match="one statement"):
        services.campaign_launch(campaign=campaign)
    response = operator.post(f"{API}/campaigns/{campaign.pk}/launch/", {}, format="json")
    assert response.status_code == 400 and "one statement" in response.json()["scenarios"][0]
    assert campaign.runs.count() == 0

    mysql_only = ScenarioFactory(table_ddl=f"CREATE TABLE {{table}} {COLUMNS} ENGINE=InnoDB")
    on_pg = CampaignFactory(targets=[PgTargetFactory()], scenarios=[mysql_only], threads=[1])
    with pytest.raises(services.ScenarioDdlRefused, match="PostgreSQL"):
        services.campaign_launch(campaign=on_pg)


@pytest.mark.django_db
def test_the_plan_shows_the_ddl_that_will_run_or_why_it_is_refused(operator, role_client):
    ddl = "create table {table} (id int primary key) engine=innodb dbpartition by hash(id)"
    scenario = ScenarioFactory(table_ddl=ddl, dataset=DatasetFactory(tables=3, table_size=10))
    campaign = CampaignFactory(targets=[TargetFactory(), PgTargetFactory()], scenarios=[scenario], threads=[1])
    jobs = operator.post(f"{API}/campaigns/{campaign.pk}/plan/", {}, format="json").json()["jobs"]
    by_driver = {job["target_id"]: job for job in jobs}
    mysql_job = next(j for j in by_driver.values() if j["table_ddl"])
    assert mysql_job["table_ddl"] == "CREATE TABLE sbtest1 (id INT PRIMARY KEY) ENGINE=innodb dbpartition by hash(id)"
    pg_job = next(j for j in by_driver.values() if not j["table_ddl"])
    assert "MySQL/MariaDB" in pg_job["table_ddl_error"]
    html = role_client("viewer").get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "CREATE TABLE sbtest1 (id INT PRIMARY KEY) ENGINE=innodb dbpartition by hash(id);" in html
    assert "one per table, to sbtest3" in html and "refused on this target" in html



# ---------------------------------------------------------------- on the real servers: the victim survives


def _sql(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def victim() -> Iterator[dict[str, str]]:
    """A scratch database on MariaDB and on PostgreSQL, each with a table (the attack's victim), and a
    database for the target itself."""
    # Named after this test process's own target databases (tests/pytest_env.py: session and xdist worker), so two
    # test sessions on one machine never drop each other's victim; a killed session's are swept at the next start.
    own = os.environ["BENCHAPP_TEST_TARGET_DB"]
    names = {"victim": f"{own}_ddl_victim", "target": f"{own}_ddl_target"}
    mysql = ["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e"]
    for name in names.values():
        _sql([*mysql, f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}"])
        _sql(["dropdb", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", "--if-exists", "--force", name])
        _sql(["createdb", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", name])
    _sql([*mysql, f"CREATE TABLE {names['victim']}.secrets (id INT); INSERT INTO {names['victim']}.secrets VALUES (1)"])
    yield names
    for name in names.values():
        _sql([*mysql, f"DROP DATABASE IF EXISTS {name}"])
        _sql(["dropdb", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", "--if-exists", "--force", name])


def _mysql_databases() -> set[str]:
    return set(_sql(["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e", "SHOW DATABASES"]).split())


def _pg_databases() -> set[str]:
    return set(_sql([*pg_target_psql("-tAc", "SELECT datname FROM pg_database")]).split())


def test_a_stacked_statement_that_reached_execute_ddl_would_still_not_run(victim):
    """Defence in depth: even a statement that slipped past the check is sent so that the server takes one."""
    attack = f"CREATE TABLE sbtest1 (id INT); DROP DATABASE {victim['victim']}"
    mysql = Connection(driver="mysql", host="127.0.0.1", port=3306, database=victim["target"], user="root")
    with pytest.raises(ProbeError):
        execute_ddl(mysql, [attack])
    assert victim["victim"] in _mysql_databases()
    pg = Connection(driver="pgsql", host="127.0.0.1", port=pg_target_port(), database=victim["target"],
                    user="postgres")
    with pytest.raises(ProbeError, match="multiple commands"):
        execute_ddl(pg, [attack])
    assert victim["victim"] in _pg_databases()


@pytest.mark.django_db
@pytest.mark.parametrize("attack", [
    "CREATE TABLE {table} (id INT); DROP DATABASE %s",
    "CREATE TABLE {table} (id INT) /*!50000 ; DROP DATABASE %s */",
    "CREATE TABLE {table} (id INT) SELECT * FROM %s.secrets",
], ids=["stacked", "versioned-comment", "create-select"])
def test_a_job_whose_stored_ddl_turned_evil_fails_before_touching_the_target(victim, attack):
    target = TargetFactory(database=victim["target"])
    scenario = ScenarioFactory(table_ddl="CREATE TABLE {table} (id INT)",
                               dataset=DatasetFactory(tables=1, table_size=10))
    run = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]))
    job = run.jobs.select_related("scenario", "target").get()
    # Changed behind the checks (an old row, a raw UPDATE): the job refuses it all the same.
    Scenario.objects.filter(pk=scenario.pk).update(table_ddl=attack % victim["victim"])
    job.scenario.refresh_from_db()
    with pytest.raises(JobFailure, match="table DDL is refused"):
        dataset_ensure(job, target_connection(target=target))
    assert victim["victim"] in _mysql_databases()
    assert _sql(["mariadb", "-h127.0.0.1", "-uroot", "-N", "-e",
                 f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='{victim['target']}'"]) == "0"
    assert not PreparedDataset.objects.filter(status=PreparedDataset.Status.PREPARING).exists()
