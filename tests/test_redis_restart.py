"""The worker of `make run` (scripts/worker.sh: two pool processes, no gossip or mingle) across a restart of its Redis,
with a job measuring and the next one already taken from the queue and not yet acknowledged (acks_late,
prefetch 1): it keeps consuming, and the run finishes. Redis is the test's own redis-server; the machine's shared
one is never touched."""
from __future__ import annotations

import signal
import time
from collections.abc import Callable

import pytest
import redis

from campaigns.models import Job, Run
from tests.conftest import ROOT, WorkerProcess, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named, launch_through, wait_measuring, wait_status

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]



@pytest.mark.parametrize("stop", ["shutdown-nosave", "sigkill"])
def test_the_worker_of_make_run_keeps_consuming_across_a_redis_restart_mid_job(
        stop, own_redis, make_worker: Callable[..., WorkerProcess], test_db_name, fault_db):
    worker = make_worker(host_named("client-redis"), command=["bash", str(ROOT / "scripts" / "worker.sh")], extra_env={
        **own_redis.env, "BENCHAPP_RECONCILE_IN_WORKER": "true", "BENCHAPP_REDISPATCH_S": "3",
        "BENCHAPP_STALE_S": "20", "WORKER_CONCURRENCY": "2"})
    data = DatasetFactory(name="redis-restart", tables=1, table_size=1000)
    campaign = CampaignFactory(targets=[TargetFactory(database=fault_db)], threads=[1, 2, 3],
                               scenarios=[ScenarioFactory(name="redis-restart", time_s=6, dataset=data)])
    run = launch_through(own_redis, campaign.pk, test_db_name)
    jobs = list(run.jobs.order_by("position"))
    wait_measuring(jobs[0], samples=2)

    restarted_at = time.monotonic()
    if stop == "sigkill":
        own_redis.kill()
    else:
        try:
            own_redis.client.shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # the server closes the connection as it goes
        assert own_redis.proc is not None
        own_redis.proc.wait(timeout=10)
    time.sleep(3.5)
    own_redis.start()

    for job in jobs:
        wait_status(job, Job.FINISHED, timeout_s=120)
        assert job.status == Job.Status.SUCCEEDED, f"job {job.pk}: {job.status} {job.error}"
    wait_status(run, (Run.Status.SUCCEEDED,), timeout_s=30)
    took_s = time.monotonic() - restarted_at
    log = worker.log_text()
    assert worker.proc.poll() is None, log[-3000:]
    assert "Unrecoverable error" not in log, log[-5000:]
    # No alarm with nothing behind it: an acknowledgement lost with the connection is one WARNING saying what follows
    # (campaigns.logfilters.BrokerAckFilter), and no worker gossip to find "Substantial drift" in.
    assert " CRITICAL " not in log and "Couldn't ack" not in log, log[-5000:]
    assert "Substantial drift" not in log, log[-5000:]
    record_measurement(f"Redis restarted (down 3 s) under scripts/worker.sh mid-job: run of {len(jobs)} jobs "
                       f"succeeded {took_s:.1f} s after the restart, the worker alive throughout")
    worker.stop(signal.SIGTERM)
    wait_for(lambda: worker.proc.poll() is not None, timeout_s=30, what="the worker to stop")


def test_a_channel_closed_after_its_connection_lost_the_broker_raises_a_connection_error_not_attribute_error(
        own_redis):
    """The state kombu leaves a worker's channel in after a Redis restart (see benchapp/celery.py), made directly:
    a delivered, unacknowledged message on a channel whose transport was detached from its connection."""
    import kombu

    import benchapp.celery  # noqa: F401 (the guard is installed where the Celery app is made)

    queue = kombu.Queue("guard-test")
    with kombu.Connection(own_redis.url) as connection:
        with connection.Producer() as producer:
            producer.publish({"job": 1}, routing_key=queue.name, declare=[queue])
        channel = connection.channel()
        delivered: list[kombu.Message] = []
        consumer = kombu.Consumer(channel, queues=[queue], accept=["json"],
                                  callbacks=[lambda body, message: delivered.append(message)])
        consumer.consume()
        connection.drain_events(timeout=5)
        assert len(delivered) == 1
        channel.connection.client = None  # what Connection.collect() does once it has closed what it could
        with pytest.raises(tuple(connection.connection_errors)):
            channel.close()  # kombu 5.7.0 alone: AttributeError("'NoneType' object has no attribute 'hostname'")
