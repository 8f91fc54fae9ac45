"""Token authentication in one hand-written query: the token, its user and the user's role groups.

DRF's own makes one ORM query for the token and its user, and the role check that follows a
second one for the groups. Once answers come from the cache, building those ORM queries was most
of a request's time (more than half of a cached list), so the query is written out once, from
the models' own table and column names, and its row turned into model instances directly.
campaigns.roles reads the group names cached on the user object.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions


@cache
def _query() -> tuple[str, list[str], list[str]]:
    """The SQL, the user's attribute names and the token's, in the order the row gives them."""
    user_model, token_model = get_user_model(), TokenAuthentication().get_model()
    quote = connection.ops.quote_name
    user_fields = list(user_model._meta.concrete_fields)
    token_fields = list(token_model._meta.concrete_fields)  # in model order: from_db() reads them by position
    groups = user_model._meta.get_field("groups")
    memberships = groups.remote_field.through._meta
    member_user = memberships.get_field("user").column
    member_group = memberships.get_field("group").column
    sql = (
        f"SELECT {', '.join(f'u.{quote(f.column)}' for f in user_fields)}, "
        f"{', '.join(f't.{quote(f.column)}' for f in token_fields)}, "
        f"ARRAY(SELECT g.{quote('name')} FROM {quote(groups.related_model._meta.db_table)} g "
        f"JOIN {quote(memberships.db_table)} m ON m.{quote(member_group)} = g.{quote('id')} "
        f"WHERE m.{quote(member_user)} = u.{quote(user_model._meta.pk.column)}) "
        f"FROM {quote(token_model._meta.db_table)} t "
        f"JOIN {quote(user_model._meta.db_table)} u "
        f"ON u.{quote(user_model._meta.pk.column)} = t.{quote(token_model._meta.get_field('user').column)} "
        f"WHERE t.{quote(token_model._meta.pk.column)} = %s"
    )
    return sql, [f.attname for f in user_fields], [f.attname for f in token_fields]


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        sql, user_names, token_names = _query()
        with connection.cursor() as cursor:
            cursor.execute(sql, [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user = get_user_model().from_db(DEFAULT_DB_ALIAS, user_names, row[: len(user_names)])
        token = self.get_model().from_db(DEFAULT_DB_ALIAS, token_names,
                                         row[len(user_names): len(user_names) + len(token_names)])
        token.user = user
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        user._benchapp_groups = set(row[-1])
        return (user, token)
