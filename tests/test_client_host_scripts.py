"""scripts/serve-clients.sh and scripts/join-client.sh as a new operator runs them, against a
PostgreSQL cluster (pg_createcluster on a free port) and a Redis (started with flags, as scripts/setup.sh starts
one) of this module's own: the machine's shared services are only read, never reconfigured. The server's scripts
change that cluster and that Redis; the client host is a network namespace (tests/helpers/netns.py) that reaches them only
at the lab bridge's address, joins with the env file serve-clients.sh wrote, and runs a job.

Needs root (clusters, namespaces, the `benchapp` user); elsewhere these tests skip, with CI=true they fail.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from django.conf import settings

from tests.conftest import ROOT, WorkerProcess, record_measurement, wait_for
from tests.helpers.netns import NetnsLab, netns_lab

__all__ = ["netns_lab"]  # the fixture, imported to be used here

SERVE = str(ROOT / "scripts" / "serve-clients.sh")
JOIN = str(ROOT / "scripts" / "join-client.sh")
TIMEOUT_S = 240
# Making the module's cluster and restarting it take 15-50 s (idle to loaded): out of `make check`'s fast loop.
SLOW = pytest.mark.slow
# One pytest-xdist process runs the module (make test): its cluster and Redis (module fixtures) are made once.
pytestmark = [pytest.mark.xdist_group("client-host-scripts")]


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why} (CI=true)")
    pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False, **kwargs)  # type: ignore[call-overload]


@dataclass
class Cluster:
    version: str
    name: str
    port: int

    def sql(self, query: str, database: str = "postgres") -> str:
        done = _run(["runuser", "-u", "postgres", "--", "psql", "-X", "-qtA", "-p", str(self.port), "-d", database,
                     "-c", query])
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def file(self, name: str) -> Path:
        return Path(self.sql(f"SHOW {name}"))


@dataclass
class Redis:
    port: int
    directory: Path

    def pid(self) -> int | None:
        try:
            return int((self.directory / "redis.pid").read_text())
        except (OSError, ValueError):
            return None

    def ask(self, *command: str, password: str = "") -> str:
        env = {k: v for k, v in os.environ.items() if k != "REDISCLI_AUTH"}
        if password:
            env["REDISCLI_AUTH"] = password
        return _run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *command], env=env).stdout.strip()


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this module's own, with an empty `benchapp` database; loopback TCP logins trusted as
    scripts/setup.sh makes them on a development machine."""
    if os.geteuid() != 0 or shutil.which("pg_createcluster") is None:
        _unavailable("needs root and postgresql-common (pg_createcluster)")
    version = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: [int(p) for p in v.split(".")])[-1]
    cluster = Cluster(version, f"bt{uuid.uuid4().hex[:8]}", _free_port())
    done = _run(["pg_createcluster", version, cluster.name, "-p", str(cluster.port), "--start"])
    try:
        assert done.returncode == 0, done.stderr
        hba = cluster.file("hba_file")
        hba.write_text("host all postgres 127.0.0.1/32 trust\n" + hba.read_text())
        cluster.sql("SELECT pg_reload_conf()")
        cluster.sql("CREATE DATABASE benchapp")
        yield cluster
    finally:
        _run(["pg_dropcluster", "--stop", version, cluster.name])


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    """A Redis of this module's own, started with flags as scripts/setup.sh starts one (no file, nothing on disk)."""
    if shutil.which("redis-server") is None:
        _unavailable("redis-server is not installed")
    directory = tmp_path_factory.mktemp("redis")
    redis = Redis(_free_port(), directory)
    done = _run(["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(redis.port),
                 "--save", "", "--appendonly", "no", "--dir", str(directory), "--logfile", str(directory / "redis.log"),
                 "--pidfile", str(directory / "redis.pid")])
    assert done.returncode == 0, done.stderr
    wait_for(lambda: redis.ask("PING") == "PONG", timeout_s=30, what="the module's Redis")
    try:
        yield redis
    finally:
        # serve-clients.sh restarts it (with the same pid file): whichever runs now is stopped.
        pid = redis.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
                wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout_s=30, what="Redis to stop")
            except ProcessLookupError:
                pass


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets.env"
    path.write_text(f"BENCHAPP_FIELD_KEY={settings.FIELD_ENCRYPTION_KEYS[0]}\n")
    path.chmod(0o600)
    return path


def _redis_password(secrets: Path) -> str:
    for line in secrets.read_text().splitlines() if secrets.exists() else []:
        if line.startswith("BENCHAPP_REDIS_PASSWORD="):
            return line.partition("=")[2]
    return ""


def _state(cluster: Cluster, redis: Redis, secrets: Path) -> dict[str, object]:
    """Everything serve-clients.sh may change."""
    password = _redis_password(secrets)
    return {"hba": cluster.file("hba_file").read_text(),
            "auto.conf": (cluster.file("data_directory") / "postgresql.auto.conf").read_text(),
            "listen_addresses": cluster.sql("SHOW listen_addresses"),
            "role": cluster.sql("SELECT rolname, rolpassword FROM pg_authid WHERE rolname = 'benchapp_client'"),
            "redis": [redis.ask("CONFIG", "GET", name, password=password) for name in ("bind", "requirepass")],
            "secrets": secrets.read_text()}


def _serve(cluster: Cluster, redis: Redis, secrets: Path, *args: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _run(["bash", SERVE, "--pg-cluster", f"{cluster.version}/{cluster.name}", "--redis-port", str(redis.port),
                 "--secrets-file", str(secrets), *args], env=env)


@SLOW
def test_serve_clients_dry_run_prints_the_plan_and_changes_nothing(own_cluster, own_redis, secrets_file, tmp_path):
    before = _state(own_cluster, own_redis, secrets_file)
    listening = own_cluster.sql("SHOW listen_addresses")
    done = _serve(own_cluster, own_redis, secrets_file, "--clients", "10.9.0.0/24", "--listen", "10.9.0.1",
                  "--dry-run")
    assert done.returncode == 0, done.stderr
    plan = done.stdout
    if Path("/run/systemd/system").is_dir():
        assert f"systemctl restart postgresql@{own_cluster.version}-{own_cluster.name}" in plan
    else:
        assert "no systemd" in plan
        assert f"pg_ctlcluster --skip-systemctl-redirect {own_cluster.version} {own_cluster.name} restart" in plan
        assert f"redis-server with the flags it runs with (port {own_redis.port} dir {own_redis.directory}" in plan
    assert "host benchapp +benchapp_client 10.9.0.0/24 scram-sha-256" in plan
    assert f"listen_addresses 'localhost,10.9.0.1' (now '{listening}')" in plan
    assert f"Redis on port {own_redis.port}: bind 127.0.0.1 -::1 10.9.0.1, requirepass (generated)" in plan
    assert (f"client_host_issue NAME --server-address 10.9.0.1 --pg-port {own_cluster.port} --redis-port "
            f"{own_redis.port}") in plan
    assert plan.rstrip().endswith("dry run: nothing changed")
    assert settings.FIELD_ENCRYPTION_KEYS[0] not in plan
    assert _state(own_cluster, own_redis, secrets_file) == before
    assert not (tmp_path / "client.env").exists()


@SLOW
def test_serve_clients_changes_a_redis_configuration_file_and_restarts_redis_with_it(own_cluster, secrets_file,
                                                                                     tmp_path):
    redis = Redis(_free_port(), tmp_path)
    conf = tmp_path / "redis.conf"
    conf.write_text(f'port {redis.port}\nbind 127.0.0.1\nsave ""\nappendonly no\ndir {tmp_path}\n'
                    f"logfile {tmp_path / 'redis.log'}\npidfile {tmp_path / 'redis.pid'}\n")
    assert _run(["redis-server", str(conf), "--daemonize", "yes"]).returncode == 0
    try:
        wait_for(lambda: redis.ask("PING") == "PONG", timeout_s=30, what="Redis")
        first_pid = redis.pid()
        # 127.0.0.2 is loopback too: PostgreSQL and Redis can listen there, as on a server's LAN address.
        done = _serve(own_cluster, redis, secrets_file, "--clients", "10.9.0.0/24", "--listen", "127.0.0.2")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"then: stopped, then redis-server {conf}" in done.stdout
        password = _redis_password(secrets_file)
        assert password and password not in done.stdout + done.stderr
        lines = conf.read_text().splitlines()
        assert "bind 127.0.0.1 -::1 127.0.0.2" in lines and f"requirepass {password}" in lines
        assert "bind 127.0.0.1" not in lines and f"port {redis.port}" in lines
        # It holds the password: no longer readable by every local user (it was 0644).
        assert conf.stat().st_mode & 0o007 == 0 and "others may no longer read it" in done.stdout
        assert redis.pid() != first_pid and redis.ask("PING").startswith("NOAUTH")
        beside = _run(["redis-cli", "-h", "127.0.0.2", "-p", str(redis.port), "PING"],
                      env={**os.environ, "REDISCLI_AUTH": password})
        assert beside.stdout.strip() == "PONG"
        assert f"--server-address 127.0.0.2 --pg-port {own_cluster.port} --redis-port {redis.port}" in done.stdout
    finally:
        pid = redis.pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)


@SLOW
def test_serve_clients_leaves_nothing_half_applied(own_cluster, own_redis, secrets_file, tmp_path):
    """After the test above the role exists (its password is not in this test's secrets file, so a new one is set
    and must be put back); run alone, the role is new and must be dropped."""
    before = _state(own_cluster, own_redis, secrets_file)
    # A check that fails: nothing is applied.
    refused = _serve(own_cluster, own_redis, secrets_file, "--clients", "10.9.0.0/24", "--database",
                     "no_such_database")
    assert refused.returncode == 2 and "--database no_such_database: no such database" in refused.stderr
    assert "PostgreSQL: role" not in refused.stdout
    # A step that fails mid-way: 192.0.2.1 (TEST-NET-1) is no address of this machine, so PostgreSQL starts (it
    # listens where it can) but Redis cannot bind it. The PostgreSQL steps applied before are undone.
    started = time.monotonic()
    failed = _serve(own_cluster, own_redis, secrets_file, "--clients", "10.9.0.0/24",
                    "--listen", "192.0.2.1")
    assert failed.returncode != 0, failed.stdout
    assert "PostgreSQL: listen_addresses = 'localhost,192.0.2.1'" in failed.stdout, failed.stdout
    assert "Redis exited at start" in failed.stdout and "undone: nothing was changed" in failed.stdout
    assert _state(own_cluster, own_redis, secrets_file) == before
    assert not (tmp_path / "client.env").exists()
    # Both services answer again as they did.
    assert own_redis.ask("PING", password=_redis_password(secrets_file)) == "PONG"
    assert own_cluster.sql("SELECT 1", "benchapp") == "1"
    record_measurement(f"serve-clients.sh failing at its Redis step, undone in {time.monotonic() - started:.1f} s")


def test_join_client_dry_run_installs_nothing_that_is_present_and_writes_nothing(tmp_path):
    env_file = tmp_path / "client.env"
    env_file.write_text("DATABASE_URL=postgres://benchapp_client:pw-1@10.9.0.1:5432/benchapp\n"
                        "REDIS_URL=redis://:pw-2@10.9.0.1:6379/0\n")
    done = _run(["bash", JOIN, "--env-file", str(env_file), "--foreground", "--dry-run",
                 "--config-dir", str(tmp_path / "etc")])
    assert done.returncode == 0, done.stderr
    # This machine has sysbench and a complete .venv: no apt-get, no pip.
    assert "1. Debian packages: all present (no apt-get)" in done.stdout
    assert "2. .venv has every pin of requirements-client.txt (no pip)" in done.stdout
    assert "the worker in the foreground as benchapp" in done.stdout
    assert done.stdout.rstrip().endswith("dry run: nothing changed")
    assert not any(secret in done.stdout + done.stderr for secret in ("pw-1", "pw-2"))
    assert not (tmp_path / "etc").exists()


def _processes_showing(secrets: list[str]) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(secret in text for secret in secrets):
            found.append(f"{cmdline.parent.name}: {text[:200]}")
    return found


def _env_values(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and line[0] != "#")


LAUNCH = """
import json, os
from campaigns import services
from campaigns.models import JobClient
from tests.factories import CampaignFactory, DatasetFactory, JobFactory, JobResultFactory, ScenarioFactory, TargetFactory
address, database, label, name = json.loads(os.environ["LAUNCH_ARGS"])
target = TargetFactory(name=f"{name}-mariadb", host=address, port=3306, database=database)
scenario = ScenarioFactory(dataset=DatasetFactory(name=f"{name}-tiny", tables=1, table_size=1000), warmup_s=1, time_s=3)
campaign = CampaignFactory(name=name, targets=[target], scenarios=[scenario], threads=[2], client_hosts=[label])
# Another host's job, running, with a result and a target password this host is never sent. Its target is
# another server (TEST-NET-1, never reached): on this machine's MariaDB it would hold the server, and the job
# above would rightly wait for it to finish, which it never does.
other = JobFactory(target=TargetFactory(name=f"{name}-other", host="192.0.2.10", password="Other-Hosts-Secret-5"),
                   status="running")
JobClient.objects.create(job=other, index=0, host_name="another-host", threads=1, status="running")
JobResultFactory(job=other, qps=1544.0)
print(json.dumps({"run": services.campaign_launch(campaign=campaign).pk, "other": other.pk}))
"""

# What the takeover script tried, with the host's own credentials from inside its namespace.
PROBE = """
import json, os
import psycopg, redis
out = {}
db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, connect_timeout=10)
def attempt(name, statement, params=None):
    try:
        cursor = db.execute(statement, params)
        out[name] = {"rows": len(cursor.fetchall()) if cursor.description else None, "count": cursor.rowcount}
    except psycopg.Error as exc:
        out[name] = {"error": str(exc).splitlines()[0]}
other = int(os.environ["OTHER_JOB"])
attempt("another host's job", "SELECT * FROM campaigns_job WHERE id = %s", [other])
attempt("another host's client", "SELECT * FROM campaigns_jobclient WHERE job_id = %s", [other])
attempt("target passwords", "SELECT password_encrypted FROM campaigns_target")
attempt("sealed passwords of others", "SELECT token FROM campaigns_sealedpassword WHERE host_name <> %s",
        [os.environ["OWN_NAME"]])
attempt("auth_user", "SELECT * FROM auth_user")
attempt("sessions", "SELECT * FROM django_session")
attempt("API tokens", "SELECT * FROM campaigns_apitoken")
attempt("DRF tokens", "SELECT * FROM authtoken_token")
attempt("another host's result", "UPDATE campaigns_jobresult SET qps = 99999 WHERE job_id = %s", [other])
attempt("another host's verdict", "UPDATE campaigns_job SET verdict = 'valid' WHERE id = %s", [other])
attempt("setval", "SELECT setval('campaigns_job_id_seq', 1)")
broker = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=10)
for name, command in (("FLUSHALL", ["FLUSHALL"]), ("CONFIG SET", ["CONFIG", "SET", "maxmemory", "1"]),
                      ("SHUTDOWN", ["SHUTDOWN", "NOSAVE"])):
    try:
        broker.execute_command(*command)
        out[name] = {"count": 1}
    except redis.RedisError as exc:
        out[name] = {"error": str(exc)}
print(json.dumps(out))
"""


@pytest.mark.integration
def test_a_client_host_joins_with_credentials_of_its_own_runs_its_job_and_reaches_nothing_else(
        own_cluster, own_redis, secrets_file, netns_lab: NetnsLab, target_databases, test_db_name, tmp_path):
    """serve-clients.sh opens the server; `manage.py client_host_issue` gives the host its own role and Redis user;
    the host joins from a namespace with join-client.sh and runs a job on a campaign that chose it (coordinated by
    the server). With its credentials, from inside its namespace, it then reads no other host's job, no target
    password, no user, session or token, updates no other host's result, sets no sequence back, and gets no
    FLUSHALL, CONFIG SET or SHUTDOWN through; once revoked, its next heartbeat fails."""
    # The server's database, as `manage.py migrate` leaves it: the test database's schema and rows.
    dump = subprocess.Popen(["pg_dump", "-h", "127.0.0.1", "-U", "postgres", "--no-owner", "--no-privileges",
                             test_db_name], stdout=subprocess.PIPE)
    loaded = _run(["runuser", "-u", "postgres", "--", "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-p",
                   str(own_cluster.port), "-d", "benchapp"], stdin=dump.stdout)
    assert dump.wait(timeout=TIMEOUT_S) == 0 and loaded.returncode == 0, loaded.stderr[-2000:]

    queue = f"hosts-{netns_lab.prefix}"
    started = time.monotonic()
    served = _serve(own_cluster, own_redis, secrets_file, "--clients", f"{netns_lab.subnet}.0/24",
                    "--listen", netns_lab.address, env={**os.environ, "BENCHAPP_QUEUE": queue})
    assert served.returncode == 0, served.stdout + served.stderr
    served_s = time.monotonic() - started
    server_values = _env_values(secrets_file)
    redis_password = server_values["BENCHAPP_REDIS_PASSWORD"]
    assert "BENCHAPP_CLIENT_DB_PASSWORD" not in server_values
    assert own_redis.ask("PING").startswith("NOAUTH") and own_redis.ask("PING", password=redis_password) == "PONG"
    assert own_cluster.sql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'benchapp_client'") == "f"

    # The server's own worker (role all: the shared queue, the server queue, beat's reconciler), through loopback.
    own_db = f"postgres://postgres@127.0.0.1:{own_cluster.port}/benchapp"
    server_env = {"DATABASE_URL": own_db, "REDIS_URL": server_values["REDIS_URL"],
                  "BENCHAPP_CACHE_URL": f"redis://:{redis_password}@127.0.0.1:{own_redis.port}/1",
                  "BENCHAPP_QUEUE": queue, "BENCHAPP_FIELD_KEY": settings.FIELD_ENCRYPTION_KEYS[0],
                  "BENCHAPP_WORKER_ROLE": "all", "BENCHAPP_HEARTBEAT_S": "1"}

    def manage(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return _run([str(ROOT / ".venv" / "bin" / "python"), "manage.py", *args], cwd=ROOT,
                    env={**os.environ, **server_env, **(extra or {})})

    server = WorkerProcess(f"{netns_lab.prefix}-server", "benchapp", beat=True, extra_env=server_env)
    try:
        server.wait_ready(timeout_s=120)
        host = netns_lab.add_host(f"{netns_lab.prefix}-c1", start=False)
        # Its own credentials, issued on the server; the file goes to the host (here: read from its namespace).
        client_env = tmp_path / "issued.env"
        # Its label is the server's to give: the one the host announces below is not its.
        label = f"{netns_lab.prefix}-joined"
        issued = manage("client_host_issue", host.name, "--server-address", netns_lab.address, "--pg-port",
                        str(own_cluster.port), "--redis-port", str(own_redis.port), "--output", str(client_env),
                        "--labels", label)
        assert issued.returncode == 0, issued.stdout + issued.stderr
        values = _env_values(client_env)
        db_password = urlsplit(values["DATABASE_URL"]).password or ""
        host_redis_password = urlsplit(values["REDIS_URL"]).password or ""
        assert db_password and db_password not in issued.stdout + issued.stderr
        assert values["DATABASE_URL"].endswith(f"@{netns_lab.address}:{own_cluster.port}/benchapp")
        assert values["BENCHAPP_QUEUE"] == queue and values["BENCHAPP_HOSTNAME"] == host.name
        assert "BENCHAPP_FIELD_KEY" not in values and settings.FIELD_ENCRYPTION_KEYS[0] not in client_env.read_text()

        # join-client.sh in its namespace, as an operator would (every package and pin is present: it installs
        # nothing). Only what that file gives reaches the worker: not this test's cache URL or secrets file.
        client_secrets = tmp_path / "client-secrets.env"
        prefix = [*host.exec_prefix(host.name), "env", "-u", "BENCHAPP_CACHE_URL", "-u", "BENCHAPP_CACHE_PREFIX",
                  "-u", "BENCHAPP_FIELD_KEY", "-u", "DATABASE_URL", "-u", "REDIS_URL",
                  f"BENCHAPP_SECRETS_FILE={client_secrets}", "BENCHAPP_HEARTBEAT_S=1"]
        host.worker = WorkerProcess(host.name, "benchapp", prefix=prefix, command=[
            "bash", JOIN, "--env-file", str(client_env), "--foreground", "--labels", "chosen-by-the-host",
            "--concurrency", "1", "--config-dir", str(tmp_path / "etc")])
        host.worker.wait_ready(timeout_s=120)
        log = host.worker.log_text()
        assert "1. Debian packages: all present (no apt-get)" in log and "(no pip)" in log, log[-3000:]

        with psycopg.connect(own_db, autocommit=True) as db:
            address = wait_for(lambda: db.execute("SELECT address FROM campaigns_clienthost WHERE hostname = %s "
                                                  "AND public_key <> ''", [host.name]).fetchone(),
                               timeout_s=60, what="the host to join")
            assert str(address[0]) == host.address
            labels = db.execute("SELECT labels FROM campaigns_clienthost WHERE hostname = %s", [host.name]).fetchone()
            assert labels[0] == [label], labels
            assert "BENCHAPP_HOST_LABELS (chosen-by-the-host) is ignored" in host.worker.log_text()

            launch_args = [netns_lab.address, target_databases["mysql"], label, netns_lab.prefix]
            launched = manage("shell", "-c", LAUNCH, extra={"LAUNCH_ARGS": json.dumps(launch_args)})
            assert launched.returncode == 0, launched.stderr[-3000:]
            ids = json.loads(launched.stdout.strip().splitlines()[-1])
            status = wait_for(lambda: db.execute("SELECT status FROM campaigns_run WHERE id = %s AND status IN "
                                                 "('succeeded', 'partially_succeeded', 'failed', 'cancelled')",
                                                 [ids["run"]]).fetchone(), timeout_s=TIMEOUT_S, what="the run to end")
            jobs = db.execute("SELECT j.status, j.error, j.claimed_by, c.host_name, c.status FROM campaigns_job j "
                              "JOIN campaigns_jobclient c ON c.job_id = j.id WHERE j.run_id = %s",
                              [ids["run"]]).fetchall()
            assert status[0] == "succeeded", (jobs, host.worker.log_text()[-3000:])
            # The server coordinated it; its one client ran on the host.
            assert [(j[0], j[2], j[3], j[4]) for j in jobs] == [
                ("succeeded", server.hostname, host.name, "succeeded")], jobs

            # The takeover script's steps, with the host's own credentials, from inside its namespace.
            probed = _run([*host.exec_prefix(host.name), str(ROOT / ".venv" / "bin" / "python"), "-c", PROBE],
                          env={"PATH": os.environ["PATH"], "DATABASE_URL": values["DATABASE_URL"],
                               "REDIS_URL": values["REDIS_URL"], "OTHER_JOB": str(ids["other"]),
                               "OWN_NAME": host.name})
            assert probed.returncode == 0, probed.stderr[-3000:]
            outcomes = json.loads(probed.stdout.strip().splitlines()[-1])
            for step in ("another host's job", "another host's client", "sealed passwords of others"):
                assert outcomes[step] == {"rows": 0, "count": 0}, (step, outcomes)
            assert outcomes["another host's verdict"] == {"rows": None, "count": 0}, outcomes
            for step in ("target passwords", "auth_user", "sessions", "API tokens", "DRF tokens",
                         "another host's result", "setval"):
                assert "permission denied" in outcomes[step].get("error", ""), (step, outcomes)
            for step in ("FLUSHALL", "CONFIG SET", "SHUTDOWN"):
                assert "permission" in outcomes[step].get("error", "").lower(), (step, outcomes)
            assert db.execute("SELECT qps FROM campaigns_jobresult WHERE job_id = %s",
                              [ids["other"]]).fetchone()[0] == 1544.0
            assert own_redis.ask("PING", password=redis_password) == "PONG"

            # The worker runs as the user benchapp, and no secret shows in any process list of this machine.
            uid = int(_run(["id", "-u", "benchapp"]).stdout)
            workers = [pid for pid in host.pids() if any(name in Path(f"/proc/{pid}/cmdline").read_bytes()
                                                         for name in (b"benchapp.client_worker", b"celery"))]
            assert workers and all(_uid(pid) == uid for pid in workers), [(pid, _uid(pid)) for pid in workers]
            assert _processes_showing([redis_password, db_password, host_redis_password,
                                       settings.FIELD_ENCRYPTION_KEYS[0]]) == []
            # And it wrote no secret of its own: only the env file, 0640 root:benchapp.
            assert not client_secrets.exists()
            assert [p.name for p in (tmp_path / "etc").iterdir()] == ["client.env"]

            # Revoked on the server: its next heartbeat fails, and it beats no more.
            revoked = manage("client_host_revoke", host.name)
            assert revoked.returncode == 0, revoked.stdout + revoked.stderr
            revoked_at = time.monotonic()
            wait_for(lambda: "heartbeat failed" in host.worker.log_text(), timeout_s=30,
                     what="the host's next heartbeat to fail")
            stopped_s = time.monotonic() - revoked_at
            last = db.execute("SELECT last_heartbeat FROM campaigns_clienthost WHERE hostname = %s",
                              [host.name]).fetchone()[0]
            time.sleep(3)
            assert db.execute("SELECT last_heartbeat FROM campaigns_clienthost WHERE hostname = %s",
                              [host.name]).fetchone()[0] == last
        record_measurement(f"serve-clients.sh applied in {served_s:.1f} s (own cluster and Redis restarted); "
                           f"a job ran on {host.name} (its own credentials), revoked: heartbeat failed after "
                           f"{stopped_s:.1f} s")
    finally:
        server.stop()
        # The module's Redis as the other tests expect it (they run after this one: pytest-django puts tests with a
        # database first): without the password serve-clients.sh gave it, nor the lab's address, gone with the lab.
        own_redis.ask("CONFIG", "SET", "bind", "127.0.0.1 -::1", password=redis_password)
        own_redis.ask("CONFIG", "SET", "requirepass", "", password=redis_password)


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return -1

