"""web, worker and beat run as the system user `benchapp`, under `make run` too (scripts/supervise.sh):
never root. What that costs and how it is kept: the worker finds a local target server's process, whose threads'
CPU it subtracts from the client host's, from the server itself (StatusReader.server_pid) where psutil, without
the right to read the server's /proc/PID/fd, sees the listening socket but not its owner."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
from django.conf import settings

from campaigns.models import ClientHost
from tests.conftest import MYSQL_DB, ROOT, wait_for
from tests.helpers.faults import host_named
from tests.helpers.pg_targets import pg_target_port
from tests.helpers.servers import free_port
from tests.helpers.supervisor import Supervisor

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="switching to the user benchapp needs root"),
    pytest.mark.skipif(not any(u.pw_name == "benchapp" for u in pwd.getpwall()),
                       reason="no user benchapp: scripts/setup.sh creates it"),
]

SERVER_PID = """
import json, sys
from campaigns.server_status import StatusReader
from campaigns.sysbench.command import Connection
driver, port, database, user = sys.argv[1:]
reader = StatusReader(Connection(driver=driver, host="127.0.0.1", port=int(port), database=database, user=user))
print(reader.server_pid())
"""


def _listening_pid(port: int) -> int:
    (pid,) = {c.pid for c in psutil.net_connections(kind="inet")
              if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
    return pid


@pytest.fixture
def benchapps_secrets() -> Iterator[Path]:
    """A secrets file of benchapp's own, in a directory it may write (the test's tmp_path is root's, 0700)."""
    home = Path(tempfile.mkdtemp(prefix="benchapp-unprivileged-"))
    os.chown(home, pwd.getpwnam("benchapp").pw_uid, -1)
    try:
        yield home / "secrets.env"
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.django_db
@pytest.mark.parametrize(("driver", "port", "user"), [("mysql", 3306, "root"), ("pgsql", None, "postgres")])
def test_as_benchapp_the_worker_still_finds_a_local_target_servers_process(driver, port, user, benchapps_secrets):
    port = port or pg_target_port()
    database = MYSQL_DB if driver == "mysql" else "postgres"
    if driver == "mysql":
        subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", f"CREATE DATABASE IF NOT EXISTS {database}"],
                       check=True, capture_output=True)
    as_benchapp = subprocess.run(
        ["runuser", "-u", "benchapp", "--", str(ROOT / ".venv" / "bin" / "python"), "-c", SERVER_PID,
         driver, str(port), database, user],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/nonexistent", "BENCHAPP_SECRETS_FILE": str(benchapps_secrets)})
    assert as_benchapp.returncode == 0, as_benchapp.stderr
    assert int(as_benchapp.stdout.strip()) == _listening_pid(port)
    # What it replaces: psutil, as benchapp, sees the socket but not its owner.
    sees = subprocess.run(
        ["runuser", "-u", "benchapp", "--", sys.executable, "-c",
         f"import psutil; print([c.pid for c in psutil.net_connections('inet') if c.laddr and c.laddr.port == {port}"
         " and c.status == psutil.CONN_LISTEN])"], capture_output=True, text=True, timeout=60)
    assert sees.stdout.strip().startswith("[None"), sees.stdout + sees.stderr



@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_make_runs_supervisor_runs_web_worker_and_beat_as_benchapp(tmp_path: Path, own_redis, test_db_name):
    env = {**os.environ, "BENCHAPP_RUN_DIR": str(tmp_path), "BENCHAPP_LOG_DIR": str(tmp_path),
           "BENCHAPP_PORT": str(free_port()),
           "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}", **own_redis.env,
           "BENCHAPP_HOSTNAME": host_named("unprivileged"), "BENCHAPP_HEARTBEAT_S": "1", "DB_CONN_MAX_AGE": "0",
           "WEB_WORKERS": "1", "WORKER_CONCURRENCY": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("BENCHAPP_RUN_AS", None)
    env.pop("BENCHAPP_WORKLOAD_DIR", None)  # make run's own, var/workloads, as benchapp's (the tests' is root's)
    tmp_path.chmod(0o755)  # supervisord (root) writes here; the programs only pass through
    sup = Supervisor.__new__(Supervisor)
    sup.env, sup.run_dir, sup.port = {**env, "BENCHAPP_ROOT": str(ROOT), "BENCHAPP_RUN_AS": "benchapp",
                                      "BENCHAPP_WORKER_STOP_S": "60"}, tmp_path, int(env["BENCHAPP_PORT"])
    sup.log = open(tmp_path / "supervisord.out", "wb")  # noqa: SIM115 (closed in sup.stop())
    sup.proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "supervise.sh")], cwd=ROOT, env=env, stdout=sup.log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: sup.web_answers() or sup.proc.poll() is not None, timeout_s=180, what="web to answer")
        assert sup.proc.poll() is None, sup.output()[-3000:]
        wait_for(lambda: ClientHost.objects.filter(hostname=env["BENCHAPP_HOSTNAME"]).exists(), timeout_s=90,
                 what="the worker, as benchapp, to register its host")
        users, boxed = {}, []
        for program in ("web", "worker", "beat"):
            pid = sup.pid(program)
            processes = [_process(p) for p in [pid, *_children(pid)]]
            # A sysbench the worker starts (its start-up sandbox check, a host's facts) runs as the sandbox's user,
            # in its box: those are the only processes of another user, and only under the worker.
            # sudo, which switches to that user, is root's while it waits.
            boxed += [(program, user, name) for user, name in processes
                      if (user, name) == ("root", "sudo") or user == "benchapp-sandbox"]
            users[program] = {user for user, name in processes if (program, user, name) not in boxed}
        assert users == {"web": {"benchapp"}, "worker": {"benchapp"}, "beat": {"benchapp"}}, users
        assert all(program == "worker" and name in ("sudo", "setpriv", "bwrap", "sysbench")
                   for program, _, name in boxed), boxed
        gunicorn = subprocess.run(["ps", "-o", "user=", "-p", str(sup.pid("web"))], capture_output=True, text=True)
        assert gunicorn.stdout.split() == ["benchapp"]
        assert (ROOT / "var" / "secrets.env").stat().st_uid == pwd.getpwnam("benchapp").pw_uid
    finally:
        if sup.proc.poll() is None:
            sup.proc.send_signal(signal.SIGINT)
        sup.stop()
        # supervise.sh gave var/ to benchapp: back to whoever runs the tests, as a developer's checkout had it.
        subprocess.run(["chown", "-R", f"{os.getuid()}:{os.getgid()}", str(ROOT / "var")], check=True)


def _process(pid: int) -> tuple[str, str]:
    try:
        process = psutil.Process(pid)
        return process.username(), process.name()
    except psutil.NoSuchProcess:
        return "benchapp", "(gone)"


def _children(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


BOXED_AS_BENCHAPP = """
import json, subprocess, sys, threading, time
from campaigns.sysbench.runner import Box, run_process
from campaigns.sysbench.sandbox import sandbox_status
redis_port, = sys.argv[1:]
seen = {}
pids = []
def look():
    while not pids:
        time.sleep(0.05)
    time.sleep(0.5)
    seen["user"] = subprocess.run(["ps", "-o", "user:32=", "-p", str(pids[0])], capture_output=True,
                                  text=True).stdout.strip()
watcher = threading.Thread(target=look)
watcher.start()
slow = run_process(["sysbench", "cpu", "--time=30", "run"], on_start=pids.append, timeout_s=2)
watcher.join()
probe = run_process(["/bin/bash", "-c", 'id -un; exec 3<>"/dev/tcp/127.0.0.1/$0" && echo REACHED', redis_port],
                    box=Box(), timeout_s=10)
print(json.dumps({"status": sandbox_status(), "during": seen.get("user"), "timed_out": slow.timed_out,
                  "probe": probe.output, "pid": pids[0]}))
"""


def test_a_worker_running_as_benchapp_starts_sysbench_as_the_sandbox_user_through_sudo(benchapps_secrets):
    """Every install runs the worker as benchapp (supervisord, systemd, join-client.sh): sudo's one rule
    (scripts/sandbox-user.sh) switches its sysbench to benchapp-sandbox, so the firewall rules on that user apply,
    and a job's time-out still ends the box (the worker may not signal the sandbox user's processes)."""
    if not os.path.exists("/etc/sudoers.d/benchapp-sandbox"):
        pytest.fail("no sudo rule for benchapp: run scripts/setup.sh as root")
    redis_port = urlsplit(settings.REDIS_URL).port or 6379
    done = subprocess.run(
        ["runuser", "-u", "benchapp", "--", str(ROOT / ".venv" / "bin" / "python"), "-c", BOXED_AS_BENCHAPP,
         str(redis_port)],
        cwd=ROOT, capture_output=True, text=True, timeout=90,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/nonexistent",
             "BENCHAPP_SECRETS_FILE": str(benchapps_secrets)})
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["status"] == "", said
    assert said["during"] == "benchapp-sandbox", said
    assert said["timed_out"], said
    assert said["probe"].splitlines()[0] == "benchapp-sandbox", said
    assert "REACHED" not in said["probe"] and "Connection refused" in said["probe"], said
    wait_for(lambda: not psutil.pid_exists(said["pid"]) or psutil.Process(said["pid"]).status() == "zombie",
             timeout_s=10, what="the timed-out sysbench of benchapp-sandbox to end")
