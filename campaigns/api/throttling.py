"""Throttles of the token endpoint: password guesses per client address and per username, counted in Redis.

Each throttle is a token bucket (pyrate-limiter's GCRA, `Rate(n, period)`: a burst of n, then one more
every period / n) kept in a Redis hash that one Lua script reads and updates. DRF's own cache throttles
read the history, then write it back, so parallel guesses could all pass before any of them was counted;
the script counts each request atomically, in the Redis of the Django cache (CACHES["default"], under its
key prefix). A refused request spends nothing, so the next guess is allowed exactly `Retry-After` seconds
later, and it is refused before the view runs: no password is hashed for it.

Rates are REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] ("10/hour"), read per request so that a settings
override applies at once.
"""
from __future__ import annotations

import functools
import hashlib
import logging
from typing import Any, cast

import redis
from django.conf import settings
from django.core.cache import caches
from pyrate_limiter import AbstractClock, Decision, Rate, RateItem, RedisStateStore, StateBucket, TokenBucket, WallClock
from rest_framework import exceptions, status, throttling
from rest_framework.request import Request
from rest_framework.settings import api_settings

from campaigns.api.serializers.tokens import TokenRequestSerializer

log = logging.getLogger(__name__)
KEY_PREFIX = "throttle"
# Set on a request one throttle refused: the next ones (DRF asks them all) let it be, spending nothing, so that an
# address's refused guesses at one user do not also use up that user's budget from every address.
REFUSED_MARK = "_benchapp_throttle_refused"
_touched = False  # whether any bucket was written since the last throttle_reset() (tests reset only then)


class ThrottleUnavailable(exceptions.APIException):
    """Redis does not answer: refusing is safer than letting guesses through uncounted."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "logins are paused: the rate limiter's store does not answer; try again in a minute"
    default_code = "throttle_unavailable"


@functools.cache
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)


def _store_client() -> redis.Redis:
    return _redis(settings.CACHES["default"]["LOCATION"])


def _key(scope: str, ident: str) -> str:
    return caches["default"].make_key(f"{KEY_PREFIX}:{scope}:{ident}")


class RedisRateThrottle(throttling.SimpleRateThrottle):
    """A SimpleRateThrottle whose history is an atomic token bucket in Redis (see the module's docstring)."""

    scope: str
    clock: AbstractClock = WallClock()  # epoch milliseconds: several web processes share a bucket
    _wait_s: float | None = None

    def get_rate(self) -> str | None:
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
        return str(rate) if rate is not None else None

    def allow_request(self, request: Request, view: Any) -> bool:
        global _touched
        if getattr(request, REFUSED_MARK, False):
            return True  # an earlier throttle of this view refused it: the request spends nothing of this one
        num_requests, duration_s = self.parse_rate(self.get_rate())
        if num_requests is None or duration_s is None:
            return True
        ident = self.get_cache_key(request, view)
        if ident is None:
            return True
        bucket = StateBucket([Rate(num_requests, int(duration_s * 1000))], algorithm=TokenBucket(),
                             store=RedisStateStore(_store_client(), _key(self.scope, ident)), clock=self.clock)
        try:
            # A synchronous Redis client: the decision is a value, never an awaitable.
            decision = cast(Decision, bucket.put_decision(RateItem(self.scope, int(cast(int, bucket.now())))))
        except redis.RedisError as exc:
            log.error("throttle %s: Redis does not answer (%s); refusing the request", self.scope, exc)
            raise ThrottleUnavailable() from None
        _touched = True
        self._wait_s = None if decision.allowed else (decision.retry_after_ms or 0) / 1000
        if not decision.allowed:
            setattr(request, REFUSED_MARK, True)
        return decision.allowed

    def wait(self) -> float | None:
        return self._wait_s


class TokenAddressThrottle(RedisRateThrottle):
    """Token requests per client address (behind REST_FRAMEWORK["NUM_PROXIES"] proxies)."""

    scope = "token-address"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.get_ident(request)


class TokenUsernameAnywhereThrottle(RedisRateThrottle):
    """Token requests per username, from any address (default 100 an hour): spreading guesses over many machines
    gains little. High enough that one address's guesses (TokenUsernameThrottle: 10) never lock the real user out.

    The username is read as the endpoint reads it (trimmed, a number as text), so " root" and "root" share
    a bucket; a body without a usable username is refused by the endpoint's validation anyway.
    """

    scope = "token-username-any"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        data = request.data
        raw = data.get("username") if hasattr(data, "get") else None
        try:
            username = TokenRequestSerializer().fields["username"].run_validation(raw)
        except exceptions.ValidationError:
            return None
        return hashlib.sha256(username.encode()).hexdigest()[:32]


class TokenUsernameThrottle(TokenUsernameAnywhereThrottle):
    """Token requests per username and client address (default 10 an hour): an address that guesses a user's
    password is refused for that user, and the user, from any other address, is not (the attack: ten anonymous
    wrong passwords locked the real one out for six minutes)."""

    scope = "token-username"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        username = super().get_cache_key(request, view)
        if username is None:
            return None
        return f"{username}:{hashlib.sha256(self.get_ident(request).encode()).hexdigest()[:16]}"


def throttle_reset() -> int:
    """Forgets every throttle's history (tests, after an incident); returns how many buckets it dropped."""
    global _touched
    client = _store_client()
    keys = list(client.scan_iter(match=_key("*", "*"), count=1000))
    if keys:
        client.delete(*keys)
    _touched = False
    return len(keys)


def throttle_touched() -> bool:
    return _touched
