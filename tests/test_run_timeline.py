"""The run page's timeline (runs/<id>/timeline/): every job's seconds on the run's clock, a gap between jobs, and
at most TIMELINE_MAX_POINTS points per series however long the run; the dashboard's recent runs."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.models import IntervalSample, Job, JobClient, Run
from campaigns.views.timeline import TIMELINE_MAX_POINTS
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _a_live_worker(db):
    """A worker that beats: with none, a run's ETA stops and its progress says why (tests/test_no_worker.py)."""
    from campaigns.execution import host_queue
    from campaigns.models import ClientHost

    ClientHost.objects.create(hostname="timeline-worker", queue=host_queue("timeline-worker"),
                              last_heartbeat=timezone.now())


def _run_with_jobs(*, seconds: int, threads: tuple[int, ...] = (1, 4), running_last: bool = False):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory(time_s=seconds)],
                               threads=list(threads))
    t0 = timezone.now() - timedelta(seconds=len(threads) * (seconds + 10))
    run = Run.objects.create(campaign=campaign, started_at=t0)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    jobs = []
    for i, n in enumerate(threads):
        last = i == len(threads) - 1
        start = t0 + timedelta(seconds=5 + i * (seconds + 10))
        job = Job.objects.create(
            run=run, target=campaign.targets.get(), scenario=campaign.scenarios.get(), threads=n, position=i,
            status=Job.Status.RUNNING if (last and running_last) else Job.Status.SUCCEEDED,
            started_at=start - timedelta(seconds=1),
            finished_at=None if (last and running_last) else start + timedelta(seconds=seconds + 2))
        # The first client started sysbench a second after the job: the timeline places t from there.
        JobClient.objects.create(job=job, index=0, threads=n, started_at=start)
        IntervalSample.objects.bulk_create(
            IntervalSample(job=job, t=t, threads=n, tps=100.0 * n, qps=1000.0 * n + t % 7, reads_per_s=0,
                           writes_per_s=0, other_per_s=0, latency_pct_ms=1.0 + n, errors_per_s=0,
                           reconnects_per_s=0)
            for t in range(1, seconds + 1))
        jobs.append(job)
    return run, jobs


def test_the_timeline_puts_every_jobs_seconds_on_the_runs_clock_with_a_gap_between_jobs(
        role_client, django_assert_max_num_queries):
    run, jobs = _run_with_jobs(seconds=10, running_last=True)
    client = role_client("viewer")
    with django_assert_max_num_queries(8):
        body = client.get(f"/runs/{run.pk}/timeline/").json()
    assert [(j["number"], j["threads"], j["start_s"], j["seconds"]) for j in body["jobs"]] == [
        (1, 1, pytest.approx(5.0, abs=0.01), 10), (2, 4, pytest.approx(25.0, abs=0.01), 10)]
    assert body["jobs"][0]["end_s"] == pytest.approx(17.0, abs=0.01)
    assert body["jobs"][1]["end_s"] is None  # still running
    assert "× 4 threads on" in body["jobs"][1]["label"]
    qps = body["qps"]
    assert len(qps) == 2 * 10 + 1 and not body["downsampled"]
    # Job 1's second 1 sits at 5 + 1 s; the line breaks before job 2, whose second 1 is at 25 + 1 s.
    assert qps[0] == [pytest.approx(6.0, abs=0.01), 1001.0]
    assert qps[10] == [pytest.approx(25.0, abs=0.01), None]
    assert qps[11] == [pytest.approx(26.0, abs=0.01), 4001.0]
    assert body["latency"][11][1] == pytest.approx(5.0)
    assert body["latency_pct"] == 95.0


def test_a_six_hour_run_gives_a_light_timeline(role_client):
    run, _ = _run_with_jobs(seconds=3 * 3600, threads=(1, 8))
    body = role_client("viewer").get(f"/runs/{run.pk}/timeline/").json()
    assert body["total_points"] == 2 * 3 * 3600 + 1 and body["downsampled"]
    assert len(body["qps"]) <= TIMELINE_MAX_POINTS and len(body["latency"]) <= TIMELINE_MAX_POINTS
    # Both jobs and the break between them survive the downsampling.
    values = [v for _, v in body["qps"]]
    assert None in values
    assert min(v for v in values if v is not None) < 1010 and max(v for v in values if v is not None) > 8000


def test_the_run_pages_live_state_carries_the_clock_progress_and_whose_output_it_is(role_client):
    run, jobs = _run_with_jobs(seconds=10, running_last=True)
    state = role_client("viewer").get(f"/runs/{run.pk}/live/").json()
    assert state["now"] == pytest.approx(timezone.now().timestamp(), abs=60)
    assert state["run"]["started_at"] == pytest.approx(run.started_at.timestamp(), abs=0.01)
    assert state["run"]["elapsed_s"] > 30 and state["run"]["eta_s"] is not None and state["run"]["no_worker"] is None
    assert state["running"]["id"] == state["tail_job"] == jobs[1].pk
    assert state["running"]["start_s"] == pytest.approx(25.0, abs=0.01)
    assert [(j["threads"], j["cell"]) for j in state["jobs"]][0][0] == 1
    assert state["jobs"][0]["cell"].endswith(f"· {jobs[0].scenario.name}")


def test_the_dashboard_lists_a_run_in_progress_first_with_links_to_it_and_its_campaign(role_client):
    old_run, _ = _run_with_jobs(seconds=5, running_last=True)
    Run.objects.filter(pk=old_run.pk).update(created_at=timezone.now() - timedelta(days=3))
    # Sixteen runs finished after it started: more than the list shows.
    for i in range(16):
        campaign = CampaignFactory(name=f"finished-{i}")
        Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, started_at=timezone.now(),
                           finished_at=timezone.now())
    html = role_client("viewer").get("/").content.decode()
    table = html[html.index('id="recent-runs"'):]
    body = table[table.index("<tbody>"):]
    first_row = body[:body.index("</tr>")]
    assert f'data-run="{old_run.pk}"' in first_row and 'class="in-progress"' in first_row
    assert f'href="/runs/{old_run.pk}/"' in first_row
    assert f'href="/campaigns/{old_run.campaign_id}/"' in first_row and old_run.campaign.name in first_row
    assert "so far" in first_row and "ETA" in first_row


def test_an_imported_runs_jobs_are_laid_end_to_end(role_client):
    run, jobs = _run_with_jobs(seconds=10)
    # An import stores every job at one instant, with no client start.
    Job.objects.filter(run=run).update(imported=True, started_at=run.started_at, finished_at=run.started_at)
    JobClient.objects.filter(job__run=run).update(started_at=None)
    body = role_client("viewer").get(f"/runs/{run.pk}/timeline/").json()
    assert [(j["start_s"], j["end_s"]) for j in body["jobs"]] == [(0.0, 10.0), (11.0, 21.0)]
    assert body["qps"][0] == [1.0, 1001.0] and body["qps"][-1] == [21.0, 4000.0 + 10 % 7]
