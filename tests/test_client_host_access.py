"""A client host holds only its own jobs: its PostgreSQL role, limited by row-level security,
and its Redis ACL user, checked by connecting as them, as the host would; and a takeover script run
with them: every step refused but writing its own job's seconds. Revoking ends it all at once.

PostgreSQL trusts loopback here, so the host's role is checked by logging in as it (its password is not what
stops it: its grants and policies are). The group role has a name of this test database's own, so that the
machine's roles are never touched; the Redis is a throw-away one of the test's own (never the shared one's ACL).
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import redis
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection

from campaigns import sealing
from campaigns.execution import dispatch
from campaigns.models import ClientHost, HostAccess, JobClient, JobResult
from campaigns.services import client_access
from tests.factories import JobFactory, JobResultFactory, TargetFactory
from tests.helpers.client_roles import as_host, own_client_access, refused

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def access(settings: Any, own_redis: Any) -> Iterator[Any]:
    """Client access installed in the test database, with a group role and a Redis of this test's own."""
    with own_client_access(settings, own_redis) as redis_server:
        yield redis_server




def _rows(db: psycopg.Connection, statement: str, params: list[Any] | None = None) -> list[Any]:
    return db.execute(statement, params).fetchall()


def _world() -> dict[str, Any]:
    """Two client hosts, each with a running job on a target with a password; a third job sent to neither."""
    keys = {name: sealing.public_key_text() for name in ("acc-a", "acc-b")}
    for name, key in keys.items():
        ClientHost.objects.create(hostname=name, queue=f"q.host.{name}", role="client", public_key=key)
    own = JobFactory(target=TargetFactory(password="Own-Secret-1"), status="running", attempt=1)
    other = JobFactory(target=TargetFactory(password="Other-Secret-2"), status="running", attempt=1)
    unsent = JobFactory(target=TargetFactory(password="Unsent-Secret-3"), status="succeeded")
    finished_own = JobFactory(target=own.target, status="succeeded")
    clients = {}
    for job, host in ((own, "acc-a"), (other, "acc-b"), (finished_own, "acc-a")):
        clients[job.pk] = JobClient.objects.create(job=job, index=0, host_name=host, threads=1, status="running")
        dispatch.jobclient_dispatch(client_id=clients[job.pk].pk, hostname=host)
    JobResultFactory(job=other, qps=1544.0)
    JobResultFactory(job=finished_own, qps=1200.0)
    user = get_user_model().objects.create_superuser("acc-admin", "a@example.com", "Admin-Pw-1")
    return {"own": own, "other": other, "unsent": unsent, "finished_own": finished_own, "clients": clients,
            "user": user}


def test_a_client_hosts_role_reads_and_writes_only_its_own_jobs_rows(access):
    world = _world()
    host = client_access.client_host_issue(hostname="acc-a")
    own, other, unsent = world["own"], world["other"], world["unsent"]
    with as_host(host) as db:
        # Its own job, its client and its sealed password: there.
        assert _rows(db, "SELECT id FROM campaigns_job ORDER BY id") == sorted(
            [(own.pk,), (world["finished_own"].pk,)])
        assert _rows(db, "SELECT host_name FROM campaigns_sealedpassword") == [("acc-a",), ("acc-a",)]
        # Another host's job, its client, result and sealed password; a job sent to no host: not there at all.
        for table, column in (("campaigns_job", "id"), ("campaigns_jobclient", "job_id"),
                              ("campaigns_jobresult", "job_id"), ("campaigns_sealedpassword", "job_id")):
            assert _rows(db, f"SELECT 1 FROM {table} WHERE {column} IN (%s, %s)", [other.pk, unsent.pk]) == []
        # Targets: only its own jobs' (whose password it was sent, sealed), and never their encrypted password.
        assert _rows(db, "SELECT id FROM campaigns_target") == [(own.target_id,)]
        assert "permission denied" in refused(db, "SELECT password_encrypted FROM campaigns_target")
        assert "permission denied" in refused(db, "SELECT webhook_url_encrypted FROM campaigns_campaign")
        assert _rows(db, "SELECT hostname FROM campaigns_clienthost") == [("acc-a",)]
        # benchapp's users, sessions, API tokens, share links, the beat schedule: nothing.
        for table in ("auth_user", "auth_group", "django_session", "campaigns_apitoken", "campaigns_sharelink",
                      "campaigns_prepareddataset", "campaigns_settingschange", "django_celery_beat_periodictask"):
            assert "permission denied" in refused(db, f"SELECT * FROM {table} LIMIT 1"), table
        # No sequence can be set back (a launch's ids would collide): nor any other write to one.
        assert "permission denied" in refused(db, "SELECT setval('campaigns_job_id_seq', 1)")
        assert "permission denied" in refused(db, "SELECT setval('campaigns_intervalsample_id_seq', 1)")
        # Another host's job: its result and verdict cannot be changed (no row to change), nor can its own
        # finished job's; a job's run, target or scenario cannot be changed at all.
        assert db.execute("UPDATE campaigns_job SET verdict = 'valid' WHERE id = %s", [other.pk]).rowcount == 0
        assert db.execute("UPDATE campaigns_job SET verdict = 'valid' WHERE id = %s",
                          [world["finished_own"].pk]).rowcount == 0
        assert "permission denied" in refused(db, "UPDATE campaigns_jobresult SET qps = 99999")
        assert "permission denied" in refused(db, "UPDATE campaigns_job SET target_id = %s WHERE id = %s",
                                               [other.target_id, own.pk])
        assert db.execute("UPDATE campaigns_jobclient SET summary = '{}' WHERE job_id = %s",
                          [other.pk]).rowcount == 0
        # Its own running job: its seconds go in (as a client's writer stores them), another's do not.
        inserted = db.execute(
            "INSERT INTO campaigns_intervalsample (job_id, client_index, attempt, t, threads, tps, qps, reads_per_s,"
            " writes_per_s, other_per_s, latency_pct_ms, errors_per_s, reconnects_per_s)"
            " VALUES (%s, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0) RETURNING 1", [own.pk]).fetchall()
        assert inserted == [(1,)]
        assert "row-level security" in refused(
            db, "INSERT INTO campaigns_intervalsample (job_id, client_index, attempt, t, threads, tps, qps, "
                "reads_per_s, writes_per_s, other_per_s, latency_pct_ms, errors_per_s, reconnects_per_s)"
                " VALUES (%s, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0)", [other.pk])
        assert db.execute("UPDATE campaigns_jobclient SET heartbeat_at = now() WHERE job_id = %s",
                          [own.pk]).rowcount == 1
        # A request that the server measure a job again: on its own client, yes; on another host's, no row to write
        # (so a re-measure message it pushes for that job is refused: tests/test_client_remeasure_dispatch.py).
        assert db.execute("UPDATE campaigns_jobclient SET remeasure_cause = 'spoiled' WHERE job_id = %s",
                          [own.pk]).rowcount == 1
        assert db.execute("UPDATE campaigns_jobclient SET remeasure_cause = 'forged' WHERE job_id = %s",
                          [other.pk]).rowcount == 0
        # It cannot take another host's name, or move its client to another job.
        assert db.execute("UPDATE campaigns_clienthost SET cores = 64 WHERE hostname = 'acc-b'").rowcount == 0
        assert "permission denied" in refused(db, "UPDATE campaigns_clienthost SET labels = '{x}'")
        assert "permission denied" in refused(db, "UPDATE campaigns_clienthost SET hostname = 'acc-b'")
        # Nor the server's own count of its job's work, which its figures are checked against.
        assert "permission denied" in refused(db, "UPDATE campaigns_job SET server_work = '{}' WHERE id = %s",
                                               [own.pk])
        assert "permission denied" in refused(db, "UPDATE campaigns_jobclient SET job_id = %s WHERE job_id = %s",
                                               [other.pk, own.pk])
    assert JobResult.objects.get(job=other).qps == 1544.0


TAKEOVER = [
    # The takeover script, step by step, as the host's worker user ran it with the worker's env file.
    ("read every target's password", "SELECT count(*) FROM campaigns_target WHERE password_encrypted <> ''"),
    ("change a job's result", "UPDATE campaigns_jobresult SET qps = 99999"),
    ("change a job's verdict", "UPDATE campaigns_job SET verdict = 'valid' WHERE id = %(other)s"),
    ("insert seconds into another host's job",
     "INSERT INTO campaigns_intervalsample (job_id, client_index, attempt, t, threads, tps, qps, reads_per_s, "
     "writes_per_s, other_per_s, latency_pct_ms, errors_per_s, reconnects_per_s) VALUES (%(other)s, 0, 1, 9, 1, 1, 1, 1,"
     " 0, 0, 1, 0, 0)"),
    ("rewrite admin's password hash", "UPDATE auth_user SET password = 'x' WHERE username = 'acc-admin'"),
    ("make every user superuser", "UPDATE auth_user SET is_superuser = true"),
    ("read sessions", "SELECT * FROM django_session"),
    ("read API tokens", "SELECT * FROM campaigns_apitoken"),
    ("re-point a target's host", "UPDATE campaigns_target SET host = 'evil.example' WHERE id = %(other_target)s"),
    ("delete runs", "DELETE FROM campaigns_run"),
    ("set a sequence back", "SELECT setval('campaigns_job_id_seq', 1)"),
    ("read another host's sealed password", "SELECT token FROM campaigns_sealedpassword WHERE host_name = 'acc-b'"),
]


def test_the_takeover_script_is_refused_step_by_step_but_its_own_jobs_seconds(access):
    world = _world()
    host = client_access.client_host_issue(hostname="acc-a")
    values = {"other": world["other"].pk, "other_target": world["other"].target_id}
    outcomes = {}
    with as_host(host) as db:
        for what, statement in TAKEOVER:
            try:
                cursor = db.execute(statement, values)
                rows = cursor.fetchall() if cursor.description else []
                outcomes[what] = ("changed nothing" if cursor.rowcount == 0 or rows in ([], [(0,)])
                                  else f"went through: {rows or cursor.rowcount}")
            except psycopg.Error as exc:
                outcomes[what] = "refused: " + str(exc).splitlines()[0]
        own_seconds = db.execute(
            "INSERT INTO campaigns_intervalsample (job_id, client_index, attempt, t, threads, tps, qps, reads_per_s,"
            " writes_per_s, other_per_s, latency_pct_ms, errors_per_s, reconnects_per_s)"
            " VALUES (%s, 0, 1, 2, 1, 1, 1, 1, 0, 0, 1, 0, 0)", [world["own"].pk]).rowcount
    assert all(outcome.startswith(("refused", "changed nothing")) for outcome in outcomes.values()), outcomes
    assert own_seconds == 1
    # None of it happened.
    assert JobResult.objects.get(job=world["other"]).qps == 1544.0
    assert get_user_model().objects.get(username="acc-admin").check_password("Admin-Pw-1")


def test_its_redis_user_reaches_the_broker_queues_only_and_revoking_ends_it_all(access):
    world = _world()
    host = client_access.client_host_issue(hostname="acc-a")
    broker = redis.Redis.from_url(host.redis_url, socket_timeout=5)
    queue = client_access.settings.CELERY_TASK_DEFAULT_QUEUE
    assert broker.ping() and broker.lpush(f"{queue}.host.acc-a", "nudge") >= 1
    assert broker.lpop(f"{queue}.host.acc-a") == b"nudge"
    # What it sends the server goes to the shared queue, which it may push to and not read: it takes none of the
    # server's tasks and sees none of their arguments.
    access.client.delete(queue)
    assert broker.lpush(queue, "close my job") == 1
    for command in (("RPOP", queue), ("LRANGE", queue, 0, -1), ("BRPOP", queue, 1), ("LINDEX", queue, 0)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            broker.execute_command(*command)
    assert access.client.rpop(queue) == b"close my job"
    # The server queue (a schedule's firing, a notification), another host's queue and the server's unacked
    # messages are not its keys at all: it can neither send the server's own tasks nor take another host's.
    for command in (("LPUSH", f"{queue}.server", "fire schedule 1"), ("LPUSH", f"{queue}.host.acc-b", "x"),
                    ("BRPOP", f"{queue}.host.acc-b", 1), ("RPOP", f"{queue}.host.acc-a2"),
                    ("HGETALL", "unacked"), ("HDEL", "unacked", "tag"), ("ZRANGE", "unacked_index", 0, -1)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            broker.execute_command(*command)
    assert b"fire schedule 1" not in access.client.lrange(f"{queue}.server", 0, -1)
    assert b"x" not in access.client.lrange(f"{queue}.host.acc-b", 0, -1)
    for command in (("FLUSHALL",), ("FLUSHDB",), ("CONFIG", "SET", "requirepass", "x"), ("CONFIG", "GET", "*"),
                    ("SHUTDOWN", "NOSAVE"), ("KEYS", "*"), ("ACL", "LIST"), ("SCRIPT", "FLUSH")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            broker.execute_command(*command)
    # Celery's remote control is a PUBLISH to the broadcast exchange: a client host cannot tell the server's worker
    # (or any other) to shut down or stop consuming.
    from celery import Celery

    pidbox = f"/{broker.connection_pool.connection_kwargs.get('db', 0)}.celery.pidbox"
    for command in (("PUBLISH", pidbox, "shutdown"), ("SPUBLISH", pidbox, "shutdown")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            broker.execute_command(*command)
    listener = access.client.pubsub()
    listener.psubscribe("*celery.pidbox")
    assert listener.get_message(timeout=2)["type"] == "psubscribe"
    # `celery -b <its broker URL> control shutdown`, as the attacker would type it.
    # (Not the current app: the tests after this one would publish to its broker.)
    attacker = Celery("attacker", broker=host.redis_url, set_as_current=False)
    attacker.conf.broker_connection_retry = False
    try:
        attacker.control.broadcast("shutdown", reply=False)
    except Exception as exc:  # noqa: BLE001 (refused is the point; how kombu says so is its own)
        assert "noperm" in str(exc).lower() or "permission" in str(exc).lower(), exc
    finally:
        attacker.close()
    assert listener.get_message(timeout=1) is None
    listener.close()
    # A script runs under the same ACL: what the user may not do, a script of its may not either.
    access.client.set("outside-the-broker", "kept")
    with pytest.raises(redis.exceptions.ResponseError, match="(?i)no permissions|noperm|can't run this command|can't access"):
        broker.eval("return redis.call('FLUSHALL')", 0)
    with pytest.raises(redis.exceptions.ResponseError, match="(?i)no permissions|noperm|can't run this command|can't access"):
        broker.eval("return redis.call('GET', KEYS[1])", 1, "outside-the-broker")
    assert access.client.get("outside-the-broker") == b"kept"
    with pytest.raises(redis.exceptions.NoPermissionError):  # the cache's keys are not the broker's
        broker.get(f"benchapp-{connection.settings_dict['NAME']}:1:anything")
    assert access.client.ping()  # the test's Redis still runs, its data there

    db = as_host(host)
    assert db.execute("SELECT count(*) FROM campaigns_job").fetchone()[0] == 2
    revoked = client_access.client_host_revoke(hostname="acc-a", user=world["user"])
    assert revoked.revoked_at is not None and revoked.revoked_by == world["user"]
    # Its open session is ended, it cannot log in again, and its Redis user is gone with its connections.
    with pytest.raises(psycopg.OperationalError):
        db.execute("SELECT 1")
    with pytest.raises(psycopg.OperationalError, match="not permitted to log in"):
        as_host(host)
    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ConnectionError)):
        redis.Redis.from_url(host.redis_url, socket_timeout=5).ping()
    assert HostAccess.objects.get(hostname="acc-a").is_revoked()
    # Issued again, it gets new passwords and its access back.
    again = client_access.client_host_issue(hostname="acc-a")
    assert again.database_url != host.database_url and again.redis_url != host.redis_url
    with as_host(again) as db:
        assert db.execute("SELECT count(*) FROM campaigns_job").fetchone()[0] == 2


def test_an_admin_revokes_a_host_from_the_api_or_the_hosts_page_and_others_may_not(access, role_client):
    from rest_framework.test import APIClient

    from tests.helpers.users import make_user

    client_access.client_host_issue(hostname="acc-api")
    client_access.client_host_issue(hostname="acc-page")
    hosts = {name: ClientHost.objects.create(hostname=name, queue=f"q.host.{name}", role="client")
             for name in ("acc-api", "acc-page", "acc-shared")}
    api = APIClient()
    api.force_authenticate(make_user("operator", "acc-operator"))
    refused = api.post(f"/api/v1/client-hosts/{hosts['acc-api'].pk}/revoke/")
    assert refused.status_code == 403 and not HostAccess.objects.get(hostname="acc-api").is_revoked()
    api.force_authenticate(make_user("admin", "acc-admin-api"))
    body = api.get("/api/v1/client-hosts/").json()
    listed = {h["hostname"]: h["access"] for h in (body["results"] if isinstance(body, dict) else body)}
    assert listed == {"acc-api": "own", "acc-page": "own", "acc-shared": "shared"}
    done = api.post(f"/api/v1/client-hosts/{hosts['acc-api'].pk}/revoke/")
    assert done.status_code == 200 and done.json()["access"] == "revoked", done.content
    assert HostAccess.objects.get(hostname="acc-api").is_revoked()
    # A host that was never issued credentials of its own: 400 naming the field, never a 500.
    bad = api.post(f"/api/v1/client-hosts/{hosts['acc-shared'].pk}/revoke/")
    assert bad.status_code == 400 and "hostname" in bad.json(), bad.content
    assert api.post(f"/api/v1/client-hosts/{hosts['acc-api'].pk}/revoke/", {"x": 1}, format="json").status_code == 400

    page = role_client("admin").get("/hosts/").content.decode()
    assert 'data-testid="revoke-acc-page"' in page and 'data-testid="revoke-acc-api"' not in page
    assert 'data-testid="revoke-acc-page"' not in role_client("operator").get("/hosts/").content.decode()
    assert role_client("operator").post(f"/hosts/{hosts['acc-page'].pk}/revoke/").status_code == 403
    answer = role_client("admin").post(f"/hosts/{hosts['acc-page'].pk}/revoke/", follow=True)
    assert "revoked: its database role and Redis user are gone" in answer.content.decode()
    assert HostAccess.objects.get(hostname="acc-page").is_revoked()


@pytest.fixture
def mariadb_password_user(target_databases: dict[str, str]) -> Iterator[tuple[str, str]]:
    """A MariaDB account that needs its password (made through a library connection: no password in an argv)."""
    import MySQLdb

    user, secret = f"acc_{target_databases['mysql']}"[:80], "Acc-Target-Secret-42"
    admin = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", password="")
    try:
        cur = admin.cursor()
        cur.execute("CREATE OR REPLACE USER %s@'%%' IDENTIFIED BY %s", [user, secret])
        cur.execute(f"GRANT ALL ON `{target_databases['mysql']}`.* TO %s@'%%'", [user])
        yield user, secret
        cur.execute("DROP USER IF EXISTS %s@'%%'", [user])
    finally:
        admin.close()


@pytest.mark.integration
def test_a_worker_with_only_its_own_credentials_runs_its_job_and_stops_beating_once_revoked(
        access, make_worker, mariadb_password_user, test_db_name):
    """A client host's real worker with nothing but its issued credentials (no field key, a role under row-level
    security, an ACL user) joins, runs a job on a target with a password (sealed for it), and after its revocation
    its heartbeat fails. The server's worker (role all) coordinates, on the same Redis of the test's own."""
    from django.db.models import Count

    from campaigns.models import IntervalSample, Job
    from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory
    from tests.helpers.faults import host_named, launch_through
    from tests.helpers.waiting import wait_for

    name = host_named("acc-worker")
    issued = client_access.client_host_issue(hostname=name)
    make_worker(host_named("acc-server"), extra_env={**access.env, "BENCHAPP_WORKER_ROLE": "all"})
    # Only what the host's env file gives: its own database role and Redis user; no field key, no cache of the server.
    # Started as scripts/worker.sh starts a client host's (benchapp.client_worker: no mingle, whose hello is a
    # broadcast this Redis user may not PUBLISH).
    worker = make_worker(name, extra_env={
        **access.env, "DATABASE_URL": issued.database_url, "REDIS_URL": issued.redis_url,
        "BENCHAPP_CACHE_URL": issued.redis_url.rsplit("/", 1)[0] + "/1", "BENCHAPP_WORKER_ROLE": "client",
        "BENCHAPP_FIELD_KEY": "", "BENCHAPP_FIELD_KEYS": "", "BENCHAPP_HEARTBEAT_S": "1"},
        command=[sys.executable, "-m", "benchapp.client_worker", "-E", "--concurrency", "1", "-Q",
                 access.env["BENCHAPP_QUEUE"], "-n", f"{name}@%h"])
    host = wait_for(lambda: ClientHost.objects.filter(hostname=name).exclude(public_key="").first(), timeout_s=60,
                    what="the host to join")
    user, secret = mariadb_password_user
    campaign = CampaignFactory(
        targets=[TargetFactory(user=user, password=secret)], threads=[1], client_hosts=[name],
        scenarios=[ScenarioFactory(time_s=3, dataset=DatasetFactory(name="acc-tiny", tables=1, table_size=500))])
    run = launch_through(access, campaign.pk, test_db_name)
    job = wait_for(lambda: Job.objects.filter(run=run, status__in=Job.FINISHED).first(), timeout_s=180,
                   what="the job to finish")
    assert job.status == Job.Status.SUCCEEDED, (job.error, worker.log_text()[-4000:])
    client = job.clients.get()
    assert client.host_name == name and client.status == JobClient.Status.SUCCEEDED and job.claimed_by != name
    assert IntervalSample.objects.filter(job=job).aggregate(n=Count("id"))["n"] >= 2
    log = worker.log_text()
    assert secret not in log and "permission denied" not in log and "row-level security" not in log, log[-4000:]

    client_access.client_host_revoke(hostname=name)
    revoked_at = ClientHost.objects.get(pk=host.pk).last_heartbeat
    wait_for(lambda: "heartbeat failed" in worker.log_text(), timeout_s=30, what="the next heartbeat to fail")
    time.sleep(3)
    assert ClientHost.objects.get(pk=host.pk).last_heartbeat <= revoked_at + _timedelta(seconds=1.5)


def _timedelta(**kwargs: float) -> Any:
    from datetime import timedelta

    return timedelta(**kwargs)


def test_a_restarted_redis_gets_the_hosts_users_back_from_their_hashes_and_never_a_revoked_ones(access):
    """Redis keeps ACL users made with ACL SETUSER in memory only: after a restart every joined host would be locked
    out until an admin issued it new credentials. The server gives each unrevoked host its user back, with the same
    password (from its stored SHA-256) and this release's rules, on the reconciler's next pass."""
    kept = client_access.client_host_issue(hostname="acl-kept")
    gone = client_access.client_host_issue(hostname="acl-gone")
    client_access.client_host_revoke(hostname="acl-gone")
    assert HostAccess.objects.get(hostname="acl-kept").redis_password_sha256 not in kept.redis_url
    access.kill()
    access.start()
    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)):
        redis.Redis.from_url(kept.redis_url, socket_timeout=5).ping()
    assert client_access.redis_acl_restore() == [kept.redis_user]
    host = redis.Redis.from_url(kept.redis_url, socket_timeout=5)
    assert host.ping()
    with pytest.raises(redis.exceptions.NoPermissionError):  # its rules came back too
        host.execute_command("PUBLISH", "/0.celery.pidbox", "shutdown")
    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)):
        redis.Redis.from_url(gone.redis_url, socket_timeout=5).ping()
    assert client_access.redis_acl_restore() == []  # nothing missing: nothing set
    assert client_access.redis_acl_restore(always=True) == [kept.redis_user]
    assert host.ping()  # set again, its connection and password still good


def test_a_host_cannot_choose_its_own_labels_only_the_server_gives_them(access):
    """Labels pick hosts for campaigns (and so which hosts get their jobs' passwords): a host that announced
    "prod-tdsql" would attract that campaign's jobs. Its role may neither insert its row with labels of its own nor
    update them; the server gives them at issue (client_host_issue --labels) or later (client_host_labels)."""
    issued = client_access.client_host_issue(hostname="lab-a", labels=["rack-2", " rack-2 ", "near tdsql"])
    assert HostAccess.objects.get(hostname="lab-a").labels == ["near tdsql", "rack-2"]
    with connection.cursor() as cursor:  # every column the row needs, as its worker's INSERT gives them
        cursor.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = "
                       "'campaigns_clienthost' AND is_nullable = 'NO' AND column_default IS NULL")
        needed = dict(cursor.fetchall())
    fill = {"text": "''", "character varying": "''", "integer": "0", "bigint": "0", "double precision": "0",
            "timestamp with time zone": "now()", "jsonb": "'{}'", "ARRAY": "'{}'", "boolean": "false"}
    values = {name: fill[kind] for name, kind in needed.items()}
    values.update(hostname="'lab-a'", queue="'q'", labels="'{prod-tdsql}'")
    with as_host(issued) as db:
        db.execute(f"INSERT INTO campaigns_clienthost ({', '.join(values)}) VALUES ({', '.join(values.values())})")
        assert ClientHost.objects.get(hostname="lab-a").labels == ["near tdsql", "rack-2"]
        assert "permission denied" in refused(db, "UPDATE campaigns_clienthost SET labels = '{prod-tdsql}' "
                                                  "WHERE hostname = 'lab-a'")
        db.execute("UPDATE campaigns_clienthost SET cores = 4 WHERE hostname = 'lab-a'")  # its facts it may
    assert ClientHost.objects.get(hostname="lab-a").labels == ["near tdsql", "rack-2"]
    assert client_access.client_host_labels_set(hostname="lab-a", labels=["rack-3"]) == ["rack-3"]
    assert ClientHost.objects.get(hostname="lab-a").labels == ["rack-3"]
    client_access.client_host_issue(hostname="lab-a")  # issued again without labels: they stay
    assert HostAccess.objects.get(hostname="lab-a").labels == ["rack-3"]
    with pytest.raises(ValidationError, match="not a label"):
        client_access.client_host_labels_set(hostname="lab-a", labels=["ok", "bad\nline"])
    with pytest.raises(ValidationError, match="no credentials of its own"):
        client_access.client_host_labels_set(hostname="never-issued", labels=["x"])
