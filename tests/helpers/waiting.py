"""Waiting for a condition with a bound: the one loop the tests (tests/conftest.py re-exports it) and the bench
scripts (bench/_stack.py, bench/memory.py) poll with.

Plain Python, as tests/helpers/namespaces.py: bench/ imports it outside pytest, so it imports neither pytest nor
Django nor tests.conftest.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], *, timeout_s: float, what: str = "condition",
             interval_s: float = 0.2) -> Any:
    """Calls `predicate` every `interval_s` until it returns something true, and returns that; raises TimeoutError
    naming `what` once `timeout_s` has passed (the predicate is called once more at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)
