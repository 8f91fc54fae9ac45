"""A second installation on one machine (scripts/setup.sh given other ports): it starts its own PostgreSQL cluster,
Redis and MariaDB on the ports it was given, records them for the checkout's processes (var/install.env, read by
benchapp/settings.py), closes them to the sandbox's user in a firewall table of its own, and leaves the machine's
services (the first installation's) as they were: no password changed, no role or database added, no firewall rule
dropped. Run for real, as root, with scripts/ copied into a directory of the test's own."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings

from tests.conftest import ROOT
from tests.helpers.servers import free_port

pytestmark = [pytest.mark.integration]

NAME = "benchapp_second"
REMOTE_ENV = ("DATABASE_URL", "REDIS_URL", "BENCHAPP_SECRETS_FILE", "BENCHAPP_INSTALL_FILE", "BENCHAPP_PG_PORT",
              "BENCHAPP_REDIS_PORT", "BENCHAPP_MARIADB_PORT", "BENCHAPP_DB_NAME", "BENCHAPP_PORT", "PORT",
              "DJANGO_SETTINGS_MODULE", "BENCHAPP_REDIS_RECORD", "TEST_REDIS_URL")


def _run(*argv: str, env: dict[str, str] | None = None, timeout: float = 60, check: bool = True,
         **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kw)  # type: ignore[call-overload]
    if check:
        assert done.returncode == 0, f"{' '.join(argv)}: rc {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _pg_version() -> str:
    return sorted(os.listdir("/etc/postgresql"), key=lambda v: [int(p) for p in v.split(".")])[-1]


def _machine_state() -> dict[str, object]:
    """What the first installation's services are: the machine's MariaDB root logins, its PostgreSQL roles and
    databases of this name, the sandbox's firewall table, and whether Redis still takes the machine's password."""
    users = _run("mariadb", "-h127.0.0.1", "-P3306", "-uroot", "-N", "-B", "-e",
                 "select user, host, plugin, authentication_string from mysql.user where user = 'root' order by host")
    named = _run("psql", "-X", "-At", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres", "-d", "postgres", "-c",
                 f"select (select count(*) from pg_roles where rolname = '{NAME}'),"
                 f" (select count(*) from pg_database where datname = '{NAME}')")
    table = _run("nft", "list", "table", "inet", "benchapp_sandbox", check=False)
    redis_ok = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5).ping()
    rules = re.sub(r"counter packets \d+ bytes \d+ ", "", table.stdout)  # this test's own probes count there
    return {"mariadb_root": users.stdout, "pg_named": named.stdout.strip(), "nft": rules, "redis": redis_ok}


@pytest.fixture
def second(tmp_path: Path) -> Iterator[dict[str, object]]:
    if os.geteuid() != 0:
        pytest.fail("scripts/setup.sh makes services and firewall rules: the test suite runs as root")
    home = tmp_path / "second"
    (home / "benchapp").mkdir(parents=True)
    shutil.copytree(ROOT / "scripts", home / "scripts")
    shutil.copy(ROOT / "benchapp" / "local_secrets.py", home / "benchapp" / "local_secrets.py")
    ports = {"pg": free_port(), "redis": free_port(), "mariadb": free_port(), "web": free_port()}
    env = {k: v for k, v in os.environ.items() if k not in REMOTE_ENV}
    env.update({"BENCHAPP_PG_PORT": str(ports["pg"]), "BENCHAPP_REDIS_PORT": str(ports["redis"]),
                "BENCHAPP_MARIADB_PORT": str(ports["mariadb"]), "BENCHAPP_DB_NAME": NAME, "PORT": str(ports["web"]),
                "BENCHAPP_REDIS_RECORD": str(home / "var" / "redis.record"), "CI": "true"})
    state = {"home": home, "ports": ports, "env": env}
    try:
        yield state
    finally:
        cluster = f"benchapp_{ports['pg']}"
        _run("pg_dropcluster", "--stop", _pg_version(), cluster, check=False)
        secrets = home / "var" / "secrets.env"
        password = next((line.split("=", 1)[1] for line in secrets.read_text().splitlines()
                         if line.startswith("BENCHAPP_REDIS_PASSWORD=")), "") if secrets.exists() else ""
        _run("redis-cli", "--no-auth-warning", "-p", str(ports["redis"]), "shutdown", "nosave", check=False,
             env={**os.environ, "REDISCLI_AUTH": password})
        datadir = Path(f"/var/lib/benchapp-mariadb-{ports['mariadb']}")
        pid_file = datadir / "mariadbd.pid"
        if pid_file.exists():
            _run("kill", pid_file.read_text().strip(), check=False)
            _run("timeout", "30", "bash", "-c", f"while kill -0 {pid_file.read_text().strip()} 2>/dev/null;"
                 " do sleep 0.2; done", check=False)
        shutil.rmtree(datadir, ignore_errors=True)
        _run("nft", "delete", "table", "inet", f"benchapp_sandbox_{ports['web']}", check=False)


def test_a_second_installation_uses_its_own_services_and_leaves_the_first_ones_alone(second):
    home, ports, env = second["home"], second["ports"], second["env"]
    before = _machine_state()

    done = _run("bash", str(home / "scripts" / "setup.sh"), "--services", env=env, timeout=300)
    said = done.stdout
    assert f"cluster benchapp_{ports['pg']}" in said and "done (--services" in said, said

    # Recorded for the checkout, and what the settings then make of it.
    install = dict(line.split("=", 1) for line in (home / "var" / "install.env").read_text().splitlines()
                   if "=" in line and not line.startswith("#"))
    assert install == {"BENCHAPP_PG_PORT": str(ports["pg"]), "BENCHAPP_REDIS_PORT": str(ports["redis"]),
                       "BENCHAPP_MARIADB_PORT": str(ports["mariadb"]), "BENCHAPP_DB_NAME": NAME,
                       "BENCHAPP_PORT": str(ports["web"])}
    probe = _run(str(ROOT / ".venv" / "bin" / "python"), "-c", PROBE, cwd=ROOT, timeout=60, env={
        **{k: v for k, v in os.environ.items() if k not in REMOTE_ENV}, "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "benchapp.settings", "BENCHAPP_INSTALL_FILE": str(home / "var" / "install.env"),
        "BENCHAPP_SECRETS_FILE": str(home / "var" / "secrets.env")})
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    # Its own cluster does not trust loopback: the role of its own name, with the password in its secrets file.
    assert seen["db"] == [NAME, str(ports["pg"]), NAME, [f"PostgreSQL {ports['pg']}"]], seen
    assert seen["redis"] == [ports["redis"], True], seen
    assert seen["demo_mysql_port"] == ports["mariadb"], seen

    # Its MariaDB is its own server, with the demo's database.
    own = _run("mariadb", "-h127.0.0.1", f"-P{ports['mariadb']}", "-uroot", "-N", "-B", "-e",
               "select @@port, @@datadir; show databases like 'sbtest'")
    assert own.stdout.split() == [str(ports["mariadb"]), f"/var/lib/benchapp-mariadb-{ports['mariadb']}/", "sbtest"]
    # Its Redis asks for its own password, not the machine's.
    assert "NOAUTH" in _run("redis-cli", "-p", str(ports["redis"]), "ping", check=False).stdout

    # The sandbox's user reaches none of its services, and still none of the first installation's.
    for port in (ports["pg"], ports["redis"], 5432, 6379):
        attempt = _run("runuser", "-u", "benchapp-sandbox", "--", "bash", "-c",
                       f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo REACHED", check=False, timeout=20)
        assert "REACHED" not in attempt.stdout and "refused" in attempt.stderr, (port, attempt.stderr)

    # The first installation's services are as they were.
    assert _machine_state() == before

    # Again: nothing to do, nothing changed.
    again = _run("bash", str(home / "scripts" / "setup.sh"), "--services", env={
        k: v for k, v in env.items() if not k.startswith("BENCHAPP_") or k == "BENCHAPP_REDIS_RECORD"}, timeout=120)
    assert "already running" in again.stdout and "creating" not in again.stdout, again.stdout
    assert (home / "var" / "install.env").read_text().count("=") == 5
    assert _machine_state() == before


def test_a_port_that_is_no_port_is_refused_before_anything_is_done(tmp_path):
    home = tmp_path / "bad"
    (home / "benchapp").mkdir(parents=True)
    shutil.copytree(ROOT / "scripts", home / "scripts")
    env = {**{k: v for k, v in os.environ.items() if k not in REMOTE_ENV}, "BENCHAPP_REDIS_PORT": "70000"}
    done = _run("bash", str(home / "scripts" / "setup.sh"), "--services", env=env, check=False)
    assert done.returncode == 1 and "BENCHAPP_REDIS_PORT=70000: not a port number" in done.stderr, done.stderr
    assert not (home / "var" / "install.env").exists()
    env = {**env, "BENCHAPP_REDIS_PORT": "6379", "BENCHAPP_DB_NAME": "bench-app; drop"}
    done = _run("bash", str(home / "scripts" / "setup.sh"), "--services", env=env, check=False)
    assert done.returncode == 1 and "BENCHAPP_DB_NAME=bench-app; drop" in done.stderr, done.stderr


PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.db import connection
import os
import redis
from urllib.parse import urlsplit
db = settings.DATABASES["default"]
with connection.cursor() as cursor:
    cursor.execute("select current_user, 'PostgreSQL ' || current_setting('port')")
    user, where = cursor.fetchone()
url = urlsplit(settings.REDIS_URL)
ok = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5).ping()
print(json.dumps({"db": [db["NAME"], str(db["PORT"]), user, [where]], "redis": [url.port, ok],
                  "demo_mysql_port": int(os.environ.get("DEMO_MYSQL_PORT") or os.environ["BENCHAPP_MARIADB_PORT"])}))
"""
