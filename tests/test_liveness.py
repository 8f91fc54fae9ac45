"""Health from the consumer: the worker is alive while its Celery consumer consumes its queues, beat
while it sends tasks; the checks read the broker's Redis in well under a second, and never PostgreSQL."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.utils import timezone

from benchapp import liveness, pulse
from campaigns import execution
from campaigns.models import ClientHost
from tests.conftest import wait_for
from tests.helpers.servers import free_port

ROOT = Path(__file__).resolve().parent.parent


def _health(command: str, *args: str, **env: str) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "manage.py", command, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=30, env={**os.environ, **env})
    return done.returncode, (done.stdout + done.stderr).strip(), time.monotonic() - started


def test_worker_health_reads_the_consumers_pulse(settings):
    host = f"pulse-unit-{os.getpid()}"
    with pytest.raises(Exception, match="never pulsed"):
        from django.core.management import call_command

        call_command("worker_health", hostname=host)
    pulse.pulse_write(hostname=host, consuming=True, why="", draining=False)
    assert liveness.worker_verdict(hostname=host, max_age_s=30)[0]
    pulse.pulse_write(hostname=host, consuming=False, why=f"not consuming {settings.CELERY_TASK_DEFAULT_QUEUE}",
                      draining=False)
    ok, line = liveness.worker_verdict(hostname=host, max_age_s=30)
    assert not ok and "alive but not consuming" in line
    pulse.pulse_write(hostname=host, consuming=False, why="not consuming", draining=True)
    ok, line = liveness.worker_verdict(hostname=host, max_age_s=30)
    assert ok and "draining" in line
    liveness.redis_client().delete(liveness.consumer_key(host))


def test_beat_health_reads_the_time_beat_last_sent_a_task():
    key = liveness.beat_key()
    saved = liveness.redis_client().get(key)
    try:
        liveness.redis_client().delete(key)
        assert liveness.beat_verdict(max_age_s=120) == (False, "beat: never sent a task")
        pulse.beat_sent(sender="campaigns.tasks.jobs_reconcile_task")
        ok, line = liveness.beat_verdict(max_age_s=120)
        assert ok and "jobs_reconcile_task" in line
    finally:
        if saved is not None:
            liveness.redis_client().set(key, saved)


def test_the_checks_answer_healthy_when_the_broker_is_away_rather_than_restart_a_worker():
    port = free_port()  # nothing listens there
    code, line, _ = _health("worker_health", REDIS_URL=f"redis://127.0.0.1:{port}/0")
    assert code == 0 and "not judged, the broker's Redis is unreachable" in line


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_consumer_stops_consuming_is_reported_dead_within_a_minute(make_worker, settings):
    from benchapp.celery import app

    hostname = f"consumer-{os.getpid()}"
    worker = make_worker(hostname)
    wait_for(lambda: _health("worker_health", "--hostname", hostname)[0] == 0, timeout_s=30,
             what="the worker's consumer to pulse")
    code, line, took_s = _health("worker_health", "--hostname", hostname)
    assert code == 0 and "consuming" in line
    assert took_s < 1.5, f"worker_health took {took_s:.2f} s"  # a process start included; under 0.3 s idle
    # The check does not touch PostgreSQL: the same answer with a database that is away.
    away = f"postgres://postgres@127.0.0.1:{free_port()}/none"
    assert _health("worker_health", "--hostname", hostname, DATABASE_URL=away)[0] == 0
    node = f"{hostname}@{socket.gethostname()}"
    replies = app.control.cancel_consumer(execution.host_queue(hostname), destination=[node], reply=True, timeout=5)
    assert replies, "the worker did not answer cancel_consumer"
    stopped = time.monotonic()
    wait_for(lambda: _health("worker_health", "--hostname", hostname)[0] == 1, timeout_s=60,
             what="worker_health to report the consumer dead")
    code, line, _ = _health("worker_health", "--hostname", hostname)
    assert f"not consuming {execution.host_queue(hostname)}" in line
    # The database heartbeat stops with it: /readyz and the hosts' online state say the same.
    settings.BENCHAPP_HOST_OFFLINE_S = 5
    wait_for(lambda: not ClientHost.objects.get(hostname=hostname).is_online(), timeout_s=60,
             what="the host to go offline")
    assert time.monotonic() - stopped < 60
    assert worker.proc.poll() is None  # the process lives on: only its consumer stopped


@pytest.mark.integration
def test_beat_health_passes_while_the_session_beat_sends(celery_worker_process):
    wait_for(lambda: _health("beat_health")[0] == 0, timeout_s=30, what="beat to send a task")
    code, line, _ = _health("beat_health", DATABASE_URL=f"postgres://postgres@127.0.0.1:{free_port()}/none")
    assert code == 0 and line.startswith("beat: sent"), line


@pytest.mark.django_db
def test_metrics_say_how_long_the_oldest_message_of_a_queue_has_waited():
    from benchapp.celery import app
    from campaigns.observability import metrics

    queue = execution.host_queue(f"nobody-{os.getpid()}")
    ClientHost.objects.create(hostname=f"nobody-{os.getpid()}", queue=queue, role="client",
                              last_heartbeat=timezone.now())
    try:
        app.send_task("campaigns.tasks.jobs_reconcile_task", queue=queue)
        time.sleep(1.2)
        app.send_task("campaigns.tasks.jobs_reconcile_task", queue=queue)  # newer: the oldest one counts
        text = metrics.scrape().decode()
        line = next(x for x in text.splitlines()
                    if x.startswith(f'benchapp_celery_queue_oldest_age_seconds{{queue="{queue}"}}'))
        assert 1.2 <= float(line.split()[-1]) < 30
        assert f'benchapp_celery_queue_length{{queue="{queue}"}} 2.0' in text
    finally:
        liveness.redis_client().delete(queue)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_client_hosts_worker_in_threads_pulses_too(make_worker):
    hostname = f"client-pulse-{os.getpid()}"
    worker = make_worker(hostname, extra_env={"BENCHAPP_WORKER_ROLE": "client"})
    wait_for(lambda: _health("worker_health", "--hostname", hostname, BENCHAPP_WORKER_ROLE="client")[0] == 0,
             timeout_s=30, what="the client worker's consumer to pulse")
    assert "(thread)" in worker.log_text()  # the pool of a client host's worker: its consumer's timer is a thread's
    time.sleep(3)  # a few beats of the database heartbeat, which beats only while the pulse is fresh
    host = ClientHost.objects.get(hostname=hostname)
    assert (timezone.now() - host.last_heartbeat).total_seconds() < 5
