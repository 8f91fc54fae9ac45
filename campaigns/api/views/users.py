"""Viewset of logins and their roles (admins only)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from campaigns import roles
from campaigns.api.exceptions import Conflict
from campaigns.api.permissions import RolePermission, SuperuserEditedBySuperuser
from campaigns.api.serializers.users import UserSerializer
from campaigns.api.views.base import ModelViewSet


class UserViewSet(ModelViewSet):
    """Logins and their roles: admins only."""

    queryset = get_user_model().objects.prefetch_related("groups").order_by("username")
    serializer_class = UserSerializer
    ordering_fields = ["id", "username", "date_joined", "last_login"]
    filterset_fields = ["is_active", "username"]
    read_role = write_role = delete_role = roles.ADMIN
    permission_classes = [RolePermission, SuperuserEditedBySuperuser]

    def perform_destroy(self, instance: Any) -> None:
        if instance.pk == self.request.user.pk:
            raise Conflict("you cannot delete your own login", code="state_conflict")
        super().perform_destroy(instance)
