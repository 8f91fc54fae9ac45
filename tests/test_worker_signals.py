"""The reconcile thread every production worker runs beside its pool (BENCHAPP_RECONCILE_IN_WORKER)."""
from __future__ import annotations

import threading
import time

from campaigns import execution, worker_signals


def test_the_reconcile_thread_keeps_going_after_a_failed_pass_and_stops_with_the_worker(monkeypatch):
    calls: list[float] = []

    def reconcile(**kwargs):
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("database restarting")
        return {"lost": 0, "closed": 0, "redispatched": 0}

    monkeypatch.setattr(execution, "jobs_reconcile", reconcile)
    monkeypatch.setattr(worker_signals, "close_old_connections", lambda: None)
    worker_signals._stop.clear()
    thread = threading.Thread(target=worker_signals._reconcile_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while len(calls) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(calls) >= 4, "the loop ended after the failed pass"
    finally:
        worker_signals._stop.set()  # what worker_shutdown does
        thread.join(timeout=2)
        worker_signals._stop.clear()
    assert not thread.is_alive()


def test_a_worker_starts_the_thread_only_when_asked(monkeypatch, settings):
    started: list[str] = []
    monkeypatch.setattr(worker_signals.threading, "Thread",
                        lambda target, args, daemon, name: type("T", (), {"start": lambda self: started.append(name)})())
    monkeypatch.setattr(execution, "host_heartbeat", lambda **kwargs: None)
    monkeypatch.setattr(execution, "local_host_facts", lambda: {"cores": 2, "memory_gb": 4.0, "version": "1.0.20"})
    settings.BENCHAPP_RECONCILE_IN_WORKER = True
    worker_signals._register_host()
    assert started == ["benchapp-heartbeat", "benchapp-reconcile"]
    started.clear()
    settings.BENCHAPP_RECONCILE_IN_WORKER = False
    worker_signals._register_host()
    assert started == ["benchapp-heartbeat"]
