"""Client-host registration: a Celery worker announces its host (and the public key of the key pair it made in
memory, campaigns.sealing), consumes the host's own queue besides the shared one and the server queue (a worker with
BENCHAPP_WORKER_ROLE=client: its own queue only), and keeps a heartbeat while it lives.

signals_connect() is called from CampaignsConfig.ready(); the handlers only act inside a Celery worker, and one in
beat: it watches for runs that no live worker can take (campaigns.monitoring.runs_no_worker_notify).
"""
from __future__ import annotations

import logging
import threading
from typing import Any

import psutil
from celery import current_app
from celery.signals import (
    beat_init,
    before_task_publish,
    celeryd_after_setup,
    task_postrun,
    task_retry,
    worker_init,
    worker_ready,
    worker_shutdown,
)
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from benchapp import drain, pulse
from campaigns import execution, sealing

log = logging.getLogger(__name__)
_stop = threading.Event()


def _add_host_queue(sender: Any, instance: Any, **kwargs: Any) -> None:
    """The host's own queue; the server queue for the server's worker. A client host's worker consumes only its own
    queue: what it is sent there comes with its target's password sealed for it, a job from the shared queue would
    not (and coordinating or closing other hosts' jobs is the server's)."""
    _drain_command_register()
    sealing.host_key()  # this worker's key pair, made before any pool process is forked (they share it)
    queues = instance.app.amqp.queues
    queues.select_add(execution.host_queue(settings.BENCHAPP_HOSTNAME))
    if settings.BENCHAPP_WORKER_ROLE != "client":
        queues.select_add(execution.server_queue())
    else:
        queues.deselect([settings.CELERY_TASK_DEFAULT_QUEUE])


def _drain_command_register() -> None:
    """The worker's remote-control command `benchapp_drain` (manage.py worker_drain; campaigns.execution.drain)."""
    from celery.worker.control import control_command

    from campaigns.execution.drain import CONTROL_COMMAND, host_drain_here

    @control_command(name=CONTROL_COMMAND, args=[("hostname", str)], signature="<hostname>")
    def benchapp_drain(state: Any, hostname: str = "", **_: Any) -> dict[str, Any]:
        return host_drain_here(consumer=state.consumer, hostname=hostname)


def _beat_forever(interval_s: float) -> None:
    """The host's heartbeat in the database (what /readyz, the hosts' online state and job placement read), written
    only while the worker's consumer pulses (benchapp/liveness.py): a worker whose consumer stopped consuming goes
    offline after BENCHAPP_HOST_OFFLINE_S, however alive this thread is."""
    times, since = psutil.cpu_times(), timezone.now()
    while not _stop.wait(interval_s):
        # How busy the host was since the last beat, which a job's quiet check reads (a remote client host's).
        later, until = psutil.cpu_times(), timezone.now()
        busy = execution.CpuBusy(pct=execution.cpu_busy_pct(times, later), since=since, until=until)
        times, since = later, until
        # A client host's heartbeat is its own credentials' test (revoking them stops it): it beats whatever
        # its pulse says, the server's worker only while its consumer pulses.
        if drain.is_draining() or (settings.BENCHAPP_WORKER_ROLE != "client"
                                   and not pulse.pulse_fresh(max_age_s=3 * interval_s)):
            continue  # draining: offline on purpose; else the consumer's step said why it stopped consuming
        try:
            close_old_connections()
            execution.host_heartbeat(hostname=settings.BENCHAPP_HOSTNAME, busy=busy)
        except Exception:  # a database hiccup must not end the heartbeat for good
            log.exception("heartbeat failed")


def _reconcile_forever(interval_s: float) -> None:
    """jobs_reconcile from the worker's main process, whatever its pool is doing (safe to run anywhere)."""
    while not _stop.wait(interval_s):
        try:
            close_old_connections()
            execution.jobs_reconcile()
            if settings.BENCHAPP_WORKER_ROLE != "client":
                from campaigns.services.client_access import redis_acl_restore

                redis_acl_restore()  # a restarted Redis forgets the client hosts' users
        except Exception:  # one failed pass (database restarting, say) must not end the loop
            log.exception("reconcile pass failed")


def _watch_for_no_worker(interval_s: float) -> None:
    """In the beat process: tells campaigns whose runs have had no worker for too long (monitoring). Beat is a
    process of its own, alive when every worker is dead, which is when this matters; a task could not run then."""
    from campaigns import monitoring

    while not _stop.wait(interval_s):
        try:
            close_old_connections()
            monitoring.runs_no_worker_notify()
        except Exception:  # one failed pass (database restarting, say) must not end the watch
            log.exception("no-worker check failed")


def _start_beat_watch(**kwargs: Any) -> None:
    # beat's liveness: the time of the last task it sent (benchapp/liveness.py, manage.py beat_health).
    before_task_publish.connect(pulse.beat_sent, dispatch_uid="benchapp-beat-sent", weak=False)
    threading.Thread(target=_watch_for_no_worker, args=(settings.BENCHAPP_NO_WORKER_CHECK_S,), daemon=True,
                     name="benchapp-no-worker-watch").start()
    log.info("beat watches for runs without a live worker every %s s", settings.BENCHAPP_NO_WORKER_CHECK_S)


def _announced_labels() -> list[str] | None:
    """The labels this worker announces: BENCHAPP_HOST_LABELS, except on a client host with credentials of its own
    (its role may not write the column), whose labels are the server's to give (client_host_issue --labels): said,
    not sent."""
    from django.db import connection

    if settings.BENCHAPP_WORKER_ROLE != "client":
        return settings.BENCHAPP_HOST_LABELS
    with connection.cursor() as cursor:
        cursor.execute("SELECT has_column_privilege('campaigns_clienthost', 'labels', 'UPDATE')")
        may_write = bool(cursor.fetchone()[0])
    if not may_write:
        if settings.BENCHAPP_HOST_LABELS:
            log.warning("BENCHAPP_HOST_LABELS (%s) is ignored: a client host's labels are given on the server "
                        "(manage.py client_host_issue --labels, or client_host_labels)",
                        ",".join(settings.BENCHAPP_HOST_LABELS))
        return None
    return settings.BENCHAPP_HOST_LABELS


def _register_host(**kwargs: Any) -> None:
    facts = execution.local_host_facts()
    execution.host_heartbeat(hostname=settings.BENCHAPP_HOSTNAME, cores=facts["cores"],
                             memory_gb=facts["memory_gb"], version=facts["version"],
                             labels=_announced_labels(), facts=facts,
                             role=settings.BENCHAPP_WORKER_ROLE, public_key=sealing.public_key_text())
    threading.Thread(target=_beat_forever, args=(settings.BENCHAPP_HEARTBEAT_S,), daemon=True,
                     name="benchapp-heartbeat").start()
    if settings.BENCHAPP_RECONCILE_IN_WORKER:
        threading.Thread(target=_reconcile_forever, args=(settings.BENCHAPP_RECONCILE_S,), daemon=True,
                         name="benchapp-reconcile").start()
    log.info("client host %s registered", settings.BENCHAPP_HOSTNAME)
    if settings.BENCHAPP_WORKER_ROLE != "client":
        # This release's ACL rules for every client host issued before it (an upgrade), and any Redis forgot.
        from campaigns.services.client_access import redis_acl_restore

        try:
            redis_acl_restore(always=True)
        except Exception:  # the database or Redis not there yet: the reconciler gives missing users back later
            log.exception("client hosts' Redis users not set at start")
    if settings.BENCHAPP_SELF_MEASURE:
        # The host measures itself once it has joined, on its own queue (campaigns.execution.selfmeasure); by name,
        # as the tasks module is no import of this one.
        current_app.send_task("campaigns.tasks.host_self_measure_task", args=(settings.BENCHAPP_HOSTNAME,),
                              queue=execution.host_queue(settings.BENCHAPP_HOSTNAME), countdown=1)


def _stop_heartbeat(**kwargs: Any) -> None:
    """A worker that stops cleanly takes its host offline at once: a job planned in the next minute
    must not count it (a killed worker is noticed by its silence instead)."""
    _stop.set()
    try:
        close_old_connections()
        execution.host_mark_offline(hostname=settings.BENCHAPP_HOSTNAME, heartbeat_before=timezone.now())
    except Exception:  # shutting down with the database gone: its silence will say the same later
        log.exception("could not mark host %s offline", settings.BENCHAPP_HOSTNAME)


def _count_retry(sender: Any = None, **kwargs: Any) -> None:
    """A webhook delivery retried (tasks.webhook_notify_task's autoretry): counted for /metrics."""
    if getattr(sender, "name", "").endswith(".webhook_notify_task"):
        from campaigns.observability import metrics

        metrics.webhook_retry_count()


def _count_outcome(sender: Any = None, state: str | None = None, **kwargs: Any) -> None:
    """Every task that ended, by task and outcome (success, failure, retry, ...), counted for /metrics
    (benchapp_tasks_total). Not on a client host: its Redis user has no key for the server's counters."""
    if settings.BENCHAPP_WORKER_ROLE == "client":
        return
    from campaigns.counters import counter_add

    name = str(getattr(sender, "name", "") or "unknown").rsplit(".", 1)[-1]
    counter_add("tasks", task=name, outcome=str(state or "unknown").lower())


def _refuse_a_foreign_key(**kwargs: Any) -> None:
    """A worker or beat whose field key reads none of the database's encrypted values does not start (the process
    exits with the message: campaigns/keycheck.py); a SystemExit is what Celery's signal dispatch lets through."""
    from campaigns.keycheck import start_refused_unless_key_reads

    start_refused_unless_key_reads()


def signals_connect() -> None:
    before_task_publish.connect(pulse.stamp_sent_at, dispatch_uid="benchapp-sent-at", weak=False)
    worker_init.connect(_refuse_a_foreign_key, dispatch_uid="benchapp-worker-key-check")
    beat_init.connect(_refuse_a_foreign_key, dispatch_uid="benchapp-beat-key-check")
    task_retry.connect(_count_retry, dispatch_uid="benchapp-count-retry")
    task_postrun.connect(_count_outcome, dispatch_uid="benchapp-count-outcome")
    celeryd_after_setup.connect(_add_host_queue, dispatch_uid="benchapp-host-queue")
    worker_ready.connect(_register_host, dispatch_uid="benchapp-register-host")
    worker_shutdown.connect(_stop_heartbeat, dispatch_uid="benchapp-stop-heartbeat")
    beat_init.connect(_start_beat_watch, dispatch_uid="benchapp-beat-no-worker-watch")
