"""Targets: the one way they are created and changed, and checking one from the app (the connection test of
the target pages and the API)."""
from __future__ import annotations

from typing import Any

from campaigns.crypto import DecryptionError
from campaigns.execution.phases import target_connection
from campaigns.models import Target
from campaigns.probes import ProbeError, server_info
from campaigns.services.rows import row_write


def target_check(*, target: Target) -> dict[str, Any]:
    """Connects to the target and returns its version and the settings that decide results."""
    try:
        info = server_info(target_connection(target=target))
    except DecryptionError as exc:
        raise ProbeError(str(exc)) from None
    return {"version": info.version, "settings": info.settings}


# The acting user is `by`: `user` is the target's own field (who sysbench logs in as).


def target_create(*, by: Any = None, password: str = "", **fields: Any) -> Target:
    """A new target (password encrypted; "" for none). ValidationError keyed by field."""
    target = Target()
    target.set_password(password)
    return row_write(target, fields, user=by, exclude=["password_encrypted"])


def target_update(*, target: Target, by: Any = None, password: str | None = None, **fields: Any) -> Target:
    """Changes a target. `password` None keeps the stored one (Target.save() still removes it when the endpoint
    changes: target.password_cleared says so afterwards), "" clears it."""
    if password is not None:
        target.set_password(password)
    return row_write(target, fields, user=by, exclude=["password_encrypted"])
