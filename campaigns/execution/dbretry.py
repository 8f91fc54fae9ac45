"""benchapp's own database going away for a few seconds (a PostgreSQL restart, a failover, an administrator's
pg_terminate_backend) and coming back: which errors say so, and waiting for it to return.

A write that meets a dropped connection closes it (Django opens a new one on the next query) and tries again with
back-off; only a database that stays away longer than the caller's patience is an error. Errors that are not about
the connection (a constraint, a bad query) are never retried.
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)

T = TypeVar("T")

# SQLSTATEs of a server that went away or is not there yet: admin shutdown, crash shutdown, cannot connect now
# (starting up), too many connections, and class 08 (connection exception, connection does not exist, failure).
AWAY_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300", "08000", "08001", "08003", "08004", "08006"})
RETRY_FIRST_S = 0.2
RETRY_MAX_S = 2.0


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` says benchapp's database connection dropped or the server is away (not a bad query)."""
    if isinstance(exc, InterfaceError):
        return True  # Django's or psycopg's "connection already closed"
    if not isinstance(exc, OperationalError):
        return False
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    # psycopg gives no SQLSTATE when it never reached a server (refused, reset, closed by the server mid-query).
    return sqlstate is None or sqlstate in AWAY_SQLSTATES


def connection_drop() -> None:
    """Forgets this thread's connection, so that the next query opens a new one."""
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is dropped all the same
        pass


def backoff_s(delay_s: float) -> float:
    """The next wait: doubled up to RETRY_MAX_S, with jitter so that every worker does not knock at once."""
    return min(RETRY_MAX_S, delay_s * 2) * random.uniform(0.8, 1.2)


def db_retry(fn: Callable[[], T], *, patience_s: float, what: str) -> T:
    """fn(), again after a dropped connection until `patience_s` has passed (then the error is raised).

    Not inside a transaction: a transaction that lost its connection is lost with it, and only its caller can
    begin it again.
    """
    deadline = time.monotonic() + patience_s
    delay = RETRY_FIRST_S
    while True:
        try:
            return fn()
        except (OperationalError, InterfaceError) as exc:
            if not connection_lost(exc) or connection.in_atomic_block or time.monotonic() >= deadline:
                raise
            log.warning("%s: benchapp's database is away (%s); trying again in %.1f s", what,
                        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, delay)
            connection_drop()
            time.sleep(delay)
            delay = backoff_s(delay)


def connection_wait(*, patience_s: float, what: str) -> None:
    """Returns once this thread's connection answers (a new one if it dropped), or raises after `patience_s`."""
    def ping() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    db_retry(ping, patience_s=patience_s, what=what)
