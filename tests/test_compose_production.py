"""deploy/compose/production.yml and the Dockerfile, read as Compose and Docker read them, since no Docker daemon runs
where the tests run (nor a compose plugin, nor a way to Docker Hub): nothing here starts a container.

What production needs of them, each checked: no `trust` anywhere and PostgreSQL on scram-sha-256 with its
superuser's password from a file; every image pinned to an exact version; passwords only in the secrets volumes,
made by a one-shot service; `migrate` one-shot and waited for; the secrets read-only in every application
container, apart from what they write; a worker's stop as long as the longest job; a memory and CPU limit, rotated
logs and a health check (or a one-shot's restart policy) on every service; no database port published and web on
127.0.0.1 only; and an image whose last stage holds no compiler, -dev package, node or npm. The two scripts the file
runs at start, scripts/docker/secrets.sh and scripts/docker/pg-role.sh, run here for real: the first on files of the
test's own, the second against this machine's PostgreSQL, for a role and database of the test's own."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

COMPOSE = ROOT / "deploy" / "compose" / "production.yml"
DOCKERFILE = ROOT / "Dockerfile"
SECRETS_SCRIPT = ROOT / "scripts" / "docker" / "secrets.sh"
ROLE_SCRIPT = ROOT / "scripts" / "docker" / "pg-role.sh"
APP_SERVICES = ("web", "worker", "beat")
# Each runs benchapp's code with its settings, so each reads secrets.env.
SETTINGS_SERVICES = ("migrate", *APP_SERVICES)
ONE_SHOT = ("secrets", "db-role", "migrate")
LONG_RUNNING = ("postgres", "redis", *APP_SERVICES)
DATABASES = ("postgres", "redis")
# What the operator gives through the environment; BENCHAPP_TAG is required.
GIVEN = {"BENCHAPP_TAG": "0123abc"}

_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def _interpolate(value: str, env: dict[str, str]) -> str:
    """A string as Compose fills it in: ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, $$."""
    def fill(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        value = env.get(name)
        if op in (":?", "?") and not value:
            raise AssertionError(f"{name} is required: {arg}")
        if op == ":-" and not value or op == "-" and value is None:
            return arg
        return value or ""
    return _VARIABLE.sub(fill, value)


def _filled(node: Any, env: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {key: _filled(item, env) for key, item in node.items()}
    if isinstance(node, list):
        return [_filled(item, env) for item in node]
    return _interpolate(node, env) if isinstance(node, str) else node


def _strings(node: Any) -> list[str]:
    """Every key and value of the file (comments are not data)."""
    if isinstance(node, dict):
        return [text for key, item in node.items() for text in (str(key), *_strings(item))]
    if isinstance(node, list):
        return [text for item in node for text in _strings(item)]
    return [str(node)]


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return _filled(raw, GIVEN)["services"]


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else dict(i.split("=", 1) for i in env)


def _mounts(service: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, read-only) of each volume, short syntax or long."""
    mounts = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            mounts.append((str(volume.get("source", "")), str(volume["target"]), bool(volume.get("read_only"))))
        else:
            source, target, *mode = volume.split(":")
            mounts.append((source, target, "ro" in (mode[0].split(",") if mode else [])))
    return mounts


def _seconds(duration: str) -> float:
    """A Compose duration (65m, 1h5m, 30s, 1m30s) in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(us|ms|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 0.000001}
    return sum(float(number) * scale[unit] for number, unit in parts)


def _bytes(size: str) -> int:
    number, unit = re.fullmatch(r"(\d+)\s*([KMGkmg]?)[Bb]?", str(size)).groups()
    return int(number) * 1024 ** " KMG".index(unit.upper() or " ")


def _dockerfile_stages() -> list[tuple[str, str, str]]:
    """(base, name, instructions) of each stage, continuation lines joined, comments left out."""
    lines = [line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    stages = []
    for match in re.finditer(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?\s*$(.*?)(?=^FROM\s|\Z)", text, re.M | re.S | re.I):
        stages.append((match.group(1), match.group(2) or "", match.group(3)))
    return stages


def _apt_packages(instructions: str) -> list[str]:
    packages = []
    for command in re.findall(r"apt-get install ([^&;\n]*)", instructions):
        packages += [word for word in shlex.split(command) if not word.startswith("-")]
    return packages


# ---- PostgreSQL: no trust, scram-sha-256, a superuser's password from a file, an application role -----------------

def test_nothing_in_the_file_says_trust(raw):
    assert not [text for text in _strings(raw) if re.search(r"\btrust\b", text, re.I)]


def test_postgresql_asks_a_scram_password_on_every_connection_and_reads_the_superusers_from_a_file(services):
    postgres = services["postgres"]
    env = _environment(postgres)
    assert env["POSTGRES_HOST_AUTH_METHOD"] == "scram-sha-256"
    # initdb's own lines (the socket, loopback) would otherwise be trust.
    assert {"--auth-local=scram-sha-256", "--auth-host=scram-sha-256"} <= set(env["POSTGRES_INITDB_ARGS"].split())
    assert "POSTGRES_PASSWORD" not in env
    password_file = Path(env["POSTGRES_PASSWORD_FILE"])
    mounted = {target: (source, ro) for source, target, ro in _mounts(postgres)}
    assert mounted[str(password_file.parent)] == ("postgres-secrets", True)


def test_the_superusers_password_is_in_no_application_container(services):
    for name, service in services.items():
        holds = "postgres-secrets" in [source for source, _, _ in _mounts(service)]
        assert holds == (name in ("secrets", "postgres", "db-role")), name


def test_benchapp_logs_in_as_its_own_role_made_before_migrate(services):
    role = services["db-role"]
    assert role["entrypoint"] == ["bash", "/usr/local/bin/benchapp-pg-role.sh"]
    assert ("../../scripts/docker/pg-role.sh", "/usr/local/bin/benchapp-pg-role.sh", True) in _mounts(role)
    assert role["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["db-role"]["condition"] == "service_completed_successfully"
    # The role's attributes, said in the one statement that makes it (run for real below).
    statement = re.search(r"ALTER ROLE .*", ROLE_SCRIPT.read_text()).group(0)
    assert "NOSUPERUSER" in statement and "NOCREATEDB" in statement and "NOCREATEROLE" in statement
    assert not re.search(r"(?<!NO)(SUPERUSER|CREATEDB|CREATEROLE|BYPASSRLS|REPLICATION)", statement)


# ---- the secrets volumes ------------------------------------------------------------------------------------------

def test_a_one_shot_service_makes_the_secrets_before_anything_reads_them(services):
    secrets = services["secrets"]
    assert secrets["command"] == ["bash", "scripts/docker/secrets.sh"]
    assert secrets["restart"] == "no"
    assert {(source, target) for source, target, ro in _mounts(secrets) if not ro} == {
        ("secrets", "/secrets"), ("postgres-secrets", "/postgres-secrets")}
    for name in ("postgres", "redis"):
        assert services[name]["depends_on"]["secrets"]["condition"] == "service_completed_successfully", name
    assert _environment(secrets)["BENCHAPP_POSTGRES_PASSWORD_FILE"] == _environment(services["postgres"])[
        "POSTGRES_PASSWORD_FILE"]


def test_application_containers_mount_the_secrets_read_only_and_write_only_their_own_volumes(services):
    for name in SETTINGS_SERVICES:
        service = services[name]
        mounts = _mounts(service)
        secrets_file = Path(_environment(service)["BENCHAPP_SECRETS_FILE"])
        assert ("secrets", str(secrets_file.parent), True) in mounts, name
        # Nothing writable over var/ itself, and no writable mount of either secrets volume.
        assert not [m for m in mounts if m[1] in ("/app", "/app/var")], name
        assert not [m for m in mounts if m[0] in ("secrets", "postgres-secrets") and not m[2]], name
    web = {target: source for source, target, ro in _mounts(services["web"]) if not ro}
    worker = {target: source for source, target, ro in _mounts(services["worker"]) if not ro}
    assert web == {"/app/var/prometheus": "prometheus", "/app/var/workloads": "workloads"}
    assert worker == {"/app/var/workloads": "workloads", "/app/var/hosttests": "hosttests"}
    assert not [m for m in _mounts(services["beat"]) if not m[2]]


def test_redis_requires_the_password_of_the_secrets_volume(services):
    redis = services["redis"]
    assert redis["command"][:2] == ["sh", "/usr/local/bin/benchapp-redis.sh"]
    assert ("secrets", "/benchapp-secrets", True) in _mounts(redis)
    assert ("../../scripts/docker/redis.sh", "/usr/local/bin/benchapp-redis.sh", True) in _mounts(redis)
    assert redis["healthcheck"]["test"] == ["CMD", "sh", "/usr/local/bin/benchapp-redis.sh", "ping"]


def test_no_password_is_given_in_the_file_or_an_environment(raw, services):
    text = COMPOSE.read_text()
    assert "requirepass" not in text
    assert not re.search(r"\w+://[^/\s:@]*:[^@\s]+@", text)  # no URL with a password
    for name, service in services.items():
        for key in _environment(service):
            assert not re.search(r"PASSWORD$|SECRET_KEY|FIELD_KEY|DATABASE_URL|REDIS_URL", key), (name, key)


def test_the_secrets_script_makes_each_secret_once_and_keeps_them(tmp_path):
    env = {**os.environ, "BENCHAPP_SECRETS_FILE": str(tmp_path / "secrets.env"),
           "BENCHAPP_POSTGRES_PASSWORD_FILE": str(tmp_path / "postgres-password")}
    for name in ("SECRET_KEY", "BENCHAPP_FIELD_KEY", "BENCHAPP_REDIS_PASSWORD", "DATABASE_URL"):
        env.pop(name, None)
    subprocess.run(["bash", str(SECRETS_SCRIPT)], env=env, check=True, capture_output=True, timeout=60)
    first = (tmp_path / "secrets.env").read_text()
    values = dict(line.split("=", 1) for line in first.splitlines() if "=" in line and not line.startswith("#"))
    assert {"SECRET_KEY", "BENCHAPP_FIELD_KEY", "BENCHAPP_ADMIN_PASSWORD", "BENCHAPP_REDIS_PASSWORD",
            "BENCHAPP_DB_PASSWORD", "DATABASE_URL"} <= set(values)
    assert values["DATABASE_URL"] == f"postgres://benchapp:{values['BENCHAPP_DB_PASSWORD']}@postgres:5432/benchapp"
    superuser = (tmp_path / "postgres-password").read_text().strip()
    assert re.fullmatch(r"[A-Za-z0-9_-]{24,}", superuser) and superuser not in first
    for path in ("secrets.env", "postgres-password"):
        assert (tmp_path / path).stat().st_mode & 0o777 == 0o600, path
    subprocess.run(["bash", str(SECRETS_SCRIPT)], env=env, check=True, capture_output=True, timeout=60)
    assert (tmp_path / "secrets.env").read_text() == first
    assert (tmp_path / "postgres-password").read_text().strip() == superuser


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="a read-only mount needs root")
def test_the_settings_read_a_secrets_file_on_a_read_only_mount(tmp_path):
    """web, worker and beat mount the secrets volume read-only: loading the settings must not write to it (a chmod
    that changes nothing is refused there too)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    script = (f"mount -t tmpfs none {folder} && "
              f"printf 'SECRET_KEY=%s\\nBENCHAPP_FIELD_KEY=f\\nBENCHAPP_ADMIN_PASSWORD=a\\nBENCHAPP_REDIS_PASSWORD=r\\n' "
              f"\"$(head -c 30 /dev/urandom | od -An -tx1 | tr -d ' \\n')\" >{folder}/secrets.env && "
              f"chmod 0600 {folder}/secrets.env && mount -o remount,ro {folder} && "
              f"{ROOT}/.venv/bin/python -c 'from pathlib import Path; from benchapp import local_secrets; "
              f"print(local_secrets.local_secrets(Path(\"{folder}/secrets.env\"))[\"BENCHAPP_REDIS_PASSWORD\"])'")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    if "mount" in done.stderr and done.returncode != 0 and "Traceback" not in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "r"


# ---- one-shot migrate, no demo ------------------------------------------------------------------------------------

def test_migrate_runs_once_and_web_worker_and_beat_wait_for_it(services):
    migrate = services["migrate"]
    assert migrate["command"] == [".venv/bin/python", "manage.py", "migrate", "--noinput"]
    assert migrate["restart"] == "no" and "healthcheck" not in migrate and "ports" not in migrate
    for name in APP_SERVICES:
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name
        assert "migrate" not in " ".join(map(str, services[name].get("command") or [])), name


def test_no_demo_data_and_no_demo_target(raw, services):
    assert "load_demo" not in " ".join(_strings(raw))
    assert not [name for name, s in services.items() if "mariadb" in name or "mariadb" in str(s.get("image", ""))]
    assert not [key for s in services.values() for key in _environment(s) if key.startswith("DEMO_")]


# ---- images -------------------------------------------------------------------------------------------------------

def test_every_image_is_pinned_to_an_exact_version(raw, services):
    for name, service in services.items():
        image = service["image"]
        assert "@" not in image or re.search(r"@sha256:[0-9a-f]{64}$", image), name
        repository, _, tag = image.split("@")[0].rpartition(":")
        assert repository and tag and tag != "latest", (name, image)
        if "build" in service:  # benchapp's own, built here: the operator names each build
            assert raw["services"][name]["image"].startswith("benchapp:${BENCHAPP_TAG:?"), name
            assert service["build"]["target"] == _dockerfile_stages()[-1][1]
        else:
            # A release, not a series: PostgreSQL's versions have two parts since 10 (15.8), others three (7.0.15).
            version = r"\d+\.\d+" if repository == "postgres" else r"\d+\.\d+\.\d+"
            assert re.fullmatch(version + r"(-[a-z0-9.]+)?", tag), (name, image)
    with pytest.raises(AssertionError, match="BENCHAPP_TAG is required"):
        _filled(raw, {})


def test_the_images_last_stage_has_no_compiler_headers_node_or_npm():
    stages = _dockerfile_stages()
    assert len(stages) >= 2
    (build_base, _, build), (base, name, runtime) = stages[0], stages[-1]
    assert name and base == build_base  # the venv's compiled modules need the same Python and glibc
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-bookworm", base), base
    packages = _apt_packages(runtime)
    forbidden = [p for p in packages if p.endswith("-dev") or p in ("build-essential", "gcc", "g++", "make", "clang",
                                                                      "pkg-config", "nodejs", "npm", "node")]
    assert packages and not forbidden, forbidden
    assert {"sysbench", "bubblewrap", "sudo", "libmariadb3"} <= set(packages)
    assert not re.search(r"\b(npm|node|pip install|gcc|make)\b", runtime)
    assert "COPY --from=build /app /app" in runtime
    assert "scripts/sandbox-user.sh --run-as benchapp" in runtime
    assert re.findall(r"^USER\s+(\S+)", runtime, re.M)[-1] == "benchapp"
    # The build stage makes what the last one copies.
    assert "pip install --require-hashes -r requirements.txt" in build and "node frontend/build.mjs" in build
    assert {"build-essential", "nodejs", "npm"} <= set(_apt_packages(build))


# ---- stopping, limits, logs, health, ports ------------------------------------------------------------------------

def test_the_worker_may_finish_its_longest_job_before_it_is_killed(services):
    stop_s = int(re.search(r"BENCHAPP_WORKER_STOP_S:-(\d+)", (ROOT / "scripts" / "supervise.sh").read_text()).group(1))
    systemd_s = int(re.search(r"^TimeoutStopSec=(\d+)", (ROOT / "deploy" / "systemd" / "benchapp-worker.service")
                              .read_text(), re.M).group(1))
    assert _seconds(services["worker"]["stop_grace_period"]) >= max(stop_s, systemd_s)
    for name in LONG_RUNNING:
        assert 5 <= _seconds(services[name]["stop_grace_period"]) <= 120 or name == "worker", name


def test_every_service_has_memory_and_cpu_limits_web_worker_and_beat_those_of_the_systemd_units(services):
    for name, service in services.items():
        limits = service["deploy"]["resources"]["limits"]
        assert _bytes(limits["memory"]) > 0 and float(limits["cpus"]) > 0, name
    for name in APP_SERVICES:
        unit = (ROOT / "deploy" / "systemd" / f"benchapp-{name}.service").read_text()
        memory_max = re.search(r"^MemoryMax=(\S+)", unit, re.M).group(1)
        assert _bytes(services[name]["deploy"]["resources"]["limits"]["memory"]) == _bytes(memory_max), name


def test_every_service_rotates_its_log(services):
    for name, service in services.items():
        logging = service["logging"]
        assert logging["driver"] == "json-file", name
        assert _bytes(logging["options"]["max-size"]) > 0 and int(logging["options"]["max-file"]) >= 2, name


def test_long_running_services_restart_and_have_health_checks_one_shots_do_not_restart(services):
    assert set(services) == set(LONG_RUNNING) | set(ONE_SHOT)
    for name in LONG_RUNNING:
        assert services[name]["restart"] == "unless-stopped", name
        assert services[name]["healthcheck"]["test"][0] == "CMD", name
    for name in ONE_SHOT:
        assert services[name]["restart"] == "no", name
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["worker"]["healthcheck"]["test"][-2:] == ["manage.py", "worker_health"]
    assert services["beat"]["healthcheck"]["test"][-2:] == ["manage.py", "beat_health"]


def test_no_database_port_is_published_and_web_only_on_loopback(services):
    assert [name for name, service in services.items() if service.get("ports")] == ["web"]
    for name in DATABASES:
        assert "ports" not in services[name] and "network_mode" not in services[name], name
    for port in services["web"]["ports"]:
        assert str(port).startswith("127.0.0.1:"), port
    assert _interpolate("${BENCHAPP_PUBLISH_PORT:-8000}", {}) == "8000"


def test_only_the_containers_that_start_sysbench_loosen_their_confinement(services):
    """bubblewrap needs new namespaces and a /proc of its own, which Docker's seccomp and AppArmor profiles and
    its masked /proc refuse (the file's comment says what that costs)."""
    for name, service in services.items():
        loosened = [opt for opt in service.get("security_opt") or [] if "unconfined" in opt]
        if name in ("web", "worker"):
            assert set(loosened) == {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}, name
            # sudo (setuid) switches to the sandbox's user: no no-new-privileges here.
            assert "no-new-privileges:true" not in service.get("security_opt"), name
        else:
            assert not loosened, name
        assert not service.get("privileged"), name
    for name in ("secrets", "migrate", "beat"):
        assert services[name]["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in services[name]["security_opt"], name


# ---- the role, made for real ----------------------------------------------------------------------------------------

@pytest.fixture
def role_name() -> str:
    return f"compose_role_{uuid.uuid4().hex[:10]}"


def test_the_role_script_makes_a_login_role_that_is_no_superuser_and_owns_its_database(tmp_path, role_name):
    from django.conf import settings

    if shutil.which("psql") is None:
        pytest.skip("no psql here")
    db = settings.DATABASES["default"]
    admin_env = {**os.environ, "PGHOST": db["HOST"] or "127.0.0.1", "PGPORT": str(db["PORT"] or 5432),
                 "PGPASSWORD": db["PASSWORD"] or ""}

    def admin(sql: str) -> str:
        return subprocess.run(["psql", "-X", "-w", "-At", "-v", "ON_ERROR_STOP=1", "-U", db["USER"] or "postgres",
                               "-d", "postgres", "-c", sql], env=admin_env, capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()

    if admin("SELECT rolsuper FROM pg_roles WHERE rolname = current_user") != "t":
        pytest.skip("the test database's user is not a superuser: it cannot make a role")
    secrets_file = tmp_path / "secrets.env"
    secrets_file.write_text(f"BENCHAPP_DB_PASSWORD={uuid.uuid4().hex}\n")
    (tmp_path / "superuser").write_text((db["PASSWORD"] or "unused-on-a-cluster-that-trusts-loopback") + "\n")
    env = {**admin_env, "BENCHAPP_DB_NAME": role_name, "BENCHAPP_SECRETS_FILE": str(secrets_file),
           "POSTGRES_USER": db["USER"] or "postgres", "POSTGRES_PASSWORD_FILE": str(tmp_path / "superuser")}
    env.pop("PGPASSWORD")
    try:
        for _ in range(2):  # idempotent
            done = subprocess.run(["bash", str(ROLE_SCRIPT)], env=env, capture_output=True, text=True, timeout=60,
                                  check=False)
            assert done.returncode == 0, done.stderr
        assert admin(f"SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, "
                     f"left(rolpassword, 14) FROM pg_authid WHERE rolname = '{role_name}'") == (
            "t|f|f|f|f|f|SCRAM-SHA-256$")
        assert admin(f"SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = '{role_name}'") == role_name
        assert admin(f"SELECT has_database_privilege('public', '{role_name}', 'CONNECT')") == "f"
        # What migrate does: tables in public, as the database's owner.
        subprocess.run(["psql", "-X", "-w", "-q", "-v", "ON_ERROR_STOP=1", "-U", role_name, "-d", role_name,
                        "-c", "CREATE TABLE made_by_migrate (id bigint)"],
                       env={**admin_env, "PGPASSWORD": secrets_file.read_text().split("=", 1)[1].strip()},
                       capture_output=True, text=True, timeout=30, check=True)
    finally:
        admin(f'DROP DATABASE IF EXISTS "{role_name}"')
        admin(f'DROP ROLE IF EXISTS "{role_name}"')
