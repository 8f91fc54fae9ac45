"""API tokens, stored as their SHA-256 only: a stolen database dump holds no usable token."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """One API token of a user. The clear token is shown once, when it is issued (campaigns.services.tokens);
    `prefix` (its first characters) tells tokens apart in the admin. A token works until `expires_at`
    (BENCHAPP_TOKEN_TTL_DAYS after it was issued; never when null) unless it was revoked."""

    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token, hex")
    prefix = models.CharField(max_length=8)
    name = models.CharField(max_length=100, blank=True, help_text="what its owner calls it, e.g. nightly CI")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… of {self.user_id}"

    def is_usable(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())
