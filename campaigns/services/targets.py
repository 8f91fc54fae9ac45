"""Targets: the one way they are created and changed, and checking one from the app (the connection test of
the target pages, the API and quick compare).

Every connection check a person asks for comes through target_check (and the settings check of a campaign's
variants through check_budget_spend, the same budget): it is limited per user (a token bucket
in the cache's Redis, BENCHAPP_CHECK_RATE_USER) and logged, with who asked, where it went and what came back,
never the password. Its answers stay precise (refused, lost, not MySQL, access denied): operators need them to
fix a target, and an operator can point a target anywhere anyway; the budget keeps that from being a fast
port scanner, and the log says who tried.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError

from campaigns import roles
from campaigns.crypto import DecryptionError
from campaigns.execution.phases import target_connection
from campaigns.models import Target
from campaigns.probes import ProbeError, server_info
from campaigns.ratelimit import RateUnavailable, rate_take
from campaigns.services.rows import row_write

log = logging.getLogger(__name__)


class CheckRateExceeded(ProbeError):
    """The user asked for more connection checks than BENCHAPP_CHECK_RATE_USER allows; wait_s until the next."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = max(1, round(wait_s))
        super().__init__(f"too many connection checks: the next one is allowed in {self.wait_s} s")


def check_budget_spend(user: Any) -> None:
    """Spends one of the user's connection checks (BENCHAPP_CHECK_RATE_USER), for every way benchapp opens a
    connection to an address a person gave: the target check, quick compare, the settings check of variants.
    CheckRateExceeded when they are used up; ProbeError when the budget's store does not answer."""
    try:
        wait_s = rate_take(scope="target-check", ident=str(user.pk), rate=settings.BENCHAPP_CHECK_RATE_USER)
    except RateUnavailable:
        log.error("target check refused: the rate limiter's store does not answer")
        raise ProbeError("connection checks are paused: the rate limiter's store does not answer; "
                         "try again in a minute") from None
    if wait_s is not None:
        log.warning("target check refused: user %s (id %s) is over %s", user.get_username(), user.pk,
                    settings.BENCHAPP_CHECK_RATE_USER)
        raise CheckRateExceeded(wait_s)


def target_check(*, target: Target, user: Any) -> dict[str, Any]:
    """Connects to the target and returns its version and the settings that decide results. ProbeError says why
    not; CheckRateExceeded (a ProbeError) when `user` has used up their checks."""
    if target.is_client_host():
        raise ProbeError(f"{target.name} is a client host (host tests): there is no database to connect to; the "
                         "Hosts page says whether its worker is online")
    check_budget_spend(user)
    where = f"{target.driver} {target.host}:{target.port}"
    name = f"target {target.pk}" if target.pk is not None else "a new target"
    started = time.monotonic()
    try:
        info = server_info(target_connection(target=target))
    except (ProbeError, DecryptionError) as exc:
        log.info("target check by %s (id %s) of %s at %s: failed in %.2f s: %s", user.get_username(), user.pk,
                 name, where, time.monotonic() - started, exc)
        if isinstance(exc, DecryptionError):
            raise ProbeError(str(exc)) from None
        raise
    log.info("target check by %s (id %s) of %s at %s: ok in %.2f s", user.get_username(), user.pk, name, where,
             time.monotonic() - started)
    return {"version": info.version, "settings": info.settings}


# The acting user is `by`: `user` is the target's own field (who sysbench logs in as).


def target_create(*, by: Any = None, password: str = "", **fields: Any) -> Target:
    """A new target (password encrypted; "" for none). ValidationError keyed by field."""
    target = Target()
    target.set_password(password)
    return row_write(target, fields, user=by, exclude=["password_encrypted"])


def target_may_use(*, user: Any, target: Target) -> bool:
    """Whether `user` may run sysbench on (or change) this target: its owner (who created it), an admin, or
    anyone when it has no owner (demo targets, older rows); None is benchapp itself (a schedule, a seed), whose
    campaigns were checked when they were saved."""
    if user is None or target.created_by_id is None:
        return True
    return bool(target.created_by_id == getattr(user, "pk", None) or roles.can_admin(user))


def _owner_text(target: Target) -> str:
    owner = target.created_by
    return f"{owner.get_username()}'s" if owner is not None else "someone else's"


def targets_use_check(*, user: Any, targets: Iterable[Target]) -> None:
    """ValidationError on "targets" naming the first target `user` may not use (target_may_use)."""
    for target in targets:
        if not target_may_use(user=user, target=target):
            raise ValidationError({"targets": f"target '{target.name}' is {_owner_text(target)}: only its owner or "
                                              "an admin may run benchmarks on it"})


def workload_targets_check(*, pairs: Iterable[tuple[Target, Any]]) -> None:
    """ValidationError on "targets" naming the first (target, scenario) pair whose scenario runs an uploaded
    workload on a target that does not allow them (Target.workloads_allowed, its owner's choice), or whose version
    nobody who counts there has approved: the one rule the coordinator applies again as each job starts
    (execution.workloads.workload_refusal)."""
    from campaigns.execution.workloads import workload_refusal

    for target, scenario in pairs:
        refused = workload_refusal(target=target, scenario=scenario)
        if refused:
            raise ValidationError({"targets": refused})


def target_update(*, target: Target, by: Any = None, password: str | None = None, **fields: Any) -> Target:
    """Changes a target (its owner or an admin: PermissionDenied for anyone else). `password` None keeps the stored
    one (Target.save() still removes it when the endpoint changes: target.password_cleared says so afterwards), ""
    clears it."""
    if target.pk is not None and not target_may_use(user=by, target=target):
        raise PermissionDenied(f"target '{target.name}' is {_owner_text(target)}: only its owner or an admin may "
                               "change it")
    if password is not None:
        target.set_password(password)
    return row_write(target, fields, user=by, exclude=["password_encrypted"])
