"""Pagination for every list: ?limit=&offset=, at most MAX_LIMIT rows a page."""
from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = MAX_LIMIT
