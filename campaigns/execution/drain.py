"""Draining a worker before an upgrade: it finishes the job it runs and takes no new one.

`manage.py worker_drain` broadcasts the remote-control command `benchapp_drain` (registered in the worker by
campaigns/worker_signals.py); the worker of that host stops consuming every queue (Celery's cancel_consumer: what it
has not taken stays in Redis for the other workers, or for itself once restarted), takes its host offline at once,
so that no job is placed on it meanwhile, and keeps its pulse healthy and saying "draining" (benchapp/liveness.py).
With --wait, the command then waits for the worker's running tasks to end: the worker may then be restarted without
losing a job.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from benchapp import drain
from campaigns.execution.hosts import host_mark_offline

CONTROL_COMMAND = "benchapp_drain"


class DrainError(Exception):
    """No worker of that host answered, or it did not finish in time."""


@dataclass(frozen=True)
class Drained:
    node: str  # the Celery node name of the worker that drains
    queues: list[str]
    running: int  # tasks still running when the command returned


def host_drain_here(*, consumer: Any, hostname: str) -> dict[str, Any]:
    """In the worker (its remote-control command): drain when `hostname` is this host's, else say it is not."""
    if hostname != settings.BENCHAPP_HOSTNAME:
        return {"skipped": f"not {hostname}"}
    from celery.worker import state

    drain.draining_set()
    names = [queue.name for queue in list(consumer.task_consumer.queues)]
    for name in names:
        consumer.cancel_task_queue(name)
    host_mark_offline(hostname=hostname, heartbeat_before=timezone.now())
    return {"ok": "draining", "queues": names, "running": len(state.active_requests)}


def _running(app: Any, node: str) -> int:
    answer = app.control.inspect(destination=[node], timeout=2).active() or {}
    return len(answer.get(node, []))


def host_drain(*, hostname: str, wait_s: float = 0.0, poll_s: float = 2.0) -> Drained:
    """Asks the worker of `hostname` to drain; given wait_s, waits that long at most for its running tasks to end."""
    from celery import current_app as app  # benchapp's (benchapp/__init__.py makes it first)

    replies = app.control.broadcast(CONTROL_COMMAND, arguments={"hostname": hostname}, reply=True, timeout=5)
    answers = {node: answer for reply in replies or [] for node, answer in reply.items() if "ok" in answer}
    if not answers:
        raise DrainError(f"no worker of host {hostname} answered (is it running, on queue "
                         f"{settings.CELERY_TASK_DEFAULT_QUEUE}?)")
    node, answer = next(iter(answers.items()))
    running = int(answer.get("running", 0))
    deadline = time.monotonic() + wait_s
    while wait_s and running and time.monotonic() < deadline:
        time.sleep(poll_s)
        running = _running(app, node)
    if wait_s and running:
        raise DrainError(f"worker {node} still runs {running} task(s) after {wait_s:g} s")
    return Drained(node=node, queues=list(answer.get("queues", [])), running=running)
