"""The box every sysbench process runs in: a workload is a stranger's code (docs/security.md#the-sandbox).

sysbench runs Lua, and its LuaJIT has `io`, `os` and the FFI: a script can open any file, socket or program its
user can. So each sysbench process (a workload's save-time probe, prepare, run, cleanup, a host test, a version
check) starts through `sandbox_command`, the one place that builds the box:

- as the user `benchapp-sandbox` (BENCHAPP_SANDBOX_USER), who owns nothing of benchapp's and whose connections to
  benchapp's own services nftables rejects (scripts/setup.sh, scripts/join-client.sh); a worker that runs as root
  switches to it with setpriv; one that runs as `benchapp` (every install: supervisord, systemd, a client host)
  through sudo, whose one rule (/etc/sudoers.d/benchapp-sandbox, written by those scripts) lets it start setpriv
  as that user and nothing else; where neither works the box runs as the worker's own user and sandbox_status
  says so;
- in bubblewrap: a root of its own (read-only) holding /usr read-only and a few files of /etc, the directories the
  command needs read-only (a workload's files), one writable directory (fileio's files, or a private /tmp of
  SANDBOX_TMP_BYTES), its own PID, IPC and UTS namespaces (no other process's /proc), no further user namespaces;
  no var/, no checkout, no secrets file;
- with an environment built for it (--clearenv, then only the variables given: its target's password, LUA_PATH),
  handed to bwrap through a pipe (--args), so that no password is in any argv;
- with limits (prlimit): address space, processes of the sandbox user, file size, and CPU time when asked;
- killed with its job: setpriv's parent-death signal and bwrap's --die-with-parent, and the PID namespace ends
  every process the script started (a setsid child included) when sysbench exits.

libmariadb's plugin directory inside holds only client_ed25519.so: mysql_clear_password, dialog (PAM),
sha256_password and caching_sha2_password cannot be loaded, so a server that asks any connection of sysbench for
one of them is refused by the library itself (mysql_native_password is built in). Pure: no Django.
"""
from __future__ import annotations

import functools
import glob
import os
import pwd
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

SANDBOX_USER = "benchapp-sandbox"
SANDBOX_TMP_BYTES = 64 * 2**20
BWRAP = "/usr/bin/bwrap"
SUDO = "/usr/bin/sudo"
SETPRIV = "/usr/bin/setpriv"
# A workload has at most 32 files (campaigns.sysbench.workloads); the legacy Lua tests a few more.
MAX_COPIED_FILES = 128
# Files of /etc a client library may read: names and addresses, the user database, time zone, TLS roots.
_ETC = ("hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "passwd", "group", "localtime",
        "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "ca-certificates", "ca-certificates.conf")
# libmariadb loads authentication plugins from here; only the one that never sends the password stays.
_MARIADB_PLUGIN_GLOB = "/usr/lib/*/libmariadb3/plugin"
MARIADB_ALLOWED_PLUGINS = ("client_ed25519.so",)
# libpq >= 16 refuses the clear-text `password` method with this; Debian 12's libpq 15 ignores it (docs/security.md).
PG_REQUIRE_AUTH = "!password"


class SandboxUnavailable(RuntimeError):
    """The box cannot be built here (bubblewrap missing, the sandbox user missing): nothing runs unboxed."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits of one boxed process (setrlimit through prlimit): bytes of address space, tasks (threads
    count) of the sandbox user, bytes of any one file it writes, seconds of CPU (None: unbounded)."""

    address_space_bytes: int
    processes: int
    file_size_bytes: int
    cpu_s: int | None = None


def default_limits() -> SandboxLimits:
    """A job's limits: address space up to three quarters of the host's RAM (at least 4 GiB: LuaJIT and glibc's
    per-thread arenas reserve far more than they use), 16,384 tasks (RLIMIT_NPROC counts every task of the
    sandbox's user, all boxes and their threads together), files up to 64 GiB (fileio's, bounded earlier by the
    host's free space)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        ram = 8 * 2**30
    return SandboxLimits(address_space_bytes=max(4 * 2**30, ram * 3 // 4), processes=16384,
                         file_size_bytes=64 * 2**30)


@dataclass(slots=True)
class SandboxedCommand:
    """What to start: argv (the launcher chain ending in bwrap and the command), the file descriptors the child
    must inherit (the --args pipe, the bound directories); close() once the child started."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    user: str
    _fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()


def _user_ids(user: str) -> tuple[int, int] | None:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def sandbox_user() -> str:
    return os.environ.get("BENCHAPP_SANDBOX_USER", "") or SANDBOX_USER


def sandbox_status() -> str:
    """"" when sysbench runs boxed as the sandbox user here; else what is missing or weaker, in a sentence (logged at
    start-up and shown as a host fact)."""
    if shutil.which(BWRAP) is None:
        return "bubblewrap is not installed: sysbench cannot run here (scripts/setup.sh installs it)"
    user = sandbox_user()
    ids = _user_ids(user)
    if ids is None:
        return f"the sandbox user {user} does not exist: sysbench cannot run here (scripts/setup.sh creates it)"
    if os.geteuid() not in (0, ids[0]) and not sudo_switches_to(user):
        return (f"the worker is neither root nor allowed by sudo to start setpriv as {user} "
                f"(/etc/sudoers.d/benchapp-sandbox, written by scripts/setup.sh and scripts/join-client.sh), so "
                "sysbench runs in its box as the worker's own user: the firewall rules on the sandbox user do not "
                "apply to it")
    return ""


@functools.cache
def sudo_switches_to(user: str) -> bool:
    """Whether this (unprivileged) process may start setpriv as `user` through sudo without a password, keeping
    the descriptors it hands on (closefrom_override): asked once per process, by trying it."""
    if not os.path.exists(SUDO):
        return False
    import subprocess  # noqa: PLC0415 (only a worker that is not root asks)

    try:
        done = subprocess.run([SUDO, "-n", "-u", user, "-C", "3", "--", SETPRIV, "--pdeathsig", "KILL", "--",
                               "/bin/true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _mariadb_plugin_dirs() -> list[str]:
    return sorted(glob.glob(_MARIADB_PLUGIN_GLOB))


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for plugin_dir in _mariadb_plugin_dirs():
        args += ["--tmpfs", plugin_dir]
        for plugin in MARIADB_ALLOWED_PLUGINS:
            args += ["--ro-bind-try", f"{plugin_dir}/{plugin}", f"{plugin_dir}/{plugin}"]
    return args


def _launcher(user: str, ids: tuple[int, int], highest_fd: int) -> tuple[list[str], str]:
    """What switches to the sandbox's user before the limits and bwrap, and who the box then runs as: setpriv
    for a root worker, sudo then setpriv for one sudo lets (its -C keeps the descriptors bwrap reads), setpriv
    alone (the parent-death signal) otherwise. Set again after sudo: a change of user clears it."""
    pdeath = [SETPRIV, "--pdeathsig", "KILL", "--"]
    if os.geteuid() == 0 and ids[0] != 0:
        return [SETPRIV, f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups", "--pdeathsig", "KILL",
                "--"], user
    if os.geteuid() == ids[0]:
        return pdeath, user
    if sudo_switches_to(user):
        return [SUDO, "-n", "-u", user, "-C", str(max(3, highest_fd + 1)), "--", *pdeath], user
    return pdeath, pwd.getpwuid(os.geteuid()).pw_name


def sandbox_unreachable(path: str) -> str | None:
    """The first folder above `path` the sandbox's user cannot pass through (bwrap binds a writable directory by
    its path, as that user), or None."""
    ids = _user_ids(sandbox_user())
    if ids is None or not _runs_as_sandbox_user(ids):
        return None
    current = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            info = os.stat(current)
        except OSError:
            return current
        if info.st_uid == ids[0]:
            passable = bool(info.st_mode & 0o100)
        elif info.st_gid == ids[1]:
            passable = bool(info.st_mode & 0o010)
        else:
            passable = bool(info.st_mode & 0o001)
        if not passable:
            return current
        if current == "/":
            return None
        current = os.path.dirname(current)


def _runs_as_sandbox_user(ids: tuple[int, int]) -> bool:
    return os.geteuid() in (0, ids[0]) or sudo_switches_to(sandbox_user())


def sandbox_workdir(path: str) -> None:
    """Makes `path` (made already, this user's) the sandbox user's to write: its owner when this process is root
    (mode 0700); open to it (mode 0777: this user cannot give a file away) when sudo switches to it, so keep its
    parent private but passable; else only this user's (the box then runs as this user). Its parents must be
    passable (o+x)."""
    ids = _user_ids(sandbox_user())
    if os.geteuid() == 0 and ids is not None:
        os.chown(path, ids[0], ids[1])
        os.chmod(path, 0o700)
    elif ids is not None and os.geteuid() != ids[0] and sudo_switches_to(sandbox_user()):
        os.chmod(path, 0o777)  # noqa: S103 (the sandbox's user writes fileio's files here)
    else:
        os.chmod(path, 0o700)


def _bind_parents(path: str, seen: set[str]) -> list[str]:
    """--dir for each folder above `path` not made yet (bwrap makes a mount point's parents itself, but a
    read-only root needs them before it is remounted)."""
    args: list[str] = []
    parts = path.strip("/").split("/")[:-1]
    current = ""
    for part in parts:
        current += "/" + part
        if current not in seen:
            seen.add(current)
            args += ["--dir", current]
    return args


def sandbox_command(argv: Sequence[str], *, env: Mapping[str, str], read_only: Iterable[str] = (),
                    work_dir: str | None = None, limits: SandboxLimits | None = None,
                    user: str | None = None) -> SandboxedCommand:
    """The boxed form of argv: the one function every sysbench process's command goes through.

    `env` is the whole environment the command gets (nothing is inherited); `read_only` directories appear at
    their own paths, read-only; `work_dir` appears at its own path, writable, and is the working directory (else
    a private /tmp is). Absolute paths in argv (a script's, a binary's outside /usr) are bound read-only too.
    Raises SandboxUnavailable when bwrap or the sandbox user is missing."""
    if shutil.which(BWRAP) is None:
        raise SandboxUnavailable("bubblewrap (/usr/bin/bwrap) is not installed: sysbench runs only in its sandbox "
                                 "(scripts/setup.sh and scripts/join-client.sh install it)")
    user = user or sandbox_user()
    ids = _user_ids(user)
    if ids is None:
        raise SandboxUnavailable(f"the sandbox user {user} does not exist: sysbench runs only as that user "
                                 "(scripts/setup.sh and scripts/join-client.sh create it)")
    limits = limits or default_limits()
    command = list(argv)
    binary = shutil.which(command[0]) if command else None
    if binary is None:
        raise SandboxUnavailable(f"cannot start {command[0] if command else '(nothing)'}: no such program")
    command[0] = os.path.realpath(binary)

    fds: list[int] = []
    pass_fds: list[int] = []
    options = ["--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent", "--clearenv"]
    for name, value in env.items():
        options += ["--setenv", name, value]
    options += _system_binds()
    options += ["--proc", "/proc", "--dev", "/dev", "--size", str(SANDBOX_TMP_BYTES), "--tmpfs", "/tmp"]
    made: set[str] = {"/tmp"}
    wanted = list(read_only)
    # The binary itself when it is not a system one (a test's stand-in), and a script given by its path (its
    # whole folder: `require` finds the files beside it).
    single = [command[0]] if not command[0].startswith("/usr/") else []
    if len(command) > 1 and command[1].startswith("/") and not command[1].startswith("/usr/"):
        wanted.append(os.path.dirname(command[1]) if os.path.isfile(command[1]) else command[1])
    try:
        # Read-only directories are copied in, file by file, from descriptors this process opened: bwrap resolves
        # a bound path as the sandbox's user, who may not pass through this user's private directories.
        copied = 0
        for path in dict.fromkeys(os.path.realpath(p) for p in wanted):
            if not os.path.isdir(path) or path == "/" or (work_dir and path == os.path.realpath(work_dir)):
                continue
            for folder, subdirs, names in os.walk(path):
                subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
                options += [*_bind_parents(folder + "/x", made)]
                made.add(folder)
                for name in sorted(names):
                    source = os.path.join(folder, name)
                    if name.startswith(".") or not os.path.isfile(source) or os.path.islink(source):
                        continue
                    copied += 1
                    if copied > MAX_COPIED_FILES:
                        raise SandboxUnavailable(f"{path} holds more than {MAX_COPIED_FILES} files")
                    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
                    fds.append(fd)
                    pass_fds.append(fd)
                    options += ["--perms", "0444", "--file", str(fd), source]
        for source in single:
            fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
            fds.append(fd)
            pass_fds.append(fd)
            options += [*_bind_parents(source, made), "--perms", "0555", "--file", str(fd), source]
        if work_dir is not None:
            real = os.path.realpath(work_dir)
            options += [*_bind_parents(real, made), "--bind", real, real, "--chdir", real]
        else:
            options += ["--chdir", "/tmp"]
        options += ["--remount-ro", "/"]
        data = b"".join(o.encode() + b"\0" for o in options)
        if any("\0" in o for o in options):
            raise SandboxUnavailable("a sandbox option holds a NUL byte")
        read_end, write_end = os.pipe()
        fds.append(read_end)
        pass_fds.append(read_end)
        try:
            if len(data) > 60 * 1024:
                raise SandboxUnavailable("the sandbox's options do not fit in a pipe")
            os.write(write_end, data)
        finally:
            os.close(write_end)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise

    launcher, run_as = _launcher(user, ids, max(pass_fds))
    prlimit = [shutil.which("prlimit") or "/usr/bin/prlimit", f"--as={limits.address_space_bytes}",
               f"--nproc={limits.processes}", f"--fsize={limits.file_size_bytes}", "--core=0"]
    if limits.cpu_s is not None:
        prlimit.append(f"--cpu={limits.cpu_s}")
    spawn = [*launcher, *prlimit, "--", BWRAP, "--args", str(read_end), "--", *command]
    return SandboxedCommand(argv=spawn, pass_fds=tuple(pass_fds), user=run_as, _fds=fds)
