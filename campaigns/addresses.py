"""Where benchapp may send a campaign's news: its e-mail recipients and its webhook URL, each checked by one
function that every way in calls (the campaign form, the API, Campaign.clean() for services and imports), so the
rules cannot drift apart again.

E-mail recipients are stored one per line; they may be typed one per line or separated by commas, semicolons or
spaces, and every one must be an address. Campaign.recipients() reads them back (also from rows stored before,
joined by commas). A webhook URL is checked by campaigns.webhooks (public http(s) addresses only, unless
BENCHAPP_WEBHOOK_ALLOW_PRIVATE).
"""
from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from campaigns.webhooks import WebhookRefused, webhook_url_check

_SEPARATORS = re.compile(r"[\s,;]+")


def emails_split(text: str) -> list[str]:
    """The addresses in `text`, in order, each once (one per line as stored; commas, semicolons, spaces too)."""
    return list(dict.fromkeys(a for a in _SEPARATORS.split(text or "") if a))


def emails_clean(text: str) -> str:
    """`text`'s addresses as stored (one per line); ValidationError naming the first that is not an address."""
    addresses = emails_split(text)
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            raise ValidationError(f"{address[:80]!r} is not an e-mail address", code="invalid") from None
    return "\n".join(addresses)


def webhook_url_clean(url: str) -> str:
    """`url` if benchapp may post to it (empty: no webhook); ValidationError saying why not."""
    if url:
        try:
            webhook_url_check(url, allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
        except WebhookRefused as exc:
            raise ValidationError(str(exc), code="refused") from None
    return url
