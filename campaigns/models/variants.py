"""The server settings a job's variant changed, kept until they are put back."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from campaigns.models.core import Job, Target


class SettingsChangeQuerySet(models.QuerySet["SettingsChange"]):
    def pending_restore(self) -> SettingsChangeQuerySet:
        """Changes of finished jobs that could not be put back yet because their server did not answer (neither
        restored nor held, a failed try recorded): the run and job pages say so."""
        return self.filter(restored_at__isnull=True, held_at__isnull=True, job__status__in=Job.FINISHED,
                           restore_tried_at__isnull=False)


class SettingsChange(models.Model):
    """One change of a target server's global settings for one job's variant: the values found before (written
    here, and committed, before anything on the server changes), the values wanted, and when they were put back.

    A row with `restored_at` empty is a change still in force (or one that may be: the worker died between this
    row and the server's change); the job's end, the next change on the same server and the reconciler put its
    originals back (campaigns.execution.variants). `originals` maps a setting to {"value", "in_auto_conf"}
    (PostgreSQL: whether ALTER SYSTEM had set it, so that the restore sets it again rather than RESETs it).
    """

    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="settings_changes")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="settings_changes")
    variant = models.CharField(max_length=40)
    wanted = models.JSONField(default=dict)
    originals = models.JSONField(default=dict)
    # What the server answered when read back after the change: {setting: value}.
    read_back = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    restored_at = models.DateTimeField(null=True, blank=True)
    # The last restore that failed (the server away): the reconciler tries again.
    restore_error = models.TextField(blank=True)
    restore_tried_at = models.DateTimeField(null=True, blank=True)
    # PostgreSQL: what postgresql.auto.conf set before the change ({name: value}; None when the target's user may
    # not read it): written back whole if the file stops parsing.
    auto_conf = models.JSONField(null=True, blank=True)
    # A restore that failed on a server that answers (or after a lock-out): nobody tries again; the server is
    # held (no job starts on it) until a person has run `dba_sql`, the exact statements, and confirmed it.
    held_at = models.DateTimeField(null=True, blank=True)
    dba_sql = models.TextField(blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    confirmed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="+")

    objects = SettingsChangeQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["restored_at"], name="settingschange_open")]

    def __str__(self) -> str:
        return f"{self.target} · {self.variant} (job #{self.job_id})"

    def is_held(self) -> bool:
        """Whether the server waits for a person to confirm the settings were put back by hand."""
        return self.held_at is not None and self.confirmed_at is None

    def is_restored(self) -> bool:
        return self.restored_at is not None
