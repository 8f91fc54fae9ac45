"""Token authentication in one hand-written query: the token (by its SHA-256), its user and the user's role groups.

DRF's own makes one ORM query for the token and its user, and the role check that follows a second one for the
groups. Once answers come from the cache, building those ORM queries was most of a request's time (more than half
of a cached list), so the query is written out once, from the models' own table and column names, and its row
turned into model instances directly. campaigns.roles reads the group names cached on the user object.

Tokens are stored as their SHA-256 (campaigns.models.ApiToken): the presented token is hashed and looked up by that
hash; an expired or revoked one is refused with a message saying which.

The same row carries PostgreSQL's current snapshot, the key of the cached list pages (campaigns.cache
`request_snapshot`), which would otherwise cost a round trip of its own on every cached list.
"""
from __future__ import annotations

from functools import cache
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Field
from django.utils import timezone
from rest_framework import authentication, exceptions

from campaigns.cache import SNAPSHOT_SQL, remember_snapshot
from campaigns.models import ApiToken
from campaigns.services.tokens import token_hash


def _column(model: Any, name: str) -> str:
    return str(cast(Field, model._meta.get_field(name)).column)


@cache
def _query() -> tuple[str, list[str], list[str]]:
    """The SQL, the user's attribute names and the token's, in the order the row gives them."""
    user_model = get_user_model()
    quote = connection.ops.quote_name
    user_fields = list(user_model._meta.concrete_fields)
    token_fields = list(ApiToken._meta.concrete_fields)  # in model order: from_db() reads them by position
    groups = cast(Any, user_model._meta.get_field("groups"))
    memberships = groups.remote_field.through._meta
    sql = (
        f"SELECT {', '.join(f'u.{quote(str(f.column))}' for f in user_fields)}, "
        f"{', '.join(f't.{quote(str(f.column))}' for f in token_fields)}, "
        f"ARRAY(SELECT g.{quote('name')} FROM {quote(groups.related_model._meta.db_table)} g "
        f"JOIN {quote(memberships.db_table)} m ON m.{quote(_column_of(memberships, 'group'))} = g.{quote('id')} "
        f"WHERE m.{quote(_column_of(memberships, 'user'))} = u.{quote(str(user_model._meta.pk.column))}), "
        f"{SNAPSHOT_SQL} "
        f"FROM {quote(ApiToken._meta.db_table)} t "
        f"JOIN {quote(user_model._meta.db_table)} u "
        f"ON u.{quote(str(user_model._meta.pk.column))} = t.{quote(_column(ApiToken, 'user'))} "
        f"WHERE t.{quote(_column(ApiToken, 'key_hash'))} = %s"
    )
    return sql, [f.attname for f in user_fields], [f.attname for f in token_fields]


def _column_of(meta: Any, name: str) -> str:
    return str(meta.get_field(name).column)


class TokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <token>` (DRF's word) or `Authorization: Bearer <token>` (what most clients send)."""

    model = ApiToken

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        words = authentication.get_authorization_header(request).split()
        if not words or words[0].lower() != b"bearer":
            return super().authenticate(request)
        if len(words) != 2:
            raise exceptions.AuthenticationFailed("Send the token as `Authorization: Bearer <token>`, one word "
                                                  "after Bearer.")
        try:
            key = words[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("A token has only letters, digits, - and _.") from None
        return self.authenticate_credentials(key)

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        sql, user_names, token_names = _query()
        with connection.cursor() as cursor:
            cursor.execute(sql, [token_hash(key)])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        user: Any = get_user_model().from_db(DEFAULT_DB_ALIAS, user_names, row[: len(user_names)])
        token = ApiToken.from_db(DEFAULT_DB_ALIAS, token_names, row[len(user_names): len(user_names) + len(token_names)])
        token.user = user
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("Token revoked: get a new one from /api/v1/auth/token/.")
        if token.expires_at is not None and token.expires_at <= timezone.now():
            raise exceptions.AuthenticationFailed("Token expired: get a new one from /api/v1/auth/token/.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        user._benchapp_groups = set(row[-2])
        remember_snapshot(token, row[-1])
        return (user, token)
