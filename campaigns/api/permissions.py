"""Role checks for the API: viewer reads, operator writes and starts work, admin deletes.

The roles are Django groups (campaigns.roles); a user without any role can authenticate but
reads nothing. Anonymous requests are refused by `NotAuthenticated`, which DRF answers with 401
and a WWW-Authenticate header because TokenAuthentication is the first authentication class.
"""
from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from campaigns import roles


class RolePermission(permissions.BasePermission):
    """Safe methods need `view.read_role`, DELETE `view.delete_role`, other writes `view.write_role`.

    The defaults are viewer / admin / operator; a viewset raises them for admin-only resources
    (client hosts, users). Actions that start work are POSTs, so they need an operator.
    """

    message = "your role does not allow this"

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if request.method in permissions.SAFE_METHODS:
            needed = getattr(view, "read_role", roles.VIEWER)
        elif request.method == "DELETE":
            needed = getattr(view, "delete_role", roles.ADMIN)
        else:
            needed = getattr(view, "write_role", roles.OPERATOR)
        allowed = roles.has_role(user, needed)
        if not allowed:
            self.message = f"this needs the {needed} role; you have {roles.user_role(user) or 'no role'}"
        return allowed


class SuperuserEditedBySuperuser(permissions.BasePermission):
    """Changing or deleting a superuser's login needs a superuser (campaigns.roles.can_manage_user)."""

    message = "only a superuser can change or delete a superuser"

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        return request.method in permissions.SAFE_METHODS or roles.can_manage_user(request.user, obj)
