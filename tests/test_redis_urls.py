"""The cache's default Redis URL (the broker's, next database) keeps a REDIS_URL's query string
instead of appending "/1" after it."""
from __future__ import annotations

import pytest

from benchapp.settings import redis_url_next_db


@pytest.mark.parametrize("broker, cache", [
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"),
    ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379/1"),
    ("redis://127.0.0.1:6379/", "redis://127.0.0.1:6379/1"),
    ("redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/0"),
    ("redis://:pw%2Fx@redis.example:6380/2?socket_timeout=5", "redis://:pw%2Fx@redis.example:6380/3?socket_timeout=5"),
    ("rediss://cache.example:6380?ssl_cert_reqs=none", "rediss://cache.example:6380/1?ssl_cert_reqs=none"),
    ("rediss://cache.example:6380/4?ssl_cert_reqs=none&socket_timeout=5",
     "rediss://cache.example:6380/5?ssl_cert_reqs=none&socket_timeout=5"),
    ("unix:///run/redis/redis.sock?db=0", "unix:///run/redis/redis.sock?db=1"),
    ("unix:///run/redis/redis.sock", "unix:///run/redis/redis.sock?db=1"),
])
def test_the_next_database_keeps_the_server_credentials_and_options(broker, cache):
    assert redis_url_next_db(broker) == cache


def test_redis_py_reads_the_result_as_meant():
    import redis

    pool = redis.ConnectionPool.from_url(redis_url_next_db("redis://127.0.0.1:6379/0?socket_timeout=5"))
    assert pool.connection_kwargs["db"] == 1 and pool.connection_kwargs["socket_timeout"] == 5.0
