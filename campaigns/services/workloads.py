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
from django.db import transaction
from django.db.models import Max

from campaigns import roles
from campaigns.models import Scenario, Workload, WorkloadVersion
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
                  reuse_others: bool = False) -> WorkloadVersion:
    """A version of `workload` (or of a new workload called `name`) holding `files` (path → Lua text), with
    `entry` the script sysbench runs. The same files as an existing version give that version back: editing
    makes a new version only when the code changed. `expected_errors_pct` (ignored errors per 100 transactions
    that are part of the workload) is the workload's, set when given (None leaves it). Only its owner or an admin
    (workload_may_edit) adds a version to an existing workload, named by `workload` or by `name`; `reuse_others`
    (a bundle import) gives back the version of another user's workload that holds the same files, changing
    nothing of theirs. Raises ValidationError keyed by field (name, files, entry, expected_errors_pct), naming the
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
    try:
        checked = files_check(files, entry)
    except WorkloadError as exc:
        raise ValidationError({exc.field: exc.message}) from None
    digest = content_hash(checked, entry)
    if existing is not None:
        same = existing.versions.filter(content_hash=digest).first()
        if same is not None:
            if not foreign:
                _expected_errors_set(existing, expected_errors_pct)
            return same
    if foreign:
        raise ValidationError({"name": NAME_TAKEN})
    try:
        found = workload_inspect(files=checked, entry=entry, sysbench=settings.BENCHAPP_SYSBENCH)
    except WorkloadError as exc:
        raise ValidationError({exc.field: exc.message}) from None
    with transaction.atomic():
        if existing is None:
            existing = row_write(Workload(), {"name": name, "description": description or "",
                                              "expected_errors_pct": expected_errors_pct}, user=actor)
        else:
            existing = Workload.objects.select_for_update().get(pk=existing.pk)
            if description is not None and description != existing.description:
                existing = row_write(existing, {"description": description})
            _expected_errors_set(existing, expected_errors_pct)
        same = existing.versions.filter(content_hash=digest).first()
        if same is not None:  # saved by someone else meanwhile
            return same
        number = (existing.versions.aggregate(top=Max("number"))["top"] or 0) + 1
        return row_write(WorkloadVersion(), {
            "workload": existing, "number": number, "content_hash": digest, "entry": entry, "files": checked,
            "options": options_to_json(found.options), "commands": list(found.commands),
            "help_text": found.help_text, "note": note[:300], "uploaded_by": actor,
        })


def _expected_errors_set(workload: Workload, expected_errors_pct: float | None) -> None:
    if expected_errors_pct is not None and expected_errors_pct != workload.expected_errors_pct:
        row_write(workload, {"expected_errors_pct": expected_errors_pct})


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
                         "expected_errors_pct": version.workload.expected_errors_pct}}


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
        return workload_save(user=user, name=data.get("name") or "", files=data.get("files") or {},
                             entry=data.get("entry") or "", note="imported with a run bundle",
                             expected_errors_pct=None if expected is None else float(expected), reuse_others=True)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ValueError(f"{where}.{field}: {'; '.join(messages)}") from None
    except PermissionDenied as exc:
        raise ValueError(f"{where}: {exc}") from None
