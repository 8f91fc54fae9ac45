"""One measurement at a time per client host, for real: one user launches a host test (sysbench cpu) of a client
host while another launches a database job whose client runs on that same host. The host's worker has two pool
slots, so nothing but the reservation keeps the two apart; their sysbench processes never overlap on the host, and
the run page of the one that waited says who it waited for."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from campaigns import services
from campaigns.models import ClientHost, Job, JobClient, Run, Target
from tests.conftest import WorkerProcess, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ProductFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named
from tests.helpers.users import make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_slot_host(test_db_name: str, settings) -> Iterator[WorkerProcess]:
    """A client host of the test's own queue whose worker runs two tasks at once (the suite's run one)."""
    queue = f"hostres-{test_db_name}"
    worker = WorkerProcess(host_named("client-twoslot"), test_db_name, concurrency=2,
                           extra_env={"BENCHAPP_QUEUE": queue, "BENCHAPP_RECONCILE_IN_WORKER": "true"})
    try:
        worker.wait_ready()
        settings.CELERY_TASK_DEFAULT_QUEUE = queue
        wait_for(lambda: ClientHost.objects.online().filter(hostname=worker.hostname).exists(), timeout_s=30,
                 what="the two-slot host online")
        yield worker
    finally:
        worker.stop()


@pytest.mark.timeout(300)
def test_a_host_test_and_a_database_job_on_one_client_host_never_measure_at_once(two_slot_host, target_databases):
    host = two_slot_host.hostname
    alice, bob = make_user("operator", "hostres-alice"), make_user("operator", "hostres-bob")
    machine = services.target_create(by=alice, name=f"host {host}", kind=Target.Kind.CLIENT_HOST,
                                     product=ProductFactory(name="hostres machine"), host=host)
    cpu = services.scenario_create(name="hostres cpu", test="cpu", options={"cpu-max-prime": 5000}, time_s=3,
                                   report_interval_s=1)
    host_campaign = CampaignFactory(name="hostres-host-test", targets=[machine], scenarios=[cpu], threads=[1],
                                    repetitions=2, created_by=alice)
    database = TargetFactory(name="hostres-db", database=target_databases["mysql"])
    point = ScenarioFactory(name="hostres point select", time_s=3,
                            dataset=DatasetFactory(name="hostres 1x500", tables=1, table_size=500))
    db_campaign = CampaignFactory(name="hostres-db-job", targets=[database], scenarios=[point], threads=[1],
                                  repetitions=2, client_hosts=[host], created_by=bob)
    launched = [services.campaign_launch(campaign=host_campaign, user=alice),
                services.campaign_launch(campaign=db_campaign, user=bob)]
    reasons: set[str] = set()
    deadline = time.monotonic() + 240
    while not all(Run.objects.get(pk=run.pk).is_finished() for run in launched):
        if time.monotonic() > deadline:
            states = list(Job.objects.filter(run__in=launched).values_list("pk", "run_id", "status", "wait_reason"))
            raise AssertionError(f"the runs did not finish in 240 s: {states}\n{two_slot_host.log_text()[-4000:]}")
        reasons |= set(Job.objects.filter(run__in=launched).exclude(wait_reason="")
                       .values_list("wait_reason", flat=True))
        time.sleep(0.1)
    for run in launched:
        run.refresh_from_db()
        assert run.status == Run.Status.SUCCEEDED, (run.error, list(run.jobs.values_list("status", "error")))
    clients = list(JobClient.objects.filter(job__run__in=launched).select_related("job"))
    assert sorted(c.host_name for c in clients) == [host] * 4, [(c.job_id, c.host_name) for c in clients]
    spans = [(c.job.run_id, c.started_at, c.exited_at) for c in clients]
    assert all(start and end for _, start, end in spans), spans
    for run_a, start_a, end_a in spans:
        for run_b, start_b, end_b in spans:
            if run_a != run_b:
                assert end_a <= start_b or end_b <= start_a, ("two runs measured on one client host at once", spans)
    assert any(reason.startswith(f"waits for client host {host}: job #") and " measures there" in reason
               for reason in reasons), reasons
