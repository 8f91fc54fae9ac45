"""Client hosts on networks of their own, on this machine: Linux network namespaces joined to a bridge.

A `Lab` is one Linux bridge with the first address of a private /24 (`lab.address`, e.g. 10.213.N.1) and small
asyncio TCP forwarders on that address to ports of 127.0.0.1 (the servers there listen on loopback only and are
never reconfigured). A `Namespace` is a network namespace joined to the bridge by a veth pair, with the next
addresses of the /24 (.2, .3 ...): inside it, 127.0.0.1 is its own empty loopback, so what runs there reaches the
servers only through `lab.address`. `Namespace.exec_prefix()` runs a command inside it with a hostname of its own
(a UTS namespace); `link_down()` drops its packets as a cut link does. Everything is removed by `Lab.close()`, each
step bounded in time. Creating namespaces needs root.

Plain Python (no pytest, no Django): tests/helpers/netns.py (the `netns_lab` fixture: Celery workers as client hosts) and
bench/_netns.py (bench/faults.py's client host, joined by scripts/join-client.sh) both build on it.
"""
from __future__ import annotations

import asyncio
import random
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable

STEP_TIMEOUT_S = 10


class NetnsUnavailable(Exception):
    """Network namespaces cannot be made here (not root, no `ip`, a kernel without them), or a step failed."""


def ip(*args: str, netns: str | None = None) -> None:
    """`ip ARGS`, inside the namespace `netns` when given; raises NetnsUnavailable with ip's words on a failure."""
    argv = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(argv)}: {done.stderr.strip()}")


class Forwarders:
    """TCP forwarders address:port -> 127.0.0.1:port, in an asyncio loop of their own thread."""

    def __init__(self, address: str, ports: Iterable[int]) -> None:
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


class Lab:
    """A bridge on a free private /24 `{subnet_base}.N`, its forwarders to `ports`, and what `close()` removes.

    Names start with `prefix` plus six random hex digits (`lab.prefix`), so that two labs never meet."""

    def __init__(self, *, prefix: str, subnet_base: str, ports: Iterable[int]) -> None:
        self.prefix = f"{prefix}{uuid.uuid4().hex[:6]}"
        self.bridge = f"{self.prefix}br"
        self.subnet_base, self.ports = subnet_base, tuple(ports)
        self.cleanups: list[Callable[[], None]] = []
        self.forwarders: Forwarders | None = None

    def open(self) -> None:
        used = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=False).stdout
        base = self.subnet_base
        self.subnet = next(f"{base}.{n}" for n in random.sample(range(1, 255), 254) if f"{base}.{n}." not in used)
        self.address = f"{self.subnet}.1"
        ip("link", "add", self.bridge, "type", "bridge")
        self.cleanups.append(lambda: ip("link", "del", self.bridge))
        ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        self.forwarders = Forwarders(self.address, self.ports)

    def close(self) -> None:
        """Stops the forwarders, then removes the namespaces and the bridge (the last made first)."""
        try:
            if self.forwarders is not None:
                self.forwarders.close()
        finally:
            for cleanup in reversed(self.cleanups):
                try:
                    cleanup()
                except (NetnsUnavailable, subprocess.SubprocessError):
                    pass  # gone already, or `ip` timed out: the next step is still taken


class Namespace:
    """The lab's namespace number `index`: its veth pair and its address `{lab.subnet}.{index + 2}`."""

    def __init__(self, lab: Lab, index: int) -> None:
        self.netns = f"{lab.prefix}{index}"
        self.veth_host, self.veth_inside = f"{lab.prefix}{index}h", f"{lab.prefix}{index}n"
        self.address = f"{lab.subnet}.{index + 2}"
        ip("netns", "add", self.netns)
        lab.cleanups.append(lambda: ip("netns", "del", self.netns))  # takes the veth pair with it
        ip("link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_inside)
        ip("link", "set", self.veth_inside, "netns", self.netns)
        ip("link", "set", self.veth_host, "master", lab.bridge)
        ip("link", "set", self.veth_host, "up")
        ip("addr", "add", f"{self.address}/24", "dev", self.veth_inside, netns=self.netns)
        ip("link", "set", self.veth_inside, "up", netns=self.netns)
        ip("link", "set", "lo", "up", netns=self.netns)

    def exec_prefix(self, hostname: str) -> list[str]:
        """The start of a command line that runs the rest inside the namespace, with `hostname` as its hostname."""
        return ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                hostname]

    def link_down(self) -> None:
        """The namespace's link goes down: its packets are dropped from now on (no reset reaches either end)."""
        ip("link", "set", self.veth_host, "down")

    def link_up(self) -> None:
        ip("link", "set", self.veth_host, "up")
