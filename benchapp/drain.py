"""Whether this worker process was asked to drain (manage.py worker_drain): it finishes the job it runs and takes no
new one. Set by the worker's remote-control command `benchapp_drain` (campaigns/worker_signals.py), read by its
pulse (benchapp/liveness.py), which then reports it healthy and draining rather than not consuming."""
from __future__ import annotations

import threading

_draining = threading.Event()


def is_draining() -> bool:
    return _draining.is_set()


def draining_set() -> None:
    _draining.set()
