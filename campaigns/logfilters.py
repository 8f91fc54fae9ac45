"""Logging filters: a share link's token is a secret, so no log line carries it.

Django logs the path of every 4xx/5xx answer ("Not Found: /s/<token>/") and the development server every request
line; this filter, on every handler (settings.LOGGING), writes `/s/***/` instead. It imports no model: logging is
configured before the apps are.
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
