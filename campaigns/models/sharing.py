"""Share links: read-only, expiring, revocable views of one comparison or report, opened without an account."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone


class ShareLink(models.Model):
    """One link that shows one comparison (or its print-ready report) to anyone holding its URL, without a login.

    The URL carries a random token; only its SHA-256 is stored (`token_hash`), so the full URL is shown once, when
    the link is made (campaigns.services.sharing). `selection` is the comparison's choice frozen when the link was
    made (the runs it covered then), so the link never shows later runs. A link works until `expires_at` unless
    `revoked_at` is set; a row is kept after either, so the list says what was shared, by whom and until when.
    """

    class Shows(models.TextChoices):
        COMPARISON = "comparison", "comparison"
        REPORT = "report", "print-ready report"

    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token, hex")
    shows = models.CharField(max_length=16, choices=Shows.choices, default=Shows.COMPARISON)
    selection = models.JSONField(default=dict, help_text="the comparison's frozen choice (Selection fields)")
    title = models.CharField(max_length=300, blank=True, help_text="what it shows, as its heading said when made")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    last_opened_at = models.DateTimeField(null=True, blank=True)
    open_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"share link #{self.pk}: {self.title or self.shows}"

    def is_usable(self, now: Any = None) -> bool:
        return self.revoked_at is None and self.expires_at > (now or timezone.now())

    def state(self) -> str:
        """"active", "expired" or "revoked", as the list shows it."""
        if self.revoked_at is not None:
            return "revoked"
        return "active" if self.expires_at > timezone.now() else "expired"
