"""Serializers of logins and their roles."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from campaigns import roles
from campaigns.api.fields import StrictInputMixin
from campaigns.api.serializers.base import MAX_PASSWORD_CHARS


class UserSerializer(StrictInputMixin, serializers.ModelSerializer):
    """A login with its role; the password is write-only and checked by Django's validators."""

    role = serializers.ChoiceField(choices=list(roles.ROLES), allow_null=True, required=False,
                                   help_text="viewer, operator or admin; null for no role.")
    password = serializers.CharField(write_only=True, required=False, max_length=MAX_PASSWORD_CHARS,
                                     trim_whitespace=False, style={"input_type": "password"})

    class Meta:
        model = get_user_model()
        fields = ["id", "username", "email", "first_name", "last_name", "is_active", "role", "password",
                  "date_joined", "last_login"]
        read_only_fields = ["date_joined", "last_login"]

    def to_representation(self, user: Any) -> dict[str, Any]:
        data = super().to_representation(user)
        data["role"] = self._role(user)
        return data

    @staticmethod
    def _role(user: Any) -> str | None:
        if user.is_superuser:
            return roles.ADMIN
        # groups are prefetched by the viewset: no query per user.
        names = {g.name for g in user.groups.all()}
        best = None
        for role in roles.ROLES:
            if role in names:
                best = role
        return best

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        password = attrs.get("password")
        if self.instance is None and not password:
            raise serializers.ValidationError({"password": "a new user needs a password"})
        if password:
            # Django's validators (settings.AUTH_PASSWORD_VALIDATORS), a new user's too: similarity to the
            # username and e-mail being sent needs them on a user object.
            user = self.instance or get_user_model()(**{k: attrs.get(k, "") for k in
                                                        ("username", "email", "first_name", "last_name")})
            try:
                password_validation.validate_password(password, user)
            except DjangoValidationError as exc:
                raise serializers.ValidationError({"password": exc.messages}) from None
        return attrs

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Any:
        role = validated_data.pop("role", None)
        password = validated_data.pop("password")
        user = get_user_model()(**validated_data)
        user.set_password(password)
        user.save()
        self._set_role(user, role)
        return user

    @transaction.atomic
    def update(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        has_role = "role" in validated_data
        role = validated_data.pop("role", None)
        password = validated_data.pop("password", None)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        if password:
            instance.set_password(password)
        instance.save()
        if has_role:
            self._set_role(instance, role)
        return instance

    @staticmethod
    def _set_role(user: Any, role: str | None) -> None:
        role_groups = Group.objects.filter(name__in=roles.ROLES)
        user.groups.remove(*role_groups)
        if role:
            group, _ = Group.objects.get_or_create(name=role)
            user.groups.add(group)
        # groups may be prefetched on this instance; drop the cache so the response shows the new role.
        getattr(user, "_prefetched_objects_cache", {}).pop("groups", None)
        user.__dict__.pop("_benchapp_groups", None)
