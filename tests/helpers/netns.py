"""Client hosts on separate network hosts, on this machine: network namespaces (tests/test_netns_hosts.py).

A lab is one Linux bridge with an address of a private /24 (10.213.N.1) and small asyncio TCP forwarders on that
address to this machine's PostgreSQL, Redis and MariaDB on 127.0.0.1 (which listen on loopback only and are never
reconfigured). Each client host is a namespace joined to the bridge by a veth pair (10.213.N.2, .3 ...), with a UTS
namespace of its own whose hostname is the host's name, running a real `celery worker` (BENCHAPP_WORKER_ROLE=client)
that reaches PostgreSQL, Redis and the target only through 10.213.N.1: 127.0.0.1 inside a namespace is its own
empty loopback. Traffic stays between the namespaces and this machine. Everything is torn down at the end, each
step bounded in time.

The bridge, forwarders and namespaces are tests/helpers/namespaces.py's (plain Python, which bench/faults.py's
client host uses too); this module adds the Celery worker of each host and the pytest fixture.

Reuse: `netns_lab` (fixture) -> lab.add_host(name, labels=...) -> NetnsHost with link_down(), link_up(), kill(),
restart(); lab.address is what targets and URLs use. Creating namespaces needs root; with CI=true a failure to do
so fails the test, otherwise it skips.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import TEST_REDIS_URL, WorkerProcess, wait_for
from tests.helpers.joining import join_client_command
from tests.helpers.namespaces import Lab, Namespace, NetnsUnavailable

FORWARDED_PORTS = (5432, 6379, 3306)  # benchapp's PostgreSQL (and the PostgreSQL target), Redis, MariaDB


def _with_host(url: str, host: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    hostport = netloc[-1].replace(parts.hostname or "", host, 1)
    return urlunsplit(parts._replace(netloc="@".join([*netloc[:-1], hostport])))


class NetnsHost(Namespace):
    """One client host: a namespace of the lab (its veth pair, address, link_down/link_up) and a Celery worker
    inside it."""

    def __init__(self, lab: NetnsLab, name: str, index: int, labels: list[str]) -> None:
        super().__init__(lab, index)
        self.lab, self.name, self.labels = lab, name, labels
        self.worker: WorkerProcess | None = None

    def start(self, extra_env: dict[str, str] | None = None, *, join_script: bool = False) -> WorkerProcess:
        """Starts the host's worker inside its namespace, with its own hostname; waits until it is ready.

        With join_script, as a client host's operator would: `scripts/join-client.sh --foreground` (without its
        installing steps) from an env file such as the server's scripts/serve-clients.sh writes."""
        env = {
            "DATABASE_URL": f"postgres://postgres@{self.lab.address}:5432/{self.lab.db_name}",
            "REDIS_URL": _with_host(TEST_REDIS_URL, self.lab.address),
            "BENCHAPP_CACHE_URL": _with_host(os.environ["BENCHAPP_CACHE_URL"], self.lab.address),
            "BENCHAPP_HOST_LABELS": ",".join(self.labels),
            "BENCHAPP_WORKER_ROLE": "client",
            **(extra_env or {}),
        }
        command = self._join_command(env) if join_script else None
        self.worker = WorkerProcess(self.name, self.lab.db_name, extra_env=env, prefix=self.exec_prefix(self.name),
                                    command=command)
        self.worker.wait_ready()
        return self.worker

    def _join_command(self, env: dict[str, str]) -> list[str]:
        state = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self.lab.cleanups.append(lambda: shutil.rmtree(state, ignore_errors=True))
        return join_client_command(state, hostname=self.name, database_url=env["DATABASE_URL"],
                                   redis_url=env["REDIS_URL"], queue=os.environ["BENCHAPP_QUEUE"],
                                   labels=self.labels, concurrency=1)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.worker is not None:
            self.worker.stop(sig)

    def restart(self) -> WorkerProcess:
        """A fresh worker of the same host (after kill(), or to replace one stuck on a dead link)."""
        self.kill()
        return self.start()

    def pids(self) -> list[int]:
        """The worker's processes (its main process and pool children), as seen from this machine."""
        if self.worker is None:
            return []
        done = subprocess.run(["pgrep", "-g", str(self.worker.proc.pid)], capture_output=True, text=True,
                              check=False)
        return [int(pid) for pid in done.stdout.split()]


class NetnsLab(Lab):
    """A bridge, its forwarders to this machine's PostgreSQL, Redis and MariaDB, and the client hosts joined to it."""

    def __init__(self, db_name: str) -> None:
        super().__init__(prefix="bh", subnet_base="10.213", ports=FORWARDED_PORTS)
        self.db_name = db_name
        self.hosts: list[NetnsHost] = []

    def add_host(self, name: str, *, labels: list[str] | None = None, start: bool = True) -> NetnsHost:
        host = NetnsHost(self, name, len(self.hosts), labels or [])
        self.hosts.append(host)
        if start:
            host.start()
        return host

    def close(self) -> None:
        for host in self.hosts:
            host.kill()
        super().close()


@pytest.fixture
def netns_lab(test_db_name: str) -> Iterator[NetnsLab]:
    """A lab of network namespaces for one test (see the module's docstring)."""
    lab = NetnsLab(test_db_name)
    try:
        lab.open()
    except (NetnsUnavailable, OSError, subprocess.SubprocessError) as exc:
        lab.close()
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"network namespaces could not be created (CI=true): {exc}")
        pytest.skip(f"network namespaces cannot be created here: {exc}")
    try:
        yield lab
    finally:
        lab.close()


def wait_host_online(hostname: str, timeout_s: float = 30) -> Any:
    from campaigns.models import ClientHost

    return wait_for(lambda: ClientHost.objects.filter(hostname=hostname).exclude(address=None).first(),
                    timeout_s=timeout_s, what=f"{hostname} to join")
