"""OpenAPI post-processing: every operation documents the errors it can answer with.

The API answers 400 (invalid input), 401 (no credentials), 403 (role too low), 404 (unknown id) and
409 (state conflict, or a row still referenced) with the same JSON shapes everywhere (see
campaigns.api.exceptions); declaring them once here keeps the viewsets free of boilerplate and
lets schemathesis check that no undocumented status code or body comes back.
"""
from __future__ import annotations

import inspect
import re
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import get_doc

ERROR_SCHEMA = {
    "type": "object",
    "description": "{\"detail\": message, \"code\": code} or, for invalid input, {field: [messages]}.",
    "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
    "additionalProperties": True,
}
_DESCRIPTIONS = {
    "400": "Invalid input: a message per field, or {detail, code}.",
    "401": "No or invalid credentials: send `Authorization: Bearer <token>` (`Token <token>` works too), a token "
           "from the app's API tokens page or POST /api/v1/auth/token/.",
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


# What a standard action does, for an operation whose view says nothing of its own; {name} and {plural} are the
# model's verbose names.
_ACTIONS = {
    "list": "The {plural} you may read, a page at a time, filtered by the parameters below.",
    "retrieve": "One {name}, by its id.",
    "create": "Creates {a_name}.",
    "update": "Replaces {a_name}'s writable fields.",
    "partial_update": "Changes the fields sent of {a_name}, leaving the others as they are.",
    "destroy": "Deletes {a_name} (409 while other rows still refer to it).",
}
# Modules whose docstrings are written for developers of the API (its base classes), never for its users.
_INTERNAL_MODULES = ("campaigns.api.views.base", "rest_framework.", "drf_spectacular.")


def _own_class_doc(view_class: type) -> str:
    """The first paragraph of the docstring the view class (or a parent of its own) carries, if written for users."""
    for klass in view_class.__mro__:
        if klass.__module__.startswith(_INTERNAL_MODULES) or klass.__module__ == "builtins":
            return ""
        doc = klass.__dict__.get("__doc__")
        if doc:
            return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ")
    return ""


class UserAutoSchema(AutoSchema):
    """drf-spectacular's schema, with each operation described for a user: the action's own docstring, else what
    the standard action does and the resource's own description, never a base class's notes on its internals."""

    def get_description(self) -> str:  # type: ignore[override]
        action = getattr(self.view, "action", None) or self.method.lower()
        own = get_doc(getattr(self.view, action, None))
        if own:
            return own
        meta = getattr(getattr(getattr(self.view, "queryset", None), "model", None), "_meta", None)
        if meta is not None:
            name, plural = str(meta.verbose_name), str(meta.verbose_name_plural)
        else:  # a resource without a model (seed templates): its path's name
            plural = (self.get_tags() or ["objects"])[0].replace("-", " ")
            name = plural.removesuffix("s")
        sentence = _ACTIONS.get(action, "").format(name=name, plural=plural, a_name=_a(name))
        role = _role_needed(self.view, self.method)
        return " ".join(part for part in (sentence, _own_class_doc(type(self.view)), role) if part)


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeio' else 'a'} {name}"


def _role_needed(view: Any, method: str) -> str:
    """The role the operation needs (campaigns.api.permissions.RolePermission's rule), as a sentence."""
    from campaigns import roles
    from campaigns.api.permissions import RolePermission

    if not any(isinstance(k, type) and issubclass(k, RolePermission) for k in getattr(view, "permission_classes", ())):
        return ""
    if method in ("GET", "HEAD", "OPTIONS"):
        needed = getattr(view, "read_role", roles.VIEWER)
    elif method == "DELETE":
        needed = getattr(view, "delete_role", roles.ADMIN)
    else:
        needed = getattr(view, "write_role", roles.OPERATOR)
    return f"Needs the {needed} role." if needed != roles.VIEWER else ""


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """benchapp's token as an HTTP bearer scheme: Swagger UI's Authorize dialog then asks for the token alone and
    sends `Authorization: Bearer <token>`, where DRF's "Token" prefix made users type the word themselves."""

    target_class = "campaigns.api.authentication.TokenAuthentication"
    name = "tokenAuth"
    priority = 1  # before drf-spectacular's own for DRF's TokenAuthentication, which ours extends

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer",
                "description": "An API token (the app's API tokens page, or POST /api/v1/auth/token/). Paste the token "
                               "alone: it is sent as `Authorization: Bearer <token>`; scripts may also send "
                               "`Authorization: Token <token>`."}


def token_auth_first(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """The token scheme before the session cookie, in Swagger UI's Authorize dialog (which lists the schemes in the
    order the schema gives them, and drf-spectacular sorts them by name) and in every operation's security."""
    schemes = result.get("components", {}).get("securitySchemes")
    if schemes and "tokenAuth" in schemes:
        result["components"]["securitySchemes"] = {"tokenAuth": schemes["tokenAuth"],
                                                   **{k: v for k, v in schemes.items() if k != "tokenAuth"}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and isinstance(operation.get("security"), list):
                operation["security"].sort(key=lambda entry: "tokenAuth" not in entry)
    return result


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
