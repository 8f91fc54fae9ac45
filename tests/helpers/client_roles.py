"""Client hosts' own credentials in the test database (campaigns/services/client_access.py), checked by logging in
as a host's role the way its worker does.

The group role has a name of this test database's own and the Redis is the test's own, so that the machine's roles
and the shared Redis's ACL are never touched; at the end every role made is dropped and the tables lose their
policies again, as migrations left them for the session's later tests. PostgreSQL trusts loopback here: the host's
password is not what stops it, its grants and policies are.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connection

from campaigns.services import client_access


def role_of_test_db(suffix: str) -> str:
    """A role name of this test database's own (roles are the cluster's; xdist workers run side by side)."""
    return f"bg_{hashlib.sha256(connection.settings_dict['NAME'].encode()).hexdigest()[:12]}{suffix}"


def broker_connections_drop() -> None:
    """Forgets the Celery app's broker connection and producer pools in this process: they are made once, with the
    broker URL of that moment, so a test that points CELERY_BROKER_URL at a Redis of its own would otherwise leave
    every later test of the process publishing there (to a Redis that is gone). Not closed: kombu keeps one pool
    per broker URL for the whole process, and other threads may hold the session broker's."""
    from benchapp.celery import app

    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def own_client_access(settings: Any, redis_server: Any) -> Iterator[Any]:
    """Client access in the test database with a group role and a Redis of this test's own; yields the Redis."""
    group = role_of_test_db("")
    settings.BENCHAPP_CLIENT_DB_GROUP = group
    settings.BENCHAPP_BROKER_ADMIN_URL = redis_server.url
    settings.CELERY_BROKER_URL = redis_server.url
    settings.CELERY_TASK_DEFAULT_QUEUE = redis_server.env["BENCHAPP_QUEUE"]
    broker_connections_drop()
    try:
        yield redis_server
    finally:
        broker_connections_drop()  # made again on next use, with the URL the settings fixture puts back
        with connection.cursor() as cursor:
            roles = [r for (r,) in cursor.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE 'bh\\_%%' AND pg_has_role(rolname, %s, 'MEMBER') "
                "OR rolname IN (SELECT db_role FROM campaigns_hostaccess)", [group]).fetchall()]
            for role in [*roles, group]:
                cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
                if cursor.fetchone() is None:
                    continue
                cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role])
                cursor.execute(f'DROP OWNED BY "{role}"')
                cursor.execute(f'DROP ROLE "{role}"')
            cursor.execute("DROP TRIGGER IF EXISTS benchapp_host_labels ON campaigns_clienthost")
            for model in client_access.GUARDED:
                table = model._meta.db_table
                for (policy,) in cursor.execute("SELECT policyname FROM pg_policies WHERE tablename = %s",
                                                [table]).fetchall():
                    cursor.execute(f'DROP POLICY "{policy}" ON "{table}"')
                cursor.execute(f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY')


def as_host(credentials: client_access.HostCredentials) -> psycopg.Connection:
    """A session as the host's own role, in the test database (autocommit, as its worker's)."""
    db = connection.settings_dict
    return psycopg.connect(host="127.0.0.1", port=int(db.get("PORT") or 5432), dbname=db["NAME"],
                           user=credentials.db_role, autocommit=True)


def refused(db: psycopg.Connection, statement: str, params: list[Any] | None = None) -> str:
    """The first line of the error PostgreSQL answers the statement with ("" if it went through)."""
    try:
        db.execute(statement, params)
    except psycopg.Error as exc:
        return str(exc).splitlines()[0]
    return ""
