"""Cached API answers in Redis (settings.CACHES), keyed so that a stale answer is never served.

Two kinds of answers are cached, as the exact bytes of their JSON (campaigns.api.views):

* comparisons, keyed by the query and the results version: a counter bumped after every commit
  that can change a comparison: a result saved or deleted, a job closed (it may have just
  succeeded) or deleted, a product, spec, target, scenario or dataset saved or deleted (their names
  and the target's product and spec are part of the output). A new result is therefore in the
  very next comparison; nothing waits for an expiry.
* list pages, keyed by the URL, the caller's role and the database snapshot (`database_snapshot`):
  PostgreSQL's snapshot text (xmin:xmax:running xids) changes with every commit of a transaction
  that wrote anything, so two requests with the same snapshot read the same rows. The snapshot
  is taken before the list's own queries, which therefore read rows at least as new as the key
  says; nothing stale is ever stored under a key a later request can have. While anything writes
  (a run stores its samples every second) the key changes each time and the cache simply misses.
* a finished job's series, keyed by job id, finished_at and the query: once a job is closed its
  samples no longer change, so the entry needs no version at all. The job's per-second table
  (the costly GROUP BY) is cached beside it and serves its other queries (max_points, method).

The version starts from the clock, not from 1: if Redis evicted the counter but kept older
entries, a restart at 1 could meet an answer stored under an earlier 1.

The cache is an optimisation only: when Redis cannot be reached, answers are built as if it were
empty, and a version bump that cannot be recorded is logged (the entries it should have outdated
expire with CACHES' TIMEOUT). Signals are used here and only here (STYLE: signals only for caches);
CampaignsConfig.ready() connects them in every process.
"""
from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Model
from django.db.models.signals import post_delete, post_save
from redis.exceptions import RedisError

from campaigns.cache_backend import NotCacheable
from campaigns.models import Campaign, Dataset, InstanceSpec, Job, JobResult, Product, Scenario, Target

log = logging.getLogger(__name__)

RESULTS_VERSION_KEY = "results-version"
# A finished job's series is immutable; the timeouts only bound Redis' memory. Answers (one per
# max_points and method) are cheap to rebuild from the job's seconds, which are kept longer.
SERIES_TIMEOUT_S = 3600
SECONDS_TIMEOUT_S = 86400


def results_version() -> int | None:
    """The current results version; None if Redis cannot be reached (then nothing is cached)."""
    try:
        version = cache.get(RESULTS_VERSION_KEY)
        if version is None:
            cache.add(RESULTS_VERSION_KEY, time.time_ns(), timeout=None)
            version = cache.get(RESULTS_VERSION_KEY)
    except RedisError:
        log.warning("cache unreachable: comparisons are built without it", exc_info=True)
        return None
    return version


def _results_version_bump() -> None:
    try:
        try:
            cache.incr(RESULTS_VERSION_KEY)
        except ValueError:  # no counter yet (or evicted): a new epoch from the clock
            cache.add(RESULTS_VERSION_KEY, time.time_ns(), timeout=None)
    except RedisError:
        log.error("cache unreachable: cached comparisons are not outdated until they expire", exc_info=True)


def results_changed() -> None:
    """Outdates every cached comparison, now and again once the current transaction commits.

    The bump after the commit is the one that matters: a request between a bump and the commit
    still reads the old figures and may store them under the new version, which the second bump
    leaves behind. The bump now covers a transaction whose commit never runs its callbacks (a test
    inside an atomic block) and costs one Redis INCR.
    """
    _results_version_bump()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(_results_version_bump)


# PostgreSQL's snapshot as text: the transaction ids committed so far and those still running.
SNAPSHOT_SQL = "pg_current_snapshot()::text"


def database_snapshot() -> str | None:
    """PostgreSQL's current snapshot as text, the version of everything in the database; None where
    it is no version: inside a transaction (its own uncommitted writes are visible to it but not
    part of the text, and may be rolled back) or on another database engine."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {SNAPSHOT_SQL}")
        return cursor.fetchone()[0]


def remember_snapshot(auth: Any, snapshot: str) -> None:
    """Keeps a snapshot read earlier in this request (with the API token) on the request's `auth`
    object, for request_snapshot(); not inside a transaction, for database_snapshot()'s reason."""
    if not connection.in_atomic_block:
        auth._benchapp_snapshot = snapshot


def request_snapshot(auth: Any) -> str | None:
    """The snapshot to key a request's cached answer by: the one its token authentication read,
    else database_snapshot(). An earlier snapshot is as good a key as a current one: an answer
    built after it is at least as new, and once anything commits no later request has that
    snapshot again."""
    taken = getattr(auth, "_benchapp_snapshot", None)
    return taken if taken is not None else database_snapshot()


def query_key(*parts: Any) -> str:
    """A short cache key for a query of any length (Redis keys are cheaper short)."""
    return hashlib.sha1(repr(parts).encode()).hexdigest()


def cached_value(key: str | None, build: Callable[[], Any], *, timeout: int | None = None) -> Any:
    """The value cached under `key`, else build() (stored for next time; never None); key None:
    never cached. Values are stored as signed JSON (campaigns.cache_backend): bytes, dicts, lists, numbers,
    strings, Decimal and SafeString; tuples come back as lists."""
    if key is None:
        return build()
    try:
        body = cache.get(key)
    except RedisError:
        log.warning("cache unreachable: answer built without it", exc_info=True)
        return build()
    if type(body) is int:  # stored raw for counters (cache_backend): never a value of ours, so a forged one
        log.warning("cache: ignored a number under %s", key)
        body = None
    if body is None:
        body = build()
        try:
            cache.set(key, body, timeout=timeout if timeout is not None else cache.default_timeout)
        except RedisError:
            log.warning("cache unreachable: answer not stored", exc_info=True)
        except NotCacheable:
            log.error("cache: answer under %s not stored", key, exc_info=True)
    return body


def _on_change(sender: Any, **kwargs: Any) -> None:
    results_changed()


def signals_connect() -> None:
    """Outdates cached comparisons when what they show changes: results, succeeded jobs (closing a job is
    bumped by execution.results.job_close, an UPDATE without signals), and the names, products and specs
    of what was measured, and a campaign (its latency limit is its comparisons'). Called once from
    CampaignsConfig.ready()."""
    saved: tuple[type[Model], ...] = (JobResult, Product, InstanceSpec, Target, Scenario, Dataset, Campaign)
    for model in saved:
        post_save.connect(_on_change, sender=model, dispatch_uid=f"benchapp-cache-save-{model.__name__}")
    deleted: tuple[type[Model], ...] = (*saved, Job)
    for model in deleted:
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"benchapp-cache-delete-{model.__name__}")
