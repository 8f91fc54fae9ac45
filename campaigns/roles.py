"""Roles: viewer (read everything but secrets), operator (create, edit, launch, cancel),
admin (users, hosts, delete). A role is a Django group; superusers are admins."""
from __future__ import annotations

from typing import Any

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)
_RANK = {VIEWER: 1, OPERATOR: 2, ADMIN: 3}


def user_role(user: Any) -> str | None:
    """The highest role a user holds, or None for anonymous users and users without a role."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    if user.is_superuser:
        return ADMIN
    # Group names are cached on the user object: a request asks several times.
    cached = getattr(user, "_benchapp_groups", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._benchapp_groups = cached
    best = None
    for role in ROLES:
        if role in cached:
            best = role
    return best


def has_role(user: Any, role: str) -> bool:
    current = user_role(user)
    return current is not None and _RANK[current] >= _RANK[role]


def can_edit(user: Any) -> bool:
    return has_role(user, OPERATOR)


def can_admin(user: Any) -> bool:
    return has_role(user, ADMIN)
