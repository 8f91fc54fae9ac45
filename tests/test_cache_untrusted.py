"""The cache's Redis is not trusted: whatever sits under a cache key is read as signed JSON or as a miss,
never unpickled. A pickle, a forged answer and a number under a key of ours are rebuilt from the database."""
from __future__ import annotations

import os
import pickle
from decimal import Decimal
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe

from campaigns.cache_backend import NotCacheable, SignedJSONSerializer
from campaigns.models import Job
from tests.factories import JobFactory
from tests.helpers.measured import add_samples
from tests.helpers.users import API, client_for, make_user


class _CreatesFile:
    """A pickle whose loading creates a file: the proof that something unpickled it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.path}",))


def _raw_redis() -> redis.Redis:
    return redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])


@pytest.mark.django_db
def test_a_pickle_written_under_a_series_key_is_never_executed(tmp_path):
    viewer = client_for(make_user("viewer"))
    job = JobFactory(status=Job.Status.SUCCEEDED, phase="done")
    add_samples(job, 0, [1.0, 2.0, 3.0])
    url = f"{API}/jobs/{job.pk}/series/"
    expected = viewer.get(url).json()
    raw = _raw_redis()
    keys = [k for k in raw.keys(cache.make_key(f"api:series:{job.pk}:*"))]
    # Both entries of a closed job: the answer and the job's seconds (the key format an attacker would find).
    assert len(keys) == 2 and any(k.endswith(b":seconds") for k in keys), keys
    marker = tmp_path / "pwned"
    for key in keys:
        raw.set(key, pickle.dumps(_CreatesFile(marker)))
    answer = viewer.get(url)
    assert answer.status_code == 200 and answer.json() == expected
    assert not marker.exists()
    # Rebuilt and stored again as benchapp's own signed entries.
    assert all(raw.get(k).startswith(b"bj1:") for k in keys)


@pytest.mark.django_db
def test_a_forged_or_foreign_entry_is_a_miss_not_an_answer():
    viewer = client_for(make_user("viewer"))
    job = JobFactory(status=Job.Status.SUCCEEDED, phase="done")
    add_samples(job, 0, [1.0, 2.0])
    url = f"{API}/jobs/{job.pk}/series/?max_points=10"
    expected = viewer.get(url).content
    raw = _raw_redis()
    key = next(k for k in raw.keys(cache.make_key(f"api:series:{job.pk}:*")) if not k.endswith(b":seconds"))
    stored = raw.get(key)
    forged = stored.replace(b'"total_points":2', b'"total_points":9')
    assert forged != stored
    for value in (forged, b"bj1:" + b"0" * 64 + b'b{"total_points":9}', b"42", b"\x80\x04garbage"):
        raw.set(key, value)
        assert viewer.get(url).content == expected


def test_every_cached_value_type_round_trips():
    serializer = SignedJSONSerializer()
    value = {"body": b'{"a":1}', "price": Decimal("1.25"), "html": mark_safe("<td>1</td>"), "rows": (1, 2.5, None),
             "nested": [{"x": "plain <b>"}], "nan": float("inf")}
    back = serializer.loads(serializer.dumps(value))
    assert back["body"] == b'{"a":1}' and back["price"] == Decimal("1.25") and back["rows"] == [1, 2.5, None]
    assert isinstance(back["html"], SafeString) and back["html"] == "<td>1</td>"
    assert not isinstance(back["nested"][0]["x"], SafeString) and back["nan"] == float("inf")
    assert serializer.loads(serializer.dumps(b"raw answer")) == b"raw answer"
    assert serializer.loads(str(serializer.dumps(7)).encode()) == 7  # as Redis gives it back
    with pytest.raises(NotCacheable):
        serializer.dumps({"when": object()})
    with pytest.raises(NotCacheable):
        serializer.dumps({1: "int key"})


def test_celery_reads_json_messages_only():
    from benchapp.celery import app

    assert list(app.conf.accept_content) == ["json"] and app.conf.task_serializer == "json"
