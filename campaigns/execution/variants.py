"""A job's settings variant on its target server: applied before the job's warm-up, read back, and put back.

The order of a change is what makes it safe after a crash: the values found are written to a SettingsChange row
and committed before the server is changed, so whoever comes next (the job's own end, the next change on the
same server, the reconciler's sweep) can put them back. Changes of one server (driver, host, port) take one
PostgreSQL advisory lock of benchapp's database in turn, so that a restore and the next job's change never
interleave and the next job never reads a variant's values as "the originals".

A session opened before the change is kept until a fresh session has shown it can still log in and work (and, on
PostgreSQL, that the configuration files still parse): if not, the originals go back through the kept session at
once and the job fails before measuring. A restore that fails on a server that answers holds the server
(change_hold): the job and run fail with the statements a DBA must run, and no job starts on that server until a
person confirms (campaigns.services.variants.settings_confirm).
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, NoReturn

from django.conf import settings
from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from campaigns.crypto import DecryptionError
from campaigns.endpoints import own_server_problem, same_server, server_key
from campaigns.execution.datasets import job_note
from campaigns.execution.dispatch import settings_held_notify_send
from campaigns.execution.hosts import own_queues
from campaigns.execution.phases import JobFailure, TargetUnreachable, target_connection
from campaigns.execution.sealed import holds_field_key, job_password
from campaigns.models import Job, SettingsChange, Target
from campaigns.probes import ProbeError
from campaigns.server_settings import (
    KeptSession,
    Original,
    SettingRefused,
    driver_restore_statements,
    fresh_session_problem,
    pg_auto_conf,
    restore_statements,
    settings_apply,
    settings_mismatches,
    settings_read,
    settings_read_back,
)
from campaigns.settings_allowlist import settings_allowed
from campaigns.sysbench.command import Connection

log = logging.getLogger(__name__)

# A restore that failed (the server away) is tried again by the reconciler after this long.
RESTORE_RETRY_S = 30


def _server_key(target: Target) -> str:
    return f"benchapp-settings:{target.driver}:{server_key(target.host, target.port)}"


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


def on_server(changes: QuerySet[SettingsChange], target: Target) -> list[SettingsChange]:
    """Those changes made on the target's server: any target of the same driver and port whose host names the same
    server (campaigns.endpoints.same_server: `localhost` and `127.0.0.1` are one), newest first."""
    rows = changes.filter(target__driver=target.driver, target__port=target.port).select_related("target", "job")
    return [c for c in rows.order_by("-created_at", "-pk") if same_server(c.target.host, target.host, target.port)]


def open_on_server(target: Target) -> list[SettingsChange]:
    """Changes not put back yet on the target's server (on_server), oldest last: restoring newest first leaves the
    oldest originals in force."""
    return on_server(SettingsChange.objects.filter(restored_at__isnull=True), target)


def _originals(change: SettingsChange) -> dict[str, Original]:
    return {name: Original(value=str(o["value"]), in_auto_conf=bool(o.get("in_auto_conf")))
            for name, o in (change.originals or {}).items()}


def change_hold(change: SettingsChange, *, cause: str, conn: Connection | None) -> str:
    """Marks a change whose restore failed on a server that answers: nobody tries again, the server is held (no
    job starts on it, campaigns.execution.turns.target_busy) until a person has put the settings back by hand and
    confirmed it (campaigns.services.variants.settings_confirm). The message says why, and the exact statements."""
    originals = _originals(change)
    statements = (restore_statements(conn, originals, change.auto_conf) if conn is not None
                  else driver_restore_statements(change.target.driver, originals, change.auto_conf))
    dba_sql = "\n".join(statements)
    target = change.target
    message = (f"settings NOT put back on {target.host}:{target.port}: a DBA must run, as a superuser: "
               f"{' '.join(s for s in statements if not s.startswith('--'))} The server is held (no job starts on "
               f"it) until a person confirms it (POST /api/v1/targets/{target.pk}/settings-confirm/, or the job "
               f"page). Cause: {cause}")
    now = timezone.now()
    SettingsChange.objects.filter(pk=change.pk).update(held_at=now, dba_sql=dba_sql, restore_error=message[:2000],
                                                       restore_tried_at=now)
    change.held_at, change.dba_sql, change.restore_error = now, dba_sql, message[:2000]
    log.error("settings of %s NOT put back, server held: %s\n%s", change, cause, dba_sql)
    if change.job_id is not None:
        settings_held_notify_send(change_id=change.pk)
    return message


def change_restore(change: SettingsChange) -> bool:
    """Puts a change's originals back on its server (read back to be sure); False, with the cause recorded on
    the row, when it could not: the server cannot be reached (the reconciler tries again), or it answers but the
    restore fails or reads back different (the change is held: change_hold)."""
    now = timezone.now()
    originals = _originals(change)
    wanted = {name: o.value for name, o in originals.items()}
    conn: Connection | None = None
    try:
        # A client host holds only its job's password (sealed for it); the server reads any.
        password = job_password(change.job) if change.job is not None and not holds_field_key() else None
        conn = target_connection(target=change.target, password=password)
        session = KeptSession(conn)
        try:
            session.restore(originals, change.auto_conf)
        finally:
            session.close()
        got = settings_read_back(conn, wanted)
    except SettingRefused as exc:
        change_hold(change, cause=f"could not put back the settings variant {change.variant!r}: {exc}", conn=conn)
        return False
    except (ProbeError, DecryptionError) as exc:
        _tried(change, str(exc))
        change.restore_error = str(exc)
        log.warning("could not put back the settings of %s: %s", change, exc)
        return False
    mismatches = settings_mismatches(wanted, got)
    if mismatches:
        change_hold(change, cause=(f"the settings variant {change.variant!r} was put back, but the server reads back "
                                   + "; ".join(mismatches)), conn=conn)
        return False
    SettingsChange.objects.filter(pk=change.pk).update(restored_at=now, restore_error="", restore_tried_at=now)
    return True


def _tried(change: SettingsChange, error: str) -> None:
    SettingsChange.objects.filter(pk=change.pk).update(restore_error=error[:2000], restore_tried_at=timezone.now())


def _still_measuring(change: SettingsChange, job: Job) -> bool:
    other = change.job
    return (other is not None and other.pk != job.pk and other.status in Job.ACTIVE
            and other.measured_at is None)


def _restore_at_once(job: Job, change: SettingsChange, kept: KeptSession, conn: Connection, problem: str) -> NoReturn:
    """After a change that a new session cannot live with: puts the originals back through the kept session, at
    once, then fails the job (nothing was measured). A restore that fails holds the server (change_hold)."""
    cause = f"settings variant {job.variant!r}: after the change {problem}"
    originals = _originals(change)
    try:
        kept.restore(originals, change.auto_conf)
        still = fresh_session_problem(conn)
        if still:
            raise SettingRefused(f"after the restore {still}")
        mismatches = settings_mismatches({n: o.value for n, o in originals.items()},
                                         settings_read_back(conn, {n: o.value for n, o in originals.items()}))
        if mismatches:
            raise SettingRefused("the server reads back " + "; ".join(mismatches))
    except (ProbeError, SettingRefused) as exc:
        raise JobFailure(change_hold(change, cause=f"{cause}; putting it back through the kept session failed: "
                                                   f"{exc}", conn=conn)) from None
    now = timezone.now()
    SettingsChange.objects.filter(pk=change.pk).update(restored_at=now, restore_tried_at=now,
                                                       restore_error=cause[:2000])
    log.warning("%s: put back at once through the kept session", cause)
    raise JobFailure(f"{cause}: the settings were put back at once through a session kept open for that, and the "
                     "job failed before measuring")


def allowlist_problem(driver: str, wanted: dict[str, str]) -> str:
    """Why the allowlist (names, kinds and fixed bounds) refuses these settings, "" when it takes them all: a job
    row written past the services' checks is held to it too. Memory sizes are held at save and launch."""
    _, refused = settings_allowed(driver, wanted)
    return "; ".join(refused)


def variant_apply(job: Job, conn: Connection) -> dict[str, Any] | None:
    """Applies the job's variant to its target and reads every setting back: the snapshot's "variant" part
    ({"name", "settings": {setting: {"wanted", "got", "original"}}}), None for a job without a variant.
    JobFailure names a setting the server refused or did not take (wanted against got), or says that a new
    session could not live with the change, which was then put back at once through a session opened before it."""
    if not job.variant:
        return None
    wanted = {str(k): str(v) for k, v in (job.variant_settings or {}).items()}
    if not wanted:
        return {"name": job.variant, "settings": {}}
    target = job.target
    own = own_server_problem(host=target.host, port=target.port)
    if own:  # checked at save and launch; again here, since a name can resolve elsewhere by now
        raise JobFailure(f"settings variant {job.variant!r}: {own}")
    refused = allowlist_problem(conn.driver, wanted)
    if refused:  # checked at save and launch; again here, before anything reaches the server
        raise JobFailure(f"settings variant {job.variant!r}: refused before it reached the server: {refused}")
    try:
        with server_lock(target):
            for change in open_on_server(target):
                if change.is_held():
                    raise TargetUnreachable(change.restore_error or f"the server is held: job #{change.job_id}'s "
                                            "settings were not put back")
                if _still_measuring(change, job):
                    raise JobFailure(
                        f"the server {target.host}:{target.port} is measuring job #{change.job_id} under variant "
                        f"{change.variant!r}: a variant changes server-wide settings, so two runs cannot use one "
                        "server at once")
                if not change_restore(change):
                    raise TargetUnreachable(f"could not put back the settings variant {change.variant!r} of job "
                                            f"#{change.job_id} changed: {change.restore_error or 'see the log'}")
            originals = settings_read(conn, list(wanted))
            auto_conf = pg_auto_conf(conn) if conn.driver == "pgsql" else None
            change = SettingsChange.objects.create(
                job=job, target=target, variant=job.variant, wanted=wanted, auto_conf=auto_conf,
                originals={name: o.to_dict() for name, o in originals.items()})
            # Opened before the change, so that a change that locks new sessions out cannot lock this one out.
            kept = KeptSession(conn)
            try:
                try:
                    settings_apply(conn, wanted)
                except SettingRefused as exc:
                    raise JobFailure(f"settings variant {job.variant!r}: {exc}") from None
                SettingsChange.objects.filter(pk=change.pk).update(applied_at=timezone.now())
                problem = fresh_session_problem(conn)
                if problem:
                    _restore_at_once(job, change, kept, conn, problem)
                got = settings_read_back(conn, wanted)
                SettingsChange.objects.filter(pk=change.pk).update(read_back=got)
            finally:
                kept.close()
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


def variant_restore(*, job_id: int) -> list[str]:
    """Puts back what the job's variant changed (at the job's end, whatever it was); why, for each change that
    could not be put back: the job fails with it. On a server that answers, the server is held (change_hold). A
    server that cannot be reached keeps the change open: the job fails saying so and what a DBA would run, its
    notes and run page show it, no job starts on the server meanwhile (turns.target_busy), and the reconciler
    tries again (settings_changes_sweep) until it is back or, after BENCHAPP_VARIANT_RESTORE_HOLD_H, holds it."""
    changes = list(SettingsChange.objects.filter(job_id=job_id, restored_at__isnull=True, held_at__isnull=True)
                   .select_related("target"))
    held: list[str] = []
    for change in changes:
        with server_lock(change.target):
            change = SettingsChange.objects.select_related("target").get(pk=change.pk)
            if change.restored_at is None and change.held_at is None and not change_restore(change):
                if change.held_at is not None:
                    held.append(change.restore_error)
                else:
                    held.append(_note_pending(job_id, change))
    return held


def _note_pending(job_id: int, change: SettingsChange) -> str:
    """Notes on the job that its change is not put back yet; returns the job's failure cause, with the statements
    a DBA would run should the server come back in a state benchapp cannot reach."""
    target = change.target
    note = (f"settings variant {change.variant!r} not yet put back on {target.host}:{target.port}: the server "
            f"could not be reached ({change.restore_error}); benchapp tries again every {RESTORE_RETRY_S} s, no job "
            f"starts on that server until they are back, and after {settings.BENCHAPP_VARIANT_RESTORE_HOLD_H} h "
            "the server is held for a person to confirm")
    job_note(job_id=job_id, note=note[:2000])
    statements = driver_restore_statements(target.driver, _originals(change), change.auto_conf)
    return (f"settings variant {change.variant!r} NOT put back on {target.host}:{target.port}: the server could "
            f"not be reached ({change.restore_error}); benchapp tries again every {RESTORE_RETRY_S} s; to put them "
            f"back by hand a DBA runs, as a superuser: "
            f"{' '.join(s for s in statements if not s.startswith('--'))}")[:2000]


def settings_changes_sweep(*, now: Any = None) -> int:
    """The reconciler's part: changes whose job has ended (or was deleted) and that nobody put back (a worker
    died, a server was away): put back now. Changes of a job still active are its own to put back."""
    now = now or timezone.now()
    retry_before = now - timedelta(seconds=RESTORE_RETRY_S)
    open_changes = (SettingsChange.objects.filter(restored_at__isnull=True, held_at__isnull=True)
                    .filter(Q(restore_tried_at__isnull=True) | Q(restore_tried_at__lt=retry_before))
                    .filter(Q(job__isnull=True) | Q(job__status__in=Job.FINISHED, job__run__queue__in=own_queues()))
                    .values_list("pk", flat=True))
    done = 0
    give_up_before = now - timedelta(hours=settings.BENCHAPP_VARIANT_RESTORE_HOLD_H)
    for pk in list(open_changes):
        change = SettingsChange.objects.select_related("target", "job").get(pk=pk)
        with server_lock(change.target):
            change = SettingsChange.objects.select_related("target", "job").get(pk=pk)
            if change.restored_at is not None or change.held_at is not None:
                continue
            if change_restore(change):
                done += 1
                continue
            ended = change.job.finished_at if change.job is not None else change.created_at
            if change.held_at is None and ended is not None and ended < give_up_before:
                # Tried for that long: a person decides now (the server may be gone, or back under another name).
                change_hold(change, conn=None, cause=(
                    f"the server has not answered for {settings.BENCHAPP_VARIANT_RESTORE_HOLD_H} h since the job "
                    f"ended: {change.restore_error}"))
    return done
