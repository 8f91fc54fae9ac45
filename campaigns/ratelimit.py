"""A request budget per client address for pages that need no login (share links), counted in Redis.

The same token bucket as the API's token throttles (campaigns.api.throttling: pyrate-limiter's GCRA in the cache's
Redis, under the same "throttle" key prefix, so throttle_reset() forgets these buckets too), reachable from the
pages, which do not import the API.
"""
from __future__ import annotations

import functools

import redis
from django.conf import settings
from django.core.cache import caches
from pyrate_limiter import Decision, Rate, RateItem, RedisStateStore, StateBucket, TokenBucket, WallClock

KEY_PREFIX = "throttle"
_PERIOD_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class RateUnavailable(Exception):
    """Redis does not answer; the caller refuses rather than serving uncounted."""


@functools.cache
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)


def rate_take(*, scope: str, ident: str, rate: str) -> float | None:
    """Spends one request of `ident`'s bucket at `rate` ("60/minute"): None when allowed, else the seconds until
    the next one is. RateUnavailable when Redis does not answer."""
    number, _, period = rate.partition("/")
    count, duration_s = int(number), _PERIOD_S[period[:1]]  # settings.envrate has checked the shape
    key = caches["default"].make_key(f"{KEY_PREFIX}:{scope}:{ident}")
    store = RedisStateStore(_redis(settings.CACHES["default"]["LOCATION"]), key)
    clock = WallClock()
    bucket = StateBucket([Rate(count, int(duration_s * 1000))], algorithm=TokenBucket(), store=store, clock=clock)
    try:
        decision = bucket.put_decision(RateItem(scope, int(clock.now())))
    except redis.RedisError as exc:
        raise RateUnavailable(str(exc)) from None
    assert isinstance(decision, Decision)
    return None if decision.allowed else (decision.retry_after_ms or 0) / 1000
