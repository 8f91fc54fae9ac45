"""Campaigns: the one way they are created and changed (campaigns.services.rows).

Campaign.clean() holds the cross-field rules (rows window, thread lists and maps, the baseline being one of its
own runs); the webhook URL is checked here, encrypted, and never returned."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns.models import Campaign, Scenario, Target
from campaigns.services.hosttests import HostTestRefused, host_bounds_check
from campaigns.services.plans import campaign_expand
from campaigns.services.rows import row_write
from campaigns.services.targets import targets_use_check
from campaigns.services.variants import variants_check
from campaigns.webhooks import WebhookRefused, webhook_url_check


def _webhook_set(campaign: Campaign, webhook_url: str | None) -> None:
    if webhook_url is None:
        return
    if webhook_url:
        try:
            webhook_url_check(webhook_url, allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
        except WebhookRefused as exc:
            raise ValidationError({"webhook_url": str(exc)}) from None
    campaign.set_webhook_url(webhook_url)


def campaign_create(*, user: Any = None, targets: Iterable[Target] = (), scenarios: Iterable[Scenario] = (),
                    webhook_url: str = "", check_variants: bool = True, **fields: Any) -> Campaign:
    """A new campaign of these targets and scenarios. ValidationError keyed by field. Settings variants are asked
    of every target (check_variants=False only for a bundle's campaign, whose variants are history: they are still
    held against the allowlist)."""
    campaign = Campaign()
    _webhook_set(campaign, webhook_url)
    targets = list(targets)
    if fields.get("variants"):
        fields["variants"] = variants_check(variants=fields["variants"], targets=targets, connect=check_variants,
                                            user=user)
    return _campaign_write(campaign, fields, user=user, targets=targets, scenarios=scenarios)


def _campaign_write(campaign: Campaign, fields: dict[str, Any], *, user: Any, targets: Iterable[Target] | None,
                    scenarios: Iterable[Scenario] | None) -> Campaign:
    """row_write, and the campaign's host tests within their hosts' bounds, in one transaction: a refused
    campaign is not stored (ValidationError on "scenarios", naming the option and the host's figure)."""
    if targets is not None:
        # Only the targets this write adds: a campaign keeps the targets it was given by someone allowed to.
        kept = set(campaign.targets.values_list("pk", flat=True)) if campaign.pk else set()
        targets = list(targets)
        targets_use_check(user=user, targets=[t for t in targets if t.pk not in kept])
    with transaction.atomic():
        written = row_write(campaign, fields, user=user, m2m={"targets": targets, "scenarios": scenarios})
        try:
            # (A fresh row: the caller's may carry prefetched targets with deferred fields.)
            host_bounds_check(planned=campaign_expand(campaign=Campaign.objects.get(pk=written.pk)))
        except HostTestRefused as exc:
            raise ValidationError({"scenarios": str(exc)}) from None
    return written


def campaign_update(*, campaign: Campaign, user: Any = None, targets: Iterable[Target] | None = None,
                    scenarios: Iterable[Scenario] | None = None, webhook_url: str | None = None,
                    check_variants: bool = True, **fields: Any) -> Campaign:
    """Changes a campaign; targets, scenarios and webhook_url left None stay as they are ("" clears the webhook).
    Settings variants are asked of the targets again when the variants or the targets change."""
    _webhook_set(campaign, webhook_url)
    if targets is not None:
        targets = list(targets)
    variants = fields.get("variants", campaign.variants)
    if variants:
        stored_targets = set(campaign.targets.values_list("pk", flat=True)) if campaign.pk else set()
        new_targets = {t.pk for t in targets} if targets is not None else stored_targets
        if variants != campaign.variants or new_targets != stored_targets:
            checked = variants_check(
                variants=variants, targets=targets if targets is not None else campaign.targets.all(),
                connect=check_variants, user=user)
            if "variants" in fields:
                fields["variants"] = checked
    return _campaign_write(campaign, fields, user=user, targets=targets, scenarios=scenarios)
