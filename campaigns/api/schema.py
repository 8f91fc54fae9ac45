"""OpenAPI post-processing: every operation documents the errors it can answer with.

The API answers 400 (invalid input), 401 (no credentials), 403 (role too low), 404 (unknown id) and
409 (state conflict, or a row still referenced) with the same JSON shapes everywhere (see
campaigns.api.exceptions); declaring them once here keeps the viewsets free of boilerplate and
lets schemathesis check that no undocumented status code or body comes back.
"""
from __future__ import annotations

import re
from typing import Any

ERROR_SCHEMA = {
    "type": "object",
    "description": "{\"detail\": message, \"code\": code} or, for invalid input, {field: [messages]}.",
    "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
    "additionalProperties": True,
}
_DESCRIPTIONS = {
    "400": "Invalid input: a message per field, or {detail, code}.",
    "401": "No or invalid credentials: send `Authorization: Bearer <token>` (or `Token <token>`), a token from the "
           "app's API tokens page or POST /api/v1/auth/token/.",
    "403": "Your role does not allow this.",
    "404": "No such object (or no such ?format=).",
    "409": "Conflicts with the current state (e.g. a run in progress, or the row is still referenced).",
    "415": "The body's media type is not one this operation reads (see its request body).",
}


# A model's help text written for developers names the module behind a field ("…, see campaigns.execution.datasets"):
# the schema is read by users, who have no use for it.
_INTERNAL = re.compile(r"[,;]?\s*(?:see|from)\s+campaigns(?:\.\w+)+|\s*\(campaigns(?:\.\w+)+\)")


def _for_users(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (_INTERNAL.sub("", v) if k == "description" and isinstance(v, str) else _for_users(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_for_users(v) for v in node]
    return node


def descriptions_for_users(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Descriptions without internal module names (the hook runs after the others)."""
    return dict(_for_users(result))


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            codes = ["400"]
            if not path.endswith("/auth/token/"):
                codes += ["401", "403"]
            # Unknown ids, but also an unknown ?format= on any operation (DRF answers 404 for those).
            codes.append("404")
            if method != "get":
                codes.append("409")
            if "requestBody" in operation:
                codes.append("415")
            media = ["application/json"]
            if any(p.get("name") == "format" for p in operation.get("parameters", [])):
                media.append("text/csv")
            responses = operation.setdefault("responses", {})
            for code in codes:
                entry = responses.setdefault(code, {"description": _DESCRIPTIONS[code]})
                content = entry.setdefault("content", {})
                for media_type in media:
                    content.setdefault(media_type, {"schema": ref if media_type == "application/json"
                                                    else {"type": "string"}})
    return result
