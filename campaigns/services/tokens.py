"""Issuing and revoking API tokens. Only a token's SHA-256 is stored; the token itself is returned once."""
from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from campaigns.models import ApiToken

TOKEN_BYTES = 30  # 40 characters of URL-safe base64, DRF's length


def token_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_issue(*, user: Any, ttl_days: int | None = None, name: str = "") -> str:
    """A new token for `user`, valid for `ttl_days` (BENCHAPP_TOKEN_TTL_DAYS by default; 0: until revoked), named
    as its owner calls it (the API tokens page)."""
    key = secrets.token_urlsafe(TOKEN_BYTES)
    days = settings.BENCHAPP_TOKEN_TTL_DAYS if ttl_days is None else ttl_days
    token = ApiToken(key_hash=token_hash(key), prefix=key[:8], user=user, name=name.strip(),
                     expires_at=timezone.now() + timedelta(days=days) if days > 0 else None)
    token.full_clean()
    token.save()
    return key


def token_revoke(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
