"""docker-compose.yml, read as Compose reads it (PyYAML), since no Docker daemon runs where the tests run: Redis asks
for the installation's password, web, worker and beat reach it with that password, every long-running service has a
health check (/healthz, worker_health, beat_health), and no secret is written in the file. scripts/docker/redis.sh,
which starts Compose's Redis, runs here for real against a redis-server of the test's own."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from tests.conftest import ROOT, wait_for
from tests.helpers.servers import free_port

COMPOSE = ROOT / "docker-compose.yml"
REDIS_SCRIPT = ROOT / "scripts" / "docker" / "redis.sh"
APP_SERVICES = ("web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    return dict(env) if isinstance(env, dict) else dict(item.split("=", 1) for item in env)


def test_redis_starts_with_the_secrets_volumes_password_through_its_script(compose):
    services = compose["services"]
    redis_service = services["redis"]
    assert redis_service["command"] == ["sh", "/usr/local/bin/benchapp-redis.sh"]
    assert "./scripts/docker/redis.sh:/usr/local/bin/benchapp-redis.sh:ro" in redis_service["volumes"]
    assert "secrets:/benchapp-secrets:ro" in redis_service["volumes"]
    assert _environment(redis_service)["BENCHAPP_REDIS_PASSWORD"] == "${BENCHAPP_REDIS_PASSWORD:-}"
    # The secrets exist before Redis starts: the one-shot service makes them in the same volume.
    assert redis_service["depends_on"]["secrets"]["condition"] == "service_completed_successfully"
    assert "secrets:/app/var" in services["secrets"]["volumes"]
    assert "local_secrets.local_secrets(Path('var/secrets.env'))" in " ".join(services["secrets"]["command"])
    assert redis_service["healthcheck"]["test"] == ["CMD", "sh", "/usr/local/bin/benchapp-redis.sh", "ping"]


def test_web_worker_and_beat_reach_redis_with_the_same_password(compose):
    for name in APP_SERVICES:
        service = compose["services"][name]
        env = _environment(service)
        # No REDIS_URL: settings build it from the host, the port and the password of the secrets file (or of
        # the environment, the same variable Redis reads).
        assert "REDIS_URL" not in env, name
        assert env["BENCHAPP_REDIS_HOST"] == "redis" and env["BENCHAPP_REDIS_PORT"] == "6379", name
        assert env["BENCHAPP_REDIS_PASSWORD"] == "${BENCHAPP_REDIS_PASSWORD:-}", name
        assert "secrets:/app/var" in service["volumes"], name
        assert service["depends_on"]["redis"]["condition"] == "service_healthy", name


def test_the_settings_build_that_url_from_those_variables(tmp_path):
    secrets_file = tmp_path / "secrets.env"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "BENCHAPP_CACHE_URL")}
    env.update({"BENCHAPP_SECRETS_FILE": str(secrets_file), "BENCHAPP_REDIS_HOST": "redis",
                "BENCHAPP_REDIS_PORT": "6379", "DJANGO_SETTINGS_MODULE": "benchapp.settings", "PYTHONPATH": str(ROOT)})
    env.pop("BENCHAPP_REDIS_PASSWORD", None)
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c",
                           "from django.conf import settings; print(settings.CELERY_BROKER_URL)"],
                          env=env, capture_output=True, text=True, timeout=60, check=True)
    password = re.search(r"^BENCHAPP_REDIS_PASSWORD=(.+)$", secrets_file.read_text(), re.M)
    assert password is not None
    assert done.stdout.strip() == f"redis://:{password.group(1)}@redis:6379/0"


def test_every_long_running_service_has_a_health_check_of_its_own(compose):
    services = compose["services"]
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["worker"]["healthcheck"]["test"][-2:] == ["manage.py", "worker_health"]
    assert services["beat"]["healthcheck"]["test"][-2:] == ["manage.py", "beat_health"]
    for name in ("postgres", "redis", "mariadb"):
        assert services[name]["healthcheck"]["test"], name


def test_no_password_is_written_in_the_compose_file():
    text = COMPOSE.read_text()
    assert "requirepass" not in text
    assert not re.search(r"redis://:[^@\s]+@", text)
    values = re.findall(r"^\s*BENCHAPP_REDIS_PASSWORD:\s*(.*)$", text, re.M)
    assert values and set(values) == {"${BENCHAPP_REDIS_PASSWORD:-}"}


@pytest.fixture
def redis_by_script(tmp_path: Path):
    port = free_port()
    password = "compose-redis-pw-7f3a"
    secrets_file = tmp_path / "secrets.env"
    secrets_file.write_text(f"SECRET_KEY=x\nBENCHAPP_REDIS_PASSWORD={password}\n")
    secrets_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "BENCHAPP_REDIS_PASSWORD"}
    env.update({"BENCHAPP_SECRETS_FILE": str(secrets_file), "BENCHAPP_REDIS_CONF": str(tmp_path / "redis.conf")})
    proc = subprocess.Popen(["sh", str(REDIS_SCRIPT), "--port", str(port), "--bind", "127.0.0.1"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        yield port, password, env, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow  # starts redis-server: 4 s
def test_the_redis_script_requires_the_password_and_shows_it_in_no_command_line(redis_by_script, tmp_path):
    port, password, env, proc = redis_by_script
    health = ["sh", str(REDIS_SCRIPT), "ping", "-p", str(port)]
    wait_for(lambda: subprocess.run(health, env=env, capture_output=True, check=False).returncode == 0,
             timeout_s=20, what="the health check to pass")
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, socket_timeout=5).ping()
    assert redis.Redis(port=port, password=password, socket_timeout=5).ping()
    assert password not in Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
    assert oct((tmp_path / "redis.conf").stat().st_mode & 0o777) == "0o600"
    # The health check fails with another password.
    wrong = subprocess.run(health, env={**env, "BENCHAPP_REDIS_PASSWORD": "not-it"}, capture_output=True, check=False)
    assert wrong.returncode != 0


def test_the_redis_script_refuses_to_start_without_a_password(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "BENCHAPP_REDIS_PASSWORD"}
    env["BENCHAPP_SECRETS_FILE"] = str(tmp_path / "missing.env")
    done = subprocess.run(["sh", str(REDIS_SCRIPT)], env=env, capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 1 and "no BENCHAPP_REDIS_PASSWORD" in done.stderr
