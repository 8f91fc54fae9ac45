"""The cause of a lost measurement names the process that went away: a worker that a supervisor
restarted (its new start is later than the task's last beat), a pool process lost under a worker that beats on, or a
whole worker or host that went silent. Decided on rows: the processes are in tests/test_supervisor.py."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.execution.hosts import worker_lost_cause
from campaigns.models import ClientHost


@pytest.mark.django_db
@pytest.mark.parametrize("started_ago_s, beat_ago_s, expected", [
    # supervisord brought the killed worker back 30 s ago: its heartbeat is fresh, but it started after the task's
    # last beat, so the task's process went with the old worker.
    (30, 1, "worker restarted on h1 while measuring: the job's process went with the old worker (killed or "
            "stopped); the new one started at {started}"),
    # The worker started long before and beats on: only its pool process went.
    (3600, 1, "worker process lost on h1 while measuring: no heartbeat from its task for 30 s while the host's "
              "worker still beats (its pool process was killed or hung)"),
    # Nothing of the host beats any more.
    (3600, 45, "client host h1 lost while measuring: no heartbeat from its worker for 30 s (the worker was killed "
               "or stopped, or the host is down or cut off)"),
    # A row that says the worker joined lately but whose heartbeat stopped too: not brought back, lost.
    (10, 45, "client host h1 lost while measuring: no heartbeat from its worker for 30 s (the worker was killed "
             "or stopped, or the host is down or cut off)"),
])
def test_the_lost_cause_says_which_process_went_away(started_ago_s, beat_ago_s, expected):
    now = timezone.now()
    started = now - timedelta(seconds=started_ago_s)
    ClientHost.objects.create(hostname="h1", queue="q.h1", started_at=started,
                              last_heartbeat=now - timedelta(seconds=beat_ago_s))
    cause = worker_lost_cause("h1", stale_s=30, doing="while measuring", last_beat=now - timedelta(seconds=50))
    assert cause == expected.format(started=timezone.localtime(started).strftime("%H:%M:%S"))


@pytest.mark.django_db
def test_a_worker_restarted_while_preparing_without_a_known_last_beat_is_named_too():
    """A job's coordinator lost while preparing: the stale limit stands for the task's last beat."""
    now = timezone.now()
    ClientHost.objects.create(hostname="h2", queue="q.h2", started_at=now - timedelta(seconds=5), last_heartbeat=now)
    cause = worker_lost_cause("h2", stale_s=30, doing="while preparing")
    assert cause.startswith("worker restarted on h2 while preparing: the job's process went with the old worker")
