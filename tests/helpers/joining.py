"""A client host's worker started the way its operator starts it: `scripts/join-client.sh --foreground` (its
installing steps left out) from an env file like the one the server's scripts/serve-clients.sh writes.

Plain Python, as tests/helpers/namespaces.py: tests/helpers/netns.py, bench/_netns.py and bench/memory_client.py use it.
"""
from __future__ import annotations

from pathlib import Path


def join_client_command(state: Path, *, hostname: str, database_url: str, redis_url: str, queue: str,
                        labels: list[str] | None = None, concurrency: int | None = None) -> list[str]:
    """Writes state/client.env (mode 0600: it holds the database and broker passwords; no field key, which a client
    host never holds) and returns the command line, to run from the repository's root; the host's configuration
    goes to state/etc. Without `concurrency`, the script's default."""
    env_file = state / "client.env"
    env_file.touch(mode=0o600)
    env_file.write_text(f"DATABASE_URL={database_url}\nREDIS_URL={redis_url}\n"
                        f"BENCHAPP_QUEUE={queue}\n")
    return ["bash", "scripts/join-client.sh", "--no-install", "--foreground", "--env-file", str(env_file),
            "--config-dir", str(state / "etc"), "--hostname", hostname,
            *(["--labels", ",".join(labels)] if labels else []),
            *(["--concurrency", str(concurrency)] if concurrency is not None else [])]
