"""A client host's own credentials, issued by an admin (campaigns.services.client_access)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class HostAccess(models.Model):
    """The credentials one client host name was issued: a PostgreSQL login role (a member of the client group role,
    whose row-level security limits it to that host's own jobs) and a Redis ACL user (the broker's queues only).

    Issued before the host joins (its worker then creates its ClientHost row, under that name only); revoked at once
    by an admin (revoked_at: the role can no longer log in, its sessions were ended, the Redis user is deleted).
    Issued again for the same name, it gets new passwords. The passwords themselves are never stored here (the Redis
    one's SHA-256 is, as Redis's ACL keeps it).
    """

    hostname = models.CharField(max_length=255, unique=True)
    db_role = models.CharField(max_length=63, unique=True)
    redis_user = models.CharField(max_length=100, blank=True)
    # SHA-256 of the Redis user's password (Redis's own ACL form, `#<hex>`): enough to give the user back after a
    # Redis restart or an upgrade of its rules (client_access.redis_acl_restore), never the password itself.
    redis_password_sha256 = models.CharField(max_length=64, blank=True)
    # The host's labels, the server's to give (client_host_issue --labels, client_host_labels): a campaign that picks
    # its hosts by label sends them jobs and their passwords, so a host cannot announce its own (a trigger puts
    # these on its ClientHost row, whatever it writes: client_access._FUNCTIONS).
    labels = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    issued_at = models.DateTimeField(default=timezone.now)
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return f"credentials of client host {self.hostname}"

    def is_revoked(self) -> bool:
        return self.revoked_at is not None
