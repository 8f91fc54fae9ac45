"""The API's exception handler: every failure a client can cause becomes a 4xx, never a 500.

DRF already answers its own exceptions (400 validation, 401, 403, 404, 405). On top of that:

* Django's ValidationError (Model.clean(), full_clean()) → 400 with a message per field;
* ProtectedError / RestrictedError (deleting a row that others still refer to) → 409 naming them;
* IntegrityError (a unique value taken by a concurrent request) → 409;
* DataError (a value PostgreSQL cannot store) → 400;
* services.StateConflict → 409 (but ScenarioDdlRefused, a scenario DDL a target cannot run → 400 on "scenarios";
  VariantsRefused, a settings variant off the allowlist or on benchapp's own server → 400 on "variants");
  services.ImportRejected and the command parser's CommandError → 400;
* ProbeError (a target that cannot be reached) → 400 with code "target_unreachable"; CheckRateExceeded (too many
  connection checks by one user) → 429 with Retry-After;
* SuspiciousOperation (too many files or fields in an upload, a body over the limit) → 400;
* benchapp's own database away (a restart, a dropped connection) → 503 with Retry-After.

Error bodies are DRF's: {"field": ["message", …]} for invalid input, {"detail": "…", "code": "…"}
otherwise. Messages are built from our own text, never from the request body, so a password
sent with an invalid request is never echoed back.
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError
from django.db.models import ProtectedError, RestrictedError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from campaigns.execution.dbretry import connection_lost
from campaigns.probes import ProbeError
from campaigns.services import CheckRateExceeded, ImportRejected, ScenarioDdlRefused, StateConflict, VariantsRefused
from campaigns.services.hosttests import HostTestRefused
from campaigns.services.launch import TargetForbidden
from campaigns.sysbench.cmdline import CommandError

log = logging.getLogger(__name__)

RETRY_AFTER_S = 5
DATABASE_AWAY = "benchapp's database is not answering (restarting?): try again in a few seconds"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "the request conflicts with the current state"
    default_code = "conflict"


class TargetUnreachableError(exceptions.APIException):
    """A 400 for a request whose target did not answer (a connection test): not the job exception of the same
    meaning (campaigns.execution.phases.TargetUnreachable), which makes a job wait."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "the target cannot be reached"
    default_code = "target_unreachable"


class BadRequest(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "invalid request"
    default_code = "invalid"


class DatabaseAway(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = DATABASE_AWAY
    default_code = "database_unavailable"
    wait = RETRY_AFTER_S  # DRF sends it as Retry-After


def _protected_detail(exc: ProtectedError | RestrictedError) -> str:
    objects = exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects
    counts = Counter(str(obj._meta.verbose_name_plural) for obj in objects)
    parts = [f"{n} {name}" for name, n in sorted(counts.items())]
    return f"cannot delete it: it is still referenced by {', '.join(parts) or 'other rows'}; delete or change those first"


def django_validation_detail(exc: DjangoValidationError) -> Any:
    if hasattr(exc, "error_dict"):
        return {("non_field_errors" if field == "__all__" else field): messages
                for field, messages in exc.message_dict.items()}
    return {"non_field_errors": exc.messages}


def _size(n_bytes: int) -> str:
    mib = n_bytes / (1024 * 1024)
    return f"{mib:.1f} MiB".replace(".0 MiB", " MiB") if mib >= 1 else f"{n_bytes // 1024} KiB"


def upload_limit_detail(exc: SuspiciousOperation) -> str:
    """Django's refusal of a body over its limits, in a user's words with the limit itself."""
    if isinstance(exc, RequestDataTooBig):
        return (f"the request body is larger than the {_size(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)} benchapp reads "
                "in one request; send fewer or smaller files (a multipart upload's files do not count towards it)")
    if isinstance(exc, TooManyFilesSent):
        return f"too many files in one request: at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES}"
    if isinstance(exc, TooManyFieldsSent):
        return f"too many fields in one request: at most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS}"
    return "the request was refused as malformed"


def translate(exc: Exception) -> exceptions.APIException | None:
    """The API exception a domain or database exception stands for, or None if it is not ours."""
    if connection_lost(exc):
        log.warning("API request answered 503: benchapp's database is away (%s)", type(exc).__name__)
        return DatabaseAway()
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(django_validation_detail(exc))
    if isinstance(exc, ProtectedError | RestrictedError):
        return Conflict(_protected_detail(exc), code="protected")
    if isinstance(exc, IntegrityError | DataError):
        # Validation should have caught it first; worth a line in the log when it did not.
        log.warning("the database refused an API request: %s", str(exc).splitlines()[0] if str(exc) else exc)
    if isinstance(exc, IntegrityError):
        return Conflict("the change conflicts with existing data (a unique value is already taken, or a "
                        "referenced row is gone); reload and try again", code="integrity")
    if isinstance(exc, DataError):
        return BadRequest("a value is out of the range the database can store", code="out_of_range")
    if isinstance(exc, SuspiciousOperation):
        # Too many fields or files in an upload, a body over the size limit: Django would answer with
        # an HTML page, and its message names a setting, not what the user can change.
        return BadRequest(upload_limit_detail(exc), code="malformed")
    if isinstance(exc, (ScenarioDdlRefused, HostTestRefused)):
        return exceptions.ValidationError({"scenarios": [str(exc)]})
    if isinstance(exc, VariantsRefused):
        return exceptions.ValidationError({"variants": [str(exc)]})
    if isinstance(exc, TargetForbidden):
        return exceptions.ValidationError({"targets": [str(exc)]})
    if isinstance(exc, StateConflict):
        return Conflict(str(exc), code="state_conflict")
    if isinstance(exc, ImportRejected):
        return BadRequest(str(exc), code="import_rejected")
    if isinstance(exc, CommandError):
        return exceptions.ValidationError({"command": [str(exc)]})
    if isinstance(exc, CheckRateExceeded):
        return exceptions.Throttled(wait=exc.wait_s, detail=str(exc))
    if isinstance(exc, ProbeError):
        return TargetUnreachableError(str(exc))
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    translated = translate(exc)
    if translated is not None:
        exc = translated
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(response.data, dict) and set(response.data) == {"detail"} and isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        if isinstance(codes, str):
            response.data["code"] = codes
    set_rollback()
    return response
