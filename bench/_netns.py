"""A client host on a network of its own for bench/faults.py's "client host link down": a network namespace joined
to a bridge by a veth pair, whose worker (scripts/join-client.sh --foreground, as a client host's operator starts
it) reaches the stack's PostgreSQL, Redis and MariaDB only through TCP forwarders on the bridge's address. Taking
the veth's host end down drops the host's packets, as a cut link does. The bridge, forwarders and namespace are
tests/helpers/namespaces.py's (the tests' client hosts are made by the same code), pointed at the stack's own ports;
everything is removed by close().
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from _stack import MARKER, ROOT, Stack, wait_for

from tests.helpers.joining import join_client_command
from tests.helpers.namespaces import Lab, Namespace


class NetnsClient:
    """One client host `name` in a namespace, its worker started by scripts/join-client.sh --foreground.
    `address` is the bridge's: what the host reaches the stack's servers at."""

    def __init__(self, stack: Stack, name: str) -> None:
        assert stack.pg is not None and stack.redis is not None and stack.mariadb is not None
        self.stack, self.name = stack, name
        self.proc: subprocess.Popen[bytes] | None = None
        self.lab = Lab(prefix="bf", subnet_base="10.214", ports=(stack.pg.port, stack.redis.port, stack.mariadb.port))
        try:
            self.lab.open()
            self.host = Namespace(self.lab, 0)
        except BaseException:
            with contextlib.suppress(Exception):
                self.lab.close()
            raise
        self.address = self.lab.address

    def start(self) -> None:
        stack = self.stack
        assert stack.pg is not None and stack.redis is not None
        state = stack.dir / f"client-{self.name}"
        state.mkdir(exist_ok=True)
        join = join_client_command(
            state, hostname=self.name, database_url=f"postgres://postgres@{self.address}:{stack.pg.port}/benchapp",
            redis_url=f"redis://{self.address}:{stack.redis.port}/0",
            queue=f"faults-{stack.marker}", concurrency=2)
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        # Its own marker: the stack's role and sysbench look-ups are about the server's processes.
        env.update({MARKER: f"{stack.marker}-{self.name}", "PYTHONUNBUFFERED": "1"})
        argv = [*self.host.exec_prefix(self.name), *join]
        log = open(stack.dir / f"client-{self.name}.log", "ab")  # noqa: SIM115 (closed with the stack)
        stack.files.append(log)
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: self.online() or self.proc is None or self.proc.poll() is not None, timeout_s=180,
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
        self.host.link_down()

    def link_up(self) -> None:
        self.host.link_up()

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
        with contextlib.suppress(Exception):
            self.lab.close()

