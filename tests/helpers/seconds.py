"""A job's stored seconds of one attempt, whether still rows or already packed (campaigns.seconds): beat packs an
earlier attempt within a minute of its end, so a test that reads them must not care which store holds them."""
from __future__ import annotations

from typing import Any

from campaigns.models import Job
from campaigns.seconds import Kind, seconds_rows


def stored_seconds(job: Job, attempt: int, *, client_index: int | None = None) -> list[dict[str, Any]]:
    """sysbench's seconds of that attempt (every client's, or one's), ordered by client and t."""
    rows = seconds_rows(Kind.INTERVAL, {job.pk: attempt})
    return [r for r in rows if client_index is None or r["client_index"] == client_index]
