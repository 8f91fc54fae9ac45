"""Several client hosts per job: a barrier start, per-client results kept, figures summed."""
from __future__ import annotations

import pytest
from django.test import Client as PageClient

from campaigns import roles, services
from campaigns.models import ClientHost, Job
from campaigns.sysbench.parser import histogram_percentile, merge_histograms
from tests.conftest import record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _wait_finished(job: Job, timeout_s: float = 90) -> Job:
    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished()

    wait_for(finished, timeout_s=timeout_s, what=f"job {job.pk} to finish")
    return job


def test_a_two_client_job_runs_on_two_hosts_and_sums_their_figures(celery_worker_process, make_worker,
                                                                   target_databases):
    make_worker("client-b")
    wait_for(lambda: ClientHost.objects.online().filter(hostname__in=["client-a", "client-b"]).count() == 2,
             timeout_s=20, what="both client hosts online")
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=3, dataset=DatasetFactory(name="tiny-multi", tables=2, table_size=500))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[4], clients_min=2)
    run = services.campaign_launch(campaign=campaign)
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    clients = list(job.clients.order_by("index"))
    assert {c.host_name for c in clients} == {"client-a", "client-b"}
    assert [c.threads for c in clients] == [2, 2]
    assert all(c.exit_code == 0 and "--threads=2" in c.command_line for c in clients)
    result = job.result
    assert result.qps == pytest.approx(sum(c.summary["qps"] for c in clients))
    assert result.tps == pytest.approx(sum(c.summary["tps"] for c in clients))
    assert result.transactions == sum(c.summary["transactions"] for c in clients)
    # The merged percentile lies within the clients' own percentiles (it comes from merged histograms).
    own = [c.summary["latency_ms"]["percentile"] for c in clients]
    assert min(own) - 0.01 <= result.latency_pct_ms <= max(own) + 0.01
    # The job's latency distribution is that of every event of both clients: their buckets merged.
    merged = merge_histograms([[(v, int(c)) for v, c in client.histogram or []] for client in clients])
    assert sum(c for _, c in merged) == result.events
    assert result.latency_p99_ms == histogram_percentile(merged, 99.0)
    assert result.latency_p999_ms == histogram_percentile(merged, 99.9)
    assert result.latency_p95_ms == pytest.approx(result.latency_pct_ms)
    assert job.latency_histogram(clients) == [[v, c] for v, c in merged]
    assert job.start_skew_ms is not None and 0 <= job.start_skew_ms < 1000
    # Each client's own figures, in the API and on the job page, with the check that the job's QPS is their sum.
    viewer = client_for(make_user(roles.VIEWER, "multi-viewer"))
    shown = viewer.get(f"/api/v1/jobs/{job.pk}/").json()["clients"]
    assert [c["summary"]["qps"] for c in shown] == [c.summary["qps"] for c in clients]
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "multi-page-viewer"))
    html = page.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="per-client"' in html and "client-b" in html and "is the sum of its clients'" in html
    record_measurement(f"2-client start skew: {job.start_skew_ms:.1f} ms")
    # Per-second samples are kept per client; both clients reported the same seconds (whether the
    # last interval gets printed depends on timing, see SYSBENCH-NOTES, so one may have one more).
    by_client = {c.index: sorted(job.samples.filter(client_index=c.index).values_list("t", flat=True)) for c in clients}
    shorter, longer = sorted(by_client.values(), key=len)
    assert len(shorter) >= 2 and longer[: len(shorter)] == shorter and len(longer) - len(shorter) <= 1


def test_a_job_waits_with_a_reason_when_too_few_hosts_are_online(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-wait", tables=1, table_size=100))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[6], clients_min=5)
    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()

    def waiting() -> bool:
        job.refresh_from_db()
        return job.status == Job.Status.WAITING

    wait_for(waiting, timeout_s=20, what="the job to wait for hosts")
    assert "needs 5 client hosts online" in job.wait_reason
    assert not job.clients.exists()
    services.run_cancel(run=run)
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED
