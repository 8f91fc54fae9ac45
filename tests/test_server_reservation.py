"""One measurement at a time per server, for real: two users launch campaigns at once on two targets of one
MariaDB server (two databases), with two workers free to take both; their sysbench processes never overlap, and
the run page says who waits for whom."""
from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from campaigns import services
from campaigns.models import Job, JobClient, Run
from tests.conftest import WorkerProcess
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.faults import host_named
from tests.helpers.users import make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_two_targets_of_one_server_launched_by_two_users_never_measure_at_once(
        celery_worker_process, make_worker: Callable[..., WorkerProcess], target_databases):
    make_worker(host_named("client-second"))  # a second consumer: nothing but the reservation keeps them apart
    data = DatasetFactory(name="one server 1x500", tables=1, table_size=500)
    runs = []
    for owner, database in (("res-alice", target_databases["mysql"]), ("res-bob", target_databases["mysql_empty"])):
        target = TargetFactory(name=f"{owner}-target", database=database)  # both on 127.0.0.1:3306
        scenario = ScenarioFactory(name=f"{owner} point select", time_s=3, dataset=data)
        campaign = CampaignFactory(name=f"{owner}-campaign", targets=[target], scenarios=[scenario], threads=[1],
                                   repetitions=2)
        runs.append((campaign, make_user("operator", owner)))
    launched = [services.campaign_launch(campaign=campaign, user=user) for campaign, user in runs]
    reasons: set[str] = set()
    deadline = time.monotonic() + 240
    while not all(Run.objects.get(pk=run.pk).is_finished() for run in launched):
        assert time.monotonic() < deadline, "the runs did not finish in 240 s"
        reasons |= set(Job.objects.filter(run__in=launched).exclude(wait_reason="")
                       .values_list("wait_reason", flat=True))
        time.sleep(0.1)
    for run in launched:
        run.refresh_from_db()
        assert run.status == Run.Status.SUCCEEDED, run.error
    spans = [(c.job.run_id, c.started_at, c.exited_at) for c in
             JobClient.objects.filter(job__run__in=launched).select_related("job")]
    assert len(spans) == 4 and all(start and end for _, start, end in spans), spans
    for run_a, start_a, end_a in spans:
        for run_b, start_b, end_b in spans:
            if run_a != run_b:
                assert end_a <= start_b or end_b <= start_a, ("two runs measured on one server at once", spans)
    assert any(reason.startswith("waits for the server 127.0.0.1:3306: job #") and " measures there" in reason
               for reason in reasons), reasons
