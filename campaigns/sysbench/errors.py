"""Turning a failed sysbench process into a cause a user can act on.

sysbench prints its errors on stdout (see SYSBENCH-NOTES.md); the first FATAL line usually names
the cause, but its wording differs per driver, so the common ones are restated plainly.
"""
from __future__ import annotations

import re
import signal

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # A full server first: sysbench says "unable to connect" before the server's own reason, which is the cause.
    (re.compile(r"error 1040\b|Too many connections", re.IGNORECASE),
     "the server is full: too many connections (error 1040: its max_connections are all taken)"),
    (re.compile(r"too many clients already|remaining connection slots are reserved", re.IGNORECASE),
     "the server is full: too many clients (SQLSTATE 53300: its max_connections are all taken)"),
    (re.compile(r"Access denied for user ('[^']*'@'[^']*')(?: \(using password: (\w+)\))?"),
     "access denied for user {0}: check the target's user and password"),
    (re.compile(r'password authentication failed for user "([^"]+)"'),
     "access denied for user '{0}': check the target's user and password"),
    (re.compile(r"unable to connect to MySQL server on host '([^']+)', port (\d+)"),
     "connection refused to {0}:{1}: is the server running and the port right?"),
    (re.compile(r'connection to server at "([^"]+)"(?: \([^)]*\))?, port (\d+) failed: Connection refused'),
     "connection refused to {0}:{1}: is the server running and the port right?"),
    (re.compile(r"Unknown database '([^']+)'"),
     "database '{0}' does not exist on the target: create it first"),
    (re.compile(r'database "([^"]+)" does not exist'),
     "database '{0}' does not exist on the target: create it first"),
    (re.compile(r"Table '([^']+)' doesn't exist"),
     "table '{0}' doesn't exist: the dataset is not prepared (prepare it first)"),
    (re.compile(r'relation "([^"]+)" does not exist'),
     "table '{0}' doesn't exist: the dataset is not prepared (prepare it first)"),
    (re.compile(r"error 2013 \(Lost connection[^)]*\)|Lost connection to (?:MySQL|server)"),
     "lost the connection to the server mid-run (error 2013)"),
    (re.compile(r"server closed the connection unexpectedly"),
     "lost the connection to the server mid-run"),
    (re.compile(r"Table '([^']+)' already exists"),
     "table '{0}' already exists: drop the old data or set prepare to 'always'"),
    (re.compile(r"Cannot find benchmark '([^']+)'"),
     "sysbench cannot find the test '{0}'"),
    (re.compile(r"invalid option: (\S+)"),
     "sysbench refused the option {0}"),
]


def explain_failure(output: str, exit_code: int | None, *, phase: str = "run") -> str:
    """One or two sentences: what went wrong, then sysbench's own FATAL line for reference."""
    fatal = [line.strip() for line in output.splitlines() if "FATAL" in line or "error" in line.lower()]
    fatal_line = next((line for line in fatal if line.startswith("FATAL")), fatal[0] if fatal else "")
    cause = ""
    for pattern, template in _PATTERNS:
        match = pattern.search(output)
        if match:
            cause = template.format(*match.groups())
            break
    parts = []
    if exit_code is not None and exit_code < 0:
        name = signal.Signals(-exit_code).name if -exit_code in signal.Signals._value2member_map_ else str(-exit_code)
        parts.append(f"sysbench was killed by {name} during {phase}")
    elif exit_code == 139:
        parts.append(f"sysbench crashed (segmentation fault, exit code 139) during {phase}")
    if cause:
        parts.append(cause)
    if fatal_line and fatal_line not in cause:
        parts.append(f"sysbench said: {fatal_line}")
    if not parts:
        tail = " | ".join(line.strip() for line in output.strip().splitlines()[-3:])
        parts.append(f"sysbench {phase} exited with code {exit_code}" + (f": {tail}" if tail else ""))
    return "; ".join(parts)


# MySQL/MariaDB error codes that say the server went away or cannot take the client now (the same list as
# campaigns.probes.MYSQL_UNREACHABLE), as sysbench prints them: "error 2013 (Lost connection …)", "error 2003: …".
_UNREACHABLE_CODES = r"2002|2003|2005|2006|2013|2055|1040|1053|1077|1927|1290|1836|1792|4031"
_UNREACHABLE = re.compile(
    rf"\berror (?:{_UNREACHABLE_CODES})\b|Lost connection to (?:MySQL )?server|server has gone away"
    r"|Can't connect to (?:local )?(?:MySQL )?server|unable to connect to MySQL server"
    r"|server closed the connection unexpectedly|Connection refused|terminating connection due to administrator"
    r"|the database system is (?:shutting down|starting up|in recovery mode)|too many clients already"
    r"|read-only transaction|Connection reset by peer|could not receive data from server",
    re.IGNORECASE,
)
# Mistakes in the target's settings that also stop sysbench from connecting: never worth waiting for.
_MISTAKE = re.compile(r"Access denied|password authentication failed|Unknown database|database \"[^\"]+\" does not "
                      r"exist|no pg_hba.conf entry", re.IGNORECASE)


def target_unreachable(output: str) -> bool:
    """Whether a failed sysbench's output says its target went away (refused, reset, restarted, too many
    connections, read-only after a failover) rather than that something is wrong with the job."""
    return bool(_UNREACHABLE.search(output)) and not _MISTAKE.search(output)


def killed_by_signal(exit_code: int | None) -> str:
    """The signal's name when sysbench was killed by one ("" when it exited by itself)."""
    if exit_code is None or exit_code >= 0:
        return ""
    return signal.Signals(-exit_code).name if -exit_code in signal.Signals._value2member_map_ else str(-exit_code)


def forced_shutdown(output: str) -> bool:
    """Whether sysbench stopped itself at --time + --forced-shutdown because its queries did not return."""
    return "--max-time limit has expired" in output or "forcing shutdown" in output
