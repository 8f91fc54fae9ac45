"""A job's target password sealed for the one client host that needs it (campaigns.sealing)."""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from campaigns.models.core import Job


class SealedPassword(models.Model):
    """The target password of one job, sealed for one client host's public key (ClientHost.public_key).

    Written by the server (or by the job's coordinator, which opened its own) each time it sends the job or one of
    its clients to that host, so that it is always sealed for the host's current key; read only by that host, which
    opens it in memory right before it connects. A client host holds no field key: this is the only password it ever
    sees. Gone with its job.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="sealed_passwords")
    host_name = models.CharField(max_length=255)
    token = models.TextField(help_text="base64 of a libsodium sealed box (never the password itself)")
    public_key = models.CharField(max_length=64, help_text="the host's key it was sealed for")
    sealed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "host_name"], name="sealedpassword_unique_host")]

    def __str__(self) -> str:
        return f"password of job #{self.job_id} sealed for {self.host_name}"
