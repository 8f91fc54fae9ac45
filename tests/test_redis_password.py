"""Redis gets a password on first start, like the other secrets of var/secrets.env: scripts/setup.sh
runs scripts/redis-password.sh, here against a redis-server of the test's own (the machine's shared Redis is never
given one by a test). Without the password Redis answers NOAUTH; benchapp's processes use it through REDIS_URL."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from benchapp import local_secrets

ROOT = Path(__file__).resolve().parent.parent



def _script(port: int, secrets: Path, record: Path | None = None) -> subprocess.CompletedProcess[str]:
    record = record or secrets.parent / "redis.password"
    return subprocess.run(["bash", str(ROOT / "scripts" / "redis-password.sh"), str(port)], cwd=ROOT,
                          env={**os.environ, "BENCHAPP_SECRETS_FILE": str(secrets), "BENCHAPP_REDIS_RECORD": str(record)},
                          capture_output=True, text=True, timeout=60)


def _ping(port: int, password: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "REDISCLI_AUTH"}
    if password:
        env["REDISCLI_AUTH"] = password
    return subprocess.run(["redis-cli", "--no-auth-warning", "-p", str(port), "ping"], env=env, capture_output=True,
                          text=True, timeout=10).stdout.strip()


def test_the_first_start_gives_redis_the_installations_own_password_and_nothing_answers_without_it(
        own_redis, tmp_path):
    secrets = tmp_path / "var" / "secrets.env"
    assert _ping(own_redis.port) == "PONG"
    done = _script(own_redis.port, secrets)
    assert done.returncode == 0, done.stderr
    values = local_secrets._read(secrets)
    password = values["BENCHAPP_REDIS_PASSWORD"]
    assert len(password) >= 24 and stat.S_IMODE(secrets.stat().st_mode) == 0o600
    # The other secrets of a first start are made with it, once (benchapp reuses them).
    assert set(local_secrets.GENERATED) <= set(values)
    assert _ping(own_redis.port).startswith("NOAUTH")
    assert _ping(own_redis.port, password) == "PONG"
    assert password not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    # Again: nothing changes.
    again = _script(own_redis.port, secrets)
    assert again.returncode == 0 and local_secrets._read(secrets) == values


def test_a_new_checkout_on_the_same_machine_takes_the_password_recorded_for_that_redis(own_redis, tmp_path):
    """The password belongs to the Redis server, which outlives a checkout (a fresh clone, CI's): the first setup
    records it for the machine, a later checkout's setup adopts it instead of being refused."""
    record = tmp_path / "machine" / "redis.password"
    first, later = tmp_path / "one" / "secrets.env", tmp_path / "two" / "secrets.env"
    assert _script(own_redis.port, first, record).returncode == 0
    password = local_secrets._read(first)["BENCHAPP_REDIS_PASSWORD"]
    assert record.read_text().strip() == password and stat.S_IMODE(record.stat().st_mode) == 0o600
    done = _script(own_redis.port, later, record)
    assert done.returncode == 0, done.stderr
    assert local_secrets._read(later)["BENCHAPP_REDIS_PASSWORD"] == password
    assert stat.S_IMODE(later.stat().st_mode) == 0o600 and password not in done.stdout + done.stderr
    # Without the record, another checkout's password is still refused.
    record.unlink()
    assert _script(own_redis.port, tmp_path / "three" / "secrets.env", record).returncode == 1


def test_a_redis_that_asks_for_another_password_is_refused_with_what_to_do(own_redis, tmp_path):
    own_redis.client.config_set("requirepass", "someone-elses")
    done = _script(own_redis.port, tmp_path / "secrets.env")
    assert done.returncode == 1
    assert "asks for a password other than BENCHAPP_REDIS_PASSWORD" in done.stderr
    assert "someone-elses" not in done.stderr + done.stdout


@pytest.mark.slow  # starts redis-server and Django: 1.6 s
def test_benchapps_processes_reach_redis_with_the_password_of_the_secrets_file(tmp_path):
    secrets = tmp_path / "secrets.env"
    password = local_secrets.local_secrets(secrets)["BENCHAPP_REDIS_PASSWORD"]
    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'benchapp.settings'); django.setup(); "
            "from django.conf import settings as s; print(s.CELERY_BROKER_URL); print(s.CACHES['default']['LOCATION'])")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "BENCHAPP_CACHE_URL")}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "BENCHAPP_SECRETS_FILE": str(secrets)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"redis://:{password}@127.0.0.1:6379/0", f"redis://:{password}@127.0.0.1:6379/1"]


def test_a_secrets_file_of_an_older_version_gains_the_missing_secrets_and_keeps_its_own(tmp_path):
    path = tmp_path / "secrets.env"
    path.write_text("# older\nSECRET_KEY=kept-secret-key\nBENCHAPP_FIELD_KEY=kept-field-key\nBENCHAPP_ADMIN_PASSWORD=kept")
    values = local_secrets.local_secrets(path)
    assert values["SECRET_KEY"] == "kept-secret-key" and values["BENCHAPP_ADMIN_PASSWORD"] == "kept"
    assert local_secrets._read(path) == values and len(values["BENCHAPP_REDIS_PASSWORD"]) >= 24
    assert local_secrets.local_secrets(path) == values
