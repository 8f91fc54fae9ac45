"""deploy/systemd/: one unit per process, restarted alone (Restart=always), as the user benchapp that scripts/setup.sh
makes, running the scripts of this checkout, with the health checks of docs/operations.md. systemd is not PID 1 where
the tests run, so the units are read here and checked by `systemd-analyze verify` (which needs no running systemd),
on copies whose /opt/benchapp is this checkout so that every ExecStart it checks exists."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

UNITS = ROOT / "deploy" / "systemd"
CHECKOUT = "/opt/benchapp"
PROCESSES = {"web": "/bin/bash /opt/benchapp/scripts/web.sh", "worker": "/bin/bash /opt/benchapp/scripts/worker.sh",
             "beat": "/opt/benchapp/.venv/bin/celery -A benchapp beat"}


def _unit(name: str) -> dict[str, dict[str, list[str]]]:
    """Section -> key -> every value (ExecStart may repeat), as systemd reads an INI-like unit file."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for line in (UNITS / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.mark.parametrize("process", sorted(PROCESSES))
def test_each_process_is_restarted_alone_as_benchapp_from_the_checkout(process):
    unit = _unit(f"benchapp-{process}.service")
    service = unit["Service"]
    assert service["Restart"] == ["always"]
    assert service["User"] == ["benchapp"] and service["Group"] == ["benchapp"]
    assert service["WorkingDirectory"] == [CHECKOUT]
    assert service["EnvironmentFile"] == ["/etc/benchapp/benchapp.env"]
    assert service["ExecStart"][0].startswith(PROCESSES[process])
    # What it runs exists in this checkout (the same relative path under /opt/benchapp).
    executable = next(part for part in service["ExecStart"][0].split() if part.startswith(CHECKOUT))
    assert (ROOT / executable.removeprefix(CHECKOUT + "/")).exists(), executable
    assert unit["Unit"]["PartOf"] == ["benchapp.target"] and unit["Install"]["WantedBy"] == ["benchapp.target"]
    assert "redis-server.service" in unit["Unit"]["After"][0] and "postgresql.service" in unit["Unit"]["After"][0]


def test_the_target_starts_the_three_and_the_timer_runs_the_health_checks():
    wants = _unit("benchapp.target")["Unit"]["Wants"][0].split()
    assert sorted(wants) == sorted(f"benchapp-{p}.service" for p in PROCESSES)
    timer = _unit("benchapp-health.timer")
    assert timer["Timer"]["OnUnitActiveSec"] == ["1min"] and timer["Install"]["WantedBy"] == ["benchapp.target"]
    checks = _unit("benchapp-health.service")["Service"]["ExecStart"]
    assert len(checks) == 3
    assert "/healthz" in checks[0] and "systemctl restart benchapp-web" in checks[0]
    assert "manage.py worker_health" in checks[1] and "systemctl restart benchapp-worker" in checks[1]
    assert "manage.py beat_health" in checks[2] and "systemctl restart benchapp-beat" in checks[2]
    # The checks run as benchapp too (they read var/ and the settings as the services do).
    assert all("runuser -u benchapp" in check for check in checks[1:])
    for command in ("worker_health", "beat_health"):
        assert (ROOT / "campaigns" / "management" / "commands" / f"{command}.py").exists()


def test_the_paths_are_those_setup_and_the_readme_install():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert re.search(r"useradd --system .* benchapp$", setup, re.M), "setup.sh makes the user the units run as"
    readme = (UNITS / "README.md").read_text()
    assert f"The checkout is `{CHECKOUT}`" in readme
    assert "install -m 0640 -o root -g benchapp /dev/null /etc/benchapp/benchapp.env" in readme
    assert "cp deploy/systemd/benchapp*.service deploy/systemd/benchapp*.timer deploy/systemd/benchapp.target " \
           "/etc/systemd/system/" in readme
    assert "systemctl enable --now benchapp.target benchapp-health.timer" in readme


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_finds_nothing_to_say(tmp_path):
    names = sorted(p.name for p in UNITS.iterdir() if p.suffix in (".service", ".timer", ".target"))
    for name in names:
        (tmp_path / name).write_text((UNITS / name).read_text().replace(CHECKOUT, str(ROOT)))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", *(str(tmp_path / n) for n in names)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stdout + done.stderr
