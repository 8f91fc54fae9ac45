"""Serializers of the token endpoint (auth/token/)."""
from __future__ import annotations

from rest_framework import serializers

from campaigns.api.fields import StrictInputMixin
from campaigns.api.serializers.base import MAX_PASSWORD_CHARS


class TokenRequestSerializer(StrictInputMixin, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=MAX_PASSWORD_CHARS, trim_whitespace=False,
                                     style={"input_type": "password"}, write_only=True)


class TokenResponseSerializer(serializers.Serializer):
    token = serializers.CharField()
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)
