"""Loaded as an early plugin (-p in pyproject) so these variables are set before pytest-django
imports the settings: tests use Redis database 15 and a queue of their own, so a developer's
`make run` worker never consumes a test's messages."""
from __future__ import annotations

import os
import uuid

os.environ["REDIS_URL"] = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ["BENCHAPP_QUEUE"] = f"test-{uuid.uuid4().hex[:8]}"
os.environ.setdefault("BENCHAPP_HOSTNAME", "test-runner")
