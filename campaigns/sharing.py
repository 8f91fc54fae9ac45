"""Share links: make, revoke and open the read-only link to one comparison or report (campaigns.models.ShareLink).

Operators and admins make links; a link is revoked by its creator or by an admin. The token is random
(`secrets`), 43 characters of URL-safe base64, and only its SHA-256 is stored, as for API tokens: the full URL
is shown once. A link's choice is frozen when it is made: a measured comparison keeps only the runs it covered
then (its own filters stay as well), so later runs of the same targets, products or campaigns never appear on
it, and nothing in the shared URL can widen it. An expired, revoked or unknown token is the same None.
"""
from __future__ import annotations

import dataclasses
import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from campaigns import roles
from campaigns.comparison import Selection, comparison_layout
from campaigns.models import PublishedResult, ShareLink

TOKEN_BYTES = 32
DEFAULT_DAYS = 7
MAX_DAYS = 90
_SELECTION_FIELDS = {f.name for f in dataclasses.fields(Selection)}


def share_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def selection_of(link: ShareLink) -> Selection:
    """The frozen choice of a link, as the comparison reads it (unknown keys of an older row ignored)."""
    data = link.selection if isinstance(link.selection, dict) else {}
    return Selection(**{k: v for k, v in data.items() if k in _SELECTION_FIELDS})


def comparison_title(names: list[str]) -> str:
    """The comparison page's heading for these products (campaigns.views.compare says it the same way)."""
    if not names:
        return "Comparison"
    if len(names) == 1:
        return f"{names[0]}: results"
    return f"{', '.join(names[:-1])} vs {names[-1]}"


def selection_frozen(selection: Selection) -> Selection:
    """The selection narrowed to the runs it covers now; ValidationError when it covers nothing."""
    if selection.published:
        known = set(PublishedResult.objects.filter(document__in=selection.published)
                    .values_list("document", flat=True).distinct())
        if unknown := [d for d in selection.published if d not in known]:
            raise ValidationError({"published": f"no published figures for {', '.join(unknown)}"})
    if not selection.measured():
        if not selection.published:
            raise ValidationError("choose what to share: targets, products, a campaign, runs, scenarios or "
                                  "published figures")
        return selection
    runs = sorted(set(selection.jobs().values_list("run_id", flat=True).distinct()))
    if not runs:
        raise ValidationError("no succeeded job matches this choice: there is nothing to share")
    return dataclasses.replace(selection, runs=runs)


def share_link_create(*, user: Any, selection: Selection, shows: str = ShareLink.Shows.COMPARISON,
                      expires_in_days: int = DEFAULT_DAYS) -> tuple[ShareLink, str]:
    """A new link and its token (shown this once). ValidationError keyed by the field at fault."""
    if not roles.can_edit(user):
        raise ValidationError("making a share link needs the operator role")
    if shows not in ShareLink.Shows.values:
        raise ValidationError({"shows": f"one of {', '.join(ShareLink.Shows.values)}"})
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int) or not 1 <= expires_in_days <= MAX_DAYS:
        raise ValidationError({"expires_in_days": f"a whole number of days from 1 to {MAX_DAYS}"})
    frozen = selection_frozen(selection)
    title = comparison_title(comparison_layout(frozen)["names"])
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = timezone.now()
    link = ShareLink.objects.create(
        token_hash=share_token_hash(token), shows=shows, selection=dataclasses.asdict(frozen), title=title[:300],
        created_by=user, created_at=now, expires_at=now + timedelta(days=expires_in_days))
    return link, token


def may_revoke(*, link: ShareLink, user: Any) -> bool:
    return roles.can_admin(user) or (roles.can_edit(user) and link.created_by_id == getattr(user, "pk", None))


def share_link_revoke(*, link: ShareLink, user: Any) -> ShareLink:
    """Ends the link now (a second revoke changes nothing). PermissionError unless its creator or an admin."""
    if not may_revoke(link=link, user=user):
        raise PermissionError("only its creator or an admin can revoke a share link")
    ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now(), revoked_by=user)
    link.refresh_from_db()
    return link


def share_link_open(*, token: str) -> ShareLink | None:
    """The usable link of `token`, counted as opened; None for an unknown, expired or revoked one alike, and for
    one whose creator can no longer read benchapp (deactivated, or holding no role any more): a link
    speaks for its creator, and ends with their account. It works again if the account is given back."""
    if not token or len(token) > 200:
        return None
    now = timezone.now()
    creator_has_role = Q(created_by__is_superuser=True) | Exists(
        get_user_model().groups.through.objects.filter(user_id=OuterRef("created_by_id"), group__name__in=roles.ROLES))
    found = ShareLink.objects.filter(creator_has_role, token_hash=share_token_hash(token), revoked_at__isnull=True,
                                     expires_at__gt=now, created_by__is_active=True)
    if not found.update(last_opened_at=now, open_count=F("open_count") + 1):
        return None
    return found.select_related("created_by").first()


def share_links_visible(user: Any) -> QuerySet[ShareLink]:
    """The links a user sees in the list: admins every link, others their own."""
    links = ShareLink.objects.select_related("created_by", "revoked_by")
    return links if roles.can_admin(user) else links.filter(created_by_id=getattr(user, "pk", None))
