"""scripts/join-client.sh, serve-clients.sh and the image's entrypoint, run here without installing anything: what
they write, what they refuse, and that the client's requirements are the server's minus the web and statistics."""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "join-client.sh"
SECRET_DB_URL = "postgres://benchapp_client:Db-Secret-1@10.9.0.1:5432/benchapp"
SECRET_REDIS_URL = "redis://:Redis-Secret-2@10.9.0.1:6379/0"


def _join(tmp_path: Path, *args: str, env_file: str | None = None, extra_env: dict[str, str] | None = None,
          ) -> subprocess.CompletedProcess[str]:
    argv = ["bash", str(SCRIPT), "--no-install", "--no-start", "--config-dir", str(tmp_path / "etc"),
            "--unit-dir", str(tmp_path / "units"), *args]
    if env_file is not None:
        path = tmp_path / "client.env"
        path.write_text(env_file)
        argv += ["--env-file", str(path)]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "BENCHAPP_FIELD_KEY")}
    env.update(extra_env or {})
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False)


def _env_values(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value.strip('"')
    return values


def test_it_writes_the_env_file_and_a_systemd_unit_from_the_servers_env_file(tmp_path):
    done = _join(tmp_path, "--hostname", "rack2-c1", "--labels", "near tdsql,rack-2", env_file=(
        "# from serve-clients.sh\n"
        f"DATABASE_URL={SECRET_DB_URL}\nREDIS_URL={SECRET_REDIS_URL}\n"
        "BENCHAPP_QUEUE=benchapp\n"))
    assert done.returncode == 0, done.stderr
    env_path = tmp_path / "etc" / "client.env"
    values = _env_values(env_path)
    assert values == {
        "BENCHAPP_HOSTNAME": "rack2-c1", "BENCHAPP_HOST_LABELS": "near tdsql,rack-2",
        "BENCHAPP_QUEUE": "benchapp", "BENCHAPP_WORKER_ROLE": "client", "DATABASE_URL": SECRET_DB_URL, "REDIS_URL": SECRET_REDIS_URL,
        "WORKER_CONCURRENCY": "2"}
    assert stat.S_IMODE(env_path.stat().st_mode) == 0o640
    unit = (tmp_path / "units" / "benchapp-client.service").read_text()
    assert f"EnvironmentFile={env_path}" in unit and f"ExecStart=/bin/bash {ROOT}/scripts/worker.sh" in unit
    assert "User=benchapp" in unit and "WantedBy=multi-user.target" in unit
    # Secrets live in the 0640 env file only: not in the unit (world-readable), not in what the script printed.
    for secret in ("Db-Secret-1", "Redis-Secret-2"):
        assert secret not in unit and secret not in done.stdout + done.stderr
    # What bash makes of the file is what systemd does: the labels keep their space.
    sourced = subprocess.run(["bash", "-c", f"set -a; source {env_path}; echo \"$BENCHAPP_HOST_LABELS|$REDIS_URL\""],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert sourced == f"near tdsql,rack-2|{SECRET_REDIS_URL}"


def test_the_environment_fills_what_the_file_lacks_and_flags_win(tmp_path):
    done = _join(tmp_path, "--queue", "bench-b", env_file="BENCHAPP_HOSTNAME=from-file\n",
                 extra_env={"DATABASE_URL": SECRET_DB_URL, "REDIS_URL": SECRET_REDIS_URL,
                            "BENCHAPP_FIELD_KEY": "from-env-ignored", "BENCHAPP_QUEUE": "from-env"})
    assert done.returncode == 0, done.stderr
    values = _env_values(tmp_path / "etc" / "client.env")
    assert values["DATABASE_URL"] == SECRET_DB_URL and values["BENCHAPP_QUEUE"] == "bench-b"
    assert values["BENCHAPP_HOSTNAME"] == "from-file"
    assert "BENCHAPP_FIELD_KEY" not in values  # a client host holds no field key, whatever its environment has


@pytest.mark.parametrize(("args", "env_file", "message"), [
    ([], "REDIS_URL=redis://x:6379/0\n", "DATABASE_URL: needs postgres://"),
    ([], f"DATABASE_URL={SECRET_DB_URL}\nREDIS_URL=http://x\n", "REDIS_URL: needs redis://"),
    ([], f"DATABASE_URL={SECRET_DB_URL}\nREDIS_URL={SECRET_REDIS_URL}\nBENCHAPP_FIELD_KEY=k\n",
     "line 3: BENCHAPP_FIELD_KEY: a client host holds no field key"),
    ([], f"DATABASE_URL={SECRET_DB_URL}\nREDIS_URL={SECRET_REDIS_URL}\nBENCHAPP_HOST_LABELS=a$b\n", "must not contain"),
    ([], "SECRET_KEY=x\n", "line 1: unknown setting SECRET_KEY"),
    (["--hostname", "bad name;rm"], f"DATABASE_URL={SECRET_DB_URL}\nREDIS_URL={SECRET_REDIS_URL}\n",
     "--hostname: letters, digits"),
    (["--redis-url", "k"], None, "never from the command line"),
    (["--frobnicate"], None, "unknown argument: --frobnicate"),
])
def test_it_refuses_bad_settings_naming_them_and_writes_nothing(tmp_path, args, env_file, message):
    done = _join(tmp_path, *args, env_file=env_file)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "etc" / "client.env").exists() and not (tmp_path / "units").exists()


def test_without_systemd_it_asks_for_foreground_before_installing_or_writing_anything(tmp_path):
    if Path("/run/systemd/system").is_dir() or os.geteuid() != 0:
        pytest.skip("needs root on a machine where systemd is not PID 1")
    env_file = tmp_path / "client.env"
    env_file.write_text(f"DATABASE_URL={SECRET_DB_URL}\nREDIS_URL={SECRET_REDIS_URL}\n")
    done = subprocess.run(["bash", str(SCRIPT), "--env-file", str(env_file), "--config-dir", str(tmp_path / "etc"),
                           "--unit-dir", str(tmp_path / "units")], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2 and "systemd is not PID 1 on this machine: run the worker with --foreground" \
        in done.stderr, done.stderr
    assert "apt" not in done.stdout and not (tmp_path / "etc").exists() and not (tmp_path / "units").exists()


def test_client_requirements_are_the_servers_pins_without_web_and_statistics_packages():
    def pins(name: str) -> dict[str, str]:
        """name -> version of a file compiled by scripts/lock.sh (`name==version \\` then its hashes)."""
        return dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", (ROOT / name).read_text(), re.M))

    server, client = pins("requirements.txt"), pins("requirements-client.txt")
    assert {name: server[name] for name in client} == client
    assert set(server) - set(client) == {"numpy", "scipy", "gunicorn", "supervisor", "whitenoise",
                                         "drf-spectacular-sidecar", "prometheus-client"}
    # Every pin carries its hashes, which the installs require (--require-hashes).
    for name in ("requirements.txt", "requirements-client.txt", "requirements-dev.txt"):
        text = (ROOT / name).read_text()
        assert len(re.findall(r"^\S+==\S+ \\\n\s+--hash=sha256:", text, re.M)) == len(pins(name)), name


_CLIENT_WITHOUT_SERVER_PACKAGES = """
import sys, importlib.abc
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"numpy", "scipy", "gunicorn", "supervisor", "whitenoise", "drf_spectacular_sidecar",
                                  "prometheus_client"}:
            raise ImportError(f"{name} is not in requirements-client.txt")
sys.meta_path.insert(0, Missing())
from benchapp.celery import app
from celery.fixups.django import DjangoWorkerFixup
DjangoWorkerFixup(app).validate_models()  # what `celery worker` does at start-up
from celery.apps import worker
from campaigns import tasks, worker_signals
from campaigns.execution import client, coordinator, reconcile, hosts
print(sorted(hosts.local_host_facts()["client_versions"]))
"""


@pytest.mark.slow  # a fresh virtualenv's Python: 1.4 s
def test_a_client_host_works_without_the_packages_its_requirements_leave_out():
    env = dict(os.environ, BENCHAPP_WORKER_ROLE="client", PYTHONPATH=str(ROOT))
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", _CLIENT_WITHOUT_SERVER_PACKAGES], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "psycopg" in done.stdout


def test_the_scripts_pass_shellcheck():
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    scripts = [ROOT / "scripts" / name for name in ("join-client.sh", "serve-clients.sh", "docker/entrypoint.sh")]
    done = subprocess.run(["shellcheck", *map(str, scripts)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_serve_clients_refuses_the_whole_internet_naming_the_flag(tmp_path):
    """Its dry run and its all-or-nothing apply are in tests/test_client_host_scripts.py, on a cluster of their own."""
    env = dict(os.environ, BENCHAPP_SECRETS_FILE=str(tmp_path / "secrets.env"))
    refused = subprocess.run(["bash", str(ROOT / "scripts" / "serve-clients.sh"), "--clients", "0.0.0.0/0",
                              "--dry-run"], capture_output=True, text=True, env=env, check=False)
    assert refused.returncode == 2 and "whole Internet" in refused.stderr
    assert not (tmp_path / "secrets.env").exists()


def test_the_image_entrypoint_refuses_a_client_without_the_servers_settings():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "BENCHAPP_FIELD_KEY")}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "docker" / "entrypoint.sh"), "client"], env=env,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "DATABASE_URL is not set" in done.stderr
    echoed = subprocess.run(["bash", str(ROOT / "scripts" / "docker" / "entrypoint.sh"), "echo", "as given"],
                            capture_output=True, text=True, timeout=30, check=True)
    assert echoed.stdout == "as given\n"
