"""What this host's sandbox can reach of benchapp's own services, asked of the sandbox itself at start-up.

The firewall rules on the sandbox's user (scripts/sandbox-firewall.sh) cannot be listed by an unprivileged worker,
and a rule that is missing or wrong says nothing: so the worker starts a boxed connection attempt to each of
benchapp's endpoints (its PostgreSQL, its Redis, its web port when known) and reports those that answered. The
result is logged at start-up and shown on the Hosts page (the host's `sandbox` fact, docs/security.md#the-sandbox).
"""
from __future__ import annotations

import logging
import os
from urllib.parse import urlsplit

from django.conf import settings

from campaigns.sysbench.runner import Box, ProcessOutcome, run_process
from campaigns.sysbench.sandbox import SandboxLimits, sandbox_status, sandbox_user

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 3.0


def benchapp_endpoints() -> list[tuple[str, str, int]]:
    """(what, host, port) of benchapp's own services as this process reaches them."""
    endpoints: list[tuple[str, str, int]] = []
    db = settings.DATABASES["default"]
    if db.get("HOST") and not str(db["HOST"]).startswith("/"):
        endpoints.append(("PostgreSQL", str(db["HOST"]), int(db.get("PORT") or 5432)))
    redis = urlsplit(settings.REDIS_URL)
    if redis.hostname:
        endpoints.append(("Redis", redis.hostname, redis.port or 6379))
    web_port = os.environ.get("BENCHAPP_PORT", "")
    if settings.BENCHAPP_WORKER_ROLE != "client" and web_port.isdigit():
        endpoints.append(("web", "127.0.0.1", int(web_port)))
    return endpoints


def _boxed(*argv: str) -> ProcessOutcome:
    return run_process(list(argv), timeout_s=CONNECT_TIMEOUT_S,
                       box=Box(limits=SandboxLimits(address_space_bytes=2**30, processes=64, file_size_bytes=2**20,
                                                    cpu_s=5)))


def sandbox_starts() -> str:
    """Why the box cannot run a program at all, or "" when it can: a refused connection proves nothing of a box
    that never started, so the endpoints are probed only after this control."""
    outcome = _boxed("/bin/bash", "-c", "echo boxed")
    if outcome.succeeded() and outcome.output.strip() == "boxed":
        return ""
    said = outcome.start_error or outcome.output.strip()[-300:] or f"exit code {outcome.exit_code}"
    return f"the sandbox cannot start a program here ({said}): sysbench cannot run on this host"


def sandbox_reaches(host: str, port: int) -> bool:
    """Whether a TCP connection from inside the sandbox to host:port is accepted."""
    outcome = _boxed("/bin/bash", "-c", 'exec 3<>"/dev/tcp/$0/$1"', host, str(port))
    return outcome.exit_code == 0 and not outcome.start_error


def sandbox_fact() -> str:
    """The sandbox in one line for the Hosts page: who sysbench runs as, and what of benchapp's it still reaches
    (each said once at start-up in the log too)."""
    problems = []
    status = sandbox_status()
    if status:
        problems.append(status)
    broken = "" if "cannot run" in status else sandbox_starts()
    if broken:
        problems.append(broken)
    elif not status or "not root" in status:
        for what, host, port in benchapp_endpoints():
            if sandbox_reaches(host, port):
                problems.append(f"the sandbox reaches benchapp's {what} at {host}:{port}: no firewall rule closes "
                                "it (scripts/sandbox-firewall.sh)")
    for problem in problems:
        log.warning("sandbox: %s", problem)
    if problems:
        return "WARNING: " + "; ".join(problems)
    return f"sysbench as {sandbox_user()} in bubblewrap; benchapp's services closed to it"
