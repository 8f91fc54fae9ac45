"""The one place that starts a sysbench process.

The process gets its own process group (so cancelling kills everything it started) and a
parent-death signal (so a worker killed with SIGKILL takes its sysbench with it). Output is read
line by line as it is printed and handed to a callback, which is how per-second samples reach
the database while the run is still going. Cancellation and time-outs are checked even when
sysbench prints nothing.
"""
from __future__ import annotations

import ctypes
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from campaigns.sysbench.command import secrets_to_env
from campaigns.sysbench.sandbox import (
    PG_REQUIRE_AUTH,
    SandboxedCommand,
    SandboxLimits,
    SandboxUnavailable,
    sandbox_command,
)

_PR_SET_PDEATHSIG = 1
# Loaded once here: loading a library in the forked child of a multi-threaded worker could block
# on a lock another thread held at fork time.
_LIBC = ctypes.CDLL(None, use_errno=True)
# The whole output is kept (a 1-hour run with 1 s reports is under 1 MB); past this bound only
# the last part is kept, so a runaway process cannot exhaust the worker's memory.
MAX_OUTPUT_CHARS = 32 * 1024 * 1024
KILL_GRACE_S = 1.0
VERSION_TIMEOUT_S = 5.0


@dataclass(slots=True)
class ProcessOutcome:
    exit_code: int | None
    output: str
    wall_time_s: float
    pid: int
    cancelled: bool = False
    timed_out: bool = False
    start_error: str = ""

    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.cancelled and not self.timed_out and not self.start_error


def _die_with(parent_pid: int) -> Callable[[], None]:
    def preexec() -> None:
        # Runs in the child between fork and exec: ask the kernel to SIGKILL us when the parent
        # dies. If the parent died before that request, nobody would ever send the signal.
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


# setpriv (util-linux, essential in Debian) asks for the parent-death signal and then execs the command: the
# worker's Popen can then vfork, where a preexec_fn forces a full fork() of the worker's memory (about 50 ms
# with a worker-sized heap on a busy 2-core machine, against under 1 ms), and that fork is between one job's
# end and the next one's start. Without setpriv, the preexec_fn does the same.
_SETPRIV = shutil.which("setpriv")


def _spawn_argv(argv: Sequence[str]) -> tuple[list[str], Callable[[], None] | None]:
    """The argv to start and the preexec_fn, if one is needed, so that the process dies with this one."""
    if _SETPRIV is None or shutil.which(argv[0]) is None:  # a missing binary fails as before, with its own name
        return list(argv), _die_with(os.getpid())
    return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv], None


def script_lua_path(argv: Sequence[str]) -> dict[str, str]:
    """LUA_PATH for a script given by its absolute path (a workload's entry script, our legacy Lua): its own
    directory first, so that `require("x")` finds x.lua beside it, then LuaJIT's defaults (the trailing ";;").
    sysbench 1.0.20 itself looks only in the working directory and its own folders. Empty for a bundled test."""
    script = argv[1] if len(argv) > 1 else ""
    if not (script.startswith("/") and script.endswith(".lua")):
        return {}
    folder = os.path.dirname(script)
    return {"LUA_PATH": f"{folder}/?.lua;{folder}/?/init.lua;;"}


@dataclass(frozen=True, slots=True)
class Box:
    """How one process is boxed (campaigns.sysbench.sandbox): directories it reads, the one it writes (its
    working directory), its limits (None: the defaults)."""

    read_only: tuple[str, ...] = ()
    limits: SandboxLimits | None = None


def is_sysbench(argv: Sequence[str]) -> bool:
    """Whether argv starts sysbench (or the stand-in BENCHAPP_SYSBENCH names): such a process always runs boxed."""
    if not argv:
        return False
    configured = os.environ.get("BENCHAPP_SYSBENCH", "sysbench")
    return os.path.basename(argv[0]).startswith("sysbench") or argv[0] == configured


def _box_env(env: Mapping[str, str] | None, secret_env: Mapping[str, str], argv: Sequence[str],
             work_dir: str | None) -> dict[str, str]:
    """The whole environment of a boxed process: nothing inherited but the variables a test names in
    BENCHAPP_SANDBOX_PASS_ENV (never a secret of benchapp's: those are refused by name)."""
    box_env = {"PATH": "/usr/bin:/bin", "HOME": work_dir or "/tmp", "LANG": "C.UTF-8"}
    for name in filter(None, os.environ.get("BENCHAPP_SANDBOX_PASS_ENV", "").split(",")):
        if name in os.environ and not _benchapp_secret_name(name):
            box_env[name] = os.environ[name]
    box_env.update(env or {})
    box_env.update(secret_env)
    box_env.update(script_lua_path(argv))
    if "PGPASSWORD" in box_env:
        # libpq >= 16: never answer a server's request for the password in clear (Debian 12's libpq 15 ignores it).
        box_env["PGREQUIREAUTH"] = PG_REQUIRE_AUTH
    return box_env


def _benchapp_secret_name(name: str) -> bool:
    upper = name.upper()
    return (upper.startswith("BENCHAPP_") or upper in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "SENTRY_DSN")
            or any(word in upper for word in ("PASSWORD", "SECRET", "TOKEN", "KEY", "PWD")))


def _runs(pid: int, binary: str) -> bool:
    """Whether process `pid` runs `binary`: by its executable where this user may read it, else by its command line,
    which anyone may read (a process of the sandbox's user, started through sudo, hides its executable)."""
    try:
        if os.readlink(f"/proc/{pid}/exe") == binary:
            return True
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().split(b"\0")[0].decode(errors="replace") == binary
    except OSError:
        return False


def _boxed_pid(outer_pid: int, binary: str, alive: Callable[[], bool], wait_s: float = 2.0) -> int:
    """The host pid of the boxed command (bwrap's grandchild), once bwrap has set the box up; the outer pid if
    it does not appear within wait_s (the command failed early, or exited already)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        frontier, seen = [outer_pid], set()
        while frontier:
            pid = frontier.pop()
            if pid in seen:
                continue
            seen.add(pid)
            if pid != outer_pid and _runs(pid, binary):
                return pid
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as children:
                    frontier.extend(int(c) for c in children.read().split())
            except OSError:
                continue
        if not alive():
            return outer_pid
        time.sleep(0.002)
    return outer_pid


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, then SIGKILL to whatever is left of it.

    The SIGKILL goes to the group even when the leader obeyed SIGTERM: a wrapper script or a
    child that ignores SIGTERM must not outlive the phase it belonged to.
    """
    # PermissionError: what is left of the group is the sandbox user's (started through sudo, now gone); the
    # parent-death signal of its setpriv ends it.
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_process(
    argv: Sequence[str],
    *,
    on_line: Callable[[str], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    on_start: Callable[[int], None] | None = None,
    timeout_s: float | None = None,
    poll_s: float = 1.0,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    box: Box | None = None,
) -> ProcessOutcome:
    """Runs argv to completion, streaming lines; never raises for a failing process.

    A password option in argv (--mysql-password=…) travels in the process's environment instead: every
    local user can read a process's argv.

    sysbench (is_sysbench) always runs in its sandbox (campaigns.sysbench.sandbox), `box` saying what it reads
    and `cwd` being the one directory it may write; its environment is `env` and what it needs, nothing inherited.
    Any other program (a test's) runs as before, with `env` or this process's environment.
    """
    started = time.monotonic()
    argv, secret_env = secrets_to_env(argv)
    # An empty variable is still read by libpq as a password; absent is what "no password" means.
    boxed: SandboxedCommand | None = None
    if box is not None or is_sysbench(argv):
        box = box or Box()
        try:
            given = {k: v for k, v in secret_env.items() if v}
            boxed = sandbox_command(argv, env=_box_env(env, given, argv, cwd), read_only=box.read_only,
                                    work_dir=cwd, limits=box.limits)
        except (SandboxUnavailable, OSError) as exc:
            return ProcessOutcome(exit_code=None, output="", wall_time_s=0.0, pid=0,
                                  start_error=f"cannot start {argv[0]} in its sandbox: {exc}")
        spawn_argv, preexec = boxed.argv, None
        process_env: dict[str, str] = {"PATH": "/usr/bin:/bin"}
        cwd = "/"
    else:
        process_env = {**(dict(env) if env is not None else os.environ), **secret_env, **script_lua_path(argv)}
        process_env = {k: v for k, v in process_env.items() if v or k not in secret_env}
        spawn_argv, preexec = _spawn_argv(argv)
    try:
        proc = subprocess.Popen(
            spawn_argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
            env=process_env,
            cwd=cwd,
            pass_fds=boxed.pass_fds if boxed is not None else (),
        )
    except OSError as exc:
        return ProcessOutcome(
            exit_code=None, output="", wall_time_s=0.0, pid=0,
            start_error=f"cannot start {argv[0]}: {exc.strerror or exc}",
        )
    finally:
        if boxed is not None:
            boxed.close()
    pid = proc.pid
    if boxed is not None:
        pid = _boxed_pid(proc.pid, boxed.argv[-len(argv)], lambda: proc.poll() is None)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    chunks: list[str] = []
    size = 0
    pending = b""
    cancelled = timed_out = finished = False
    next_cancel_check = started + poll_s

    def emit(raw: bytes) -> None:
        nonlocal size
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        chunks.append(line + "\n")
        size += len(line) + 1
        if size > MAX_OUTPUT_CHARS:
            chunks[:] = ["[... earlier output dropped ...]\n", *chunks[len(chunks) // 2:]]
            size = sum(len(c) for c in chunks)
        if on_line is not None:
            on_line(line)

    def read_ready(wait_s: float) -> bool:
        """Reads what is available within wait_s; True at end of output."""
        nonlocal pending
        for _key, _mask in selector.select(timeout=wait_s):
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                return True
            pending += data
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                emit(raw)
        return False

    try:
        if on_start is not None:
            on_start(pid)
        eof = False
        # The phase ends when the process has exited, not merely closed its output: the time-out
        # and cancellation keep applying to a process that hangs after its last line.
        while True:
            now = time.monotonic()
            wait = max(0.0, min(poll_s, next_cancel_check - now))
            if timeout_s is not None:
                wait = min(wait, max(0.0, started + timeout_s - now))
            if not eof:
                eof = read_ready(wait)
            else:
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    pass
            now = time.monotonic()
            if timeout_s is not None and now - started >= timeout_s and proc.poll() is None:
                timed_out = True
                break
            if now >= next_cancel_check:
                next_cancel_check = now + poll_s
                if should_cancel is not None and should_cancel():
                    cancelled = True
                    break
        finished = True
    finally:
        # Cancelled, timed out, or a callback raised: nothing of the process group may survive.
        if not finished or cancelled or timed_out:
            _kill_group(proc)
            _drain(read_ready)
        selector.close()
        if pending:
            emit(pending)
        proc.stdout.close()
    exit_code = proc.wait()
    if boxed is not None and exit_code > 128 and exit_code - 128 in signal.Signals._value2member_map_:
        # bwrap exits with 128 + N when the boxed process died of signal N: said as a direct child would say it
        # (-N), so that a sysbench killed by someone else is told from one that failed (errors.killed_by_signal).
        exit_code = -(exit_code - 128)
    return ProcessOutcome(
        exit_code=exit_code,
        output="".join(chunks),
        wall_time_s=time.monotonic() - started,
        pid=pid,
        cancelled=cancelled,
        timed_out=timed_out,
    )


def _drain(read_ready: Callable[[float], bool]) -> None:
    """Keeps the last lines a killed process printed (its writers are dead, so EOF comes soon)."""
    deadline = time.monotonic() + KILL_GRACE_S
    try:
        while time.monotonic() < deadline and not read_ready(max(0.0, deadline - time.monotonic())):
            pass
    except Exception:  # the output so far matters more than its last lines
        pass


_VERSIONS: dict[str, str] = {}


def sysbench_version(sysbench: str = "sysbench") -> str:
    """'1.0.20' for Debian's package; empty when sysbench is missing or does not answer.

    Asked once per binary and process: every job records it, and a stuck binary would otherwise
    cost each job the whole time-out before its real work even starts.
    """
    if sysbench in _VERSIONS:
        return _VERSIONS[sysbench]
    outcome = run_process([sysbench, "--version"], timeout_s=VERSION_TIMEOUT_S)
    text = outcome.output.strip()
    version = text.split()[-1] if text.startswith("sysbench") and outcome.succeeded() else ""
    if version:
        _VERSIONS[sysbench] = version
    return version
