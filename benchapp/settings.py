"""benchapp settings, driven by environment variables.

Every value has a default that works on a developer machine (PostgreSQL and Redis on 127.0.0.1);
the helpers below refuse malformed values loudly instead of guessing.
"""
from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import dj_database_url

from benchapp import local_secrets

BASE_DIR = Path(__file__).resolve().parent.parent

# The services of this installation, as scripts/setup.sh recorded them (BENCHAPP_PG_PORT, BENCHAPP_REDIS_PORT,
# BENCHAPP_MARIADB_PORT, BENCHAPP_DB_NAME, BENCHAPP_PORT): a second installation on one machine is a second checkout
# given other ports. Defaults for the environment, which still wins.
INSTALL_FILE = Path(os.environ.get("BENCHAPP_INSTALL_FILE", BASE_DIR / "var" / "install.env"))
INSTALL_KEYS = ("BENCHAPP_PG_PORT", "BENCHAPP_REDIS_PORT", "BENCHAPP_MARIADB_PORT", "BENCHAPP_DB_NAME", "BENCHAPP_PORT")
if INSTALL_FILE.is_file():
    for _name, _value in local_secrets.read_env_file(INSTALL_FILE).items():
        if _name in INSTALL_KEYS and _value:
            os.environ.setdefault(_name, _value)


def envbool(name: str, default: str) -> bool:
    value = os.environ.get(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name} must be a boolean (true/false), not {value!r}")


def envint(name: str, default: str) -> int:
    value = os.environ.get(name, default)
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None


def envfloat(name: str, default: str) -> float:
    value = os.environ.get(name, default)
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {value!r}") from None


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = envbool("DEBUG", "false")
# SECRET_KEY, BENCHAPP_FIELD_KEY and the first admin password: from the environment, else this installation's own,
# generated on first start into a 0600 file outside git (benchapp/local_secrets.py).
# A client host's worker (BENCHAPP_WORKER_ROLE=client) writes no secrets file and holds no field key: it reads no
# secret at rest, and opens only the target passwords the server sealed for it (campaigns.sealing). What it never
# uses (SECRET_KEY, the admin password, a field key that decrypts nothing) lives in its memory only, whatever its
# environment or a readable secrets file say.
_CLIENT_HOST = os.environ.get("BENCHAPP_WORKER_ROLE") == "client"
_SECRETS_PATH = Path(os.environ.get("BENCHAPP_SECRETS_FILE", BASE_DIR / "var" / "secrets.env"))
_SECRETS = local_secrets.local_secrets(_SECRETS_PATH, write=not _CLIENT_HOST)
SECRET_KEY = local_secrets.secret(_SECRETS, "SECRET_KEY")
BENCHAPP_ADMIN_PASSWORD = local_secrets.secret(_SECRETS, "BENCHAPP_ADMIN_PASSWORD")
# Keys for encrypting secrets at rest (target passwords, webhook URLs; Fernet keys derived from these strings). The
# first encrypts; every one decrypts: to rotate, put the new key first (BENCHAPP_FIELD_KEYS=new,old), run
# `manage.py rotate_field_key`, then drop the old one. The key the repository used to ship only ever decrypts.
FIELD_ENCRYPTION_KEYS = (envlist("BENCHAPP_FIELD_KEYS", "") or [local_secrets.secret(_SECRETS, "BENCHAPP_FIELD_KEY")]
                         if not _CLIENT_HOST else [local_secrets.GENERATED["BENCHAPP_FIELD_KEY"]()])
FIELD_DECRYPTION_ONLY_KEYS = list(local_secrets.PUBLIC_FIELD_KEYS) if not _CLIENT_HOST else []
# Where the field key came from, for the start-up check that refuses a key that reads none of the database's
# encrypted values (campaigns/keycheck.py: a database restored without its secrets file). A client host holds no
# field key (its passwords come sealed for it), so it has nothing to check.
BENCHAPP_SECRETS_PATH = str(_SECRETS_PATH)
BENCHAPP_FIELD_KEY_MADE_NOW = (not _CLIENT_HOST and "BENCHAPP_FIELD_KEY" in local_secrets.MADE_NOW
                               and not os.environ.get("BENCHAPP_FIELD_KEYS") and not os.environ.get("BENCHAPP_FIELD_KEY"))
if not DEBUG:
    _public = {"SECRET_KEY": SECRET_KEY in local_secrets.PUBLIC_SECRET_KEYS,
               "BENCHAPP_FIELD_KEY": FIELD_ENCRYPTION_KEYS[0] in local_secrets.PUBLIC_FIELD_KEYS}
    if any(_public.values()):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"{', '.join(name for name, bad in _public.items() if bad)} is the development value published in "
            "benchapp's repository: unset it (each installation makes its own in var/secrets.env) or set a secret "
            "one")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "django_celery_beat",
    "csp",
    "campaigns",
]
# A client host's worker (BENCHAPP_WORKER_ROLE=client) serves no page: Django's admin without its autodiscover, which
# would import every admin.py, and with campaigns' the services and monitoring that a client host never runs (4 MB of
# its memory, bench/memory_client.py).
if os.environ.get("BENCHAPP_WORKER_ROLE") == "client":
    INSTALLED_APPS[0] = "django.contrib.admin.apps.SimpleAdminConfig"

MIDDLEWARE = [
    # First: every later log line of a request carries its id, and its latency counts the whole stack.
    "campaigns.observability.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "campaigns.logins.SessionIdleMiddleware",  # BENCHAPP_SESSION_IDLE_S
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "benchapp.middleware.CSPMiddleware",  # django-csp's, with the policy built once
    "benchapp.middleware.DatabaseAwayMiddleware",  # benchapp's database away: 503 + Retry-After, never 500
]

# Content-Security-Policy (django-csp): scripts, styles, fonts and images only from benchapp itself (Chart.js is in
# our static files), requests only to benchapp, never framed. Style attributes stay allowed for the progress bars'
# widths (an attribute cannot run code). The API's Swagger UI and Redoc pages (drf-spectacular-sidecar, served
# locally) start themselves with inline scripts and are left out.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/api/docs/", "/api/redoc/"],
    "DIRECTIVES": {
        "default-src": ["'self'"], "script-src": ["'self'"], "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"], "img-src": ["'self'", "data:"], "font-src": ["'self'"],
        "connect-src": ["'self'"], "object-src": ["'none'"], "base-uri": ["'self'"], "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
X_FRAME_OPTIONS = "DENY"
# Served over HTTPS (BENCHAPP_HTTPS=true, usually behind a proxy that sets X-Forwarded-Proto): cookies only over
# HTTPS, HTTP redirected, and HSTS for a year (BENCHAPP_HSTS_PRELOAD=false leaves the preload list out).
BENCHAPP_HTTPS = envbool("BENCHAPP_HTTPS", "false")
if BENCHAPP_HTTPS:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = envbool("BENCHAPP_SSL_REDIRECT", "true")
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = envint("BENCHAPP_HSTS_SECONDS", "31536000")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = envbool("BENCHAPP_HSTS_PRELOAD", "true")

ROOT_URLCONF = "benchapp.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "benchapp.wsgi.application"
ASGI_APPLICATION = "benchapp.asgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        # scripts/setup.sh writes DATABASE_URL into the secrets file where the cluster does not trust loopback.
        os.environ.get("DATABASE_URL") or _SECRETS.get("DATABASE_URL")
        or f"postgres://postgres@127.0.0.1:{envint('BENCHAPP_PG_PORT', '5432')}/{os.environ.get('BENCHAPP_DB_NAME') or 'benchapp'}",
        conn_max_age=envint("DB_CONN_MAX_AGE", "60"),
        # A kept connection is tested before each request reuses it: a restarted PostgreSQL costs no failed request.
        conn_health_checks=True,
    )
}
# A client host's connections cross a network that can vanish (a reboot, a cut): libpq's TCP keepalives notice a dead
# server within about a minute and a half instead of the kernel's two hours (its role has the same on the server's
# side: campaigns.services.client_access.ROLE_SETTINGS).
if _CLIENT_HOST:
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 6})
# Separate test databases let two test sessions share one PostgreSQL server.
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("BENCHAPP_TEST_DB_NAME") or None}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ValueError("DATABASE_URL must point at PostgreSQL: benchapp stores nothing anywhere else")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's four validators (they run where a password is chosen: the API's users, the password change and reset
# pages, Django's admin, createsuperuser). The last entry validates nothing: Django calls its password_changed()
# whenever a user is saved with a new password, however it was set, and it revokes the user's API tokens.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "campaigns.services.tokens.TokensEndWithPassword"},
]
# A login session ends after this long without a request (campaigns.logins.SessionIdleMiddleware pushes the
# expiry back while it is used); Django's default was 14 days whatever the use.
SESSION_COOKIE_AGE = envint("BENCHAPP_SESSION_IDLE_S", str(4 * 3600))
SESSION_ENGINE = "campaigns.logins"  # the database's, recording each save's time
if SESSION_COOKIE_AGE < 60:
    raise ValueError("BENCHAPP_SESSION_IDLE_S must be at least 60")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names (app.3f2a9c.css) and a manifest: whitenoise serves them with a year's Cache-Control, since a
    # changed file gets a new name. The front end's ES modules import each other by relative name, and
    # ManifestStaticFilesStorage rewrites those imports to the hashed names too (support_js_module_import_aggregation).
    "staticfiles": {"BACKEND": "benchapp.staticfiles.StaticFilesStorage"},
}
# Tests render pages without running collectstatic first: they keep unhashed names (tests/pytest_env.py).
if envbool("BENCHAPP_STATIC_UNHASHED", "false"):
    STORAGES["staticfiles"] = {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"}

# Redis has a password from its first start (scripts/setup.sh gives it the one in var/secrets.env; docker-compose.yml's
# Redis reads it from the same file, scripts/docker/redis.sh); a REDIS_URL in the environment, or the one
# scripts/serve-clients.sh puts into var/secrets.env, still wins. BENCHAPP_REDIS_HOST and BENCHAPP_REDIS_PORT say
# where that Redis is (docker-compose.yml: the service `redis`).
REDIS_URL = (os.environ.get("REDIS_URL") or _SECRETS.get("REDIS_URL")
             or f"redis://:{local_secrets.secret(_SECRETS, 'BENCHAPP_REDIS_PASSWORD')}"
                f"@{os.environ.get('BENCHAPP_REDIS_HOST') or '127.0.0.1'}:{envint('BENCHAPP_REDIS_PORT', '6379')}/0")


def redis_url_next_db(url: str) -> str:
    """The same Redis server as `url`, the next database number (redis://host:port/0 -> /1), its query string kept
    (`?socket_timeout=5`, `rediss://…?ssl_cert_reqs=none`); a unix socket's database is its `db` parameter."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        db = query.get("db", "0")
        query["db"] = str((int(db) + 1) % 16 if db.isdigit() else 1)
        return f"unix://{parts.netloc}{parts.path}?{urlencode(query)}"  # urlunsplit would drop the empty host
    db = parts.path.strip("/")
    path = f"/{(int(db) + 1) % 16}" if db.isdigit() else "/1"
    return urlunsplit(parts._replace(path=path))


# The cache holds API answers that are expensive to build and safe to reuse (comparisons keyed by
# a results version, finished jobs' series; campaigns/cache.py). A database of its own by default
# (the broker's + 1), so that clearing the cache can never drop queued Celery messages, and keys
# prefixed with the PostgreSQL database's name, so that two installations sharing a Redis never
# see each other's answers. Entries expire (TIMEOUT, and shorter for series); a deployment that
# wants a hard memory bound points BENCHAPP_CACHE_URL at a Redis of its own with maxmemory and
# allkeys-lru (the broker's must keep noeviction).
BENCHAPP_CACHE_URL = os.environ.get("BENCHAPP_CACHE_URL") or redis_url_next_db(REDIS_URL)
CACHES = {
    "default": {
        "BACKEND": "campaigns.cache_backend.RedisCache",
        "LOCATION": BENCHAPP_CACHE_URL,
        "KEY_PREFIX": os.environ.get("BENCHAPP_CACHE_PREFIX") or f"benchapp-{DATABASES['default']['NAME']}",
        "TIMEOUT": envint("BENCHAPP_CACHE_TIMEOUT_S", "3600"),
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    }
}

# Celery: Redis is only the nudge; PostgreSQL holds every job's state, so a lost message is
# re-sent by the reconciler rather than lost work.
CELERY_BROKER_URL = REDIS_URL
# A client host's own credentials (campaigns/services/client_access.py): the PostgreSQL group role every client host's
# login role belongs to (its grants and row-level security), and the broker's Redis as the server reaches it to
# create and delete their ACL users (the default user's password: the server's own).
BENCHAPP_CLIENT_DB_GROUP = os.environ.get("BENCHAPP_CLIENT_DB_GROUP", "benchapp_client")
BENCHAPP_BROKER_ADMIN_URL = os.environ.get("BENCHAPP_BROKER_ADMIN_URL") or CELERY_BROKER_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# Celery's defaults, stated: a message from Redis is JSON, never a pickle (nothing unpickles what Redis holds).
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A prefork pool process is replaced once it has run this many tasks, or after a task that left it over this resident
# size (KB): a regression check loads numpy and scipy (60-80 MB) in the process that runs it, which would keep them
# for good. Not for the threads pool (a client host's worker), which has no process to replace.
CELERY_WORKER_MAX_TASKS_PER_CHILD = envint("BENCHAPP_WORKER_MAX_TASKS_PER_CHILD", "100") or None
CELERY_WORKER_MAX_MEMORY_PER_CHILD = envint("BENCHAPP_WORKER_MAX_MEMORY_KB", "200000") or None
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("BENCHAPP_QUEUE", "benchapp")
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", str(48 * 3600))
CELERY_TASK_SOFT_TIME_LIMIT = envint("CELERY_TASK_SOFT_TIME_LIMIT", str(48 * 3600 - 60))
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {"visibility_timeout": 48 * 3600}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE

# benchapp's own knobs.
BENCHAPP_SYSBENCH = os.environ.get("BENCHAPP_SYSBENCH", "sysbench")
BENCHAPP_HOSTNAME = os.environ.get("BENCHAPP_HOSTNAME", socket.gethostname())
if _CLIENT_HOST:
    # A client host's Redis user reaches only its own queue's keys (campaigns/services/client_access.py
    # redis_acl_rules): its unacked messages are kept beside that queue, not in the server's shared hash.
    _OWN_KEYS = f"{CELERY_TASK_DEFAULT_QUEUE}.host.{BENCHAPP_HOSTNAME}\x06"
    CELERY_BROKER_TRANSPORT_OPTIONS.update(unacked_key=_OWN_KEYS + "unacked",
                                           unacked_index_key=_OWN_KEYS + "unacked_index",
                                           unacked_mutex_key=_OWN_KEYS + "unacked_mutex")
# Where a client host keeps the Lua files of workloads of one's own, one folder per content hash; created with
# mode 0700 (only the worker's user may write there), and refused when someone else may write to it.
BENCHAPP_WORKLOAD_DIR = os.environ.get("BENCHAPP_WORKLOAD_DIR", str(BASE_DIR / "var" / "workloads"))
# Labels this worker's client host announces when it joins ("ap-guangzhou-3,near tdsql"): campaigns choose hosts
# by name or label.
BENCHAPP_HOST_LABELS = envlist("BENCHAPP_HOST_LABELS", "")
# "all" (the server's own worker): the shared queue, this host's queue and the server queue (regression checks,
# schedules, notifications: numpy and scipy). "client" (scripts/join-client.sh): no server queue, so the worker's
# processes stay small.
BENCHAPP_WORKER_ROLE = os.environ.get("BENCHAPP_WORKER_ROLE", "all")
if BENCHAPP_WORKER_ROLE not in ("all", "client"):
    raise ValueError(f"BENCHAPP_WORKER_ROLE must be all or client, not {BENCHAPP_WORKER_ROLE!r}")
# The worker's pool. A client host's worker runs its tasks in threads of its one process: its tasks wait on sysbench,
# its targets and the database, never on Python, and a pool process would hold a second copy of Django and Celery
# (bench/memory_client.py: 159 MB in three processes with prefork, under 80 MB in one with threads). The phases have
# their own time-outs (BENCHAPP_PREPARE_TIMEOUT_S, --time plus BENCHAPP_RUN_SLACK_S) and cancelling is polled, so
# nothing needs Celery's time limits or a pool process to kill, which only prefork has. The server's worker keeps
# prefork: its regression checks run numpy and scipy, which are Python-bound.
BENCHAPP_WORKER_POOL = os.environ.get("BENCHAPP_WORKER_POOL") or (
    "threads" if BENCHAPP_WORKER_ROLE == "client" else "prefork")
if BENCHAPP_WORKER_POOL not in ("prefork", "threads", "solo"):
    raise ValueError(f"BENCHAPP_WORKER_POOL must be prefork, threads or solo, not {BENCHAPP_WORKER_POOL!r}")
CELERY_WORKER_POOL = BENCHAPP_WORKER_POOL
BENCHAPP_HEARTBEAT_S = envfloat("BENCHAPP_HEARTBEAT_S", "10")
# Each worker also reconciles from a thread of its main process, every BENCHAPP_RECONCILE_S: beat's
# reconcile task waits for a free pool slot, and during long jobs every slot may be busy.
# Never on a client host's worker, whatever its environment says: repairing other hosts' jobs is the server's (it
# seals passwords for the next host; a client host may not even read those jobs' rows).
BENCHAPP_RECONCILE_IN_WORKER = envbool("BENCHAPP_RECONCILE_IN_WORKER", "true") and not _CLIENT_HOST
# Per-second host and server samples beside every job (campaigns/execution/metrics.py); off only to measure the
# application's own cost without them (bench/overhead.py).
BENCHAPP_METRICS_SAMPLING = envbool("BENCHAPP_METRICS_SAMPLING", "true")
# An API token works this many days after it was issued (0: until revoked).
BENCHAPP_TOKEN_TTL_DAYS = envint("BENCHAPP_TOKEN_TTL_DAYS", "90")
BENCHAPP_RECONCILE_S = envfloat("BENCHAPP_RECONCILE_S", "10")
BENCHAPP_HOST_OFFLINE_S = envfloat("BENCHAPP_HOST_OFFLINE_S", "60")
BENCHAPP_PREPARE_TIMEOUT_S = envfloat("BENCHAPP_PREPARE_TIMEOUT_S", str(6 * 3600))
# How often a prepare reads MAX(id) of its tables to report its progress (campaigns.execution.datasets).
BENCHAPP_PREPARE_PROGRESS_S = envfloat("BENCHAPP_PREPARE_PROGRESS_S", "5")
BENCHAPP_PROBE_TIMEOUT_S = envfloat("BENCHAPP_PROBE_TIMEOUT_S", "60")  # probe queries and scenario DDL on a target
BENCHAPP_CLEANUP_TIMEOUT_S = envfloat("BENCHAPP_CLEANUP_TIMEOUT_S", "600")
# A workload's check command after a job (Workload.check_command), at most this long.
BENCHAPP_CHECK_TIMEOUT_S = envfloat("BENCHAPP_CHECK_TIMEOUT_S", "600")
# A run may overrun --time (see SYSBENCH-NOTES): the timeout is --time plus this slack.
BENCHAPP_RUN_SLACK_S = envfloat("BENCHAPP_RUN_SLACK_S", "60")
BENCHAPP_CANCEL_POLL_S = envfloat("BENCHAPP_CANCEL_POLL_S", "1")
# A job or client without a heartbeat for this long has lost its worker: it fails as "client lost".
# Busy workers beat every BENCHAPP_CANCEL_POLL_S, so 30 s leaves room for a slow database.
BENCHAPP_STALE_S = envfloat("BENCHAPP_STALE_S", "30")
# Keeping measurements apart (docs/validity.md): a job waits for a quiet server and host before it measures
# (Campaign.quiet_s), and one spoiled from outside is measured again (Campaign.remeasure_spoiled). Each campaign
# chooses; these switch the rules off for a whole installation (the test suite, whose load is its own).
BENCHAPP_QUIET_CHECK = envbool("BENCHAPP_QUIET_CHECK", "true")
BENCHAPP_REMEASURE_SPOILED = envbool("BENCHAPP_REMEASURE_SPOILED", "true")
# A job whose target cannot be reached tries again after BENCHAPP_TARGET_RETRY_S, doubling up to
# BENCHAPP_TARGET_RETRY_MAX_S (with jitter), until the campaign's target_wait_s has passed.
BENCHAPP_TARGET_RETRY_S = envfloat("BENCHAPP_TARGET_RETRY_S", "5")
BENCHAPP_TARGET_RETRY_MAX_S = envfloat("BENCHAPP_TARGET_RETRY_MAX_S", "120")
# A queued job (or a client not yet picked up) whose message is older than this is sent again:
# Redis may have lost it (restart, flush); the atomic claim makes a duplicate harmless.
BENCHAPP_REDISPATCH_S = envfloat("BENCHAPP_REDISPATCH_S", "30")
# A run none of whose possible workers has beaten for this long says so on its pages and in the API ("no worker
# alive since ..."), and its ETA stops; beat checks every BENCHAPP_NO_WORKER_CHECK_S whether to tell the campaign's
# webhook and recipients (after Campaign.no_worker_notify_min).
BENCHAPP_NO_WORKER_S = envfloat("BENCHAPP_NO_WORKER_S", "30")
BENCHAPP_NO_WORKER_CHECK_S = envfloat("BENCHAPP_NO_WORKER_CHECK_S", "10")
# Webhooks go to public addresses only; true also allows loopback and private ones (a receiver on this
# machine or the office network). Link-local (cloud metadata), multicast and reserved ones never.
BENCHAPP_WEBHOOK_ALLOW_PRIVATE = envbool("BENCHAPP_WEBHOOK_ALLOW_PRIVATE", "false")

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header is what makes DRF answer anonymous requests with 401.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "campaigns.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "campaigns.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "campaigns.api.schema.UserAutoSchema",  # descriptions for users
    "EXCEPTION_HANDLER": "campaigns.api.exceptions.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
# Request bodies: DRF's default parsers, with JSON nested deeper than
# campaigns.jsonlimits.MAX_JSON_DEPTH refused as a 400 instead of exhausting the recursion limit (a 500).
REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"] = [
    "campaigns.api.parsers.BoundedJSONParser",
    "rest_framework.parsers.FormParser",
    "rest_framework.parsers.MultiPartParser",
]
SPECTACULAR_SETTINGS = {
    "TITLE": "benchapp API",
    "DESCRIPTION": "Define, run and compare sysbench benchmark campaigns. New here? Read the "
                   "[getting started](/help/api/) page (a token, then three calls with curl). "
                   "[Back to benchapp](/).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Operations are grouped by resource (their path's first part after /api/v1), in the order a user meets them,
    # instead of all under one "v1" heading.
    "SCHEMA_PATH_PREFIX": r"/api/v[0-9]+",
    "TAGS": [
        {"name": "auth", "description": "Get and revoke API tokens (the app's API tokens page does the same)."},
        {"name": "products", "description": "Database products (MySQL, MariaDB, PostgreSQL, TDSQL-C…)."},
        {"name": "specs", "description": "Instance specifications: vCPUs, memory, storage, price."},
        {"name": "targets", "description": "Database endpoints to benchmark; passwords are write-only."},
        {"name": "datasets", "description": "Table count and size that scenarios prepare."},
        {"name": "scenarios", "description": "A sysbench test with its options, or one parsed from a pasted command."},
        {"name": "workloads", "description": "Your own Lua workloads, versioned."},
        {"name": "workload-versions", "description": "One stored version of a workload."},
        {"name": "campaigns", "description": "Targets × scenarios × threads × repetitions: plan, launch, and the repetitions the noise calls for."},
        {"name": "runs", "description": "One execution of a campaign: progress, cancel, retry failed jobs, run again, bundles out and in."},
        {"name": "jobs", "description": "One measured sysbench run: its result, verdict and log."},
        {"name": "results", "description": "Measured figures, filterable, as JSON or CSV."},
        {"name": "comparisons", "description": "Side-by-side comparisons with Δ%, 95 % intervals and verdicts."},
        {"name": "templates", "description": "The seed white papers' campaign templates: list, instantiate, or run a reduced suite."},
        {"name": "schedules", "description": "Nightly (or cron) runs of a campaign and their regression check."},
        {"name": "regressions", "description": "Changes the nightly check reported."},
        {"name": "annotations", "description": "Notes on a campaign's history chart (deploys, upgrades)."},
        {"name": "share-links", "description": "Read-only links to a run or comparison."},
        {"name": "client-hosts", "description": "Machines that run sysbench for a campaign."},
        {"name": "users", "description": "Accounts and roles (admins only)."},
    ],
    # Separate request and response components: write-only fields (target passwords) appear only in
    # requests, read-only ones only in responses.
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and Redoc from the drf-spectacular-sidecar package (campaigns/api/urls.py), not a CDN.
    "SWAGGER_UI_DIST": "/api/docs/assets/swagger-ui-dist",
    "SWAGGER_UI_FAVICON_HREF": "/api/docs/assets/swagger-ui-dist/favicon-32x32.png",
    "REDOC_DIST": "/api/docs/assets/redoc",
    "ENUM_NAME_OVERRIDES": {
        "SysbenchTestEnum": "campaigns.api.serializers.TEST_CHOICES",
        "RunStatusEnum": "campaigns.models.Run.Status",
        "JobStatusEnum": "campaigns.models.Job.Status",
        "RegressionKindEnum": "campaigns.models.Regression.Kind",
        "AnnotationKindEnum": "campaigns.models.Annotation.Kind",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "campaigns.api.schema.add_error_responses",
        "campaigns.api.schema.descriptions_for_users",
        "campaigns.api.schema.token_auth_first",
    ],
}

# Logs: every line carries the request id of the request or task it belongs to
# (benchapp/requestid.py); BENCHAPP_LOG_FORMAT=json writes one JSON object per line instead of text.
BENCHAPP_LOG_FORMAT = os.environ.get("BENCHAPP_LOG_FORMAT", "text").strip().lower()
if BENCHAPP_LOG_FORMAT not in ("text", "json"):
    raise ValueError(f"BENCHAPP_LOG_FORMAT must be text or json, not {BENCHAPP_LOG_FORMAT!r}")
from benchapp import requestid as _requestid  # noqa: E402 (imports nothing of the project)

_requestid.logging_install()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
                   "django.server": {"()": "django.utils.log.ServerFormatter", "format": "[{server_time}] {message}",
                                     "style": "{"}},
    # A share link's token never reaches a log (Django logs the path of every 404, runserver every request).
    "filters": {"share_tokens": {"()": "campaigns.logfilters.ShareTokenFilter"},
                "request_ids": {"()": "benchapp.requestid.RequestIdFilter"},
                "routine_tasks": {"()": "campaigns.logfilters.RoutineTaskFilter"},
                "broker_acks": {"()": "campaigns.logfilters.BrokerAckFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["share_tokens"],
                             "formatter": "json" if BENCHAPP_LOG_FORMAT == "json" else "plain"},
                 "django.server": {"class": "logging.StreamHandler", "formatter": "django.server"}},
    # On the loggers too: their records reach Django's own handlers (DEBUG's console, runserver's) before ours.
    "loggers": {"django.request": {"filters": ["request_ids", "share_tokens"]},
                **{name: {"filters": ["routine_tasks"]} for name in ("celery.beat", "celery.worker.strategy",
                                                                      "celery.app.trace")},
                "celery.worker.request": {"filters": ["broker_acks"]},
                "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False,
                                  "filters": ["share_tokens"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
if BENCHAPP_LOG_FORMAT == "json":  # python-json-logger, imported only then
    LOGGING["formatters"]["json"] = {"()": "benchapp.logs.JsonFormatter"}  # type: ignore[index]
    # Python's warnings (DeprecationWarning, RuntimeWarning …) go to the `py.warnings` logger, and from there to the
    # JSON handler, instead of plain text on stderr.
    import logging as _logging

    _logging.captureWarnings(True)
# Celery's worker formats its own lines unless told to leave the root logger alone: in JSON mode it does, so that
# the worker writes the same JSON as the web; in text mode its format gains the request id.
CELERY_WORKER_HIJACK_ROOT_LOGGER = BENCHAPP_LOG_FORMAT != "json"
CELERY_WORKER_LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] [%(request_id)s] %(message)s"
CELERY_WORKER_TASK_LOG_FORMAT = ("[%(asctime)s: %(levelname)s/%(processName)s] [%(request_id)s] "
                                 "%(task_name)s[%(task_id)s]: %(message)s")
# Worker events on (scripts/worker.sh -E) are what Flower and Celery exporters read; these make them useful.
CELERY_WORKER_SEND_TASK_EVENTS = True
CELERY_TASK_SEND_SENT_EVENT = True

# Error reports: to Sentry when SENTRY_DSN is set; no personal data, secrets scrubbed
# (benchapp/sentry.py).
SENTRY_DSN = os.environ.get("SENTRY_DSN", "")
if SENTRY_DSN:
    from benchapp.sentry import sentry_init

    sentry_init(SENTRY_DSN, environment=os.environ.get("SENTRY_ENVIRONMENT", ""),
                release=os.environ.get("SENTRY_RELEASE", ""))

# /metrics: served to these addresses or networks (default: this machine only), or to a request
# with `Authorization: Bearer <BENCHAPP_METRICS_TOKEN>` from anywhere. /healthz and /readyz need nothing.
BENCHAPP_METRICS_TOKEN = os.environ.get("BENCHAPP_METRICS_TOKEN", "")


def envnetworks(name: str, default: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    out = []
    for item in envlist(name, default):
        try:
            out.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{name} must list addresses or networks (10.0.0.0/8), not {item!r}") from None
    return out


BENCHAPP_METRICS_ALLOW = envnetworks("BENCHAPP_METRICS_ALLOW", "127.0.0.1,::1")

EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "benchapp@localhost")

# Host tests (docs/host-tests.md): fileio prepares its files in a directory of the job's own under this one, on the
# client host, and never more than BENCHAPP_HOSTTEST_MAX_BYTES (a scenario asking for more is refused when saved).
BENCHAPP_HOSTTEST_DIR = Path(os.environ.get("BENCHAPP_HOSTTEST_DIR", BASE_DIR / "var" / "hosttests"))
BENCHAPP_HOSTTEST_MAX_BYTES = envint("BENCHAPP_HOSTTEST_MAX_BYTES", str(8 * 2**30))
# Each client host measures itself (sysbench cpu and memory, BENCHAPP_SELF_MEASURE_S seconds each) when its worker
# joins and again when its last measurement is BENCHAPP_SELF_MEASURE_EVERY_S old (beat looks every hour).
BENCHAPP_SELF_MEASURE = envbool("BENCHAPP_SELF_MEASURE", "true")
BENCHAPP_SELF_MEASURE_S = envint("BENCHAPP_SELF_MEASURE_S", "3")
BENCHAPP_SELF_MEASURE_EVERY_S = envfloat("BENCHAPP_SELF_MEASURE_EVERY_S", str(24 * 3600))

CELERY_BEAT_SCHEDULE = {
    "benchapp-reconcile-jobs": {
        "task": "campaigns.tasks.jobs_reconcile_task",
        "schedule": BENCHAPP_RECONCILE_S,
    },
}
# Expired sessions and django-axes' access records older than this many days are deleted daily
# (campaigns/services/retention.py; `manage.py retention_sweep --dry-run` says what would go).
BENCHAPP_ACCESS_LOG_KEEP_DAYS = envint("BENCHAPP_ACCESS_LOG_KEEP_DAYS", "90")
if BENCHAPP_ACCESS_LOG_KEEP_DAYS < 1:
    raise ValueError("BENCHAPP_ACCESS_LOG_KEEP_DAYS must be at least 1")
CELERY_BEAT_SCHEDULE["benchapp-retention-sweep"] = {
    "task": "campaigns.tasks.retention_sweep_task",
    "schedule": 24 * 3600.0,
}
# An attempt's per-second rows are packed (campaigns/seconds.py: a few bytes a second instead of about 1.3 kB) once
# its job has been closed this long; earlier attempts of a job at once. Beat looks every minute.
BENCHAPP_SECONDS_PACK_AFTER_S = envfloat("BENCHAPP_SECONDS_PACK_AFTER_S", "300")
if BENCHAPP_SECONDS_PACK_AFTER_S < 0:
    raise ValueError("BENCHAPP_SECONDS_PACK_AFTER_S must be 0 or more")
# After this many days a closed job's seconds are kept at a coarser step (BENCHAPP_SECONDS_COARSE_S seconds a point:
# rates averaged, latency and threads their worst), by the daily retention sweep; 0 keeps every second for ever.
BENCHAPP_SECONDS_KEEP_DAYS = envint("BENCHAPP_SECONDS_KEEP_DAYS", "90")
BENCHAPP_SECONDS_COARSE_S = envint("BENCHAPP_SECONDS_COARSE_S", "10")
if BENCHAPP_SECONDS_KEEP_DAYS < 0 or BENCHAPP_SECONDS_COARSE_S < 2:
    raise ValueError("BENCHAPP_SECONDS_KEEP_DAYS must be 0 or more and BENCHAPP_SECONDS_COARSE_S at least 2")
CELERY_BEAT_SCHEDULE["benchapp-seconds-pack"] = {
    "task": "campaigns.tasks.seconds_pack_task",
    "schedule": 60.0,
}
if BENCHAPP_SELF_MEASURE:
    CELERY_BEAT_SCHEDULE["benchapp-hosts-self-measure"] = {
        "task": "campaigns.tasks.hosts_self_measure_due_task",
        "schedule": min(3600.0, BENCHAPP_SELF_MEASURE_EVERY_S),
    }

# ---------------------------------------------------------------- access: roles on pages, login abuse
# Whom the 403 page tells a user without the role they need to ask (an address, a team); empty: the
# admins by name.
BENCHAPP_ROLES_CONTACT = os.environ.get("BENCHAPP_ROLES_CONTACT", "")

# Password guessing. The API's token endpoint: token buckets in the cache's Redis, per client address and
# per username (campaigns/api/throttling.py; pyrate-limiter does the atomic counting). The login page and
# Django's admin login: django-axes locks an address, or a username, out after BENCHAPP_LOGIN_FAILURES
# failed logins for BENCHAPP_LOGIN_COOLOFF_MIN minutes, before any password is hashed (campaigns/logins.py).
# Behind reverse proxies, BENCHAPP_NUM_PROXIES says how many, so that the client's own address is counted
# (and a client-set X-Forwarded-For never is).
def envrate(name: str, default: str) -> str:
    """A DRF throttle rate, "<requests>/<second|minute|hour|day>", at least one request."""
    value = os.environ.get(name, default).strip()
    count, _, period = value.partition("/")
    if not (count.isdigit() and int(count) > 0 and period[:1] in ("s", "m", "h", "d")):
        raise ValueError(f"{name} must be a rate such as 10/hour, not {value!r}")
    return value


BENCHAPP_NUM_PROXIES = envint("BENCHAPP_NUM_PROXIES", "0")
REST_FRAMEWORK["NUM_PROXIES"] = BENCHAPP_NUM_PROXIES
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "token-address": envrate("BENCHAPP_TOKEN_RATE_ADDRESS", "60/hour"),
    "token-username": envrate("BENCHAPP_TOKEN_RATE_USERNAME", "10/hour"),  # per username and address
    "token-username-any": envrate("BENCHAPP_TOKEN_RATE_USERNAME_ANY", "100/hour"),  # per username, every address
}
# Connection checks (target check page and API, quick compare's connection test) per user: each one connects
# wherever the target points, so they are budgeted and logged (campaigns/services/targets.py).
BENCHAPP_CHECK_RATE_USER = envrate("BENCHAPP_CHECK_RATE_USER", "30/hour")
# Settings variants change only the settings on campaigns/settings_allowlist.py's list. An administrator may add
# more, "driver name kind [low..high | a|b|c] [unit=U] [memory]" separated by ";" (docs/variants.md), e.g.
# "mysql innodb_log_file_size size 4M..8G; pgsql enable_group_by_reordering bool". A setting refused for good
# (a file, a command, a library, authentication, read-only mode, connection limits, data safety) is refused at
# start-up (campaigns.apps).
BENCHAPP_VARIANT_SETTINGS_EXTRA = os.environ.get("BENCHAPP_VARIANT_SETTINGS_EXTRA", "")
# The largest memory size a settings variant may ask of a server whose memory benchapp does not know (no instance
# spec with memory, not on this machine), in MiB.
BENCHAPP_VARIANT_MEMORY_UNKNOWN_MIB = int(os.environ.get("BENCHAPP_VARIANT_MEMORY_UNKNOWN_MIB", "4096"))
# Hours the reconciler keeps trying to put back a variant's settings on a server that does not answer, before it holds
# the server for a person to confirm (campaigns.execution.variants.settings_changes_sweep).
BENCHAPP_VARIANT_RESTORE_HOLD_H = int(os.environ.get("BENCHAPP_VARIANT_RESTORE_HOLD_H", "24"))
# Share links (/s/<token>/, no login): requests per client address, over every link (campaigns/ratelimit.py).
BENCHAPP_SHARE_RATE_ADDRESS = envrate("BENCHAPP_SHARE_RATE_ADDRESS", "60/minute")
INSTALLED_APPS += ["axes"]
# Last, as django-axes asks: it turns a locked-out login's answer into the lockout page.
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("BENCHAPP_LOGIN_FAILURES", "10")
if AXES_FAILURE_LIMIT < 1:
    raise ValueError("BENCHAPP_LOGIN_FAILURES must be at least 1")
AXES_COOLOFF_TIME = envfloat("BENCHAPP_LOGIN_COOLOFF_MIN", "15") / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
# A success does not wipe the failures (axes' default): else a guesser with an account of their own could
# log in with it every few guesses to start counting again. Failures age out after the cool-off.
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "campaigns.logins.client_address"
AXES_WHITELIST_CALLABLE = "campaigns.logins.is_api_login"
