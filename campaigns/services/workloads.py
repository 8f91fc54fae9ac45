"""Workloads of one's own: the one way Lua files become a workload version (pages, API, bundle import).

workload_save checks the file set (names, sizes, count, Lua source), asks sysbench for the entry script's options
(campaigns.sysbench.workloads.workload_inspect: a temporary directory, bounded in time, no target) and stores a new
version, or returns the existing one when the same files were saved before. A script is code that runs on client
hosts, so saving one is an operator's right (campaigns.roles) and the version records who and when.
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


def workload_save(*, user: Any, files: Mapping[str, Any], entry: str, name: str = "",
                  workload: Workload | None = None, description: str | None = None,
                  note: str = "", expected_errors_pct: float | None = None) -> WorkloadVersion:
    """A version of `workload` (or of a new workload called `name`) holding `files` (path → Lua text), with
    `entry` the script sysbench runs. The same files as an existing version give that version back: editing
    makes a new version only when the code changed. `expected_errors_pct` (ignored errors per 100 transactions
    that are part of the workload) is the workload's, set when given (None leaves it). Raises ValidationError
    keyed by field (name, files, entry, expected_errors_pct), naming the file or the cause, and stores nothing
    then; PermissionDenied for a user below operator."""
    actor = acting_user(user)
    if user is not None and getattr(user, "is_authenticated", False) and not roles.can_edit(user):
        raise PermissionDenied("uploading a workload (code that runs on client hosts) is an operator's right")
    if workload is None:
        problem = workload_name_problem(name)
        if problem:
            raise ValidationError({"name": problem})
    try:
        checked = files_check(files, entry)
    except WorkloadError as exc:
        raise ValidationError({exc.field: exc.message}) from None
    digest = content_hash(checked, entry)
    existing = workload or Workload.objects.filter(name=name).first()
    if existing is not None:
        same = existing.versions.filter(content_hash=digest).first()
        if same is not None:
            _expected_errors_set(existing, expected_errors_pct)
            return same
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
    help included; the same files as a version here give that version). Raises ValueError naming `where`."""
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
                             expected_errors_pct=None if expected is None else float(expected))
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ValueError(f"{where}.{field}: {'; '.join(messages)}") from None
    except PermissionDenied as exc:
        raise ValueError(f"{where}: {exc}") from None
