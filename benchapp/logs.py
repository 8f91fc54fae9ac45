"""Log formats: plain text by default, one JSON object per line with BENCHAPP_LOG_FORMAT=json (python-json-logger).

Both carry the request id (benchapp/requestid.py). gunicorn's access lines go through the same formatter: in JSON their
fields (method, path, status, duration, request id) become keys of their own instead of one formatted string.
"""
from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

from campaigns.logfilters import mask

JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s"
# gunicorn's access-log atoms (gunicorn.glogging.Logger.atoms) kept as keys in JSON.
_ACCESS_ATOMS = {"h": "remote_addr", "m": "method", "U": "path", "s": "status", "B": "bytes", "M": "duration_ms",
                 "a": "user_agent"}


class JsonFormatter(_JsonFormatter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        super().__init__(JSON_FIELDS, *args, **kwargs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_data, record, message_dict)
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            for atom, key in _ACCESS_ATOMS.items():
                if atom in record.args:
                    log_data[key] = mask(record.args[atom])
            # The response's X-Request-ID (the id the request was served under).
            log_data["request_id"] = record.args.get("{x-request-id}o") or log_data.get("request_id", "-")
