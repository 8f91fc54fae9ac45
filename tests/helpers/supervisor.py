"""supervisord with deploy/supervisord.conf in the foreground, and the process groups a test inspects."""
from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from tests.conftest import ROOT

CONF = ROOT / "deploy" / "supervisord.conf"


class Supervisor:
    """supervisord in the foreground with deploy/supervisord.conf, and supervisorctl against it."""

    def __init__(self, run_dir: Path, env: dict[str, str]) -> None:
        self.env, self.run_dir = {"BENCHAPP_LOG_DIR": str(run_dir), **env}, run_dir
        self.port = int(env["BENCHAPP_PORT"])
        self.log = open(run_dir / "supervisord.out", "wb")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen([str(ROOT / ".venv" / "bin" / "supervisord"), "-c", str(CONF)], cwd=ROOT,
                                     env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def ctl(self, *args: str) -> str:
        done = subprocess.run([str(ROOT / ".venv" / "bin" / "supervisorctl"), "-c", str(CONF), *args], cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=60)
        return done.stdout

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program).strip() or 0)

    def running(self, program: str) -> int | None:
        """The program's pid once supervisord calls it RUNNING."""
        status = self.ctl("status", program)
        return self.pid(program) if " RUNNING " in status else None

    def web_answers(self) -> bool:
        try:
            # Generous: on a loaded machine (load 15 on 2 cores seen) one answer may take seconds; a refused or
            # reset connection, which is what a dead web gives, fails at once whatever the timeout.
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/accounts/login/", timeout=30) as response:
                return response.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def output(self) -> str:
        return (self.run_dir / "supervisord.out").read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def process_group(pid: int) -> list[int]:
    """Live processes whose process group is pid's."""
    return [p.pid for p in psutil.process_iter(["pid"]) if pgid(p.pid) == pid]


def pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def descendants(pid: int) -> set[int]:
    try:
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()

