"""Views of the token endpoints: auth/token/ issues one, auth/token/revoke/ ends one."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns import roles, services
from campaigns.api.fields import NoInputSerializer
from campaigns.api.serializers.tokens import TokenRequestSerializer, TokenResponseSerializer
from campaigns.api.throttling import TokenAddressThrottle, TokenUsernameAnywhereThrottle, TokenUsernameThrottle
from campaigns.models import ApiToken


class TokenView(APIView):
    """POST username and password → a new API token of the user, shown this once (only a hash of it is kept). It
    expires after the server's token lifetime (90 days unless the administrator set another); POST
    auth/token/revoke/ with it ends it sooner. Send it as `Authorization: Bearer <token>` (`Token <token>` works too).
    The API tokens page of the app (your menu › API tokens) creates, names and revokes tokens without a password
    in a script.

    Throttled per client address and per username: past the limit a request is a 429 with Retry-After before its
    password is checked.
    """

    permission_classes = [AllowAny]
    authentication_classes: list[Any] = []
    throttle_classes = [TokenAddressThrottle, TokenUsernameThrottle, TokenUsernameAnywhereThrottle]

    @extend_schema(request=TokenRequestSerializer, auth=[], responses={
        200: TokenResponseSerializer,
        429: OpenApiResponse(
            response=inline_serializer("Throttled", {"detail": serializers.CharField(),
                                                     "code": serializers.CharField()}),
            description="Too many attempts from this address or for this username; the Retry-After "
                        "header says when to try again."),
    })
    def post(self, request: Request) -> Response:
        body = TokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = authenticate(request._request, username=body.validated_data["username"],
                            password=body.validated_data["password"])
        if user is None or not user.is_active:
            raise serializers.ValidationError({"non_field_errors": ["unknown username or wrong password"]})
        key = services.token_issue(user=user)
        return Response({"token": key, "username": user.get_username(), "role": roles.user_role(user)})


class TokenRevokeView(APIView):
    """POST with a token → that token no longer works (204). Session users have no token to revoke (400)."""

    @extend_schema(request=None, responses={204: None, 400: OpenApiResponse(description="Not a token request.")})
    def post(self, request: Request) -> Response:
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        if not isinstance(request.auth, ApiToken):
            raise serializers.ValidationError({"non_field_errors": ["authenticate with the token to revoke "
                                                                   "(Authorization: Bearer ...)"]})
        services.token_revoke(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)
