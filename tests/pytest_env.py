"""Loaded as an early plugin (-p in pyproject) so these variables are set before pytest-django
imports the settings: tests use Redis database 15 and a queue of their own, so a developer's
`make run` worker never consumes a test's messages."""
from __future__ import annotations

import os
import uuid

os.environ["REDIS_URL"] = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
_SESSION = uuid.uuid4().hex[:8]
os.environ["BENCHAPP_QUEUE"] = f"test-{_SESSION}"
# The API cache: a database next to the broker's and a key prefix per session (no test clears it).
os.environ["BENCHAPP_CACHE_URL"] = os.environ.get("TEST_CACHE_URL", "redis://127.0.0.1:6379/14")
os.environ["BENCHAPP_CACHE_PREFIX"] = f"test-{_SESSION}"
# The test database too, so two test sessions on one machine never drop each other's.
os.environ.setdefault("BENCHAPP_TEST_DB_NAME", f"test_benchapp_{_SESSION}")
# Target databases of this session on the local MariaDB and PostgreSQL, dropped at the end.
os.environ["BENCHAPP_TEST_TARGET_DB"] = f"bench_{_SESSION}"
os.environ.setdefault("BENCHAPP_HOSTNAME", "test-runner")
# Workers of the suite leave reconciling to the session worker's beat, as the fault tests expect; the thread
# that production workers run is tested on its own (tests/test_worker_signals.py).
os.environ["BENCHAPP_RECONCILE_IN_WORKER"] = "false"
