"""Shared fixtures: real services only.

Celery workers run as subprocesses against the test database and a Redis database of their own
(15), on a queue unique to this test session, so a developer's running `make run` worker never
sees a test's messages.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pg_targets import pg_target_port, pg_target_psql
from tests.helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
# Set by tests/pytest_env.py before the settings were imported.
TEST_REDIS_URL = os.environ["REDIS_URL"]
SESSION_QUEUE = os.environ["BENCHAPP_QUEUE"]
OUTPUT_DIR = ROOT / "test-output"
# Logs of the processes a test starts (workers, beat files, web servers): a folder per pytest-xdist process, so two
# processes' workers of the same host name never write one file (test-output/gw0/worker-client-a.log).
LOG_DIR = OUTPUT_DIR / os.environ.get("PYTEST_XDIST_WORKER", "")

MYSQL_DB = os.environ["BENCHAPP_TEST_TARGET_DB"]
PGSQL_DB = os.environ["BENCHAPP_TEST_TARGET_DB"]


def record_measurement(line: str) -> None:
    """Keeps a figure a test measured (start skew, detection times) in test-output/measurements.txt."""
    OUTPUT_DIR.mkdir(exist_ok=True)
    with open(OUTPUT_DIR / "measurements.txt", "a") as fh:
        fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")


def _mysql(sql: str) -> None:
    subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", sql], check=True, capture_output=True)


def _pg_createdb(name: str) -> None:
    """`name` on the PostgreSQL targets cluster (tests/helpers/pg_targets.py), made if missing."""
    exists = subprocess.run(
        pg_target_psql("-tAc", f"SELECT 1 FROM pg_database WHERE datname='{name}'"),
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    if not exists:
        subprocess.run(["createdb", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", name],
                       check=True, capture_output=True)


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing(django_test_environment: Any) -> Iterator[None]:
    """Tests create hundreds of users: a PBKDF2 hash (a million rounds) each cost most of `make check`. The
    hashing itself is Django's, tested by Django; tests/test_login_abuse.py counts hashes with its own hasher."""
    from django.test import override_settings

    fast = override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    fast.enable()
    yield
    fast.disable()


# Modules whose every test is `slow` (pytest_collection_modifyitems holds them to it): a run whose -m leaves slow
# tests out, as `make check`'s does, does not import them. tests/test_api_schema.py builds the whole OpenAPI schema
# when it is imported (schemathesis makes a test of each operation): 10 s of CPU in each pytest-xdist process.
SLOW_MODULES = frozenset({"test_api_schema.py"})


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name in SLOW_MODULES and _mark_expression_leaves_out(config.option.markexpr, "slow"):
        return True
    return None


def _mark_expression_leaves_out(text: str, mark: str) -> bool:
    """True when the -m expression deselects every test marked `mark`, whatever other marks it has (each mixture
    of the expression's other names is tried); False when it may select one, or cannot be read here."""
    if not text or "=" in text:
        return False
    from _pytest.mark.expression import Expression

    try:
        expression = Expression.compile(text)
    except SyntaxError:
        return False  # pytest says so itself
    others = sorted(set(re.findall(r"[A-Za-z_]\w*", text)) - {"and", "or", "not", mark})
    for bits in itertools.product((False, True), repeat=len(others)):
        marks = {mark, *(name for name, on in zip(others, bits, strict=True) if on)}
        if expression.evaluate(lambda name, /, marks=marks, **kwargs: name in marks):
            return False
    return True


# Fixtures that start Celery workers or sysbench: a test using one is an integration test whatever its own marks
# say, so `make check` (which leaves integration tests out) never starts a worker by an oversight.
_INTEGRATION_FIXTURES = frozenset({"celery_worker_process", "make_worker", "target_databases"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_MODULES and item.get_closest_marker("slow") is None:
            raise pytest.UsageError(f"{item.nodeid} is not marked slow: every test of {item.path.name} must be "
                                    "(SLOW_MODULES in tests/conftest.py), or move it to another module")
        fixtures = getattr(item, "fixturenames", ())
        if _INTEGRATION_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.integration)
        # pytest-django makes the test database only when a collected test asks for one with the django_db mark: a
        # test that only hands the database's name to other processes (a worker, pg_dump) would otherwise get the
        # name of a database nobody made, or the developer's own, when it runs alone. Those processes see only
        # committed rows, so it is a transactional test.
        if "test_db_name" in fixtures and item.get_closest_marker("django_db") is None:
            item.add_marker(pytest.mark.django_db(transaction=True))


def target_databases_fresh(name: str) -> None:
    """An empty database `name` on both the local MariaDB and the PostgreSQL targets cluster (whatever was there is
    dropped)."""
    _mysql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name};")
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", "--if-exists",
                    "--force", name], check=True)
    _pg_createdb(name)


def target_databases_drop(name: str) -> None:
    """Drops `name` on both servers, whoever is still connected to it."""
    subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-e", f"DROP DATABASE IF EXISTS {name}"], check=False,
                   capture_output=True)
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-p", str(pg_target_port()), "-U", "postgres", "--if-exists",
                    "--force", name], check=False)


@pytest.fixture(scope="session")
def target_databases() -> Iterator[dict[str, str]]:
    """Fresh sysbench databases on the local MariaDB and PostgreSQL, this session's own."""
    if shutil.which("sysbench") is None:
        pytest.fail("sysbench is not installed: run `make test`, which installs it")
    target_databases_fresh(MYSQL_DB)  # PGSQL_DB is the same name
    _mysql(f"DROP DATABASE IF EXISTS {MYSQL_DB}_empty; CREATE DATABASE {MYSQL_DB}_empty;")
    yield {"mysql": MYSQL_DB, "pgsql": PGSQL_DB, "mysql_empty": f"{MYSQL_DB}_empty"}
    _mysql(f"DROP DATABASE IF EXISTS {MYSQL_DB}_empty;")
    target_databases_drop(MYSQL_DB)


class WorkerProcess:
    """A real `celery worker` subprocess acting as one client host."""

    def __init__(self, hostname: str, db_name: str, *, beat: bool = False, extra_env: dict[str, str] | None = None,
                 prefix: list[str] | None = None, command: list[str] | None = None, concurrency: int = 1):
        """prefix runs the worker through another command (tests/helpers/netns.py: `ip netns exec NS ...`); command
        replaces the `celery worker` command line (tests/helpers/netns.py: scripts/join-client.sh --foreground)."""
        self.hostname = hostname
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"worker-{hostname}.log"
        env = dict(os.environ)
        env.update({
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db_name}",
            "REDIS_URL": TEST_REDIS_URL,
            "BENCHAPP_QUEUE": SESSION_QUEUE,
            "BENCHAPP_HOSTNAME": hostname,
            "BENCHAPP_HEARTBEAT_S": "1",
            "BENCHAPP_RECONCILE_S": "2",
            "DB_CONN_MAX_AGE": "0",
            "PYTHONUNBUFFERED": "1",
            # A host's self-measurement (sysbench cpu and memory at join) only where a test asks for it.
            "BENCHAPP_SELF_MEASURE": "false",
        })
        env.update(extra_env or {})
        argv = [*(prefix or []), sys.executable, "-m", "celery", "-A", "benchapp", "worker", "--loglevel", "INFO",
                "--concurrency", str(concurrency), "-Q", env["BENCHAPP_QUEUE"], "-n", f"{hostname}@%h",
                "--without-gossip",
                "--without-mingle"]
        if command is not None:
            argv = [*(prefix or []), *command]
        if beat:
            argv += ["-B", "--schedule-filename", str(LOG_DIR / f"beat-{hostname}"),
                     "--scheduler", "celery.beat:PersistentScheduler"]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = 60) -> None:
        wait_for(lambda: "ready." in self.log_text() or self.proc.poll() is not None,
                 timeout_s=timeout_s, what=f"worker {self.hostname} to start")
        if self.proc.poll() is not None:
            raise AssertionError(f"worker {self.hostname} died:\n{self.log_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


@pytest.fixture(autouse=True)
def _login_throttles_refilled() -> Iterator[None]:
    """The token endpoint's throttles count in Redis, which outlives a test's transaction: each test
    starts with full buckets, so tests that ask for tokens never refuse each other. (django-axes keeps its
    login failures in the database, which each test's rollback or flush empties.)"""
    yield
    from campaigns.api.throttling import throttle_reset, throttle_touched

    if throttle_touched():
        throttle_reset()


@pytest.fixture(scope="session")
def screenshots_dir() -> Path:
    """test-output/screenshots/ (emptied once per run by pytest_configure): every browser test's shots of this run
    stay."""
    shots = OUTPUT_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def pytest_configure(config: pytest.Config) -> None:
    """Empties test-output/screenshots/ once per run: in the controlling process, not in each pytest-xdist process
    (one of those would delete the other's shots)."""
    if hasattr(config, "workerinput"):
        return
    for old in (OUTPUT_DIR / "screenshots").glob("*.png"):
        old.unlink()


@pytest.fixture(autouse=True, scope="session")
def _workload_cache_removed() -> Iterator[None]:
    """The session's own workload cache (tests/pytest_env.py) goes with it."""
    yield
    shutil.rmtree(os.environ["BENCHAPP_WORKLOAD_DIR"], ignore_errors=True)
    if "benchapp-test-hosttests-" in os.environ.get("BENCHAPP_HOSTTEST_DIR", ""):
        shutil.rmtree(os.environ["BENCHAPP_HOSTTEST_DIR"], ignore_errors=True)


@pytest.fixture
def role_client(db: Any) -> Callable[[str | None], Any]:
    """A logged-in test client (django.test.Client) for a user of the given role (None: no role at all)."""
    from tests.helpers.ui import role_logins

    return role_logins()


@pytest.fixture(scope="session")
def test_db_name(django_db_setup: Any) -> str:
    from django.db import connection

    name = connection.settings_dict["NAME"]
    assert name.startswith("test_"), f"{name} is not a test database"
    return name


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None, django_db_blocker: Any,
                                 django_db_keepdb: bool, django_db_createdb: bool,
                                 django_db_use_migrations: bool) -> None:
    """Each pytest-xdist process's test database is a copy of one migrated template
    (CREATE DATABASE ... TEMPLATE, half a second) rather than the 40 migrations run again (6 s of CPU each time).
    The template is named after what its contents come from, the migration files and requirements.txt
    (test_benchapp_tpl_<hash>), and is kept from one run to the next: a run finds it made and copies it, a change of
    migration or of a package makes a new one and drops the old. pytest-django then makes the test database from it
    as usual, its migrate finding nothing left to apply. With --reuse-db or --nomigrations nothing changes."""
    # Under pytest-xdist only: a run without it (make test's `alone` part, one test by hand) migrates its own, as
    # before (the network-namespace link-loss test failed on a copy, for a reason not found yet).
    if (not os.environ.get("PYTEST_XDIST_WORKER") or (django_db_keepdb and not django_db_createdb)
            or not django_db_use_migrations):
        return
    from django.db import connection

    with django_db_blocker.unblock():
        connection.settings_dict["TEST"]["TEMPLATE"] = _template_made(connection, TEMPLATE_DB)


def _template_name() -> str:
    """test_benchapp_tpl_<the first 12 hex digits of the SHA-256 of the migration files and requirements.txt>."""
    digest = hashlib.sha256()
    for path in [*sorted(ROOT.glob("*/migrations/*.py")), ROOT / "requirements.txt"]:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"test_benchapp_tpl_{digest.hexdigest()[:12]}"


# The migrated template every test database is copied from (django_db_modify_db_settings). Not a test session's
# name (test_benchapp_<8 hex digits>), which the leftover sweeps of tests/pytest_env.py and setup.sh drop.
TEMPLATE_DB = _template_name()


# Held for as long as this process lives: a shared advisory lock on the template it copies from, so that a session
# of other migrations (another checkout) never drops that template between its check and the copy.
_template_in_use = None


def _in_use_key(template: str) -> str:
    return f"benchapp-test-template-in-use:{template}"


def _template_made(connection: Any, template: str) -> str:
    """The migrated template database, made by the first process to ask (an advisory lock makes the others wait
    until it is complete). It is made under a name of its own and renamed once migrated, so that a run killed while
    making it never leaves a half-migrated template that the next run would copy. Templates of other migrations go,
    unless a live process still copies from one (it holds that template's in-use lock, shared)."""
    global _template_in_use
    import psycopg

    db = connection.settings_dict
    params = {"host": db["HOST"] or None, "port": db["PORT"] or None, "user": db["USER"] or None,
              "password": db["PASSWORD"] or None, "dbname": "postgres", "autocommit": True}
    if _template_in_use is None:
        _template_in_use = psycopg.connect(**params)
    _template_in_use.execute("SELECT pg_advisory_lock_shared(hashtext(%s))", [_in_use_key(template)])
    with psycopg.connect(**params) as admin:
        admin.execute("SELECT pg_advisory_lock(hashtext(%s))", ["benchapp-test-template"])
        try:
            # Nobody makes a template while this lock is held: a half-made one is a killed run's. Another
            # migration's template goes once no live process holds it.
            for (old,) in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'test_benchapp_tpl_%%'"
                                        " AND datname <> %s", [template]).fetchall():
                if "_making_" in old:
                    admin.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
                    continue
                key = _in_use_key(old)
                if not admin.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [key]).fetchone()[0]:
                    continue  # a live process copies from it
                try:
                    admin.execute(f'DROP DATABASE IF EXISTS "{old}"')
                except psycopg.Error:
                    pass  # someone is connected to it after all: next time
                finally:
                    admin.execute("SELECT pg_advisory_unlock(hashtext(%s))", [key])
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template]).fetchone():
                return template  # complete: it has its name only once migrated
            making = f"{template}_making_{os.environ['BENCHAPP_TEST_SESSION']}"
            test, name = db["TEST"], db["NAME"]
            own = test["NAME"]
            test["NAME"] = making
            try:
                # Django's own test database creation (migrate, then what follows it), under the making name.
                connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
                connection.close()  # a database with a connection can be neither renamed nor copied
                admin.execute(f'ALTER DATABASE "{making}" RENAME TO "{template}"')
            except BaseException:
                connection.close()
                admin.execute(f'DROP DATABASE IF EXISTS "{making}" WITH (FORCE)')
                raise
            finally:
                test["NAME"] = own
                db["NAME"] = name
                from django.conf import settings

                settings.DATABASES[connection.alias]["NAME"] = name
            return template
        finally:
            admin.execute("SELECT pg_advisory_unlock_all()")


@pytest.fixture(scope="session", autouse=True)
def _test_db_dropped_at_the_end(django_db_setup: Any) -> Iterator[None]:
    """pytest-django drops the test database after this fixture ends; a connection some worker or live-server
    thread left open would make that DROP fail and leave the database behind, so they are ended first."""
    from django.db import connection

    db = connection.settings_dict
    name = db["NAME"]
    yield
    import psycopg

    try:
        with psycopg.connect(host=db["HOST"] or None, port=db["PORT"] or None, user=db["USER"] or None,
                             password=db["PASSWORD"] or None, dbname="postgres", autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND "
                          "pid <> pg_backend_pid()", [name])
    except psycopg.Error:
        pass  # the drop then fails as before, and scripts/setup.sh removes the database hours later


@pytest.fixture(scope="session")
def celery_worker_process(test_db_name: str) -> Iterator[WorkerProcess]:
    """One worker for the whole session (with an embedded beat running the reconciler)."""
    worker = WorkerProcess("client-a", test_db_name, beat=True)
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def make_worker(test_db_name: str) -> Iterator[Callable[..., WorkerProcess]]:
    """Extra workers for a single test (other client hosts, or ones the test kills)."""
    started: list[WorkerProcess] = []

    def start(hostname: str, **kwargs: Any) -> WorkerProcess:
        worker = WorkerProcess(hostname, test_db_name, **kwargs)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        worker.stop(signal.SIGKILL)


@pytest.fixture
def requests_share_the_test_transaction() -> Iterator[None]:
    """Requests sent to the WSGI application itself (not through Django's test client) stay in the
    test's transaction: Django closes "old" connections around each request, which inside that
    transaction would close it, so those handlers are disconnected as Django's test client does."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _flush_with_retry() -> None:
    """Workers may still be closing a run (cleanup, regression checks) when a transactional test
    ends; PostgreSQL then may pick the test's TRUNCATE as a deadlock victim. Retrying is safe."""
    from django.test import testcases

    original = testcases.TransactionTestCase._fixture_teardown
    if getattr(original, "_benchapp_retry", False):
        return

    def teardown(self: Any) -> None:
        for attempt in range(5):
            try:
                return original(self)
            except Exception as exc:  # CommandError wrapping the OperationalError
                text = f"{exc} {exc.__cause__} {exc.__context__}"
                if attempt == 4 or "deadlock" not in text:
                    raise
                time.sleep(0.5)

    teardown._benchapp_retry = True  # type: ignore[attr-defined]
    testcases.TransactionTestCase._fixture_teardown = teardown


_flush_with_retry()


@pytest.fixture
def own_redis() -> Iterator[Any]:
    """A throw-away redis-server of the test's own (tests.helpers.servers.RedisServer), killed at the end."""
    from tests.helpers.servers import RedisServer, free_port

    server = RedisServer(free_port())
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def browser_page(live_server: Any, monkeypatch: pytest.MonkeyPatch,
                 screenshots_dir: Path) -> Iterator[tuple[Any, Any, Any]]:
    """Chromium (headless, Debian's), a 1280×900 context on the live server and a page in it, with a BrowserProblems
    watching it: (browser, page, problems)."""
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, BrowserProblems
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    problems = BrowserProblems()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
        context.set_default_timeout(15_000)
        page = context.new_page()
        problems.watch(page)
        try:
            yield browser, page, problems
        finally:
            context.close()
            browser.close()


@pytest.fixture
def own_mariadb(tmp_path: Path) -> Iterator[Any]:
    """A MariaDB instance of the test's own on a spare port, killed at the end."""
    from tests.helpers.servers import MariaDBServer, free_port

    server = MariaDBServer(tmp_path, free_port())
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def fault_db() -> Iterator[str]:
    """A database of this test's own on the shared MariaDB: its sysbench processes are recognisable
    by --mysql-db=<name>, and its tables tell whether cleanup ran."""
    from tests.helpers.faults import shared_mysql

    name = f"{MYSQL_DB}_f{uuid.uuid4().hex[:6]}"
    shared_mysql(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        shared_mysql(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def sent_tasks(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Any:
    """The tasks execution.dispatch sends, recorded instead of published (tests.helpers.dispatched.SentTasks); the
    default queue is the test's own, so that a session worker's reconciler leaves the test's runs alone."""
    from campaigns.execution import dispatch
    from tests.helpers.dispatched import SentTasks
    from tests.helpers.servers import OWN_QUEUE

    settings.CELERY_TASK_DEFAULT_QUEUE = OWN_QUEUE
    recorder = SentTasks()
    monkeypatch.setattr(dispatch, "_send", recorder)
    return recorder


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port bound on loopback and never listened on: a connection to it is refused while the test runs."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def receiver() -> Iterator[Any]:
    """A webhook receiver on 127.0.0.1 (tests.helpers.monitoring.WebhookReceiver), closed at the end."""
    from tests.helpers.monitoring import WebhookReceiver

    hook = WebhookReceiver()
    try:
        yield hook
    finally:
        hook.close()
