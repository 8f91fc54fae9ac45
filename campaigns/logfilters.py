"""Logging filters: a share link's token is a secret, so no log line carries it; routine tasks say nothing.

Django logs the path of every 4xx/5xx answer ("Not Found: /s/<token>/") and the development server every request
line; ShareTokenFilter, on every handler (settings.LOGGING), writes `/s/***/` instead. RoutineTaskFilter mutes
Celery's INFO lines ("Sending due task", "received", "succeeded") of the tasks that run every few seconds whether
or not there is work (the reconciler, the worker's heartbeat): three lines every 10 s were 4 MB of log a day. Those
tasks log themselves when they do something; their failures (ERROR) still show. BrokerAckFilter says what
Celery's CRITICAL "Couldn't ack" after a lost broker connection means, as the WARNING it is. It imports no model:
logging is configured before the apps are.
"""
from __future__ import annotations

import logging
import re

SHARE_PATH = re.compile(r"/s/[A-Za-z0-9_-]+")


def mask(value: object) -> object:
    return SHARE_PATH.sub("/s/***", value) if isinstance(value, str) else value


class ShareTokenFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(mask(a) for a in record.args)
        elif isinstance(record.args, dict):  # in place: gunicorn's access atoms are a dict of its own class
            for key, value in record.args.items():
                record.args[key] = mask(value)
        return True


# Tasks that run every few seconds whatever there is to do: their routine INFO lines are muted.
ROUTINE_TASKS = frozenset({"campaigns.tasks.jobs_reconcile_task", "campaigns.tasks.worker_heartbeat_task"})


class RoutineTaskFilter(logging.Filter):
    """On Celery's loggers celery.beat ("Sending due task <entry> (<task>)"), celery.worker.strategy ("Task <name>[id]
    received") and celery.app.trace ("Task <name>[id] succeeded in …"): drops their INFO lines of ROUTINE_TASKS."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        args = record.args
        if isinstance(args, dict):  # the worker's: Celery's context dict (name, id, …)
            return args.get("name") not in ROUTINE_TASKS
        if isinstance(args, tuple) and len(args) == 2 and record.name == "celery.beat":
            return args[1] not in ROUTINE_TASKS
        return True


# What an acknowledgement lost with the broker connection costs, said where Celery says only "Couldn't ack".
ACK_LOST = ("the broker connection was lost before Redis took the acknowledgement of task message %s (%s): Redis "
            "keeps the message and delivers it again (after a worker restart or the visibility timeout), and a "
            "delivery of a task whose job has moved on does nothing")


class BrokerAckFilter(logging.Filter):
    """On celery.worker.request: kombu's CRITICAL "Couldn't ack %r, reason:%r" (and "Couldn't reject") with a
    traceback, logged when the connection to Redis broke under a finished task, becomes one WARNING line that says
    what follows. Nothing is lost: benchapp's tasks are idempotent against their job's state (acks_late)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        if record.levelno == logging.CRITICAL and message.startswith(("Couldn't ack", "Couldn't reject")):
            args = record.args if isinstance(record.args, tuple) else ()
            tag, reason = (args + ("?", "?"))[:2]
            record.msg, record.args = ACK_LOST, (tag, reason)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True
