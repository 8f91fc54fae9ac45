"""Workloads of one's own: the one way Lua files become a workload version (pages, API, bundle import).

workload_save checks the file set (names, sizes, count, Lua source), asks sysbench for the entry script's options
(campaigns.sysbench.workloads.workload_inspect: a temporary directory, bounded in time, no target) and stores a new
version, or returns the existing one when the same files were saved before. A script is code that runs on client
hosts, so saving one is an operator's right (campaigns.roles) and the version records who and when. A workload is
its creator's: only they or an admin add versions to it or change it (workload_may_edit), so that no one else's code
becomes the latest version under their name.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max

from campaigns import roles
from campaigns.models import Scenario, Target, Workload, WorkloadApproval, WorkloadVersion
from campaigns.services.rows import acting_user, row_write
from campaigns.sysbench.workloads import (
    WorkloadError,
    content_hash,
    files_check,
    options_to_json,
    workload_inspect,
)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")


def workload_name_problem(name: object) -> str | None:
    if not isinstance(name, str) or not name.strip():
        return "a workload needs a name"
    if not _NAME.fullmatch(name):
        return "letters, digits, '_', '-' and '.', at most 80, starting with a letter or digit"
    return None


NAME_TAKEN = ("a workload of that name belongs to another user: choose another name (only its owner or an admin "
              "adds versions to it)")


def workload_may_edit(*, user: Any, workload: Workload) -> bool:
    """Whether `user` may add a version to `workload` or change its description and expected errors: the user who
    created it, or an admin. None (benchapp itself: a seed, a command) may. A workload without an owner (saved by
    benchapp, or its creator deleted) is left to admins: a version is code that runs on client hosts, and its
    expected errors judge every job of every version."""
    actor = acting_user(user)
    if actor is None:
        return True
    return bool(workload.created_by_id is not None and workload.created_by_id == actor.pk) or roles.can_admin(actor)


def workload_save(*, user: Any, files: Mapping[str, Any], entry: str, name: str = "",
                  workload: Workload | None = None, description: str | None = None,
                  note: str = "", expected_errors_pct: float | None = None,
                  declared: Mapping[str, Any] | None = None, reuse_others: bool = False) -> WorkloadVersion:
    """A version of `workload` (or of a new workload called `name`) holding `files` (path → Lua text), with
    `entry` the script sysbench runs. The same files as an existing version give that version back: editing
    makes a new version only when the code changed. `expected_errors_pct` (ignored errors per 100 transactions
    that are part of the workload) is the workload's, set when given (None leaves it), as is each of `declared`
    (Workload.DECLARED: the option that takes the dataset's size and its unit, the counted function and its label,
    the command run after each job; checked against the saved version's options and commands by
    declared_problems). Only its owner or an admin
    (workload_may_edit) adds a version to an existing workload, named by `workload` or by `name`; `reuse_others`
    (a bundle import) gives back the version of another user's workload that holds the same files, changing
    nothing of theirs. Raises ValidationError keyed by field (name, files, entry, or the declared field), naming the
    file or the cause ("name" when the name is another user's workload), and stores nothing then;
    PermissionDenied for a user below operator, or for `workload` another user's."""
    actor = acting_user(user)
    if user is not None and getattr(user, "is_authenticated", False) and not roles.can_edit(user):
        raise PermissionDenied("uploading a workload (code that runs on client hosts) is an operator's right")
    if workload is None:
        problem = workload_name_problem(name)
        if problem:
            raise ValidationError({"name": problem})
    existing = workload or Workload.objects.filter(name=name).first()
    foreign = existing is not None and not workload_may_edit(user=user, workload=existing)
    if foreign and workload is not None:
        raise PermissionDenied(f"only its owner (who created it) or an admin may add a version to workload "
                               f"'{workload.name}'")
    if foreign and not reuse_others:
        raise ValidationError({"name": NAME_TAKEN})
    wanted = {**(declared or {}), **({} if expected_errors_pct is None else
                                     {"expected_errors_pct": expected_errors_pct})}
    try:
        checked = files_check(files, entry)
    except WorkloadError as exc:
        raise ValidationError({exc.field: exc.message}) from None
    digest = content_hash(checked, entry)
    if existing is not None:
        same = existing.versions.filter(content_hash=digest).first()
        if same is not None:
            if not foreign:
                _declared_set(existing, wanted, options=same.options, commands=same.commands)
            return same
    if foreign:
        raise ValidationError({"name": NAME_TAKEN})
    try:
        found = workload_inspect(files=checked, entry=entry, sysbench=settings.BENCHAPP_SYSBENCH)
    except WorkloadError as exc:
        raise ValidationError({exc.field: exc.message}) from None
    options, commands = options_to_json(found.options), list(found.commands)
    with transaction.atomic():
        if existing is None:
            values = declared_values(wanted, base=Workload(), options=options, commands=commands)
            existing = row_write(Workload(), {"name": name, "description": description or "", **values}, user=actor)
        else:
            existing = Workload.objects.select_for_update().get(pk=existing.pk)
            if description is not None and description != existing.description:
                existing = row_write(existing, {"description": description})
            _declared_set(existing, wanted, options=options, commands=commands)
        same = existing.versions.filter(content_hash=digest).first()
        if same is not None:  # saved by someone else meanwhile
            return same
        number = (existing.versions.aggregate(top=Max("number"))["top"] or 0) + 1
        return row_write(WorkloadVersion(), {
            "workload": existing, "number": number, "content_hash": digest, "entry": entry, "files": checked,
            "options": options, "commands": commands,
            "help_text": found.help_text, "note": note[:300], "uploaded_by": actor,
        })


# sysbench's own hooks and the Lua names benchapp's counting wrapper needs: not a function to count.
_NOT_COUNTED = frozenset({"event", "thread_init", "thread_done", "init", "done", "prepare", "cleanup", "help",
                          "require", "print", "error", "pcall", "unpack", "sysbench"})
_LUA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,59}")
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9 _-]{0,39}")
_NOT_CHECKS = frozenset({"prepare", "cleanup", "run", "help", "prewarm"})


def declared_problems(values: Mapping[str, Any], *, options: list[Any], commands: list[Any]) -> dict[str, str]:
    """What is wrong with a workload's declarations (Workload.DECLARED) for a version whose sysbench help listed
    `options` (JSON rows) and `commands`, by field; empty when nothing is. An empty string clears a declaration."""
    problems: dict[str, str] = {}
    unknown = sorted(set(values) - set(Workload.DECLARED))
    if unknown:
        problems[unknown[0]] = f"not a workload declaration: {', '.join(Workload.DECLARED)} are"
    named = {row.get("name"): row for row in options if isinstance(row, dict)}
    for field, value in values.items():
        if field == "expected_errors_pct":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not 0 <= value <= 100):
                problems[field] = "a number of errors per 100 transactions from 0 to 100 was expected"
            continue
        if field not in Workload.DECLARED:
            continue
        if value is None:
            continue
        if not isinstance(value, str):
            problems[field] = "a text was expected"
            continue
        if not value:
            continue
        if field == "size_option":
            row = named.get(value)
            if row is None:
                problems[field] = (f"{value[:60]!r} is not an option of the script (sysbench lists: "
                                   f"{', '.join(sorted(str(n) for n in named)) or 'none'})")
            elif value in ("tables", "threads", "table-size", "table_size"):
                problems[field] = f"{value} is set by benchapp itself: name the option that takes the size"
            elif row.get("type") not in ("int", "integer", "number"):
                problems[field] = (f"option {value} takes a {row.get('type') or 'text'}: the dataset's size is a "
                                   "whole number")
        elif field == "counted_function":
            if not _LUA_NAME.fullmatch(value):
                problems[field] = "the name of a global Lua function was expected, e.g. new_order"
            elif value in _NOT_COUNTED:
                problems[field] = f"{value} is one of sysbench's own names: name the workload's function to count"
        elif field in ("size_unit", "counted_label"):
            if not _WORDS.fullmatch(value):
                problems[field] = "letters, digits, spaces, '_' and '-', at most 40, starting with a letter"
        elif field == "check_command":
            if value in _NOT_CHECKS:
                problems[field] = f"{value} is not a check: name a command of the script that checks the data"
            elif value not in commands:
                problems[field] = (f"{value[:60]!r} is not a command of the script (it defines: "
                                   f"{', '.join(str(c) for c in commands) or 'none'})")
    if values.get("counted_label") and not values.get("counted_function"):
        problems.setdefault("counted_label", "a label needs counted_function, the function whose calls it names")
    return problems


def declared_values(wanted: Mapping[str, Any], *, base: Workload, options: list[Any],
                    commands: list[Any]) -> dict[str, Any]:
    """The declarations to write: `wanted` over `base`'s, every one checked (ValidationError by field). A
    declaration not given keeps its value; a size option the new version no longer has is refused."""
    merged = {field: getattr(base, field) for field in Workload.DECLARED}
    merged.update({field: value for field, value in wanted.items() if value is not None})
    problems = declared_problems(merged, options=options, commands=commands)
    if problems:
        raise ValidationError(problems)
    return {field: value for field, value in merged.items()
            if field in wanted and value != getattr(base, field)}


def _declared_set(workload: Workload, wanted: Mapping[str, Any], *, options: list[Any],
                  commands: list[Any]) -> None:
    changed = declared_values(wanted, base=workload, options=options, commands=commands)
    if changed:
        row_write(workload, changed)


# ---------------------------------------------------------------- approval: who said this code may run


def workload_in_use(workload: Workload) -> str | None:
    """Why `workload` cannot be deleted (the scenarios that use its versions, up to five by name), or None."""
    using = list(Scenario.objects.filter(workload_version__workload=workload).order_by("name")
                 .values_list("name", flat=True)[:6])
    if not using:
        return None
    shown = ", ".join(f"'{name}'" for name in using[:5]) + (" and more" if len(using) > 5 else "")
    return (f"workload '{workload.name}' is used by scenario(s) {shown}: delete or change those first (a scenario "
            "that ran keeps the version it ran)")


class WorkloadInUse(Exception):
    """The workload cannot be deleted: scenarios use its versions (named in the message)."""


def workload_delete(*, user: Any, workload: Workload) -> None:
    """Deletes `workload`, its versions and their approvals, once no scenario uses any of its versions (a job's
    scenario holds the version it ran, so a workload that ran anything stays). Only its owner or an admin
    (workload_may_edit). Raises PermissionDenied for anyone else, WorkloadInUse naming up to five scenarios."""
    if user is not None and getattr(user, "is_authenticated", False) and not roles.can_edit(user):
        raise PermissionDenied("deleting a workload is an operator's right")
    if not workload_may_edit(user=user, workload=workload):
        raise PermissionDenied(f"only its owner (who created it) or an admin may delete workload '{workload.name}'")
    with transaction.atomic():
        locked = Workload.objects.select_for_update().get(pk=workload.pk)
        using = workload_in_use(locked)
        if using:
            raise WorkloadInUse(using)
        WorkloadApproval.objects.filter(version__workload=locked).delete()
        WorkloadVersion.objects.filter(workload=locked).delete()
        locked.delete()


def workload_approve(*, user: Any, version: WorkloadVersion) -> WorkloadApproval:
    """`user` says `version`'s code may run: an admin (on every target that allows uploaded workloads) or the owner
    of a target (on the targets they own). Approving again keeps the first approval. PermissionDenied for anyone
    else, and for benchapp itself (None): a person reads code before it runs."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise PermissionDenied("a workload version is approved by a person who has read it")
    if not roles.can_admin(user) and not Target.objects.filter(created_by=user).exists():
        raise PermissionDenied("approving code to run on targets is an admin's right, or a target owner's for the "
                               "targets they own: you own no target")
    found = WorkloadApproval.objects.filter(version=version, approved_by=user).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return row_write(WorkloadApproval(), {"version": version, "approved_by": user}, user=user)
    except IntegrityError:  # the same approval, sent twice at once (a double click)
        return WorkloadApproval.objects.get(version=version, approved_by=user)


def workload_unapprove(*, user: Any, version: WorkloadVersion) -> int:
    """Withdraws `user`'s own approval of `version` (an admin may withdraw anyone's: `every`); how many went. Jobs
    already launched keep running; a launch after it needs another approval."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise PermissionDenied("a workload version's approval is withdrawn by a person")
    approvals = WorkloadApproval.objects.filter(version=version)
    if not roles.can_admin(user):
        approvals = approvals.filter(approved_by=user)
    deleted, _ = approvals.delete()
    return int(deleted)


def upload_name_problem(*, sent: str, kept: str | None) -> str | None:
    """Why a multipart file's name cannot be taken, or None: `sent` is the name as the client sent it, `kept` what
    Django made of it (MultiPartParser.sanitize_file_name keeps only what follows the last '/' or '\\', drops
    '..', control characters and HTML entities). `../x.lua` and `lib/x.lua` would both be stored as x.lua, so a
    name Django changed is refused, as the JSON body refuses `../x.lua`, rather than saved under a name its sender
    did not give. Files in folders go in a JSON body's `files`."""
    if kept == sent:
        return None
    if "/" in sent or "\\" in sent or sent in (".", ".."):
        return (f"file {sent[:60]!r}: an uploaded file's name may not hold a folder or '..'; upload each file under "
                "its own name, or send {path: Lua source} in a JSON body for files in folders")
    return f"file {sent[:60]!r}: letters, digits, '_', '-' and '.' only in an uploaded file's name"


def workload_files_from_uploads(uploads: list[Any]) -> dict[str, bytes]:
    """Uploaded files (Django UploadedFile) as path → bytes, refusing a file too big before reading it whole."""
    from campaigns.sysbench.workloads import MAX_FILE_BYTES, MAX_FILES

    if len(uploads) > MAX_FILES:
        raise ValidationError({"files": f"{len(uploads)} files: a workload has at most {MAX_FILES}"})
    files: dict[str, bytes] = {}
    for upload in uploads:
        if upload.size > MAX_FILE_BYTES:
            raise ValidationError({"files": f"file {upload.name} is too big: {upload.size:,} bytes, at most "
                                            f"{MAX_FILE_BYTES:,}"})
        if upload.name in files:
            raise ValidationError({"files": f"file {upload.name} was given twice"})
        files[upload.name] = upload.read()
    return files


def workload_export(scenario: Scenario) -> dict[str, Any]:
    """A run bundle's copy of a scenario's workload version (its files travel with it), or nothing."""
    version = scenario.workload_version
    if version is None:
        return {}
    return {"workload": {"name": version.workload.name, "number": version.number, "entry": version.entry,
                         "content_hash": version.content_hash, "files": version.files,
                         **{field: getattr(version.workload, field) for field in Workload.DECLARED}}}


def workload_import(data: Any, where: str, *, user: Any) -> WorkloadVersion | None:
    """The bundle's workload as a version here, through workload_save (the same checks as an upload, sysbench's
    help included; the same files as a version here give that version, another user's workload included, but
    other files under the name of another user's workload are refused). Raises ValueError naming `where`."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: an object was expected")
    try:
        expected = data.get("expected_errors_pct")
        if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int | float)):
            raise ValueError(f"{where}.expected_errors_pct: a number of errors per 100 transactions was expected")
        declared = {field: data[field] for field in Workload.DECLARED[1:] if field in data}
        return workload_save(user=user, name=data.get("name") or "", files=data.get("files") or {},
                             entry=data.get("entry") or "", note="imported with a run bundle",
                             expected_errors_pct=None if expected is None else float(expected),
                             declared=declared, reuse_others=True)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ValueError(f"{where}.{field}: {'; '.join(messages)}") from None
    except PermissionDenied as exc:
        raise ValueError(f"{where}: {exc}") from None
