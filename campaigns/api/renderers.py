"""CSV output for `?format=csv` (results and comparisons).

Views that offer CSV build the rows themselves (streamed, unpaginated); the renderer exists so
content negotiation accepts `format=csv` and `Accept: text/csv`, and renders error bodies. Every
cell goes through campaigns.escaping, the rule of every export: a name such as "=cmd|…" stays text.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from campaigns.escaping import csv_cell, csv_row


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        # Only error bodies get here ({"detail": …} or {field: [messages]}): one line per message.
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["field", "message"])
        if isinstance(data, dict):
            for key, value in data.items():
                for message in value if isinstance(value, list) else [value]:
                    writer.writerow([csv_cell(key), csv_cell(message)])
        return buffer.getvalue().encode()


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_response(header: list[str], rows: Iterable[Iterable[Any]], *, filename: str) -> StreamingHttpResponse:
    """A streamed CSV download: the header, then each row, with spreadsheet formulas neutralised."""
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow(csv_row(row))

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
