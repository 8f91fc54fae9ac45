"""A join that works without the package index, all or none, and one worker per host name.

A copy of this repository (its tracked files, as an operator copies it) joins in a network namespace with no route
anywhere (only its own loopback): from the server's wheels (scripts/wheelhouse.sh) its .venv is made complete;
without them the install fails and no .venv is left. On this machine, a second `join-client.sh --foreground` under
a running worker's name is refused.

Needs root (namespaces, the `benchapp` user) and the package index for the wheelhouse (built once per module);
elsewhere these tests skip, with CI=true they fail.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, record_measurement, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("join-offline")]
TIMEOUT_S = 600
ENV_FILE = "DATABASE_URL=postgres://bh_x_c1:pw-1@10.9.0.1:5432/benchapp\nREDIS_URL=redis://u:pw-2@10.9.0.1:6379/0\n"


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why} (CI=true)")
    pytest.skip(why)


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.geteuid() != 0:
        _unavailable("needs root")
    out = tmp_path_factory.mktemp("wheels") / "wheelhouse"
    done = _run(["bash", str(ROOT / "scripts" / "wheelhouse.sh"), str(out)], cwd=ROOT)
    if done.returncode != 0:
        _unavailable(f"the wheelhouse could not be built (package index?): {done.stderr[-500:]}")
    return out


@pytest.fixture
def offline_namespace() -> Iterator[str]:
    """A network namespace with only its loopback: no route to the package index or anywhere else."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        _unavailable("needs root and iproute2")
    name = f"bhoff{uuid.uuid4().hex[:8]}"
    if _run(["ip", "netns", "add", name]).returncode != 0:
        _unavailable("network namespaces cannot be created here")
    try:
        _run(["ip", "-n", name, "link", "set", "lo", "up"])
        yield name
    finally:
        _run(["ip", "netns", "del", name])


def _copy(to: Path) -> Path:
    """The repository's tracked files as they are in this work tree, without .venv or var/."""
    files = _run(["git", "ls-files", "-z"], cwd=ROOT).stdout.split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def _join(copy: Path, namespace: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env_file = tmp_path / "host.env"
    env_file.write_text(ENV_FILE)
    env = {"PATH": os.environ["PATH"], "PIP_RETRIES": "0", "PIP_TIMEOUT": "3", "PIP_CONFIG_FILE": os.devnull,
           "LANG": "C.UTF-8"}
    return _run(["ip", "netns", "exec", namespace, "bash", str(copy / "scripts" / "join-client.sh"), "--env-file",
                 str(env_file), "--foreground", "--no-start", "--hostname", "offline-c1", "--config-dir",
                 str(tmp_path / "etc"), *args], env=env)


def test_a_host_without_the_package_index_joins_from_the_servers_wheels(wheelhouse, offline_namespace, tmp_path):
    copy = _copy(tmp_path / "benchapp")
    shutil.copytree(wheelhouse, copy / "var" / "wheelhouse")
    done = _join(copy, offline_namespace, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "from the server's wheels" in done.stdout and "no apt-get" in done.stdout, done.stdout
    # The venv has every pin (a second run has nothing to install), and imports what a client host's worker needs.
    again = _join(copy, offline_namespace, tmp_path, "--dry-run")
    assert "2. .venv has every pin of requirements-client.txt (no pip)" in again.stdout, again.stdout
    imported = _run([str(copy / ".venv" / "bin" / "python"), "-c", "import celery, django, MySQLdb, nacl, psycopg"])
    assert imported.returncode == 0, imported.stderr
    # The directories its worker writes are its user's.
    for name in ("workloads", "hosttests"):
        assert (copy / "var" / name).stat().st_uid == int(_run(["id", "-u", "benchapp"]).stdout)
    record_measurement(f"join-client.sh offline from the server's wheels ({len(list(wheelhouse.glob('*.whl')))} "
                       "wheels): .venv complete")


def test_a_failed_install_leaves_no_half_made_venv(offline_namespace, tmp_path):
    copy = _copy(tmp_path / "benchapp")  # no wheelhouse, and no route to the package index
    done = _join(copy, offline_namespace, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "installing .venv failed (above): it was removed" in done.stderr and "--wheelhouse DIR" in done.stderr
    assert not (copy / ".venv").exists()
    assert not (tmp_path / "etc" / "client.env").exists()


def test_a_second_worker_under_a_running_ones_name_is_refused(tmp_path):
    if os.geteuid() != 0:
        _unavailable("needs root")
    env_file = tmp_path / "host.env"
    # Nowhere to connect to: the worker waits for its broker, which is all this test needs of it.
    env_file.write_text("DATABASE_URL=postgres://x:y@127.0.0.1:9/none\nREDIS_URL=redis://127.0.0.1:9/0\n")
    name = f"dup-{uuid.uuid4().hex[:6]}"

    def join(etc: str) -> subprocess.Popen[str]:
        return subprocess.Popen(["bash", str(ROOT / "scripts" / "join-client.sh"), "--env-file", str(env_file),
                                 "--foreground", "--no-install", "--hostname", name, "--config-dir",
                                 str(tmp_path / etc)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)

    first = join("etc-1")
    try:
        lock = Path(f"/run/benchapp/worker-{name}.lock")
        wait_for(lambda: lock.exists() and _run(["flock", "-n", str(lock), "true"]).returncode != 0, timeout_s=60,
                 what="the first worker to hold its lock")
        second = join("etc-2")
        output, _ = second.communicate(timeout=60)
        assert second.returncode == 2, output
        assert f"a worker named {name} runs on this machine already" in output
        assert first.poll() is None  # the first one runs on
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        Path(f"/run/benchapp/worker-{name}.lock").unlink(missing_ok=True)
