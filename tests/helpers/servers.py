"""Servers of a test's own, on spare ports: a throw-away redis-server, a MariaDB instance and a PostgreSQL cluster
(never the machine's shared ones, which other test sessions use)."""
from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import redis

from tests.conftest import wait_for

# The queue a test's own broker carries (RedisServer.env): the session's queue name with "-own".
OWN_QUEUE = f"{os.environ['BENCHAPP_QUEUE']}-own"


def free_port() -> int:
    """A port nothing listens on right now (bound, then released: the caller binds it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """A throw-away redis-server on a spare port (no persistence): ours to flush and restart."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        # What a worker or a launching process needs to use this broker and the test's own queue.
        self.env = {"REDIS_URL": self.url, "BENCHAPP_QUEUE": OWN_QUEUE}
        self.client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_for(self._pong, timeout_s=10, interval_s=0.05, what=f"redis-server on port {self.port}")

    def _pong(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.ConnectionError:
            return False

    def queued_jobs(self, queue: str) -> list[int]:
        """Job ids of the job_execute_task messages waiting in a queue."""
        ids = []
        for raw in self.client.lrange(queue, 0, -1):
            headers = json.loads(raw).get("headers") or {}
            if headers.get("task") == "campaigns.tasks.job_execute_task":
                ids.extend(ast.literal_eval(headers["argsrepr"]))
        return ids

    def flush(self) -> None:
        self.client.flushall()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class MariaDBServer:
    """A MariaDB server of the test's own: fresh datadir, spare port, root with an empty password."""

    def __init__(self, base: Path, port: int) -> None:
        self.port = port
        self.datadir = base / "data"
        self.log = base / "mariadbd.log"
        # A temporary directory of its own: bootstraps run at the same moment in the shared /tmp collide on
        # their temporary tables' names ("Unknown table 'mysql.tmp_user_sys'", 2 of 6 parallel ones here).
        tmpdir = base / "tmp"
        tmpdir.mkdir()
        done = subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}", f"--tmpdir={tmpdir}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, f"mariadb-install-db: {(done.stdout + done.stderr).strip()[-2000:]}"
        self.argv = ["mariadbd", "--no-defaults", f"--datadir={self.datadir}", f"--tmpdir={tmpdir}", f"--port={port}",
                     "--bind-address=127.0.0.1", f"--socket={base / 'mariadbd.sock'}",
                     f"--pid-file={base / 'mariadbd.pid'}", "--user=root", "--skip-log-bin",
                     "--innodb-buffer-pool-size=64M", f"--log-error={self.log}"]
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self.sql("SELECT 1").returncode == 0 or self.proc.poll() is not None,
                 timeout_s=60, what=f"mariadbd on port {self.port}")
        assert self.proc.poll() is None, self.log.read_text()[-2000:]

    def stop(self) -> None:
        """A clean shutdown (SIGTERM), as a restart by an operator or a failover does."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)

    def sql(self, statement: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.port}", "-uroot", "-N", "-e", statement],
                              capture_output=True, text=True, timeout=30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


class PostgresServer:
    """A PostgreSQL cluster of the test's own (initdb as `postgres`, trust on loopback, a spare port): its settings
    are the test's to change with ALTER SYSTEM, never the machine's shared cluster's."""

    def __init__(self, port: int, *, options: tuple[str, ...] = (), auth_host: str = "trust") -> None:
        """auth_host other than trust (scram-sha-256): TCP logins need a password, the socket is peer, and sql()
        goes over the socket as the OS user postgres."""
        versions = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: [int(p) for p in v.split(".")])
        self.bin = Path("/usr/lib/postgresql") / versions[-1] / "bin"
        self.port = port
        # Not under pytest's tmp_path: `postgres` must reach its data directory, and root's pytest tree is 0700.
        self.base = Path(tempfile.mkdtemp(prefix="benchapp-test-pg-"))
        self.base.chmod(0o755)
        self.datadir = self.base / "data"
        self.log = self.base / "pg.log"
        self.datadir.mkdir()
        shutil.chown(self.datadir, "postgres", "postgres")
        shutil.chown(self.base, "postgres", "postgres")
        self.auth_host = auth_host
        auth = ["--auth=trust"] if auth_host == "trust" else ["--auth-local=peer", f"--auth-host={auth_host}"]
        done = subprocess.run([str(self.bin / "initdb"), "-D", str(self.datadir), "-U", "postgres", *auth,
                               "-E", "UTF8", "--locale=C.UTF-8"], capture_output=True, text=True, user="postgres",
                              timeout=120)
        assert done.returncode == 0, done.stderr
        self.argv = [str(self.bin / "postgres"), "-D", str(self.datadir), "-p", str(port), "-c",
                     "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.datadir}", "-c",
                     "fsync=off", "-c", "max_connections=100", *(arg for option in options for arg in ("-c", option))]
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, user="postgres")
        wait_for(lambda: self.sql("SELECT 1").returncode == 0 or self.proc.poll() is not None,
                 timeout_s=60, what=f"postgres on port {self.port}")
        assert self.proc.poll() is None, self.log.read_text()[-2000:]

    def sql(self, statement: str, database: str = "postgres") -> subprocess.CompletedProcess[str]:
        if self.auth_host != "trust":
            return subprocess.run(["psql", "-h", str(self.datadir), "-p", str(self.port), "-d", database, "-XAtq",
                                   "-c", statement], capture_output=True, text=True, timeout=30, user="postgres")
        return subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
                               "-XAtq", "-c", statement], capture_output=True, text=True, timeout=30)

    def restart(self) -> None:
        """A fast shutdown and a start on the same data directory (AssertionError, with the log, if it cannot)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=60)
        self.start()

    def stop(self) -> None:
        """A fast shutdown (SIGINT), as `pg_ctl stop -m fast`, and its files removed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=60)
        shutil.rmtree(self.base, ignore_errors=True)
