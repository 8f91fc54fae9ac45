"""A workload of one's own: a set of Lua files with one entry script, checked and asked for its options.

Pure: file names and texts in, a WorkloadCheck (or WorkloadError naming the file or the cause) out. What sysbench
1.0.20 itself says is the authority: `sysbench <entry> help` lists the script's options with their defaults (run in
a temporary directory holding every file, with LUA_PATH pointing there, so that `require` finds the others;
bounded in time; no target is needed, help never connects), and a probe script of ours compiles every file
(`loadfile`, which runs nothing) and lists the commands and functions the entry script defines.

The same files are written on a client host into a cache directory named by their content hash
(workload_materialize), where sysbench runs them; campaigns.sysbench.runner sets LUA_PATH to a script's own
directory whenever sysbench is given a script's absolute path.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from campaigns.sysbench.catalogue import OptionSpec, TestSpec
from campaigns.sysbench.runner import Box, run_process
from campaigns.sysbench.sandbox import SandboxLimits

# Limits of what is accepted (a real suite such as Percona's sysbench-tpcc is four files under 60 KiB in all).
MAX_FILES = 32
MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 1024 * 1024
HELP_TIMEOUT_S = 10.0
PROBE_PROCESSES = 512
# A file name: a relative path of plain segments (letters, digits, '_', '-', '.'), ending in .lua; `require("a.b")`
# finds a/b.lua, so sub-directories are allowed. Nothing absolute, no '..', no hidden files.
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
PROBE_NAME = "benchapp_probe__.lua"
# Files benchapp writes beside a workload's own on the host that runs it (counting_wrapper); no upload may use it.
GENERATED_PREFIX = "__benchapp"
_PROBE = r"""
-- benchapp's probe: compiles every file (loadfile runs nothing), then loads the entry script as sysbench would.
for path in string.gmatch(os.getenv("BENCHAPP_LUA_FILES") or "", "[^\n]+") do
  local chunk, err = loadfile(path)
  if not chunk then print("BENCHAPP-SYNTAX\t" .. path .. "\t" .. (tostring(err):gsub("%s+", " "))) end
end
local ok, err = pcall(dofile, os.getenv("BENCHAPP_LUA_ENTRY"))
if not ok then print("BENCHAPP-LOAD\t" .. (tostring(err):gsub("%s+", " "))) return end
local commands = {}
if type(sysbench.cmdline.commands) == "table" then
  for name, _ in pairs(sysbench.cmdline.commands) do commands[#commands + 1] = tostring(name) end
end
for _, name in ipairs({"prepare", "cleanup", "help"}) do
  if type(_G[name]) == "function" then commands[#commands + 1] = name end
end
print("BENCHAPP-COMMANDS\t" .. table.concat(commands, " "))
print("BENCHAPP-EVENT\t" .. type(event))
"""
# `  --rows=N        Number of rows [10]`, `  --fast[=on|off] Be fast [on]`, `  --nodef=STRING   No default`
_HELP_LINE = re.compile(r"^  --(?P<name>[A-Za-z0-9_][A-Za-z0-9_-]*)(?P<kind>\[=on\|off\]|=N|=STRING|=\[LIST,\.\.\.\])"
                        r"\s+(?P<rest>.*)$")
_DEFAULT = re.compile(r"^(?P<help>.*?)\s*\[(?P<default>[^\[\]]*)\]$")


def probe_limits() -> SandboxLimits:
    """The save-time probe's box: 1 GiB of address space, 512 tasks, no file written over 1 MiB, CPU time as
    long as its wall-clock bound. (RLIMIT_NPROC counts every task of the sandbox's user, all boxes together: a
    lower bound would fail a probe while a job runs many threads.)"""
    return SandboxLimits(address_space_bytes=2**30, processes=PROBE_PROCESSES, file_size_bytes=2**20,
                         cpu_s=int(HELP_TIMEOUT_S) + 1)


class WorkloadError(ValueError):
    """A workload benchapp will not store; `field` is "files" or "entry", the message names the file or cause."""

    def __init__(self, message: str, field: str = "files") -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class WorkloadCheck:
    """What sysbench said about a workload: its options (canonical name → spec), the commands the entry script
    defines (prepare, cleanup, …) and the help text as printed."""

    options: dict[str, OptionSpec]
    commands: tuple[str, ...]
    help_text: str = ""
    notes: list[str] = field(default_factory=list)


def path_problem(path: object) -> str | None:
    """Why `path` cannot be a workload's file name, or None."""
    if not isinstance(path, str) or not path:
        return "a file needs a name"
    if len(path) > 200:
        return f"file name {path[:40]!r}… is longer than 200 characters"
    if path.startswith("/") or "\\" in path:
        return f"file name {path[:60]!r} must be a relative path with '/' between folders"
    segments = path.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return f"file name {path[:60]!r} may not contain '..', '.' or empty folder names (path traversal)"
    if not all(_SEGMENT.fullmatch(segment) for segment in segments):
        return (f"file name {path[:60]!r}: letters, digits, '_', '-' and '.' only, not starting with '.' or '-'")
    if not path.endswith(".lua"):
        return f"file {path[:60]!r} is not a .lua file"
    if path == PROBE_NAME or segments[-1].startswith(GENERATED_PREFIX):
        return f"file name {path!r} is reserved by benchapp"
    return None


def files_check(files: object, entry: object) -> dict[str, str]:
    """The file set as {path: text}, or WorkloadError naming the file: names, sizes, count, UTF-8 text."""
    if not isinstance(files, Mapping) or not files:
        raise WorkloadError("a workload needs at least one Lua file")
    if len(files) > MAX_FILES:
        raise WorkloadError(f"{len(files)} files: a workload has at most {MAX_FILES}")
    checked: dict[str, str] = {}
    total = 0
    for path, text in files.items():
        problem = path_problem(path)
        if problem:
            raise WorkloadError(problem)
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                raise WorkloadError(f"file {path}: not Lua source (not UTF-8 text)") from None
        if not isinstance(text, str):
            raise WorkloadError(f"file {path}: its content must be text")
        size = len(text.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise WorkloadError(f"file {path} is too big: {size:,} bytes, at most {MAX_FILE_BYTES:,}")
        if "\x00" in text:
            raise WorkloadError(f"file {path}: not Lua source (it holds NUL bytes, a binary file)")
        if text.startswith("\x1bLJ") or text.startswith("\x1bLua"):
            raise WorkloadError(f"file {path}: compiled Lua byte code is not accepted, only source")
        if not text.strip():
            raise WorkloadError(f"file {path} is empty")
        total += size
        checked[path] = text
    lower: dict[str, str] = {}
    for path in checked:
        if path.lower() in lower:
            raise WorkloadError(f"files {lower[path.lower()]} and {path} differ only in case")
        lower[path.lower()] = path
    if total > MAX_TOTAL_BYTES:
        raise WorkloadError(f"the files hold {total:,} bytes in all: at most {MAX_TOTAL_BYTES:,}")
    if not isinstance(entry, str) or not entry:
        raise WorkloadError("no entry script: name the file sysbench runs", field="entry")
    if entry not in checked:
        raise WorkloadError(f"entry script {entry[:60]!r} is not among the files ({', '.join(sorted(checked))})",
                            field="entry")
    return checked


def content_hash(files: Mapping[str, str], entry: str) -> str:
    """The sha256 of the entry's name and every file's name and text, independent of the order given."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"entry": entry, "files": sorted(files.items())}, ensure_ascii=False).encode())
    return digest.hexdigest()


def _write_tree(root: Path, files: Mapping[str, str]) -> None:
    """The files under root, readable by everyone (the sandbox's user reads them) and writable by nobody; root's
    own parent (0700, this user's) keeps other local users out, the sandbox reaches them through a bound fd."""
    root.mkdir(exist_ok=True)
    root.chmod(0o755)
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        target.parent.chmod(0o755)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o444)


def workload_inspect(*, files: Mapping[str, str], entry: str, sysbench: str = "sysbench") -> WorkloadCheck:
    """Compiles every file, loads the entry script and asks it for its options, in a temporary directory.

    Raises WorkloadError naming the file with a syntax error, the entry script's load error, a missing event()
    function, or a `help` that failed or did not end within HELP_TIMEOUT_S."""
    with tempfile.TemporaryDirectory(prefix="benchapp-workload-") as private:
        root = Path(private) / "files"
        tmp = str(root)
        _write_tree(root, files)
        (root / PROBE_NAME).write_text(_PROBE, encoding="utf-8")
        (root / PROBE_NAME).chmod(0o444)
        # The files' names are relative to root: sysbench runs in the sandbox's own /tmp, with root bound
        # read-only (its top level is a stranger's code: campaigns.sysbench.sandbox).
        env = {"BENCHAPP_LUA_FILES": "\n".join(f"{tmp}/{name}" for name in sorted(files)),
               "BENCHAPP_LUA_ENTRY": f"{tmp}/{entry}"}
        box = Box(read_only=(tmp,), limits=probe_limits())
        probe = run_process([sysbench, str(root / PROBE_NAME), "help"], timeout_s=HELP_TIMEOUT_S, env=env, box=box)
        if probe.start_error:
            raise WorkloadError(f"sysbench could not be started to check the files: {probe.start_error}")
        if probe.timed_out:
            raise WorkloadError(f"entry script {entry}: loading it did not end within {HELP_TIMEOUT_S:.0f} s "
                                "(does its top level loop?)", field="entry")
        commands: tuple[str, ...] = ()
        event = ""
        for line in probe.output.splitlines():
            parts = line.split("\t")
            if parts[0] == "BENCHAPP-SYNTAX" and len(parts) >= 3:
                raise WorkloadError(f"file {_short(parts[1], root)}: not valid Lua: {_short(parts[2], root)}")
            if parts[0] == "BENCHAPP-LOAD":
                raise WorkloadError(f"entry script {entry} fails when loaded: {_short(parts[1], root)}",
                                    field="entry")
            if parts[0] == "BENCHAPP-COMMANDS":
                commands = tuple(sorted(set(parts[1].split()))) if len(parts) > 1 else ()
            if parts[0] == "BENCHAPP-EVENT":
                event = parts[1] if len(parts) > 1 else ""
        if event != "function":
            if not any(line.startswith("BENCHAPP-") for line in probe.output.splitlines()):
                raise WorkloadError(f"entry script {entry}: sysbench could not load it: "
                                    f"{_short(_fatal(probe.output), root)}", field="entry")
            raise WorkloadError(f"entry script {entry} defines no event() function: sysbench would have nothing "
                                "to run", field="entry")
        helped = run_process([sysbench, str(root / entry), "help"], timeout_s=HELP_TIMEOUT_S, env=env, box=box)
        if helped.timed_out:
            raise WorkloadError(f"`sysbench {entry} help` did not end within {HELP_TIMEOUT_S:.0f} s", field="entry")
        if helped.exit_code != 0:
            if "does not implement the 'help' command" in helped.output:
                return WorkloadCheck(options={}, commands=commands, help_text="",
                                     notes=["the script declares no options"])
            raise WorkloadError(f"`sysbench {entry} help` failed (exit code {helped.exit_code}): "
                                f"{_short(_fatal(helped.output), root)}", field="entry")
        return WorkloadCheck(options=help_options(helped.output), commands=commands,
                             help_text=helped.output.replace(tmp + "/", ""))


def _fatal(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip() and not line.startswith("sysbench 1.")]
    return " ".join(lines)[:500] or "no output"


def _short(text: str, root: Path) -> str:
    return text.replace(str(root) + "/", "").strip()[:500]


def help_options(output: str) -> dict[str, OptionSpec]:
    """The options `sysbench <script> help` printed, as specs: `=N` is a whole number when its default is one
    (else a number), `[=on|off]` yes/no, `=STRING` text and `=[LIST,...]` a comma-separated list."""
    options: dict[str, OptionSpec] = {}
    for line in output.splitlines():
        match = _HELP_LINE.match(line)
        if not match:
            continue
        name = match["name"].replace("_", "-").lower()
        rest = match["rest"].strip()
        found = _DEFAULT.match(rest)
        help_text, default_text = (found["help"], found["default"]) if found else (rest, None)
        kind = match["kind"]
        default: object = default_text
        if kind == "[=on|off]":
            spec = OptionSpec(name, "bool", default_text == "on", None, None, None, help_text, "test")
        elif kind == "=N":
            number: float | None
            try:
                number = float(default_text) if default_text not in (None, "") else None
            except ValueError:
                number = None
            if number is None or number.is_integer():
                default = int(number) if number is not None else None
                # Lua options are doubles: whole numbers up to 2**53 are exact; the script decides the rest.
                spec = OptionSpec(name, "int", default, None, 2**53, None, help_text, "test")
            else:
                spec = OptionSpec(name, "float", number, None, None, None, help_text, "test")
        elif kind == "=STRING":
            spec = OptionSpec(name, "str", default, None, None, None, help_text, "test")
        else:
            spec = OptionSpec(name, "list", default, None, None, None, help_text, "test")
        options[name] = spec
    return options


def options_to_json(options: Mapping[str, OptionSpec]) -> list[dict[str, object]]:
    """Specs as stored with a workload version (a list of plain objects, in help's order)."""
    return [{"name": s.name, "type": s.type, "default": s.default, "min": s.min, "max": s.max, "help": s.help}
            for s in options.values()]


def options_from_json(rows: object) -> dict[str, OptionSpec]:
    specs: dict[str, OptionSpec] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("name"), str):
            specs[row["name"]] = OptionSpec(row["name"], str(row.get("type", "str")), row.get("default"),
                                            row.get("min"), row.get("max"), None, str(row.get("help", "")), "test")
    return specs


def workload_spec(*, label: str, entry: str, options: Mapping[str, OptionSpec], description: str = "",
                  commands: tuple[str, ...] = ("prepare", "cleanup"), size_option: str = "",
                  size_unit: str = "rows") -> TestSpec:
    """The workload as a test of the catalogue: validate_options and build_argv take it in place of a test name.
    `entry` is the script sysbench runs (an absolute path on a client host, once materialised)."""
    return TestSpec(name=label, script=entry, options=dict(options), legacy=False, description=description,
                    prepares_tables="prepare" in commands, workload=True, commands=tuple(commands),
                    size_option=size_option, size_unit=size_unit)


def counting_wrapper(*, entry: str, function: str) -> tuple[str, str]:
    """A script of benchapp's, beside the entry (its path and text), that runs the entry unchanged and counts
    the calls of its global `function` that return without an error: sysbench's threads are separate Lua states,
    so each prints its own count as it ends ("benchapp-count new_order 1234", read by parser.counted_calls).
    The workload's options and commands are the entry's own: it is loaded first, in the same globals. A call that
    raises (a deadlock sysbench retries) is not counted; a call that rolls back by design and returns is.
    `function` has been checked as a Lua name (services.workloads.declared_problems)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,59}", function):
        raise WorkloadError(f"not a Lua function name: {function[:70]!r}")
    folder, _, base = entry.rpartition("/")
    name = f"{folder + '/' if folder else ''}{GENERATED_PREFIX}_count_{function}.lua"
    text = f"""-- Written by benchapp: runs {base} unchanged and counts its {function}() calls that end without an error.
local here = debug.getinfo(1, "S").source:sub(2):match("^(.*)/") or "."
dofile(here .. "/" .. {json.dumps(base)})
local counted = _G[{json.dumps(function)}]
if type(counted) == "function" then
  local calls = 0
  local function count(...)
    calls = calls + 1
    return ...
  end
  _G[{json.dumps(function)}] = function(...) return count(counted(...)) end
  local thread_done_of_workload = thread_done
  function thread_done(...)
    io.write(string.format("benchapp-count %s %d\\n", {json.dumps(function)}, calls))
    io.flush()
    if thread_done_of_workload then return thread_done_of_workload(...) end
  end
end
"""
    return name, text


def workload_materialize(*, cache_dir: str | os.PathLike[str], digest: str, files: Mapping[str, str],
                         entry: str, generated: Mapping[str, str] | None = None) -> Path:
    """The workload's files under cache_dir/<digest>/ (written once, read-only, in a directory only this user
    may write); returns the entry script's absolute path. A cached copy whose files do not hash to `digest`
    (changed behind benchapp's back) is replaced. `generated` (path → text, counting_wrapper's) are written beside
    them, outside the hash; a copy without them is written again with them."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise WorkloadError(f"not a content hash: {digest[:70]!r}")
    base = Path(cache_dir)
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = base.stat()
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise WorkloadError(f"workload cache {base} must belong to this user and be writable by nobody else")
    final = base / digest
    extra = dict(generated or {})
    if final.is_dir() and _cached_hash(final, files, entry, extra) == digest:
        return final / entry
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=base))
    _write_tree(tmp, {**files, **extra})
    if final.exists():
        _remove(final)
    try:
        tmp.rename(final)
    except OSError:  # another worker of this host wrote it meanwhile
        _remove(tmp)
        if _cached_hash(final, files, entry, extra) != digest:
            raise WorkloadError(f"workload cache {final} holds other files than the workload's") from None
    return final / entry


def _cached_hash(root: Path, files: Mapping[str, str], entry: str, generated: Mapping[str, str]) -> str:
    """The cached copy's content hash (its own files), "" when it holds other files or lacks a generated one."""
    found: dict[str, str] = {}
    for path in root.rglob("*"):
        if path.is_file():
            try:
                found[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return ""
    if any(found.get(path) != text for path, text in generated.items()):
        return ""
    own = {path: text for path, text in found.items() if not path.rpartition("/")[2].startswith(GENERATED_PREFIX)}
    return content_hash(own, entry) if set(own) == set(files) else ""


def _remove(path: Path) -> None:
    for sub in [path, *path.rglob("*")]:
        try:
            sub.chmod(0o700 if sub.is_dir() else 0o600)
        except OSError:
            pass
    shutil.rmtree(path, ignore_errors=True)
