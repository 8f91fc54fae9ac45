"""Liveness of the Celery worker and of beat, as their own work shows it, kept in the broker's Redis.

The worker: a step of Celery's consumer (benchapp/pulse.py ConsumerPulse, added to the app in benchapp/celery.py) runs on the
consumer's own timer every BENCHAPP_HEARTBEAT_S and, while the consumer consumes every queue it should (the shared
one, this host's, and the server queue for the `all` role), writes the time into `benchapp:<queue>:consumer:<host>`.
A consumer that stopped consuming (a queue cancelled, a connection reset that left it idle, its event loop stuck)
stops writing; so does the database heartbeat of campaigns/worker_signals.py, which only beats while this pulse is
fresh, so that /readyz, the hosts' online state and the BenchappNoWorker rule say the same.

Beat: every task it sends (before_task_publish, in the beat process only) writes the time into
`benchapp:<queue>:beat:sent`.

`manage.py worker_health` and `beat_health` read those keys without starting Django (manage.py calls main() before
any set-up): a GET on Redis, well under a second, and nothing asked of PostgreSQL, so that a database outage of a few
minutes restarts nothing. A worker asked to drain (manage.py worker_drain) says so in its key and stays healthy.

Imports neither Celery nor redis-py nor any model: the checks read one key in Redis's protocol (_resp_get).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

log = logging.getLogger(__name__)

_client: Any = None


def _settings() -> Any:  # django.conf.settings, imported when first needed
    from django.conf import settings

    return settings


def redis_client() -> Any:
    """The broker's Redis, with short timeouts: a liveness write or read never hangs the caller."""
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(_settings().CELERY_BROKER_URL, socket_connect_timeout=1, socket_timeout=1)
    return _client


def consumer_key(hostname: str) -> str:
    return f"benchapp:{_settings().CELERY_TASK_DEFAULT_QUEUE}:consumer:{hostname}"


def beat_key() -> str:
    return f"benchapp:{_settings().CELERY_TASK_DEFAULT_QUEUE}:beat:sent"


def expected_queues() -> list[str]:
    """The queues this host's worker must consume (campaigns/worker_signals.py adds the last two at start)."""
    settings = _settings()
    shared = settings.CELERY_TASK_DEFAULT_QUEUE
    own = f"{shared}.host.{settings.BENCHAPP_HOSTNAME}"
    if settings.BENCHAPP_WORKER_ROLE == "client":
        return [own]  # a client host consumes only its own queue (its passwords come sealed for it there)
    return [shared, own, f"{shared}.server"]


# ---------------------------------------------------------------- the checks (manage.py worker_health, beat_health)

def _resp_get(url: str, key: str, timeout_s: float = 1.0) -> bytes | None:
    """GET of one key from a redis:// URL in Redis's own protocol (AUTH, SELECT, GET): a health check run every few
    seconds does not import redis-py for it. Other URLs (rediss://, unix://) go through redis-py."""
    import socket
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.scheme != "redis":
        return redis_client().get(key)

    def command(*words: str) -> bytes:
        encoded = [w.encode() for w in words]
        return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in encoded)

    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=timeout_s) as sock:
        reader = sock.makefile("rb")
        commands = []
        if parts.password:
            commands.append(command("AUTH", *([unquote(parts.username)] if parts.username else []),
                                    unquote(parts.password)))
        if parts.path.strip("/"):
            commands.append(command("SELECT", parts.path.strip("/")))
        sock.sendall(b"".join([*commands, command("GET", key)]))
        for _ in commands:
            line = reader.readline()
            if not line.startswith(b"+"):
                raise ConnectionError(f"Redis refused the health check: {line[:80]!r}")
        head = reader.readline()
        if head.startswith(b"$-1"):
            return None
        if not head.startswith(b"$"):
            raise ConnectionError(f"Redis answered {head[:80]!r}")
        return reader.read(int(head[1:]) + 2)[:-2]


def _read(key: str) -> dict[str, Any] | None:
    raw = _resp_get(_settings().CELERY_BROKER_URL, key)
    return None if raw is None else json.loads(raw)


def worker_verdict(*, hostname: str, max_age_s: float) -> tuple[bool, str]:
    """(healthy, the line to print) for this host's worker."""
    try:
        pulse = _read(consumer_key(hostname))
    except Exception as exc:
        # The broker is away: the worker cannot consume, and a restart would not bring Redis back (it reconnects
        # by itself); not judged rather than restarted.
        return True, f"worker {hostname}: not judged, the broker's Redis is unreachable ({type(exc).__name__})"
    if pulse is None:
        return False, f"worker {hostname}: its consumer never pulsed (not started, or not for this queue)"
    age_s = time.time() - float(pulse["at"])
    if age_s > max_age_s:
        return False, f"worker {hostname}: its consumer last pulsed {age_s:.0f} s ago (more than {max_age_s:g} s)"
    if pulse.get("draining"):
        return True, f"worker {hostname}: draining (finishes its job, takes no new one), pulsed {age_s:.1f} s ago"
    if not pulse.get("consuming"):
        return False, f"worker {hostname}: its consumer is alive but {pulse.get('why') or 'not consuming'}"
    return True, f"worker {hostname}: consuming, pulsed {age_s:.1f} s ago"


def beat_verdict(*, max_age_s: float) -> tuple[bool, str]:
    try:
        sent = _read(beat_key())
    except Exception as exc:
        return True, f"beat: not judged, the broker's Redis is unreachable ({type(exc).__name__})"
    if sent is None:
        return False, "beat: never sent a task"
    age_s = time.time() - float(sent["at"])
    if age_s > max_age_s:
        return False, f"beat: last sent a task {age_s:.0f} s ago (more than {max_age_s:g} s)"
    return True, f"beat: sent {sent.get('task') or 'a task'} {age_s:.1f} s ago"


def main(argv: list[str]) -> int:
    """`manage.py worker_health [--hostname H] [--max-age S]` or `manage.py beat_health [--max-age S]`, without
    Django's set-up: exit 0 when healthy, 1 saying why not."""
    import argparse

    settings = _settings()
    command, rest = argv[0], argv[1:]
    parser = argparse.ArgumentParser(prog=f"manage.py {command}")
    if command == "worker_health":
        parser.add_argument("--hostname", default=settings.BENCHAPP_HOSTNAME)
        # Three missed pulses, at least 30 s: a worker under load still pulses on time.
        parser.add_argument("--max-age", type=float, dest="max_age_s",
                            default=max(30.0, 3 * settings.BENCHAPP_HEARTBEAT_S))
        args = parser.parse_args(rest)
        ok, line = worker_verdict(hostname=args.hostname, max_age_s=args.max_age_s)
    else:
        parser.add_argument("--max-age", type=float, dest="max_age_s",
                            default=max(120.0, 6 * settings.BENCHAPP_RECONCILE_S))
        args = parser.parse_args(rest)
        ok, line = beat_verdict(max_age_s=args.max_age_s)
    (sys.stdout if ok else sys.stderr).write(line + "\n")
    return 0 if ok else 1
