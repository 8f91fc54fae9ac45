"""Checking a target from the app (the connection test of the target pages and the API)."""
from __future__ import annotations

from typing import Any

from campaigns.crypto import DecryptionError
from campaigns.execution.phases import target_connection
from campaigns.models import Target
from campaigns.probes import ProbeError, server_info


def target_check(*, target: Target) -> dict[str, Any]:
    """Connects to the target and returns its version and the settings that decide results."""
    try:
        info = server_info(target_connection(target=target))
    except DecryptionError as exc:
        raise ProbeError(str(exc)) from None
    return {"version": info.version, "settings": info.settings}
