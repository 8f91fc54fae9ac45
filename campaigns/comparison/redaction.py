"""The white paper's environment and method as a share link shows them: nothing that says where the servers and
client hosts are. Target host names and addresses, ports, sockets, users and databases (the endpoint options of
every command), and client host names are replaced; absolute file paths in commands (sysbench's binary, the client
host's workload cache, the checkout's Lua scripts) are cut to their file names; the rest (versions, settings, cores,
commands' test options) stays, since it is what makes the figures reproducible."""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from campaigns.comparison.rows import EnvironmentRow, HostRow, MethodRow, ReportSections
from campaigns.models import Target
from campaigns.sysbench.command import REDACTED, redact_endpoint

# Server settings that would name an address, a port or a path on the server, should a snapshot ever hold them.
_WHERE_SETTING = re.compile(r"host|port|socket|bind|address|listen|datadir|dir$", re.IGNORECASE)


# An absolute path inside one argument: at its start or after '=' (--opt=/x/y), ':' , ';' or ',' (lists of paths).
_PATH_IN_ARGUMENT = re.compile(r"(?<![^=:;,])/[^:;,]*")
# The same in a line that is not a command we wrote (unbalanced quotes): a path ends at a space or a quote too.
_PATH_IN_TEXT = re.compile(r"(?<![^\s=:;,'\"])/[^\s:;,'\"]*")


def _file_name(match: re.Match[str]) -> str:
    return PurePosixPath(match.group(0)).name or match.group(0)


def paths_to_names(text: str) -> str:
    """A stored command line (one command per line) with every absolute path cut to its file name, so that it says
    which script ran and not where a host keeps it: `/opt/bench/var/workloads/<hash>/orders.lua` → `orders.lua`,
    `/usr/bin/sysbench` → `sysbench`, `--report-file=/tmp/r/out.txt` → `--report-file=out.txt`."""
    lines = []
    for line in text.splitlines():
        try:
            argv = shlex.split(line)
        except ValueError:
            lines.append(_PATH_IN_TEXT.sub(_file_name, line))
            continue
        named = [_PATH_IN_ARGUMENT.sub(_file_name, item) for item in argv]
        lines.append(line if named == argv else shlex.join(named))  # a line without paths stays as written
    return "\n".join(lines)


def endpoint_words(selection: Any) -> list[str]:
    """The host names, addresses and ports of the targets whose jobs the selection covers, longest first."""
    rows = Target.objects.filter(pk__in=selection.jobs().values("target_id")).values_list("host", "port")
    words = {str(w) for host, port in rows for w in (host, port) if str(w).strip()}
    return sorted(words, key=len, reverse=True)


def scrub(text: Any, words: Iterable[str]) -> Any:
    """`text` with every occurrence of each word replaced by ***; anything but a string as it is."""
    if not isinstance(text, str):
        return text
    for word in words:
        # A port alone is a number: replace it only where it stands alone, not inside a larger figure.
        pattern = rf"(?<![\w.]){re.escape(word)}(?![\w])" if word.isdigit() else re.escape(word)
        text = re.sub(pattern, REDACTED, text, flags=0 if word.isdigit() else re.IGNORECASE)
    return text


def report_redacted(report: ReportSections, *, selection: Any) -> ReportSections:
    """report_sections' environment, client hosts and method without where anything runs. Each row is written key by
    key, so that a field added to report_sections later (a host's address, say) stays out of shared pages until it
    is added here on purpose (mypy asks for it)."""
    words = endpoint_words(selection)
    client_names = sorted((h["hostname"] for h in report["hosts"] if h.get("hostname")), key=len, reverse=True)
    everything = [*words, *client_names]
    environment: list[EnvironmentRow] = [{
        "target": scrub(env["target"], everything), "product": scrub(env["product"], everything),
        "spec": scrub(env["spec"], everything), "version": scrub(env["version"], everything),
        "settings": [(name, scrub(value, everything)) for name, value in env["settings"]
                     if not _WHERE_SETTING.search(name)],
    } for env in report["environment"]]
    hosts: list[HostRow] = [{"hostname": f"client host {index}", "jobs": host["jobs"], "sysbench": host["sysbench"],
                             "cores": host["cores"], "memory_gb": host["memory_gb"]}
                            for index, host in enumerate(report["hosts"], start=1)]
    method: list[MethodRow] = [{
        "scenario": scrub(row["scenario"], everything), "test": scrub(row["test"], everything),
        "target": scrub(row["target"], everything), "product": scrub(row["product"], everything),
        "command": scrub(paths_to_names(redact_endpoint(row["command"] or "")), everything),
        "imported": row["imported"],
        "threads": scrub(row["threads"], everything),
    } for row in report["method"]]
    order = [scrub(line, everything) for line in report.get("order") or []]
    return {"environment": environment, "hosts": hosts, "method": method, "order": order}
