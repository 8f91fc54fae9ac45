"""An isolated benchapp stack for bench/faults.py: its own PostgreSQL cluster, Redis, MariaDB target and benchapp's
web, worker and beat, each on a free port of this machine, in one temporary directory.

Nothing shared is touched: the machine's PostgreSQL (5432), MariaDB (3306) and Redis (6379) keep running, and every
process this module starts is its child (servers) or carries the stack's marker in its environment (benchapp's
processes and whatever they start, sysbench included), so `Stack.stop()` ends exactly what it started.

benchapp's processes are started by one function, `app_launch()`, the way `make run` starts them; set
FAULTS_APP_COMMAND to start them another way (e.g. a process supervisor's command line: `{port}` is replaced by the
web port, `{dir}` by the stack's directory).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from _django import ROOT

from tests.helpers.waiting import wait_for

VENV = ROOT / ".venv" / "bin"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
MARKER = "FAULTS_STACK"
TARGET_DB = "sbtest"
TARGET_USER = "sb"
ROLES = ("web", "worker", "beat")
SHELLS = frozenset({"sh", "bash", "dash"})


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice for a socket bound to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Server:
    """One server process of the stack (PostgreSQL, Redis or MariaDB): a child of this process, restartable."""

    name: str
    argv: list[str]
    port: int
    log: Path
    user: str | None = None
    stop_signal: int = signal.SIGTERM
    proc: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout_s: float = 60) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, user=self.user, env=_server_env())
        wait_for(lambda: _port_open(self.port) or self.proc is None or self.proc.poll() is not None,
                   timeout_s=timeout_s, what=f"{self.name} on port {self.port}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")

    def stop(self, *, sig: int | None = None, timeout_s: float = 60) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig if sig is not None else self.stop_signal)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _server_env() -> dict[str, str]:
    # Servers do not carry the marker: only benchapp's processes (and what they start) are found by it.
    return {k: v for k, v in os.environ.items() if k != MARKER}


class Api:
    """benchapp's REST API with a token (urllib: the bench needs no other HTTP client)."""

    def __init__(self, base: str, token: str = "") -> None:
        self.base, self.token = base.rstrip("/"), token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, *, timeout_s: float = 60) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")[:500]) from None
        return json.loads(text) if text else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def retrying(self, method: str, path: str, body: dict[str, Any] | None = None, *, tries: int = 6,
                 failures: list[str] | None = None) -> Any:
        """A call repeated while the answer is a 5xx or no answer (a restarted database, web coming back);
        each failure is appended to `failures`. POSTs retried here must be harmless to repeat."""
        for attempt in range(tries):
            try:
                return self.call(method, path, body)
            except ApiError as exc:
                if exc.status < 500 or attempt == tries - 1:
                    raise
                problem = f"HTTP {exc.status}"
            except OSError as exc:
                if attempt == tries - 1:
                    raise
                problem = type(exc).__name__
            if failures is not None:
                failures.append(f"{method} {path}: {problem}")
            time.sleep(3)
        raise AssertionError("unreachable")

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.call("POST", path, body or {})


class ApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status


def app_launch(stack: Stack) -> subprocess.Popen[bytes]:
    """Starts web, worker and beat as `make run` does: under supervisord (scripts/supervise.sh) where the tree has
    it, else honcho with the Procfile; BENCHAPP_PORT (and honcho's -p) set to the web port. FAULTS_APP_COMMAND
    replaces the command."""
    env = stack.app_env()
    custom = os.environ.get("FAULTS_APP_COMMAND")
    if custom:
        argv = shlex.split(custom.format(port=stack.web_port, dir=stack.dir))
    elif (ROOT / "scripts" / "supervise.sh").exists():
        # supervisord's socket, pid file and logs in the stack's directory, not the checkout's var/run; a warm
        # shutdown bounded so that a restart by hand does not wait 2 minutes.
        run_dir = stack.dir / "run"
        run_dir.mkdir(exist_ok=True)
        env.update({"BENCHAPP_RUN_DIR": str(run_dir), "BENCHAPP_WORKER_STOP_S": "20"})
        user = env.get("BENCHAPP_RUN_AS") or ("benchapp" if os.geteuid() == 0 else "")
        if user and os.geteuid() == 0:
            shutil.chown(stack.dir / "secrets.env", user)  # the programs run as that user and read it
        argv = ["bash", "scripts/supervise.sh"]
    else:
        argv = [str(VENV / "honcho"), "start", "-f", "Procfile", "-p", str(stack.web_port)]
    log = open(stack.dir / "app.log", "ab")  # noqa: SIM115 (the child holds it; closed with the stack)
    stack.files.append(log)
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


@dataclass
class Stack:
    """The isolated stack; `start()` brings it all up, `stop()` ends all it started."""

    dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="benchapp-faults-")))
    marker: str = field(default_factory=lambda: secrets.token_hex(6))
    pg: Server | None = None
    redis: Server | None = None
    mariadb: Server | None = None
    app: subprocess.Popen[bytes] | None = None
    web_port: int = 0
    target_password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    api: Api = field(default_factory=lambda: Api(""))
    files: list[Any] = field(default_factory=list)

    # ------------------------------------------------------------ servers

    def start(self, log: Callable[[str], None] = print) -> None:
        self.dir.chmod(0o755)  # PostgreSQL runs as `postgres`: it must reach its data directory
        started = time.monotonic()
        self._postgres()
        log(f"  PostgreSQL 15 on port {self.pg.port if self.pg else '?'}")
        self._redis()
        log(f"  redis-server on port {self.redis.port if self.redis else '?'}")
        self._mariadb()
        log(f"  MariaDB target on port {self.mariadb.port if self.mariadb else '?'}")
        self._app_setup()
        self.app_start()
        log(f"  benchapp on http://127.0.0.1:{self.web_port}/ (web, worker, beat) in {self.dir}; "
            f"stack up in {time.monotonic() - started:.0f} s")

    def _postgres(self) -> None:
        data = self.dir / "pg"
        data.mkdir()
        shutil.chown(data, "postgres", "postgres")
        subprocess.run([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                        "--locale=C.UTF-8"], check=True, capture_output=True, user="postgres", env=_server_env())
        port = free_port()
        # fsync off: a disposable cluster on a machine shared by many; a restart still goes through shutdown.
        self.pg = Server("postgresql", [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port), "-c",
                                        "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}",
                                        "-c", "max_connections=200", "-c", "fsync=off", "-c",
                                        "synchronous_commit=off"],
                         port, self.dir / "pg.log", user="postgres", stop_signal=signal.SIGINT)  # SIGINT: -m fast
        self.pg.start()
        wait_for(self.pg_ready, timeout_s=60, what="PostgreSQL to accept connections")
        subprocess.run([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "benchapp"],
                       check=True, capture_output=True)

    def pg_ready(self) -> bool:
        assert self.pg is not None
        return subprocess.run([str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.pg.port)],
                              check=False).returncode == 0

    def _redis(self) -> None:
        port = free_port()
        self.redis = Server("redis", ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.dir), "--daemonize", "no"],
                            port, self.dir / "redis.log")
        self.redis.start()

    def redis_cli(self, *args: str) -> str:
        assert self.redis is not None
        return subprocess.run(["redis-cli", "-p", str(self.redis.port), *args], check=False, capture_output=True,
                              text=True, timeout=10).stdout.strip()

    def _mariadb(self) -> None:
        data = self.dir / "mariadb"
        # A temporary directory of its own: bootstraps run at the same moment in the shared /tmp collide on
        # their temporary tables' names (exit 1, "Unknown table 'mysql.tmp_user_sys'").
        tmpdir = self.dir / "mariadb-tmp"
        tmpdir.mkdir(exist_ok=True)
        done = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", f"--tmpdir={tmpdir}",
                               "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"],
                              check=False, capture_output=True, text=True, env=_server_env())
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed ({done.returncode}): "
                               f"{(done.stdout + done.stderr).strip()[-2000:]}")
        port = free_port()
        self.mariadb = Server("mariadb", [
            "mariadbd", "--no-defaults", f"--datadir={data}", f"--tmpdir={tmpdir}", f"--port={port}",
            "--bind-address=127.0.0.1", f"--socket={self.mariadb_socket}", f"--pid-file={self.dir / 'mariadb.pid'}",
            "--user=root",
            "--innodb-buffer-pool-size=128M", "--max-connections=200", "--skip-log-bin",
            f"--log-error={self.dir / 'mariadb.err'}"], port, self.dir / "mariadb.log")
        self.mariadb.start()
        # The password goes through stdin: never in a command line.
        self.mariadb_sql(f"CREATE DATABASE {TARGET_DB}; CREATE USER '{TARGET_USER}'@'%' IDENTIFIED BY "
                         f"'{self.target_password}'; GRANT ALL ON *.* TO '{TARGET_USER}'@'%';")

    @property
    def mariadb_socket(self) -> Path:
        return self.dir / "mariadb.sock"

    def mariadb_sql(self, sql: str, *, timeout_s: float = 30) -> str:
        """Runs SQL as root through the instance's own socket; returns its tab-separated output."""
        done = subprocess.run(["mariadb", "--no-defaults", "-S", str(self.mariadb_socket), "-uroot", "-N", "-B"],
                              input=sql, check=True, capture_output=True, text=True, timeout=timeout_s)
        return done.stdout

    def mariadb_ready(self) -> bool:
        try:
            self.mariadb_sql("SELECT 1", timeout_s=5)
            return True
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            return False

    # ------------------------------------------------------------ benchapp

    def app_env(self) -> dict[str, str]:
        assert self.pg is not None and self.redis is not None
        env = dict(os.environ)
        env.update({
            MARKER: self.marker,
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{self.pg.port}/benchapp",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis.port}/0",
            "BENCHAPP_SECRETS_FILE": str(self.dir / "secrets.env"),
            "BENCHAPP_PORT": str(self.web_port),
            "BENCHAPP_QUEUE": f"faults-{self.marker}",
            "BENCHAPP_HOSTNAME": f"faults-{self.marker}",
            "WEB_WORKERS": "2",
            "PYTHONUNBUFFERED": "1",
        })
        env.pop("PORT", None)
        return env

    def manage(self, *args: str, stdin: str | None = None, extra_env: dict[str, str] | None = None) -> str:
        done = subprocess.run([str(VENV / "python"), "manage.py", *args], cwd=ROOT, input=stdin, text=True,
                              env={**self.app_env(), **(extra_env or {})}, capture_output=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def _app_setup(self) -> None:
        self.web_port = free_port()
        self.manage("migrate", "--noinput")
        password = secrets.token_urlsafe(16)
        self.manage("shell", stdin="import os\nfrom django.contrib.auth import get_user_model\n"
                                   "get_user_model().objects.create_superuser('faults', '', os.environ['FAULTS_PW'])\n",
                    extra_env={"FAULTS_PW": password})
        self._password = password

    def app_start(self) -> None:
        self.app = app_launch(self)
        if not self.api.token:  # a restart keeps the token (the token endpoint allows 10 an hour per user)
            self.api = Api(f"http://127.0.0.1:{self.web_port}")
        wait_for(lambda: all(self.roles().values()) and _port_open(self.web_port), timeout_s=180,
                   what="web, worker and beat", interval_s=0.5)
        if not self.api.token:
            self.api.token = wait_for(self._token, timeout_s=180, what="an API token", interval_s=2)
        wait_for(self.worker_ready, timeout_s=120, what="the worker to announce its host", interval_s=1)

    def _token(self) -> str | None:
        # The first requests of fresh gunicorn workers are slow on a loaded machine: asked again until answered.
        try:
            answer = self.api.call("POST", "/api/v1/auth/token/", {"username": "faults", "password": self._password},
                                   timeout_s=60)
        except (OSError, ApiError):
            return None
        return str(answer["token"])

    def worker_ready(self) -> bool:
        try:
            hosts = self.api.get("/api/v1/client-hosts/")
        except (OSError, ApiError):
            return False
        rows = hosts.get("results", hosts) if isinstance(hosts, dict) else hosts
        return any(h.get("hostname") == f"faults-{self.marker}" and h.get("online") for h in rows)

    def app_processes(self, *, marker: str | None = None) -> list[psutil.Process]:
        """Every live process carrying this stack's marker (or another): benchapp's processes and what they
        started."""
        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get(MARKER) == (marker or self.marker) and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def roles(self) -> dict[str, psutil.Process | None]:
        """The main process of web (gunicorn's master), worker (Celery's MainProcess) and beat, or None."""
        procs = self.app_processes()
        pids = {p.pid for p in procs}
        found: dict[str, psutil.Process | None] = dict.fromkeys(ROLES)
        for proc in procs:
            try:
                argv = proc.cmdline()
                if not argv or Path(argv[0]).name in SHELLS:  # honcho's `sh -c …` around each command
                    continue
                line = " ".join(argv)
                parent = proc.ppid()
                if parent not in pids:
                    # An orphan (a gunicorn worker or pool child whose master was killed, adopted by init) is
                    # nobody's main process: a launcher's child has the launcher, which carries the marker.
                    continue
                parent_line = " ".join(psutil.Process(parent).cmdline())
            except psutil.Error:
                continue
            if "gunicorn" in line and "gunicorn" not in parent_line:
                found["web"] = proc
            elif "celery" in line and " worker" in line and " worker" not in parent_line:
                found["worker"] = proc
            elif "celery" in line and " beat" in line:
                found["beat"] = proc
        return found

    def sysbench(self, *, measuring: bool = True) -> list[psutil.Process]:
        """The stack's sysbench processes against its target (measuring: only `run` commands, not prepare)."""
        assert self.mariadb is not None
        found = []
        for proc in self.app_processes():
            try:
                argv = proc.cmdline()
            except psutil.Error:
                continue
            if argv and Path(argv[0]).name == "sysbench" and f"--mysql-port={self.mariadb.port}" in argv and (
                    not measuring or argv[-1] == "run"):
                found.append(proc)
        return found

    def app_stop(self) -> None:
        if self.app is not None and self.app.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.app.pid, signal.SIGTERM)
            try:
                self.app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.app.pid, signal.SIGKILL)
                self.app.wait()
        # Whatever outlived its launcher (an orphaned pool child, a sysbench): ended by the marker, not by name.
        deadline = time.monotonic() + 10
        while (left := self.app_processes()) and time.monotonic() < deadline:
            for proc in left:
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(signal.SIGTERM if time.monotonic() < deadline - 5 else signal.SIGKILL)
            time.sleep(0.5)
        for proc in self.app_processes():
            with contextlib.suppress(psutil.Error):
                proc.kill()

    @property
    def logs_dir(self) -> Path:
        """Where the servers' and benchapp's logs are kept once the stack is stopped."""
        return ROOT / "test-output" / f"faults-{self.marker}"

    def stop(self, *, keep_dir: bool = False) -> None:
        self.app_stop()
        for server in (self.mariadb, self.redis, self.pg):
            if server is not None:
                server.stop(timeout_s=30)
        for handle in self.files:
            handle.close()
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        for log in [*self.dir.glob("*.log"), *self.dir.glob("*.err")]:
            shutil.copy(log, self.logs_dir / log.name)
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
