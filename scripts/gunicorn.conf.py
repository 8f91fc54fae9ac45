"""gunicorn's settings for the `web` process (scripts/web.sh passes the bind address, workers and threads).

preload_app: the application (Django, DRF, every view) is imported once in the master and the workers share its
pages copy-on-write, instead of each importing its own. numpy and scipy are not among them: they load in the one
worker that serves a request needing them (campaigns/statistics.py, changepoints.py are imported lazily).

Metrics: each worker keeps its request-latency histogram in PROMETHEUS_MULTIPROC_DIR (set by scripts/web.sh, wiped
at start), and /metrics adds them up; a worker that exits has its live gauges dropped (child_exit).

Start: the master refuses to start when the field key reads none of the database's encrypted values (on_starting).

Logs: the access log on stdout, one line per request with its X-Request-ID; BENCHAPP_LOG_FORMAT=json makes both of
gunicorn's logs JSON through benchapp's formatter (campaigns/observability/logs.py).
"""
from __future__ import annotations

import os
from typing import Any

preload_app = True
# Each worker is replaced after about WEB_MAX_REQUESTS requests (jitter: not all at once): the one that served a
# comparison carries numpy and scipy (60-80 MB) from then on, and its replacement is forked from the master, which never
# loads them (campaigns/lazy.py). 0 turns it off.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "500"))
max_requests_jitter = max(0, max_requests // 10)
# gunicorn 27's control socket defaults to one path per user ($HOME/.gunicorn/gunicorn.ctl): a second server of the
# same user (tests, another port) would take it over. benchapp does not use it.
control_socket_disable = True
accesslog = "-"
access_log_format = '%(h)s %(t)s "%(r)s" %(s)s %(B)s %(M)sms request_id=%({x-request-id}o)s "%(a)s"'

# Both logs through benchapp's filter that writes a share link's token as `/s/***` (campaigns/logfilters.py), and in
# JSON with BENCHAPP_LOG_FORMAT=json. gunicorn merges this into its defaults, whose root logger names "console".
_json = os.environ.get("BENCHAPP_LOG_FORMAT", "").strip().lower() == "json"
_formatters = {"json": {"()": "benchapp.logs.JsonFormatter"}} if _json else {
    "access": {"format": "%(message)s"},
    "error": {"format": "%(asctime)s [%(process)d] [%(levelname)s] %(message)s",
              "datefmt": "[%Y-%m-%d %H:%M:%S %z]"}}
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"share_tokens": {"()": "campaigns.logfilters.ShareTokenFilter"}},
    "formatters": _formatters,
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json" if _json else "error",
                    "filters": ["share_tokens"], "stream": "ext://sys.stderr"},
        "access": {"class": "logging.StreamHandler", "formatter": "json" if _json else "access",
                   "filters": ["share_tokens"], "stream": "ext://sys.stdout"},
    },
    "root": {"level": "INFO", "handlers": ["console"]},
    "loggers": {"gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
                "gunicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False}},
}


def on_starting(server: Any) -> None:
    """Refused with a message (exit 78) when the field key reads none of the database's encrypted values: a database
    restored without its var/secrets.env (campaigns/keycheck.py). In the master, before any worker is forked."""
    import django

    django.setup()  # done already when the application is preloaded
    from campaigns.keycheck import start_refused_unless_key_reads

    start_refused_unless_key_reads()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
