"""A job's settings variant on its target server: applied before the job's warm-up, read back, and put back.

The order of a change is what makes it safe after a crash: the values found are written to a SettingsChange row
and committed before the server is changed, so whoever comes next (the job's own end, the next change on the
same server, the reconciler's sweep) can put them back. Changes of one server (driver, host, port) take one
PostgreSQL advisory lock of benchapp's database in turn, so that a restore and the next job's change never
interleave and the next job never reads a variant's values as "the originals".
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from campaigns.crypto import DecryptionError
from campaigns.execution.hosts import own_queues
from campaigns.execution.phases import JobFailure, TargetUnreachable, target_connection
from campaigns.execution.sealed import holds_field_key, job_password
from campaigns.models import Job, SettingsChange, Target
from campaigns.probes import ProbeError
from campaigns.server_settings import (
    Original,
    SettingRefused,
    settings_apply,
    settings_mismatches,
    settings_read,
    settings_read_back,
    settings_restore,
)
from campaigns.sysbench.command import Connection

log = logging.getLogger(__name__)

# A restore that failed (the server away) is tried again by the reconciler after this long.
RESTORE_RETRY_S = 30


def _server_key(target: Target) -> str:
    return f"benchapp-settings:{target.driver}:{target.host.lower()}:{target.port}"


@contextmanager
def server_lock(target: Target) -> Iterator[None]:
    """One change or restore at a time on one server, across every worker (a session advisory lock)."""
    key = _server_key(target)
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(hashtext(%s))", [key])
    try:
        yield
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", [key])


def open_on_server(target: Target) -> list[SettingsChange]:
    """Changes not put back yet on the target's server (any target of the same driver, host and port), oldest
    last: restoring newest first leaves the oldest originals in force."""
    return list(SettingsChange.objects.filter(
        restored_at__isnull=True, target__driver=target.driver, target__host__iexact=target.host,
        target__port=target.port).select_related("target", "job").order_by("-created_at", "-pk"))


def change_restore(change: SettingsChange) -> bool:
    """Puts a change's originals back on its server (read back to be sure); False, with the cause recorded on
    the row, when the server cannot be reached (the reconciler tries again)."""
    now = timezone.now()
    originals = {name: Original(value=str(o["value"]), in_auto_conf=bool(o.get("in_auto_conf")))
                 for name, o in (change.originals or {}).items()}
    try:
        # A client host holds only its job's password (sealed for it); the server reads any.
        password = job_password(change.job) if change.job is not None and not holds_field_key() else None
        conn = target_connection(target=change.target, password=password)
        settings_restore(conn, originals)
        got = settings_read_back(conn, {name: o.value for name, o in originals.items()})
    except (ProbeError, SettingRefused, DecryptionError) as exc:
        _tried(change, str(exc))
        change.restore_error = str(exc)
        log.warning("could not put back the settings of %s: %s", change, exc)
        return False
    mismatches = settings_mismatches({name: o.value for name, o in originals.items()}, got)
    SettingsChange.objects.filter(pk=change.pk).update(
        restored_at=now, restore_error="; ".join(mismatches)[:2000], restore_tried_at=now)
    if mismatches:
        log.warning("settings of %s put back, but read back different: %s", change, "; ".join(mismatches))
    return True


def _tried(change: SettingsChange, error: str) -> None:
    SettingsChange.objects.filter(pk=change.pk).update(restore_error=error[:2000], restore_tried_at=timezone.now())


def _still_measuring(change: SettingsChange, job: Job) -> bool:
    other = change.job
    return (other is not None and other.pk != job.pk and other.status in Job.ACTIVE
            and other.measured_at is None)


def variant_apply(job: Job, conn: Connection) -> dict[str, Any] | None:
    """Applies the job's variant to its target and reads every setting back: the snapshot's "variant" part
    ({"name", "settings": {setting: {"wanted", "got", "original"}}}), None for a job without a variant.
    JobFailure names a setting the server refused or did not take (wanted against got)."""
    if not job.variant:
        return None
    wanted = {str(k): str(v) for k, v in (job.variant_settings or {}).items()}
    if not wanted:
        return {"name": job.variant, "settings": {}}
    target = job.target
    try:
        with server_lock(target):
            for change in open_on_server(target):
                if _still_measuring(change, job):
                    raise JobFailure(
                        f"the server {target.host}:{target.port} is measuring job #{change.job_id} under variant "
                        f"{change.variant!r}: a variant changes server-wide settings, so two runs cannot use one "
                        "server at once")
                if not change_restore(change):
                    raise TargetUnreachable(f"could not put back the settings variant {change.variant!r} of job "
                                            f"#{change.job_id} changed: {change.restore_error or 'see the log'}")
            originals = settings_read(conn, list(wanted))
            change = SettingsChange.objects.create(
                job=job, target=target, variant=job.variant, wanted=wanted,
                originals={name: o.to_dict() for name, o in originals.items()})
            try:
                settings_apply(conn, wanted)
            except SettingRefused as exc:
                raise JobFailure(f"settings variant {job.variant!r}: {exc}") from None
            SettingsChange.objects.filter(pk=change.pk).update(applied_at=timezone.now())
            got = settings_read_back(conn, wanted)
            SettingsChange.objects.filter(pk=change.pk).update(read_back=got)
    except ProbeError as exc:
        raise (TargetUnreachable if exc.unreachable else JobFailure)(
            f"settings variant {job.variant!r}: {exc}") from None
    mismatches = settings_mismatches(wanted, got)
    if mismatches:
        raise JobFailure(f"settings variant {job.variant!r}: the server did not take "
                         + "; ".join(mismatches))
    return {"name": job.variant,
            "settings": {name: {"wanted": wanted[name], "got": got[name], "original": originals[name].value}
                         for name in wanted}}


def variant_restore(*, job_id: int) -> int:
    """Puts back what the job's variant changed (at the job's end, whatever it was); the changes put back."""
    changes = list(SettingsChange.objects.filter(job_id=job_id, restored_at__isnull=True).select_related("target"))
    done = 0
    for change in changes:
        with server_lock(change.target):
            change = SettingsChange.objects.select_related("target").get(pk=change.pk)
            if change.restored_at is None:
                done += int(change_restore(change))
    return done


def settings_changes_sweep(*, now: Any = None) -> int:
    """The reconciler's part: changes whose job has ended (or was deleted) and that nobody put back (a worker
    died, a server was away): put back now. Changes of a job still active are its own to put back."""
    now = now or timezone.now()
    retry_before = now - timedelta(seconds=RESTORE_RETRY_S)
    open_changes = (SettingsChange.objects.filter(restored_at__isnull=True)
                    .filter(Q(restore_tried_at__isnull=True) | Q(restore_tried_at__lt=retry_before))
                    .filter(Q(job__isnull=True) | Q(job__status__in=Job.FINISHED, job__run__queue__in=own_queues()))
                    .values_list("pk", flat=True))
    done = 0
    for pk in list(open_changes):
        change = SettingsChange.objects.select_related("target").get(pk=pk)
        with server_lock(change.target):
            change = SettingsChange.objects.select_related("target").get(pk=pk)
            if change.restored_at is None:
                done += int(change_restore(change))
    return done
