"""Loaded as an early plugin (-p in pyproject) so these variables are set before pytest-django
imports the settings: tests use Redis database 15 and a queue of their own, so a developer's
`make run` worker never consumes a test's messages."""
from __future__ import annotations

import os
import uuid

os.environ["REDIS_URL"] = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
_SESSION = uuid.uuid4().hex[:8]
os.environ["BENCHAPP_QUEUE"] = f"test-{_SESSION}"
# The test database too, so two test sessions on one machine never drop each other's.
os.environ.setdefault("BENCHAPP_TEST_DB_NAME", f"test_benchapp_{_SESSION}")
# Target databases of this session on the local MariaDB and PostgreSQL, dropped at the end.
os.environ["BENCHAPP_TEST_TARGET_DB"] = f"bench_{_SESSION}"
os.environ.setdefault("BENCHAPP_HOSTNAME", "test-runner")
