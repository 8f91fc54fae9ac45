"""A stored target password cannot be stolen, and a target cannot be benchapp itself.

The attacks are performed for real: an operator re-points a target at a server of their own (a fake PostgreSQL
or MySQL server in a thread of this test that asks for the password in clear text) and calls /check/; a target
is pointed at benchapp's own database or Redis under every spelling of "this machine".
"""
from __future__ import annotations

import os
import socket
import sys
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from campaigns import roles
from campaigns.endpoints import is_local_address, own_service_problem
from campaigns.execution.phases import JobFailure, job_connection, phase_argv, sysbench_phase
from campaigns.models import Target
from campaigns.probes import ProbeError, connection_verify, server_info
from campaigns.sysbench.command import Connection, format_command, secrets_to_env
from campaigns.sysbench.runner import run_process
from tests.factories import DatasetFactory, JobFactory, PgTargetFactory, ScenarioFactory, TargetFactory
from tests.helpers.fake_servers import FakeMysql, FakePostgres, fake_server
from tests.helpers.pg_targets import pg_target_port
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db

SECRET = "Stolen-If-Seen-6021"
API = "/api/v1"


@pytest.fixture
def operator() -> Any:
    return client_for(make_user(roles.OPERATOR))


@pytest.fixture
def admin_site() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root-admin", password="pw-12345678"))
    return client


def _fields(target: Target, **changes: Any) -> dict[str, Any]:
    fields = {"name": target.name, "product": target.product_id, "spec": target.spec_id or "",
              "driver": target.driver, "host": target.host, "port": target.port, "database": target.database,
              "user": target.user}
    return {**fields, **changes}


# ---------------------------------------------------------------- item 1: re-pointing clears the password


@pytest.mark.parametrize("field, value", [("driver", "pgsql"), ("host", "10.0.0.5"), ("port", 3307),
                                          ("user", "someone"), ("database", "otherdb")])
def test_patching_a_targets_endpoint_clears_its_stored_password(operator, field, value):
    target = TargetFactory(password=SECRET)
    response = operator.patch(f"{API}/targets/{target.pk}/", {field: value}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["password_cleared"] is True and body["has_password"] is False
    assert "password was removed" in body["notice"]
    target.refresh_from_db()
    assert not target.has_password()
    # The next read says nothing more: the notice belongs to the update that did it.
    again = operator.get(f"{API}/targets/{target.pk}/").json()
    assert again["password_cleared"] is False and again["notice"] == ""


def test_a_password_sent_with_the_new_endpoint_is_kept(operator):
    target = TargetFactory(password=SECRET)
    response = operator.patch(f"{API}/targets/{target.pk}/", {"port": 3307, "password": "New-Pw-1"}, format="json")
    assert response.status_code == 200 and response.json()["password_cleared"] is False
    target.refresh_from_db()
    assert target.get_password() == "New-Pw-1"


def test_the_target_form_clears_the_password_when_the_endpoint_changes_and_says_so(role_client):
    target = TargetFactory(password=SECRET)
    client = role_client("operator")
    response = client.post(f"/targets/{target.pk}/edit/", _fields(target, host="10.0.0.5", password=""),
                           follow=True)
    assert response.status_code == 200
    assert "password was removed" in response.content.decode()
    target.refresh_from_db()
    assert target.host == "10.0.0.5" and not target.has_password()


def test_the_admin_clears_the_password_when_the_endpoint_changes_and_says_so(admin_site):
    target = TargetFactory(password=SECRET)
    response = admin_site.post(f"/admin/campaigns/target/{target.pk}/change/",
                               _fields(target, port=3307, password=""), follow=True)
    assert response.status_code == 200
    assert "password was removed" in response.content.decode()
    target.refresh_from_db()
    assert target.port == 3307 and not target.has_password()
    # Renaming keeps it; a password typed with a new endpoint is kept too.
    target.set_password(SECRET)
    target.save()
    admin_site.post(f"/admin/campaigns/target/{target.pk}/change/", _fields(target, name="renamed", password=""))
    admin_site.post(f"/admin/campaigns/target/{target.pk}/change/", _fields(target, name="renamed", port=3306,
                                                                             password="Typed-Again-1"))
    target.refresh_from_db()
    assert target.name == "renamed" and target.get_password() == "Typed-Again-1"


def test_saving_a_re_pointed_instance_clears_the_password_however_it_was_loaded():
    target = TargetFactory(password=SECRET)
    stale = Target.objects.get(pk=target.pk)
    stale.host = "10.0.0.5"
    stale.save(update_fields=["host"])
    assert stale.password_cleared is True
    fresh = Target.objects.get(pk=target.pk)
    assert fresh.host == "10.0.0.5" and not fresh.has_password()
    assert fresh.password_cleared is False  # a fresh load has nothing to say


@pytest.mark.parametrize("kind, make", [(FakePostgres, PgTargetFactory), (FakeMysql, TargetFactory)])
def test_re_pointing_a_target_at_ones_own_server_then_checking_it_leaks_no_password(operator, kind, make):
    target = make(password=SECRET)
    with fake_server(kind) as server:
        patched = operator.patch(f"{API}/targets/{target.pk}/", {"port": server.port}, format="json")
        assert patched.status_code == 200 and patched.json()["password_cleared"] is True
        operator.post(f"{API}/targets/{target.pk}/check/")
        received = server.received()
    assert server.connections >= 1
    assert SECRET.encode() not in received


# ---------------------------------------------------------------- item 1: no clear-text authentication


@pytest.mark.parametrize("kind, make", [(FakePostgres, PgTargetFactory), (FakeMysql, TargetFactory)])
def test_a_server_asking_for_the_password_in_clear_text_never_gets_it(operator, kind, make):
    with fake_server(kind) as server:
        # The password was typed for this very endpoint (nothing was re-pointed): only the refusal protects it.
        target = make(password=SECRET, port=server.port)
        response = operator.post(f"{API}/targets/{target.pk}/check/")
        received = server.received()
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "target_unreachable"
    assert "clear text" in body["detail"] and f"127.0.0.1:{server.port}" in body["detail"]
    assert SECRET not in response.content.decode()
    assert server.connections == 1 and received  # it was asked, and answered nothing secret
    assert SECRET.encode() not in received


@pytest.mark.parametrize("kind, driver", [(FakePostgres, "pgsql"), (FakeMysql, "mysql")])
def test_the_job_gate_fails_before_sysbench_starts_when_the_server_asks_for_a_clear_text_password(kind, driver):
    # sysbench's own libraries would answer (Debian's libpq 15 has no require_auth): the gate must stop it.
    with fake_server(kind) as server:
        conn = Connection(driver=driver, host="127.0.0.1", port=server.port, database="sbtest", user="u",
                          password=SECRET)
        job = JobFactory(target=TargetFactory(driver=driver, port=server.port),
                         scenario=ScenarioFactory(dataset=DatasetFactory(name="gate", tables=1, table_size=10)))
        argv = phase_argv(job=job, conn=conn, command="cleanup")
        with pytest.raises(JobFailure, match="clear text") as failure:
            sysbench_phase(argv=argv, conn=conn, phase="cleanup", should_cancel=lambda: False, timeout_s=30)
        received = server.received()
    assert server.connections == 1  # our check only: sysbench never connected
    assert SECRET.encode() not in received and SECRET not in str(failure.value)


def test_probes_still_connect_to_the_real_servers_with_the_restrictions(target_databases_free):
    for conn in target_databases_free:
        connection_verify(conn)
        assert server_info(conn).version


@pytest.fixture
def target_databases_free() -> list[Connection]:
    """The local MariaDB (root, no password) and PostgreSQL (trust) on databases that always exist."""
    return [Connection(driver="mysql", host="127.0.0.1", port=3306, database="mysql", user="root"),
            Connection(driver="pgsql", host="127.0.0.1", port=pg_target_port(), database="postgres",
                       user="postgres")]


# ---------------------------------------------------------------- item 2: the password never in argv


def test_a_password_option_travels_in_the_environment_not_in_argv():
    argv = ["sysbench", "--mysql-host=db", "--mysql-password=p w,\"x", "--pgsql-password=q", "run"]
    kept, env = secrets_to_env(argv)
    assert kept == ["sysbench", "--mysql-host=db", "run"]
    assert env == {"MYSQL_PWD": "p w,\"x", "PGPASSWORD": "q"}
    assert "--mysql-password=***" in format_command(argv)  # the command users see is unchanged


def test_a_started_process_gets_the_password_in_its_environment_only(monkeypatch):
    # A password the worker inherited must not reach a target that has none.
    monkeypatch.setenv("PGPASSWORD", "benchapps-own")
    script = ("import os, sys; print(' '.join(sys.argv[1:]));"
              " print('MYSQL_PWD=' + os.environ.get('MYSQL_PWD', '-')); print('PGPASSWORD=' + os.environ.get('PGPASSWORD', '-'))")
    outcome = run_process([sys.executable, "-c", script, "--mysql-user=u", f"--mysql-password={SECRET}", "run"])
    assert outcome.succeeded(), outcome.output
    first, mysql_pwd, pg_pwd = outcome.output.splitlines()
    assert first == "--mysql-user=u run"
    assert mysql_pwd == f"MYSQL_PWD={SECRET}" and pg_pwd == "PGPASSWORD=-"
    assert os.environ["PGPASSWORD"] == "benchapps-own"


# ---------------------------------------------------------------- item 7: benchapp's own database and Redis


def _own_db() -> tuple[int, str]:
    db = settings.DATABASES["default"]
    return int(db.get("PORT") or 5432), db["NAME"]


def _outward_address() -> str | None:
    """This machine's address on its default route (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("192.0.2.1", 9))
            return sock.getsockname()[0]
    except OSError:
        return None


LOCAL_SPELLINGS = ["2130706433", "127.1", "0.0.0.0", "127.0.0.2", "localhost", "::1", socket.gethostname(),
                   "127.0.0.1"]


@pytest.mark.parametrize("host", LOCAL_SPELLINGS)
def test_a_target_on_benchapps_own_database_is_refused_however_the_host_is_spelt(operator, host):
    port, name = _own_db()
    product = TargetFactory().product
    for database in (name, "test_benchapp_other_session", "BENCHAPP" if name == "benchapp" else name.upper()):
        response = operator.post(f"{API}/targets/", {
            "name": "own", "product": product.pk, "driver": "pgsql", "host": host, "port": port,
            "database": database, "user": "postgres",
        }, format="json")
        assert response.status_code == 400, (database, response.content)
        assert list(response.json()) == ["host"] and "benchapp's own database" in response.json()["host"][0]
    assert not Target.objects.filter(name="own").exists()


@pytest.mark.parametrize("host", LOCAL_SPELLINGS)
def test_a_target_on_benchapps_redis_is_refused_whatever_the_database(operator, host):
    target = TargetFactory()
    response = operator.patch(f"{API}/targets/{target.pk}/", {"host": host, "port": 6379}, format="json")
    assert response.status_code == 400 and "benchapp's own Redis" in response.json()["host"][0]
    target.refresh_from_db()
    assert target.port == 3306


def test_the_machines_own_outward_address_is_this_machine():
    address = _outward_address()
    if address is None:
        pytest.skip("no default route here")
    assert is_local_address(address)
    port, name = _own_db()
    assert own_service_problem(host=address, port=port, database=name)
    assert not is_local_address("192.0.2.1")  # TEST-NET-1: nobody's


def test_another_database_on_benchapps_postgresql_stays_a_valid_target(operator):
    port, _ = _own_db()
    product = TargetFactory().product
    response = operator.post(f"{API}/targets/", {
        "name": "demo-like", "product": product.pk, "driver": "pgsql", "host": "127.0.0.1", "port": port,
        "database": "sbtest", "user": "postgres",
    }, format="json")
    assert response.status_code == 201, response.content


def test_the_target_form_and_the_admin_refuse_benchapps_own_database(role_client, admin_site):
    port, name = _own_db()
    target = PgTargetFactory()
    form = role_client("operator").post(f"/targets/{target.pk}/edit/", _fields(target, host="127.1", port=port, database=name))
    assert form.status_code == 200 and 'id="id_host_error1"' in form.content.decode()
    assert "benchapp&#x27;s own database" in form.content.decode()
    added = admin_site.post(f"/admin/campaigns/target/{target.pk}/change/",
                            _fields(target, host="localhost", port=6379))
    assert added.status_code == 200 and "benchapp's own Redis" in " ".join(added.context["adminform"].form.errors["host"])
    target.refresh_from_db()
    assert target.host == "127.0.0.1" and target.database != name


def test_a_target_already_pointing_at_benchapp_is_refused_when_connecting(operator):
    """Rows saved before the rule (or a name that resolves elsewhere since) are checked again at connect time."""
    port, name = _own_db()
    target = PgTargetFactory()
    Target.objects.filter(pk=target.pk).update(host="2130706433", port=port, database=name)
    response = operator.post(f"{API}/targets/{target.pk}/check/")
    assert response.status_code == 400 and "benchapp's own database" in response.json()["detail"]
    job = JobFactory(target=Target.objects.get(pk=target.pk))
    with pytest.raises(JobFailure, match="benchapp's own database"):
        job_connection(job)
    with pytest.raises(ProbeError, match="own Redis"):
        connection_verify(Connection(driver="mysql", host="localhost", port=6379, database="x", user="u"))
