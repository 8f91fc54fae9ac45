"""Celery's CRITICAL "Couldn't ack" after a lost broker connection is logged as the WARNING it is, saying what
follows (campaigns.logfilters.BrokerAckFilter, on the logger Celery's worker requests use)."""
from __future__ import annotations

import logging

import pytest

from campaigns.logfilters import BrokerAckFilter


def _record(level: int, msg: str, args: tuple[object, ...]) -> logging.LogRecord:
    try:
        raise ConnectionError("Connection closed by server.")
    except ConnectionError:
        import sys
        exc_info = sys.exc_info()
    return logging.LogRecord("celery.worker.request", level, __file__, 1, msg, args, exc_info)


@pytest.mark.parametrize("msg", ["Couldn't ack %r, reason:%r", "Couldn't reject %r, reason: %r"])
def test_a_lost_acknowledgement_is_one_warning_line_without_a_traceback(msg):
    record = _record(logging.CRITICAL, msg, ("5f1c-tag", ConnectionError("Connection closed by server.")))
    assert BrokerAckFilter().filter(record)
    assert (record.levelno, record.levelname, record.exc_info) == (logging.WARNING, "WARNING", None)
    text = record.getMessage()
    assert "5f1c-tag" in text and "Connection closed by server." in text
    assert "delivers it again" in text and "does nothing" in text


def test_other_lines_of_the_logger_pass_as_they_are():
    record = _record(logging.CRITICAL, "Task handler raised error: %r", ("boom",))
    assert BrokerAckFilter().filter(record)
    assert record.levelno == logging.CRITICAL and record.exc_info is not None


def test_the_filter_is_on_the_logger_celery_uses_for_acknowledgements(caplog):
    from celery.worker import request

    caplog.set_level(logging.INFO)
    request.logger.critical("Couldn't ack %r, reason:%r", 7, OSError("Broken pipe"), exc_info=False)
    [line] = [r for r in caplog.records if r.name == "celery.worker.request"]
    assert line.levelname == "WARNING" and "broker connection was lost" in line.getMessage()
