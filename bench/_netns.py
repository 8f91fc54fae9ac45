"""A client host on a network of its own for bench/faults.py's "client host link down": a network namespace joined
to a bridge by a veth pair, whose worker (scripts/join-client.sh --foreground, as a client host's operator starts
it) reaches the stack's PostgreSQL, Redis and MariaDB only through TCP forwarders on the bridge's address. Taking
the veth's host end down drops the host's packets, as a cut link does. The same construction as tests/netns.py,
pointed at the stack's own ports; everything is removed by close().
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable

from _stack import MARKER, ROOT, Stack, wait_until

STEP_TIMEOUT_S = 10


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


class Forwarders:
    """TCP forwarders address:port -> 127.0.0.1:port, in an asyncio loop of their own thread."""

    def __init__(self, address: str, ports: list[int]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="faults-forwarders")
        self.thread.start()
        self.servers: list[asyncio.base_events.Server] = []
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
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            for server in self.servers:
                server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=STEP_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=STEP_TIMEOUT_S)


class NetnsClient:
    """One client host `name` in a namespace, its worker started by scripts/join-client.sh --foreground."""

    def __init__(self, stack: Stack, name: str) -> None:
        assert stack.pg is not None and stack.redis is not None and stack.mariadb is not None
        self.stack, self.name = stack, name
        self.prefix = f"bf{uuid.uuid4().hex[:6]}"
        self.bridge, self.netns = f"{self.prefix}br", f"{self.prefix}ns"
        self.veth_host, self.veth_inside = f"{self.prefix}h", f"{self.prefix}n"
        self.cleanups: list[Callable[[], None]] = []
        self.forwarders: Forwarders | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        used = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=False).stdout
        subnet = next(f"10.214.{n}" for n in random.sample(range(1, 255), 254) if f"10.214.{n}." not in used)
        self.address, inside = f"{subnet}.1", f"{subnet}.2"
        _ip("link", "add", self.bridge, "type", "bridge")
        self.cleanups.append(lambda: _ip("link", "del", self.bridge))
        _ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        self.forwarders = Forwarders(self.address, [stack.pg.port, stack.redis.port, stack.mariadb.port])
        _ip("netns", "add", self.netns)
        self.cleanups.append(lambda: _ip("netns", "del", self.netns))  # takes the veth pair with it
        _ip("link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_inside)
        _ip("link", "set", self.veth_inside, "netns", self.netns)
        _ip("link", "set", self.veth_host, "master", self.bridge)
        _ip("link", "set", self.veth_host, "up")
        _ip("addr", "add", f"{inside}/24", "dev", self.veth_inside, netns=self.netns)
        _ip("link", "set", self.veth_inside, "up", netns=self.netns)
        _ip("link", "set", "lo", "up", netns=self.netns)

    def start(self) -> None:
        stack = self.stack
        assert stack.pg is not None and stack.redis is not None
        state = stack.dir / f"client-{self.name}"
        state.mkdir(exist_ok=True)
        secrets_env = dict(line.split("=", 1) for line in (stack.dir / "secrets.env").read_text().splitlines()
                           if "=" in line and not line.startswith("#"))
        env_file = state / "client.env"
        env_file.touch(mode=0o600)
        env_file.write_text(f"DATABASE_URL=postgres://postgres@{self.address}:{stack.pg.port}/benchapp\n"
                            f"REDIS_URL=redis://{self.address}:{stack.redis.port}/0\n"
                            f"BENCHAPP_FIELD_KEY={secrets_env['BENCHAPP_FIELD_KEY']}\n"
                            f"BENCHAPP_QUEUE=faults-{stack.marker}\n")
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        # Its own marker: the stack's role and sysbench look-ups are about the server's processes.
        env.update({MARKER: f"{stack.marker}-{self.name}", "PYTHONUNBUFFERED": "1"})
        argv = ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                self.name, "bash", "scripts/join-client.sh", "--no-install", "--foreground", "--env-file",
                str(env_file), "--config-dir", str(state / "etc"), "--hostname",
                self.name, "--concurrency", "2"]
        log = open(stack.dir / f"client-{self.name}.log", "ab")  # noqa: SIM115 (closed with the stack)
        stack.files.append(log)
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        wait_until(lambda: self.online() or self.proc is None or self.proc.poll() is not None, timeout_s=180,
                   what=f"client host {self.name} to join", interval_s=1)
        if self.proc.poll() is not None:
            raise RuntimeError(f"client host {self.name}'s worker exited: see {log.name}")

    def online(self) -> bool:
        try:
            hosts = self.stack.api.get("/api/v1/client-hosts/")
        except Exception:
            return False
        rows = hosts.get("results", hosts) if isinstance(hosts, dict) else hosts
        return any(h.get("hostname") == self.name and h.get("online") for h in rows)

    def link_down(self) -> None:
        _ip("link", "set", self.veth_host, "down")

    def link_up(self) -> None:
        _ip("link", "set", self.veth_host, "up")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=15)
        # Its worker, pool children and any sysbench they left: found by this host's marker, wherever they are.
        for proc in self.stack.app_processes(marker=f"{self.stack.marker}-{self.name}"):
            with contextlib.suppress(Exception):
                proc.kill()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=15)
        if self.forwarders is not None:
            self.forwarders.close()
        for cleanup in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                cleanup()

