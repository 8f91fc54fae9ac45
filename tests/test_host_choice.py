"""A campaign chooses its client hosts: by name or label, no part of a job runs elsewhere, and a job
waits with the reason when too few chosen hosts are online."""
from __future__ import annotations

import pytest

from campaigns import services
from campaigns.models import ClientHost, Job, Run
from campaigns.models.core import hosts_allowed
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory


def test_a_choice_allows_hosts_by_name_or_label_and_an_empty_one_any():
    assert hosts_allowed([], "any-host", [])
    assert hosts_allowed(["db-1"], "db-1", [])
    assert hosts_allowed(["near tdsql"], "db-2", ["ap-guangzhou-3", "near tdsql"])
    assert not hosts_allowed(["near tdsql"], "db-3", ["ap-guangzhou-3"])


def _job_state(run: Run) -> Job:
    return Job.objects.filter(run=run).order_by("position").first()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_jobs_run_only_on_the_chosen_hosts_and_wait_with_the_reason_otherwise(celery_worker_process, make_worker,
                                                                             target_databases):
    make_worker("client-near", extra_env={"BENCHAPP_HOST_LABELS": "near-target,lab"})
    wait_for(lambda: ClientHost.objects.filter(hostname="client-near", labels__contains=["near-target"]).exists(),
             timeout_s=20, what="the labelled host to join")
    target = TargetFactory()
    scenario = ScenarioFactory(dataset=DatasetFactory(name="choice-tiny", tables=1, table_size=1000), warmup_s=1,
                               time_s=2)
    chosen = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2, 4], client_hosts=["near-target"])
    run = services.campaign_launch(campaign=chosen)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=120, what="the run to finish")
    jobs = list(Job.objects.filter(run=run).prefetch_related("clients"))
    assert [j.status for j in jobs] == ["succeeded", "succeeded"], [j.error for j in jobs]
    # Every measured client: the labelled host, never client-a. The coordinator (dataset check, warm-up) is any of
    # the server's workers (both are role "all" here): a client host coordinates no database job.
    assert {j.claimed_by for j in jobs} <= {"client-a", "client-near"}
    assert {c.host_name for j in jobs for c in j.clients.all()} == {"client-near"}

    # Two clients per job, one chosen host online: the job waits and says why.
    pair = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2], clients_min=2,
                           client_hosts=["near-target"])
    waiting = services.campaign_launch(campaign=pair)
    wait_for(lambda: _job_state(waiting).status == Job.Status.WAITING, timeout_s=30, what="the job to wait")
    assert _job_state(waiting).wait_reason == "needs 2 client hosts among near-target online, 1 are (client-near)"
    services.run_cancel(run=waiting)

    # No chosen host online at all: nothing runs anywhere, and the job says which hosts it waits for.
    nowhere = CampaignFactory(targets=[target], scenarios=[scenario], threads=[2], client_hosts=["rack-9"])
    stuck = services.campaign_launch(campaign=nowhere)
    wait_for(lambda: _job_state(stuck).status == Job.Status.WAITING, timeout_s=30, what="the job to wait")
    job = _job_state(stuck)
    assert job.wait_reason == "waits for a client host among rack-9: none is online" and not job.clients.exists()
    services.run_cancel(run=stuck)
