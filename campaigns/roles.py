"""Roles: viewer (read everything but secrets), operator (create, edit, launch, cancel),
admin (users, hosts, delete). A role is a Django group; superusers are admins."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q

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


def can_manage_user(actor: Any, user: Any) -> bool:
    """Whether `actor` may change or delete the login `user`: a superuser only by a superuser.

    An admin role holder manages logins (the API's users, Django's admin), but setting a superuser's
    password would let them log in as that superuser and take every right they were not given.
    """
    return not user.is_superuser or bool(getattr(actor, "is_superuser", False))


def who_grants_roles(*, names: bool = True, limit: int = 5) -> str:
    """Whom a user lacking a role should ask: the configured contact, else the admins, by name only when `names`
    (a login without any role is not told who the admins are: their names are half of a login)."""
    contact = getattr(settings, "BENCHAPP_ROLES_CONTACT", "")
    if contact:
        return contact
    if not names:
        return "an administrator"
    user_model = get_user_model()
    admins = list(
        user_model.objects.filter(Q(is_superuser=True) | Q(groups__name=ADMIN), is_active=True)
        .order_by(user_model.USERNAME_FIELD).values_list(user_model.USERNAME_FIELD, flat=True).distinct()[:limit]
    )
    return f"an administrator ({', '.join(admins)})" if admins else "an administrator"
