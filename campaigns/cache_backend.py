"""Django's Redis cache backend, keeping one redis.Redis per connection pool, and storing signed JSON.

Django builds a new redis.Redis for every cache call; each one sets up its table of response
callbacks, which was a fifth of the time of a list served from the cache. A redis.Redis is safe
to share (it takes a connection from its pool per command), and Django's caches are per thread.

Django's own serializer pickles: whoever can write the cache's Redis (a local process, a client
host, anyone when Redis has no password) could make the next reader of a key run any code. Here a
value is JSON (never pickle), framed with an HMAC of SECRET_KEY: an entry that is not ours (a
pickle, a forged answer, a key signed by another installation) is read as a miss, logged, and
rebuilt, never trusted. The few non-JSON types the cached values hold (bytes of a rendered API
answer, Decimal prices, the comparison's SafeString HTML) are tagged; tuples come back as lists.
Integers are stored as they are, so that Redis' INCR works on the results version (a forged
number there only outdates the cached comparisons).
"""
from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import logging
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.cache.backends import redis as django_redis
from django.utils.safestring import SafeString, mark_safe

log = logging.getLogger(__name__)

MAGIC = b"bj1:"  # format version: a change of framing outdates every entry at once
_SALT = "campaigns.cache_backend"
_TAG = "__benchapp_cache__"
_SIG_BYTES = 64  # hex of an HMAC-SHA256


class NotCacheable(TypeError):
    """A value the cache cannot store as JSON; the caller builds it each time instead."""


@functools.lru_cache(maxsize=4)
def _key(secret: str) -> bytes:
    """The HMAC key of this SECRET_KEY (as Django's salted_hmac derives it), made once, not per value."""
    return hashlib.sha256((_SALT + "signer" + secret).encode()).digest()


def _signature(payload: bytes) -> bytes:
    return hmac.new(_key(settings.SECRET_KEY), payload, hashlib.sha256).hexdigest().encode()


def _encode(value: Any) -> Any:
    """JSON's `default`: the tagged form of the non-JSON types a cached value may hold."""
    if isinstance(value, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return {_TAG: "decimal", "v": str(value)}
    raise NotCacheable(f"{type(value).__name__} is not cacheable as JSON")


def _decode(item: dict[str, Any]) -> Any:
    kind = item.get(_TAG)
    if kind is None:
        return item
    if kind == "bytes":
        return base64.b64decode(item["v"])
    if kind == "decimal":
        return Decimal(item["v"])
    if kind == "safe":
        # Only ever read from a signed entry: HTML that benchapp itself escaped and marked safe.
        return mark_safe(item["v"])  # noqa: S308
    raise ValueError(f"unknown cache tag {kind!r}")


def _tag_safe(value: Any) -> Any:
    """SafeString is a str to JSON: walked here to keep its mark (dicts and lists only; cheap next to rendering)."""
    if isinstance(value, SafeString):
        return {_TAG: "safe", "v": str(value)}
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise NotCacheable(f"dict key {key!r} is not a string")
        return {key: _tag_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_tag_safe(item) for item in value]
    return value


class SignedJSONSerializer:
    """Values to signed JSON and back; a foreign or tampered entry loads as None (a miss)."""

    def dumps(self, obj: Any) -> bytes | int:
        if type(obj) is int:  # as Django's own: raw, for INCR
            return obj
        if isinstance(obj, bytes):  # a rendered answer: the hot path, no JSON around it
            payload = b"b" + obj
        else:
            payload = b"j" + json.dumps(_tag_safe(obj), default=_encode, separators=(",", ":")).encode()
        return MAGIC + _signature(payload) + payload

    def loads(self, data: bytes | int) -> Any:
        if isinstance(data, int):
            return data
        if not data.startswith(MAGIC):
            try:
                return int(data)
            except ValueError:
                pass
        signature, payload = data[len(MAGIC):len(MAGIC) + _SIG_BYTES], data[len(MAGIC) + _SIG_BYTES:]
        if not data.startswith(MAGIC) or not hmac.compare_digest(signature, _signature(payload)):
            log.warning("cache: ignored an entry that benchapp did not write (%d bytes, starts %r)", len(data), data[:8])
            return None
        if payload[:1] == b"b":
            return payload[1:]
        return json.loads(payload[1:], object_hook=_decode)


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "serializer": SignedJSONSerializer})
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # Django's own private helpers (not in django-stubs): the pool per server, the client class.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient
