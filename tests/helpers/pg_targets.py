"""Where PostgreSQL targets live in the tests: the machine's targets cluster (scripts/pg-targets.sh, made by
scripts/setup.sh). benchapp's own cluster is closed to sysbench's user (scripts/sandbox-firewall.sh), so a target the
suite measures cannot be there. Imports nothing of the suite's (factories and conftest use it)."""
from __future__ import annotations

import functools
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pg-targets.sh"


@functools.cache
def pg_target_port() -> int:
    """The targets cluster's port (BENCHAPP_PG_TARGET_PORT when set); an error naming the fix when there is none."""
    done = subprocess.run(["bash", str(SCRIPT), "--port"], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise RuntimeError(f"no PostgreSQL targets cluster: run scripts/setup.sh ({done.stderr.strip()})")
    return int(done.stdout.strip())


def pg_target_psql(*args: str) -> list[str]:
    """psql's command line as postgres on the targets cluster."""
    return ["psql", "-X", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", *args]
