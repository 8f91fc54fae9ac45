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


def tokens_revoke_all(*, user: Any) -> int:
    """Revokes every token of `user` still usable; returns how many."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())


class TokensEndWithPassword:
    """Listed last in AUTH_PASSWORD_VALIDATORS for its hook, not to validate: Django calls password_changed()
    whenever a user is saved with a new password (AbstractBaseUser.save after set_password), by every way there
    is (the API's users, the password change and reset pages, Django's admin, `manage.py changepassword`). A
    token was proof of the old password: all of the user's tokens are revoked, the one that asked included."""

    def validate(self, password: str, user: Any = None) -> None:
        return None

    def password_changed(self, password: str, user: Any = None) -> None:
        if user is not None and user.pk is not None:
            tokens_revoke_all(user=user)

    def get_help_text(self) -> str:
        return "Changing your password ends every API token you hold."
