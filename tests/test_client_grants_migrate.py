"""A client host's grants follow the schema: they name the models' columns and tables, so a column a
migration adds (as 0051 added campaigns_campaign.sla_ms) was out of every host's reach until someone issued a host.
Each `migrate` now puts them back (client_access_after_migrate, connected in campaigns/apps.py), and does nothing on
a database with no client hosts or for a migrating user that may not grant them.

A migration's new column is made as its AddField makes it: the schema editor drops the column and adds it again,
with none of the grants the old one had.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, models, transaction

from campaigns import sealing
from campaigns.models import Campaign, ClientHost, Job, JobClient
from campaigns.services import client_access
from tests.factories import JobFactory
from tests.helpers.client_roles import as_host, own_client_access, refused, role_of_test_db

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def access(settings: Any, own_redis: Any) -> Iterator[Any]:
    with own_client_access(settings, own_redis) as redis_server:
        yield redis_server


def _column_added_again(model: type[models.Model], name: str) -> None:
    field = model._meta.get_field(name)
    with connection.schema_editor() as editor:
        editor.remove_field(model, field)
        editor.add_field(model, field)


def _host_with_a_running_job(hostname: str) -> tuple[client_access.HostCredentials, Job]:
    ClientHost.objects.create(hostname=hostname, queue=f"q.host.{hostname}", role="client",
                              public_key=sealing.public_key_text())
    job = JobFactory(status="running", attempt=1)
    JobClient.objects.create(job=job, index=0, host_name=hostname, threads=1, status="running")
    return client_access.client_host_issue(hostname=hostname), job


def _group_may(table: str, column: str, privilege: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT has_column_privilege(%s, %s, %s, %s)",
                       [client_access.client_group(), table, column, privilege])
        return bool(cursor.fetchone()[0])


def test_a_column_a_migration_adds_is_readable_and_writable_by_client_hosts_after_migrate(access):
    host, job = _host_with_a_running_job("mig-a")
    read_sla = "SELECT sla_ms FROM campaigns_campaign"
    write_warning = "UPDATE campaigns_job SET cache_warning = '' WHERE id = %s"
    with as_host(host) as db:
        assert db.execute(read_sla).fetchall() == [(None,)]
        assert db.execute(write_warning, [job.pk]).rowcount == 1

    # The migrations since the host was issued: a campaign's column its worker reads, a job's column it writes.
    _column_added_again(Campaign, "sla_ms")
    _column_added_again(Job, "cache_warning")
    with as_host(host) as db:
        assert "permission denied" in refused(db, read_sla)
        assert "permission denied" in refused(db, write_warning, [job.pk])

    call_command("migrate", interactive=False, verbosity=0)  # nothing to apply: its post_migrate still runs

    assert _group_may("campaigns_campaign", "sla_ms", "SELECT")
    assert _group_may("campaigns_job", "cache_warning", "UPDATE")
    assert not _group_may("campaigns_target", "password_encrypted", "SELECT"), "still never the secrets"
    with as_host(host) as db:
        assert db.execute(read_sla).fetchall() == [(None,)]
        assert db.execute(write_warning, [job.pk]).rowcount == 1
        # Its rows are still only its own: the policies came back with the grants.
        assert db.execute("SELECT id FROM campaigns_job").fetchall() == [(job.pk,)]


def _access_state() -> dict[str, Any]:
    """What client_access_install() changes in the database: the group role, row-level security, policies."""
    tables = [model._meta.db_table for model in client_access.GUARDED]
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolname FROM pg_roles WHERE rolname = %s", [client_access.client_group()])
        group = cursor.fetchall()
        cursor.execute("SELECT relname, relrowsecurity FROM pg_class WHERE relname = ANY(%s) ORDER BY relname",
                       [tables])
        security = cursor.fetchall()
        cursor.execute("SELECT tablename, policyname FROM pg_policies WHERE tablename = ANY(%s) ORDER BY 1, 2",
                       [tables])
        return {"group": group, "row security": security, "policies": cursor.fetchall()}


def test_migrate_leaves_a_database_without_client_hosts_as_it_was(settings):
    settings.BENCHAPP_CLIENT_DB_GROUP = role_of_test_db("_none")  # a group no one made
    before = _access_state()
    assert not client_access.client_roles_exist()
    call_command("migrate", interactive=False, verbosity=0)
    assert _access_state() == before
    assert before["group"] == [] and not any(on for _, on in before["row security"])


def test_a_migrating_user_that_may_not_grant_leaves_the_grants_and_says_what_to_run(access, caplog):
    _host_with_a_running_job("mig-b")
    _column_added_again(Campaign, "sla_ms")
    weak = role_of_test_db("_weak")
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{weak}" NOLOGIN')
        cursor.execute(f'GRANT SELECT ON campaigns_hostaccess TO "{weak}"')
    caplog.set_level(logging.INFO, logger="campaigns.services.client_access")
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f'SET LOCAL ROLE "{weak}"')
            assert not client_access.client_access_grantable()
            client_access.client_access_after_migrate(using="default")
        assert not _group_may("campaigns_campaign", "sla_ms", "SELECT"), "nothing was attempted"
        assert "NOT reinstalled" in caplog.text and "client_host_issue --install-only" in caplog.text
        # The same call by benchapp's own user (a superuser here) puts them back.
        assert client_access.client_access_grantable()
        client_access.client_access_after_migrate(using="default")
        assert _group_may("campaigns_campaign", "sla_ms", "SELECT")
        assert "grants reinstalled after migrate" in caplog.text
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP OWNED BY "{weak}"')
            cursor.execute(f'DROP ROLE "{weak}"')
