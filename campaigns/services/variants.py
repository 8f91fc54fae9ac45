"""Settings variants at save time: every setting of every variant is held against benchapp's allowlist
(campaigns.settings_allowlist: the setting, its kind, its bounds, a memory size against the target's memory where
benchapp knows it), then asked of every target it applies to.

Every way a campaign is saved (the form, the API, a bundle's import, the seeds, the admin) comes through
campaign_create / campaign_update and so through variants_check; a refusal names the target, the variant and the
setting. A setting that needs a restart, that the target's user may not change, or that the server does not know is
refused with the campaign, naming it; a target that cannot be reached refuses the save with the cause (each
connection has the probes' connect and statement time-outs). The check changes nothing on the servers
(campaigns.server_settings.settings_check).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from campaigns.crypto import DecryptionError
from campaigns.endpoints import own_server_problem
from campaigns.execution.metrics import target_is_local
from campaigns.execution.phases import target_connection
from campaigns.execution.variants import on_server
from campaigns.models import SettingsChange, Target
from campaigns.probes import ProbeError
from campaigns.server_settings import SettingRefused, settings_check
from campaigns.services.targets import check_budget_spend
from campaigns.settings_allowlist import GIB, Memory, settings_allowed, variants_allowlisted
from campaigns.settings_variants import VariantError, variant_settings, variants_clean

log = logging.getLogger(__name__)


def target_memory(target: Target) -> Memory:
    """The target server's memory where benchapp knows it: its instance spec's, else this machine's when the
    target is on it; otherwise the most benchapp allows without knowing (BENCHAPP_VARIANT_MEMORY_UNKNOWN_MIB), so
    that a variant cannot ask a server of unknown size for a terabyte."""
    spec = target.spec
    if spec is not None and spec.memory_gb and spec.memory_gb > 0:
        return Memory(int(spec.memory_gb * GIB), f"instance spec '{spec.label}'")
    if target.host and target_is_local(target.host):
        import psutil

        total = int(psutil.virtual_memory().total)
        return Memory(total, "this machine's, where the target runs")
    return Memory(django_settings.BENCHAPP_VARIANT_MEMORY_UNKNOWN_MIB * 1024 * 1024,
                  f"give target '{target.name}' an instance spec with its memory to allow more", known=False)


def variants_allowlist_check(*, variants: list[dict[str, Any]], targets: Iterable[Target],
                             memory: bool = True) -> list[dict[str, Any]]:
    """Cleaned variants held against the allowlist for each target's driver (and, with `memory`, each memory size
    against the target's memory); ValidationError on "variants" naming the target, the variant and the setting."""
    written, _ = variants_allowlisted(variants)
    problems: list[str] = []
    for target in targets:
        if target.is_client_host() or not target.driver:
            continue
        known = target_memory(target) if memory else None
        changing = [v["name"] for v in variants if variant_settings(v, target.driver)]
        own = own_server_problem(host=target.host, port=target.port) if changing else None
        if own:
            problems.append(f"target '{target.name}', variant {', '.join(map(repr, changing))}: {own}")
            continue
        for variant in variants:
            _, refused = settings_allowed(target.driver, variant_settings(variant, target.driver), memory=known)
            problems += [f"target '{target.name}', variant {variant['name']!r}: {p}" for p in refused]
    if problems:
        raise ValidationError({"variants": list(dict.fromkeys(problems))})
    return written


def variants_check(*, variants: Any, targets: Iterable[Target], connect: bool = True,
                   user: Any = None) -> list[dict[str, Any]]:
    """The variants cleaned, once they are on the allowlist for every target and (with `connect`, for
    every campaign but a bundle's, whose targets are another site's) every target has said it can take its
    driver's settings at run time. Each target asked spends one of `user`'s connection checks (the budget of
    target checks and quick compare: a variant's check connects wherever the target points). ValidationError on
    "variants" naming the target, the variant and the setting, or saying the budget is spent."""
    try:
        cleaned = variants_clean(variants)
    except VariantError as exc:
        raise ValidationError({"variants": str(exc)}) from None
    targets = list(targets)
    cleaned = variants_allowlist_check(variants=cleaned, targets=targets, memory=connect)
    if not connect:
        return cleaned
    problems: list[str] = []
    for target in targets:
        # Each distinct (setting, value) is asked once: an enum value one variant misspells is named. A round
        # holds each setting once, so that a round is one dict of settings.
        rounds: list[dict[str, str]] = []
        owners: dict[tuple[str, str], list[str]] = {}
        for variant in cleaned:
            for name, value in variant_settings(variant, target.driver).items():
                owners.setdefault((name, value), []).append(variant["name"])
        for name, value in owners:
            round_ = next((r for r in rounds if name not in r), None)
            if round_ is None:
                rounds.append(round_ := {})
            round_[name] = value
        found: list[str] = []
        try:
            for round_ in rounds:
                if user is not None:  # each connection to where the target points spends one check
                    check_budget_spend(user)
                    log.info("settings check of variants by %s (id %s) of target %s at %s %s:%s",
                             user.get_username(), user.pk, target.pk, target.driver, target.host, target.port)
                for problem in settings_check(target_connection(target=target), round_):
                    name = problem.split(":", 1)[0]
                    variants_named = owners.get((name, round_.get(name, "")), [])
                    found.append(f"target '{target.name}', variant {', '.join(repr(v) for v in variants_named)}: "
                                 f"{problem}")
        except (ProbeError, DecryptionError) as exc:
            raise ValidationError({"variants": f"cannot check the settings on target '{target.name}': {exc}"}) \
                from None
        except SettingRefused as exc:
            raise ValidationError({"variants": str(exc)}) from None
        problems += list(dict.fromkeys(found))
    if problems:
        raise ValidationError({"variants": problems})
    return cleaned


def variants_launch_problems(*, jobs: Iterable[tuple[Target, str, dict[str, str]]]) -> list[str]:
    """At a launch (and a rerun), the jobs' (target, variant, settings) held to the allowlist and kept off
    benchapp's own servers again: a campaign saved before the list, or a row changed in the database, does not
    reach a server. One sentence per problem, naming the target, the variant and the setting."""
    problems: list[str] = []
    seen: set[tuple[int, str]] = set()
    for target, variant, settings in jobs:
        if not settings or target.is_client_host() or (target.pk, variant) in seen:
            continue
        seen.add((target.pk, variant))
        own = own_server_problem(host=target.host, port=target.port)
        if own:
            problems.append(f"target '{target.name}', variant {variant!r}: {own}")
            continue
        _, refused = settings_allowed(target.driver, settings, memory=target_memory(target))
        problems += [f"target '{target.name}', variant {variant!r}: {p}" for p in refused]
    return problems


def settings_confirm(*, target: Target, user: Any) -> int:
    """A person confirms that the settings benchapp could not put back on the target's server (held changes,
    campaigns.execution.variants.change_hold) were put back by hand: the server takes jobs again. The number of
    changes confirmed (0: nothing was held)."""
    now = timezone.now()
    held = on_server(SettingsChange.objects.filter(held_at__isnull=False, confirmed_at__isnull=True), target)
    count = SettingsChange.objects.filter(pk__in=[c.pk for c in held]).update(
        confirmed_at=now, confirmed_by=user, restored_at=now)
    if count:
        log.warning("user %s (id %s) confirmed the settings of %s:%s were put back by hand (%s change(s)): the "
                    "server takes jobs again", user.get_username(), user.pk, target.host, target.port, count)
    return count
