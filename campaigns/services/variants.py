"""Settings variants at save time: every setting of every variant is asked of every target it applies to.

A setting that needs a restart, that the target's user may not change, or that the server does not know is
refused with the campaign, naming it; a target that cannot be reached refuses the save with the cause (each
connection has the probes' connect and statement time-outs). The check changes nothing on the servers
(campaigns.server_settings.settings_check).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError

from campaigns.crypto import DecryptionError
from campaigns.execution.phases import target_connection
from campaigns.models import Target
from campaigns.probes import ProbeError
from campaigns.server_settings import SettingRefused, settings_check
from campaigns.settings_variants import VariantError, variant_settings, variants_clean


def variants_check(*, variants: Any, targets: Iterable[Target]) -> list[dict[str, Any]]:
    """The variants cleaned, once every target has said it can take its driver's settings at run time.
    ValidationError on "variants" naming the target, the variant and the setting."""
    try:
        cleaned = variants_clean(variants)
    except VariantError as exc:
        raise ValidationError({"variants": str(exc)}) from None
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
