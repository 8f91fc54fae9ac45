"""Each client host's own credentials, and nothing more: issued by an admin for one host name, revoked
at once.

- **PostgreSQL**: a login role of its own, a member of the group role BENCHAPP_CLIENT_DB_GROUP (`benchapp_client`).
  The group may read and write only what a client host's worker needs, and row-level security limits every row to
  the host's own jobs: a job it has a client of, was sent a password for, or that tests the host itself. It reads
  those jobs, their clients, runs, campaigns and targets (the catalogue of scenarios, datasets and workloads too),
  updates its own client rows and its active jobs, inserts their samples, reads the passwords sealed for it while
  their job is open (execution.sealed deletes them when the job is closed); it cannot update a finished job, read
  another host's, or touch auth_*, sessions, API tokens, other hosts' sealed passwords or any sequence but the
  samples' (USAGE: nextval, never setval). Its sessions keep TCP keepalives, so that a host that vanishes frees them
  within minutes.
- **Redis**: an ACL user of its own, limited to the broker's queues and the commands Celery's worker uses: no
  FLUSHALL, CONFIG, SHUTDOWN, KEYS or other dangerous commands, and not the cache's keys.
- **Revoking** locks the role (NOLOGIN, out of the group), ends its sessions and deletes the Redis user (its
  connections are closed): the host's next heartbeat fails.

client_access_install() puts the group's grants, functions and policies in place (idempotent). Issuing a host calls
it, `manage.py client_host_issue --install-only` runs it alone, and every `migrate` runs it again once this database
has client hosts (client_access_after_migrate, connected in campaigns/apps.py): its grants name the models' columns
and tables, so a column or table a migration adds would otherwise stay out of a host's reach until a host is
issued. serve-clients.sh does not call it: it makes the group role and takes back an older version's grants.
"""
from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg.errors
import redis
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, OperationalError, connection, models, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from psycopg import sql

from benchapp.liveness import consumer_key
from campaigns.execution.hosts import host_queue
from campaigns.models import (
    Attempt,
    Campaign,
    ClientHost,
    Dataset,
    HostAccess,
    HostSample,
    InstanceSpec,
    IntervalSample,
    Job,
    JobClient,
    JobResult,
    PackedSeconds,
    Product,
    RoundTrip,
    Run,
    Scenario,
    SealedPassword,
    ServerSample,
    Target,
    Workload,
    WorkloadVersion,
)

log = logging.getLogger(__name__)

HOSTNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
FINISHED = "('succeeded', 'failed', 'cancelled')"
# Server-side TCP keepalives of a client host's sessions (its role's settings): a host that vanished without closing
# them (a reboot, a cut cable) has them ended after about 60 + 6 x 10 s instead of the kernel's 2 hours. A session
# that had data on its way when the host went (an answer, a notice) is in retransmission, not idle, and keepalives
# never start: tcp_user_timeout (milliseconds) ends it once data stays unacknowledged for 2 minutes, instead of
# tcp_retries2's quarter of an hour.
ROLE_SETTINGS = {"tcp_keepalives_idle": "60", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "6",
                 "tcp_user_timeout": "120000"}


@dataclass(frozen=True)
class HostCredentials:
    """What an issued host is given, once: its settings for scripts/join-client.sh --env-file (secrets: 0600)."""

    hostname: str
    db_role: str
    redis_user: str
    database_url: str
    redis_url: str

    def env_text(self) -> str:
        return (f"# benchapp client host {self.hostname}: its own credentials (campaigns/services/client_access.py)."
                " Secrets: keep it 0600, delete the copy once joined.\n"
                f"DATABASE_URL={self.database_url}\nREDIS_URL={self.redis_url}\n"
                f"BENCHAPP_HOSTNAME={self.hostname}\nBENCHAPP_QUEUE={settings.CELERY_TASK_DEFAULT_QUEUE}\n")


def _table(model: type[models.Model]) -> sql.Identifier:
    return sql.Identifier(model._meta.db_table)


def _columns(model: type[models.Model], *, leave_out: Iterable[str]) -> sql.Composable:
    left = set(leave_out)
    names = [str(f.column) for f in model._meta.concrete_fields if f.name not in left and f.column not in left]
    return sql.SQL(", ").join([sql.Identifier(name) for name in names])


def _sequence(model: type[models.Model]) -> sql.Identifier:
    return sql.Identifier(f"{model._meta.db_table}_id_seq")


# Read-only, every row: what any job's scenario is made of (no secrets in them).
CATALOGUE: tuple[type[models.Model], ...] = (Scenario, Dataset, Product, InstanceSpec, Workload, WorkloadVersion)
# Under row-level security: each gets the client group's policies below, and one that lets every other role through.
GUARDED: tuple[type[models.Model], ...] = (Job, JobClient, JobResult, IntervalSample, HostSample, ServerSample,
                                            PackedSeconds, RoundTrip, ClientHost, SealedPassword, Target, Run,
                                            Campaign, Attempt)
# USAGE on their id sequences (nextval for the rows it inserts; never setval).
SEQUENCED: tuple[type[models.Model], ...] = (JobClient, IntervalSample, HostSample, ServerSample, RoundTrip,
                                             ClientHost)
# The functions its policies call (made by _FUNCTIONS below, owned by whoever installed them).
FUNCTION_NAMES = ("benchapp_host", "benchapp_host_job", "benchapp_host_job_active", "benchapp_host_labels_keep")

_FUNCTIONS = """
CREATE OR REPLACE FUNCTION benchapp_host() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = public, pg_temp AS
$$ SELECT hostname::text FROM campaigns_hostaccess WHERE db_role = session_user AND revoked_at IS NULL $$;
CREATE OR REPLACE FUNCTION benchapp_host_job(bigint) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = public, pg_temp AS
$$ SELECT EXISTS (SELECT 1 FROM campaigns_jobclient c WHERE c.job_id = $1 AND c.host_name = benchapp_host())
       OR EXISTS (SELECT 1 FROM campaigns_sealedpassword s WHERE s.job_id = $1 AND s.host_name = benchapp_host())
       OR EXISTS (SELECT 1 FROM campaigns_job j JOIN campaigns_target t ON t.id = j.target_id
                  WHERE j.id = $1 AND t.kind = 'client_host' AND t.host = benchapp_host()) $$;
CREATE OR REPLACE FUNCTION benchapp_host_job_active(bigint) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = public, pg_temp AS
$$ SELECT benchapp_host_job($1)
      AND EXISTS (SELECT 1 FROM campaigns_job j WHERE j.id = $1 AND j.status NOT IN ('succeeded', 'failed',
                                                                                     'cancelled')) $$;
CREATE OR REPLACE FUNCTION benchapp_host_labels_keep() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp AS
$$ BEGIN
    -- TG_ARGV[0]: the client group. A session of one of its members (a client host's own role) gets the labels it
    -- was issued; any other (the server's, an admin's) writes what it writes. session_user: inside a definer's
    -- function current_user is the definer.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = TG_ARGV[0])
       AND pg_has_role(session_user, TG_ARGV[0], 'MEMBER') THEN
        NEW.labels := COALESCE((SELECT a.labels FROM campaigns_hostaccess a WHERE a.hostname = NEW.hostname), '{}');
    END IF;
    RETURN NEW;
END $$;
"""
# A client host's row gets the labels it was issued, whatever it writes (a host that chose its own labels would
# attract the jobs, and passwords, of every campaign that picks its hosts by label).
_LABELS_TRIGGER = """
DROP TRIGGER IF EXISTS benchapp_host_labels ON campaigns_clienthost;
CREATE TRIGGER benchapp_host_labels BEFORE INSERT OR UPDATE ON campaigns_clienthost FOR EACH ROW
    EXECUTE FUNCTION benchapp_host_labels_keep({group});
"""

# (table, command, USING, WITH CHECK) for the client group; None leaves a clause out.
_POLICIES: tuple[tuple[type[models.Model], str, str | None, str | None], ...] = (
    (Job, "SELECT", "benchapp_host_job(id)", None),
    (Job, "UPDATE", "benchapp_host_job_active(id)", "benchapp_host_job(id)"),
    (JobClient, "SELECT", "benchapp_host_job(job_id)", None),
    (JobClient, "UPDATE", f"host_name = benchapp_host() AND status NOT IN {FINISHED}",
     "host_name = benchapp_host() AND benchapp_host_job(job_id)"),
    # A host test's coordinator, on the host it tests, makes that job's one client.
    (JobClient, "INSERT", None, "host_name = benchapp_host() AND benchapp_host_job_active(job_id)"),
    (JobResult, "SELECT", "benchapp_host_job(job_id)", None),
    (JobResult, "DELETE", "benchapp_host_job_active(job_id)", None),  # a measurement started again
    (IntervalSample, "SELECT", "benchapp_host_job(job_id)", None),
    (IntervalSample, "INSERT", None, "benchapp_host_job_active(job_id)"),
    (HostSample, "SELECT", "benchapp_host_job(job_id)", None),
    (HostSample, "INSERT", None, "benchapp_host_job_active(job_id)"),
    (ServerSample, "SELECT", "benchapp_host_job(job_id)", None),
    (ServerSample, "INSERT", None, "benchapp_host_job_active(job_id)"),
    (PackedSeconds, "SELECT", "benchapp_host_job(job_id)", None),  # packed by the server, read like the rows
    # A lost attempt of its own jobs whose sysbench may still run holds the server and hosts (execution.turns).
    (Attempt, "SELECT", "benchapp_host_job(job_id)", None),
    (RoundTrip, "SELECT", "host_name = benchapp_host()", None),
    (RoundTrip, "INSERT", None, "host_name = benchapp_host() AND EXISTS (SELECT 1 FROM campaigns_job j WHERE "
                                "j.run_id = campaigns_roundtrip.run_id AND j.target_id = campaigns_roundtrip.target_id"
                                " AND benchapp_host_job_active(j.id))"),
    (ClientHost, "SELECT", "hostname = benchapp_host()", None),
    (ClientHost, "INSERT", None, "hostname = benchapp_host()"),
    (ClientHost, "UPDATE", "hostname = benchapp_host()", "hostname = benchapp_host()"),
    # Only while its job is open: a closed job's copy (deleted by execution.sealed.job_passwords_forget, or left by
    # an end that does not pass through it) is no longer the host's to open.
    (SealedPassword, "SELECT", "host_name = benchapp_host() AND EXISTS (SELECT 1 FROM campaigns_job j WHERE "
                               f"j.id = campaigns_sealedpassword.job_id AND j.phase <> '{Job.Phase.DONE.value}')",
     None),
    # The job policies above apply inside these subqueries: only the host's own jobs' targets, runs and campaigns.
    (Target, "SELECT", "EXISTS (SELECT 1 FROM campaigns_job j WHERE j.target_id = campaigns_target.id) OR "
                       "(kind = 'client_host' AND host = benchapp_host())", None),
    (Run, "SELECT", "EXISTS (SELECT 1 FROM campaigns_job j WHERE j.run_id = campaigns_run.id)", None),
    (Campaign, "SELECT", "EXISTS (SELECT 1 FROM campaigns_run r WHERE r.campaign_id = campaigns_campaign.id)", None),
)


def hosts_with_access() -> models.QuerySet[ClientHost]:
    """Every client host with its own credentials' state (ClientHost.access_state()) in the same query."""
    issued = HostAccess.objects.filter(hostname=models.OuterRef("hostname"))
    return ClientHost.objects.annotate(access_issued=models.Exists(issued),
                                       access_revoked_at=models.Subquery(issued.values("revoked_at")[:1]))


def client_group() -> str:
    return settings.BENCHAPP_CLIENT_DB_GROUP


def client_access_install() -> None:
    """The client group role (NOLOGIN), its grants, the functions its policies use and the policies themselves, in
    benchapp's database; run again, it puts them back as they should be (a grant given since is taken away).

    Its ALTER TABLEs take each table's strongest lock while workers write those tables: PostgreSQL may pick it as a
    deadlock's victim (its transaction is rolled back whole), so it is tried again, three times at most."""
    for try_no in range(3):
        try:
            _client_access_install_once()
            return
        except OperationalError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.DeadlockDetected) or try_no == 2:
                raise
            time.sleep(0.2 * (try_no + 1))


def _client_access_install_once() -> None:
    group = sql.Identifier(client_group())
    with transaction.atomic(), connection.cursor() as cursor:
        # Roles are the cluster's: another database's installation may have made it at the same moment.
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('benchapp client group role'))")
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [client_group()])
        if cursor.fetchone() is None:
            cursor.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(group))
        else:  # the login role serve-clients.sh once gave every client host: a group now, no one logs in as it
            cursor.execute(sql.SQL("ALTER ROLE {} NOLOGIN PASSWORD NULL").format(group))
        cursor.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {}").format(group))
        cursor.execute(sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {}").format(group))
        cursor.execute(sql.SQL("REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM {}").format(group))
        cursor.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(group))
        cursor.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(connection.settings_dict["NAME"]), group))
        cursor.execute(_FUNCTIONS)
        cursor.execute(sql.SQL(_LABELS_TRIGGER).format(group=sql.Literal(client_group())))
        cursor.execute("REVOKE ALL ON FUNCTION benchapp_host_labels_keep() FROM PUBLIC")
        for name in ("benchapp_host()", "benchapp_host_job(bigint)", "benchapp_host_job_active(bigint)"):
            cursor.execute(sql.SQL("REVOKE ALL ON FUNCTION {} FROM PUBLIC").format(sql.SQL(name)))
            cursor.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(name), group))
        for model in CATALOGUE:
            cursor.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(_table(model), group))
        grants = [
            ("SELECT", Job), ("SELECT", JobClient), ("INSERT", JobClient), ("SELECT, DELETE", JobResult),
            ("SELECT, INSERT", IntervalSample), ("SELECT, INSERT", HostSample), ("SELECT, INSERT", ServerSample),
            ("SELECT", PackedSeconds), ("SELECT", Attempt), ("SELECT, INSERT", RoundTrip), ("SELECT, INSERT", ClientHost), ("SELECT", SealedPassword),
            ("SELECT", Run),
        ]
        for privileges, model in grants:
            cursor.execute(sql.SQL("GRANT {} ON {} TO {}").format(sql.SQL(privileges), _table(model), group))
        # Not the encrypted columns, even of its own jobs' target and campaign: it has no key for them, and its
        # worker never selects them (models.SecretsDeferredManager).
        for model, secret in ((Target, "password_encrypted"), (Campaign, "webhook_url_encrypted")):
            cursor.execute(sql.SQL("GRANT SELECT ({}) ON {} TO {}").format(
                _columns(model, leave_out=("id", secret)) + sql.SQL(", id"), _table(model), group))
        # Updates only of what a job's execution writes: never which run, target or scenario a job is, the server's
        # own count of the target's work (what the host's figures are checked against), which job or host a client
        # is, or a host's name or labels.
        for model, fixed in ((Job, ("id", "run", "target", "scenario", "imported", "server_work")),
                             (JobClient, ("id", "job", "index", "host_name")),
                             (ClientHost, ("id", "hostname", "labels"))):
            cursor.execute(sql.SQL("GRANT UPDATE ({}) ON {} TO {}").format(
                _columns(model, leave_out=fixed), _table(model), group))
        for model in SEQUENCED:
            cursor.execute(sql.SQL("GRANT USAGE ON SEQUENCE {} TO {}").format(_sequence(model), group))
        for model in GUARDED:
            table = _table(model)
            cursor.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(table))
            cursor.execute("SELECT policyname FROM pg_policies WHERE schemaname = 'public' AND tablename = %s "
                           "AND policyname LIKE 'benchapp\\_%%'", [model._meta.db_table])
            for (policy,) in cursor.fetchall():
                cursor.execute(sql.SQL("DROP POLICY {} ON {}").format(sql.Identifier(policy), table))
            # Every role that is no client host passes as before (benchapp's own, when it owns no table).
            cursor.execute(sql.SQL(
                "CREATE POLICY benchapp_others ON {} TO PUBLIC USING ((SELECT NOT pg_has_role(current_user, {}, "
                "'MEMBER'))) WITH CHECK ((SELECT NOT pg_has_role(current_user, {}, 'MEMBER')))").format(
                table, sql.Literal(client_group()), sql.Literal(client_group())))
        for n, (model, command, using, check) in enumerate(_POLICIES):
            clauses = [sql.SQL("USING ({})").format(sql.SQL(using))] if using else []
            if check:
                clauses.append(sql.SQL("WITH CHECK ({})").format(sql.SQL(check)))
            cursor.execute(sql.SQL("CREATE POLICY {} ON {} FOR {} TO {} {}").format(
                sql.Identifier(f"benchapp_client_{command.lower()}_{n}"), _table(model), sql.SQL(command), group,
                sql.SQL(" ").join(clauses)))


def client_roles_exist() -> bool:
    """Whether this database has issued a client host credentials that still exist and are not revoked (False
    before the migration that makes campaigns_hostaccess, and on a new or test database)."""
    table = HostAccess._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [f"public.{table}"])
        if not cursor.fetchone()[0]:
            return False
        cursor.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} a JOIN pg_roles r ON r.rolname = a.db_role "
                               "WHERE a.revoked_at IS NULL)").format(sql.Identifier(table)))
        return bool(cursor.fetchone()[0])


def client_access_grantable() -> bool:
    """Whether this session's user may run client_access_install(): a superuser; or a role with CREATEROLE (and,
    from PostgreSQL 16, ADMIN OPTION on the group role, which it has when it made it) that owns the tables and
    sequences it grants and the functions it replaces, may grant CONNECT on the database and create in public."""
    relations = [model._meta.db_table for model in (*CATALOGUE, *GUARDED)]
    relations += [f"{model._meta.db_table}_id_seq" for model in SEQUENCED]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.rolsuper OR (r.rolcreaterole"
            " AND (g.oid IS NULL OR current_setting('server_version_num')::int < 160000"
            "      OR pg_has_role(g.oid, 'MEMBER WITH ADMIN OPTION'))"
            " AND has_database_privilege(current_database(), 'CONNECT WITH GRANT OPTION')"
            " AND has_schema_privilege('public', 'CREATE')"
            " AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace"
            "                 AND c.relname = ANY(%s) AND NOT pg_has_role(c.relowner, 'USAGE'))"
            " AND NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"
            "                 AND p.proname = ANY(%s) AND NOT pg_has_role(p.proowner, 'USAGE')))"
            " FROM pg_roles r LEFT JOIN pg_roles g ON g.rolname = %s WHERE r.rolname = current_user",
            [relations, list(FUNCTION_NAMES), client_group()])
        row = cursor.fetchone()
    return bool(row and row[0])


def client_access_after_migrate(*, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """The post_migrate receiver (campaigns/apps.py): puts the client group's grants back as the models now say,
    so that a column or table a migration added is granted to client hosts at once.

    Nothing on a database without client hosts (a new one, a test database: two small queries), nor on one that is not at
    its latest migration (a migrate to an earlier one: the grants name columns it lacks). A migrating user that may
    not grant (client_access_grantable) leaves the grants as they were, with a warning naming what to run."""
    if using != DEFAULT_DB_ALIAS or not client_roles_exist():
        return
    if not client_access_grantable():
        log.warning("client hosts' grants NOT reinstalled after migrate: database user %s may not grant them; "
                    "run `manage.py client_host_issue --install-only` as the tables' owner (with CREATEROLE) or a "
                    "superuser, or columns and tables the migrations added stay out of the client hosts' reach",
                    connection.settings_dict.get("USER") or "(default)")
        return
    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        log.info("client hosts' grants not reinstalled: the database is not at its latest migration")
        return
    client_access_install()
    log.info("client hosts' grants reinstalled after migrate")


def db_role_name(hostname: str) -> str:
    """The host's PostgreSQL role: its name, and a hash of it and this database's (roles are the cluster's)."""
    digest = hashlib.sha256(f"{connection.settings_dict['NAME']}/{hostname}".encode()).hexdigest()[:10]
    return f"bh_{digest}_{re.sub(r'[^a-z0-9_]', '_', hostname.lower())}"[:63]


def redis_user_name(hostname: str) -> str:
    return f"benchapp-host-{settings.CELERY_TASK_DEFAULT_QUEUE}-{hostname}"


def hostname_check(hostname: str) -> str:
    if not HOSTNAME_RE.match(hostname or ""):
        raise ValidationError({"hostname": "letters, digits, '.', '_' and '-' (up to 63), starting with a letter or "
                                           "digit"})
    return hostname


def broker_admin() -> redis.Redis:
    """The broker's Redis as the server reaches it (its password: the default user's), for ACL commands."""
    return redis.Redis.from_url(settings.BENCHAPP_BROKER_ADMIN_URL, socket_timeout=10)


def redis_acl_restore(*, always: bool = False) -> list[str]:
    """Gives every client host that holds unrevoked credentials its Redis user back where Redis lacks it (a Redis
    restart forgets ACL users made with ACL SETUSER), or, with `always`, sets each again with this release's rules
    (the server's worker does at start: an upgrade's rules reach hosts issued before it). From the stored SHA-256 of
    its password, so the host keeps its env file. Returns the users it set; a Redis that does not answer is left to
    the next call (logged)."""
    admin = broker_admin()
    done = []
    rows = HostAccess.objects.filter(revoked_at__isnull=True).exclude(redis_user="").exclude(redis_password_sha256="")
    try:
        for access in rows:
            if not always and admin.execute_command("ACL", "GETUSER", access.redis_user) is not None:
                continue
            admin.execute_command("ACL", "SETUSER", access.redis_user,
                                  *redis_acl_rules(hostname=access.hostname, password_sha256=access.redis_password_sha256))
            done.append(access.redis_user)
    except redis.RedisError as exc:
        log.warning("client hosts' Redis users not restored (%s): tried again at the next reconcile", exc)
    if done:
        log.info("client hosts' Redis users set again: %s", ", ".join(done))
    return done


def redis_acl_rules(*, hostname: str, password_sha256: str) -> list[str]:
    """The ACL of a client host's Redis user: its password (by its SHA-256), its own queue and unacked messages, the shared queue to
    push to only, the exchange bindings, Celery's worker's commands, and its own consumer's pulse
    (benchapp/pulse.py: its heartbeat beats only while that pulse is fresh).

    What a host sends the server (a job's close, a re-measure, a run's next job) goes to the shared queue, which it
    may push to and not read (%W: LPUSH, not RPOP), so it neither takes the server's tasks nor sees their arguments;
    the server queue and every other host's queue are not its keys at all, so it cannot take another host's clients
    or send the server's own tasks (a schedule's firing, a notification). Its unacked messages are kept under its
    own queue's name too (benchapp/settings.py gives kombu those keys on a client host). It may not PUBLISH: no
    broadcast of Celery's remote control (shutdown, cancel_consumer, revoke) comes from a client host."""
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    own = host_queue(hostname_check(hostname))
    return ["reset", "on", f"#{password_sha256}", f"~{consumer_key(hostname)}",
            f"~{own}", f"~{own}\x06*", f"%W~{queue}", f"%W~{queue}\x06*", "~_kombu.*",
            "~*.celery.pidbox*", "~*.reply.celery.pidbox*", "~celeryev.*", "&*",
            "-@all", "+@connection", "+@list", "+@set", "+@sortedset", "+@hash", "+@string", "+@pubsub",
            # kombu's mutex is a Lua script: scripts run under this user's ACL too (keys and commands alike).
            "+@transaction", "+@scripting", "+time", "+del", "+exists", "+expire", "+pexpire", "+type", "+ttl",
            "-@dangerous", "+info", "-flushall", "-flushdb", "-config", "-shutdown", "-debug", "-keys", "-monitor",
            "-acl", "-module", "-replicaof", "-slaveof", "-save", "-bgsave", "-bgrewriteaof", "-script|flush",
            "-script|kill", "-function",
            # PUBLISH is how kombu sends to a fanout exchange, Celery's remote control's broadcast among them: a
            # host that could publish could tell every worker, the server's too, to shut down, stop consuming or
            # revoke tasks. It still subscribes (a drain reaches it) and answers by LPUSH to the asker's reply queue.
            "-publish", "-spublish"]


_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:/-]{0,99}")


def host_labels_check(labels: Iterable[str] | None) -> list[str]:
    """The labels, stripped, de-duplicated and sorted; ValidationError on "labels" naming one that is not a label
    (1-100 letters, digits, spaces and . _ : / -, starting with a letter or digit)."""
    cleaned = sorted({str(label).strip() for label in labels or () if str(label).strip()})
    for label in cleaned:
        if not _LABEL.fullmatch(label):
            raise ValidationError({"labels": f"{label[:40]!r} is not a label: 1-100 letters, digits, spaces and "
                                             ". _ : / -, starting with a letter or digit"})
    return cleaned


def client_host_labels_set(*, hostname: str, labels: Iterable[str]) -> list[str]:
    """Gives the client host `hostname` (issued credentials of its own) these labels, at once on its row too;
    ValidationError when it has none, or on a label that is not one."""
    cleaned = host_labels_check(labels)
    with transaction.atomic():
        if not HostAccess.objects.filter(hostname=hostname).update(labels=cleaned):
            raise ValidationError({"hostname": f"client host {hostname} has no credentials of its own: its labels "
                                               "are the ones its worker announces (BENCHAPP_HOST_LABELS)"})
        ClientHost.objects.filter(hostname=hostname).update(labels=cleaned)
    return cleaned


def client_host_issue(*, hostname: str, user: Any = None, server_address: str | None = None,
                      pg_port: int | None = None, redis_port: int | None = None,
                      labels: Iterable[str] | None = None) -> HostCredentials:
    """Issues (or issues again, with new passwords) the credentials of one client host name; returns them, the only
    time they are shown. The host's worker joins with them under that name only. `labels` are its labels (None
    keeps those it was issued before): the server's to give, never the host's (HostAccess.labels)."""
    hostname_check(hostname)
    cleaned = None if labels is None else host_labels_check(labels)
    client_access_install()
    role = db_role_name(hostname)
    db_password = secrets.token_urlsafe(24)
    redis_password = secrets.token_urlsafe(24)
    redis_user = redis_user_name(hostname)
    connection.ensure_connection()
    raw = connection.connection
    # The SCRAM verifier is made here: the statement (and any log of it) carries no password.
    verifier = raw.pgconn.encrypt_password(db_password.encode(), role.encode(), b"scram-sha-256").decode()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        exists = cursor.fetchone() is not None
        # Its privileges come from the group (INHERIT), its rows from its own name (benchapp_host()).
        cursor.execute(sql.SQL("{} ROLE {} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
            sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(role), sql.Literal(verifier)))
        cursor.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(client_group()), sql.Identifier(role)))
        for name, value in ROLE_SETTINGS.items():
            cursor.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(sql.Identifier(role), sql.Identifier(name),
                                                                       sql.Literal(value)))
        password_sha256 = hashlib.sha256(redis_password.encode()).hexdigest()
        HostAccess.objects.update_or_create(hostname=hostname, defaults={
            "db_role": role, "redis_user": redis_user, "redis_password_sha256": password_sha256,
            **({} if cleaned is None else {"labels": cleaned}), "issued_at": timezone.now(),
            "issued_by": user if getattr(user, "is_authenticated", False) else None,
            "revoked_at": None, "revoked_by": None})
        if cleaned is not None:
            ClientHost.objects.filter(hostname=hostname).update(labels=cleaned)
        broker_admin().execute_command("ACL", "SETUSER", redis_user,
                                       *redis_acl_rules(hostname=hostname, password_sha256=password_sha256))
    db = connection.settings_dict
    broker = urlsplit(settings.CELERY_BROKER_URL)
    address = server_address or db.get("HOST") or "127.0.0.1"
    database_url = (f"postgres://{role}:{quote(db_password, safe='')}@{address}:{pg_port or db.get('PORT') or 5432}"
                    f"/{db['NAME']}")
    redis_url = (f"redis://{quote(redis_user, safe='')}:{quote(redis_password, safe='')}@"
                 f"{server_address or broker.hostname}:{redis_port or broker.port or 6379}{broker.path or '/0'}")
    return HostCredentials(hostname=hostname, db_role=role, redis_user=redis_user, database_url=database_url,
                           redis_url=redis_url)


def client_host_revoke(*, hostname: str, user: Any = None) -> HostAccess:
    """Ends all a client host may do, at once: its role can no longer log in (and is out of the client group), its
    sessions are ended, its Redis user is deleted (which closes its connections), and its ClientHost row shows it
    offline from its last heartbeat on. ValidationError when the name was never issued credentials."""
    access = HostAccess.objects.filter(hostname=hostname).first()
    if access is None:
        raise ValidationError({"hostname": f"client host {hostname} has no credentials of its own to revoke"})
    role = sql.Identifier(access.db_role)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [access.db_role])
        if cursor.fetchone() is not None:
            cursor.execute(sql.SQL("ALTER ROLE {} NOLOGIN PASSWORD NULL").format(role))
            cursor.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(client_group()), role))
        HostAccess.objects.filter(pk=access.pk).update(
            revoked_at=timezone.now(), revoked_by=user if getattr(user, "is_authenticated", False) else None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                       [access.db_role])
    if access.redis_user:
        # Deleting the user closes the connections it authenticated (Redis 6.2 and later).
        broker_admin().execute_command("ACL", "DELUSER", access.redis_user)
    access.refresh_from_db()
    return access
