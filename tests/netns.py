"""Client hosts on separate network hosts, on this machine: network namespaces (tests/test_netns_hosts.py).

A lab is one Linux bridge with an address of a private /24 (10.213.N.1) and small asyncio TCP forwarders on that
address to this machine's PostgreSQL, Redis and MariaDB on 127.0.0.1 (which listen on loopback only and are never
reconfigured). Each client host is a namespace joined to the bridge by a veth pair (10.213.N.2, .3 ...), with a UTS
namespace of its own whose hostname is the host's name, running a real `celery worker` (BENCHAPP_WORKER_ROLE=client)
that reaches PostgreSQL, Redis and the target only through 10.213.N.1: 127.0.0.1 inside a namespace is its own
empty loopback. Traffic stays between the namespaces and this machine. Everything is torn down at the end, each
step bounded in time.

Reuse: `netns_lab` (fixture) -> lab.add_host(name, labels=...) -> NetnsHost with link_down(), link_up(), kill(),
restart(); lab.address is what targets and URLs use. Creating namespaces needs root; with CI=true a failure to do
so fails the test, otherwise it skips.
"""
from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import TEST_REDIS_URL, WorkerProcess, wait_for

FORWARDED_PORTS = (5432, 6379, 3306)  # benchapp's PostgreSQL (and the PostgreSQL target), Redis, MariaDB
STEP_TIMEOUT_S = 10


class NetnsUnavailable(Exception):
    """Network namespaces cannot be made here (not root, no `ip`, a kernel without them)."""


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(argv)}: {done.stderr.strip()}")


def _with_host(url: str, host: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    hostport = netloc[-1].replace(parts.hostname or "", host, 1)
    return urlunsplit(parts._replace(netloc="@".join([*netloc[:-1], hostport])))


class Forwarders:
    """TCP forwarders address:port -> 127.0.0.1:port, in an asyncio loop of their own thread."""

    def __init__(self, address: str, ports: tuple[int, ...]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="netns-forwarders")
        self.thread.start()
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[asyncio.StreamWriter] = set()
        for port in ports:
            future = asyncio.run_coroutine_threadsafe(self._serve(address, port), self.loop)
            self.servers.append(future.result(timeout=STEP_TIMEOUT_S))

    async def _serve(self, address: str, port: int) -> asyncio.base_events.Server:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
            except (OSError, TimeoutError):
                writer.close()
                return
            self.connections.update((writer, up_writer))
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

        return await asyncio.start_server(handle, address, port, reuse_address=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self.connections.discard(writer)
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            for server in self.servers:
                server.close()
            for writer in list(self.connections):
                writer.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        try:
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=STEP_TIMEOUT_S)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=STEP_TIMEOUT_S)


class NetnsHost:
    """One client host: a namespace, its veth pair and address, and a Celery worker inside it."""

    def __init__(self, lab: NetnsLab, name: str, index: int, labels: list[str]) -> None:
        self.lab, self.name, self.labels = lab, name, labels
        self.netns = f"{lab.prefix}{index}"
        self.veth_host, self.veth_inside = f"{lab.prefix}{index}h", f"{lab.prefix}{index}n"
        self.address = f"{lab.subnet}.{index + 2}"
        self.worker: WorkerProcess | None = None
        _ip("netns", "add", self.netns)
        lab.cleanups.append(lambda: _ip("netns", "del", self.netns))  # takes the veth pair with it
        _ip("link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_inside)
        _ip("link", "set", self.veth_inside, "netns", self.netns)
        _ip("link", "set", self.veth_host, "master", lab.bridge)
        _ip("link", "set", self.veth_host, "up")
        _ip("addr", "add", f"{self.address}/24", "dev", self.veth_inside, netns=self.netns)
        _ip("link", "set", self.veth_inside, "up", netns=self.netns)
        _ip("link", "set", "lo", "up", netns=self.netns)

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
        prefix = ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                  self.name]
        command = self._join_command(env) if join_script else None
        self.worker = WorkerProcess(self.name, self.lab.db_name, extra_env=env, prefix=prefix, command=command)
        self.worker.wait_ready()
        return self.worker

    def _join_command(self, env: dict[str, str]) -> list[str]:
        from django.conf import settings

        state = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self.lab.cleanups.append(lambda: shutil.rmtree(state, ignore_errors=True))
        env_file = state / "client.env"
        env_file.touch(mode=0o600)
        env_file.write_text(f"DATABASE_URL={env['DATABASE_URL']}\nREDIS_URL={env['REDIS_URL']}\n"
                            f"BENCHAPP_FIELD_KEY={settings.FIELD_ENCRYPTION_KEYS[0]}\n"
                            f"BENCHAPP_QUEUE={os.environ['BENCHAPP_QUEUE']}\n")
        return ["bash", "scripts/join-client.sh", "--no-install", "--foreground", "--env-file", str(env_file),
                "--config-dir", str(state / "etc"), "--hostname", self.name,
                "--labels", ",".join(self.labels), "--concurrency", "1"]

    def link_down(self) -> None:
        """The host's link goes down: its packets are dropped from now on (no reset reaches either end)."""
        _ip("link", "set", self.veth_host, "down")

    def link_up(self) -> None:
        _ip("link", "set", self.veth_host, "up")

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


class NetnsLab:
    """A bridge, its forwarders, and the client hosts joined to it."""

    def __init__(self, db_name: str) -> None:
        self.db_name = db_name
        self.prefix = f"bh{uuid.uuid4().hex[:6]}"
        self.bridge = f"{self.prefix}br"
        self.cleanups: list[Callable[[], None]] = []
        self.hosts: list[NetnsHost] = []
        self.forwarders: Forwarders | None = None

    def open(self) -> None:
        used = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=False).stdout
        self.subnet = next(f"10.213.{n}" for n in random.sample(range(1, 255), 254) if f"10.213.{n}." not in used)
        self.address = f"{self.subnet}.1"
        _ip("link", "add", self.bridge, "type", "bridge")
        self.cleanups.append(lambda: _ip("link", "del", self.bridge))
        _ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        self.forwarders = Forwarders(self.address, FORWARDED_PORTS)

    def add_host(self, name: str, *, labels: list[str] | None = None, start: bool = True) -> NetnsHost:
        host = NetnsHost(self, name, len(self.hosts), labels or [])
        self.hosts.append(host)
        if start:
            host.start()
        return host

    def close(self) -> None:
        for host in self.hosts:
            host.kill()
        if self.forwarders is not None:
            self.forwarders.close()
        for cleanup in reversed(self.cleanups):
            try:
                cleanup()
            except NetnsUnavailable:
                pass


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
