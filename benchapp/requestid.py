"""The request id: one per HTTP request (X-Request-ID when the client sent a sane one, else generated), carried
into the Celery tasks the request starts (a message header) and into the tasks those start, and written on every
log line as `request_id` ("-" outside any request or task).

Imports no model and no Django setting: logging is configured before the apps are.
"""
from __future__ import annotations

import contextvars
import logging
import re
import uuid
from typing import Any

HEADER = "X-Request-ID"
# The Celery message header that carries it.
TASK_HEADER = "benchapp_request_id"
_SANE = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
_current: contextvars.ContextVar[str] = contextvars.ContextVar("benchapp_request_id", default="")


def current() -> str:
    return _current.get()


def clean(value: str | None) -> str:
    """The client's id when it is one a log line can carry as it is (letters, digits, . _ : -, at most 100),
    else a new one: a header is the client's input and must not forge log lines."""
    if value and _SANE.match(value):
        return value
    return uuid.uuid4().hex


def activate(value: str) -> contextvars.Token[str]:
    return _current.set(value)


def deactivate(token: contextvars.Token[str]) -> None:
    _current.reset(token)


_previous_factory = logging.getLogRecordFactory()


def _record_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _previous_factory(*args, **kwargs)
    record.request_id = _current.get() or "-"
    return record


class RequestIdFilter(logging.Filter):
    """django.request's lines (4xx and 5xx answers) are written by Django's handler after the middleware has left the
    request's context, so the record factory found no id: the id comes from the request the record carries."""

    def filter(self, record: logging.LogRecord) -> bool:
        value = getattr(getattr(record, "request", None), "request_id", None)
        if value and getattr(record, "request_id", "-") == "-":
            record.request_id = value
        return True


def logging_install() -> None:
    """Every log record gets `request_id`, whichever handler formats it (Django's, Celery's, gunicorn's)."""
    if logging.getLogRecordFactory() is not _record_factory:
        logging.setLogRecordFactory(_record_factory)


# ---------------------------------------------------------------- Celery: the id travels in a message header

def _before_publish(headers: dict[str, Any] | None = None, **_: Any) -> None:
    value = _current.get()
    if value and headers is not None and TASK_HEADER not in headers:
        headers[TASK_HEADER] = value


_task_tokens: dict[str, contextvars.Token[str]] = {}


def _task_prerun(task_id: str = "", task: Any = None, **_: Any) -> None:
    request = getattr(task, "request", None)
    value = getattr(request, TASK_HEADER, None) or (getattr(request, "headers", None) or {}).get(TASK_HEADER)
    if value:
        _task_tokens[task_id] = _current.set(clean(value))


def _task_postrun(task_id: str = "", **_: Any) -> None:
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        _current.reset(token)


def celery_signals_connect() -> None:
    from celery.signals import before_task_publish, task_postrun, task_prerun

    before_task_publish.connect(_before_publish, dispatch_uid="benchapp-request-id-publish", weak=False)
    task_prerun.connect(_task_prerun, dispatch_uid="benchapp-request-id-prerun", weak=False)
    task_postrun.connect(_task_postrun, dispatch_uid="benchapp-request-id-postrun", weak=False)
