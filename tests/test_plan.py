"""Planning a campaign before launching it, and launching it exactly once."""
from __future__ import annotations

import pytest

from campaigns import services
from campaigns.models import Run
from tests.factories import CampaignFactory, DatasetFactory, InstanceSpecFactory, ScenarioFactory, TargetFactory

pytestmark = pytest.mark.django_db


def test_the_plan_lists_jobs_in_order_with_exact_commands_per_client_and_no_password():
    target = TargetFactory(password="Plan-Secret-1")
    scenario = ScenarioFactory(time_s=300, dataset=DatasetFactory(name="ten", tables=10, table_size=10_000_000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[64, 2500], repetitions=2,
                               clients_min=2, clients_per_threads=1000)
    plan = services.campaign_plan(campaign=campaign)
    assert plan["job_count"] == 4
    assert [(j["threads"], j["repetition"]) for j in plan["jobs"]] == [(64, 1), (64, 2), (2500, 1), (2500, 2)]
    big = plan["jobs"][2]
    assert big["clients"] == 4  # 2 clients, one more per 1,000 threads beyond 1,000
    assert big["threads_per_client"] == [625, 625, 625, 625]
    assert len(big["commands"]) == 4
    assert all("--threads=625" in c and "--mysql-password=***" in c for c in big["commands"])
    assert "Plan-Secret-1" not in str(plan)
    # Prepared once: only the first job on the target loads the 100 M rows.
    assert plan["jobs"][0]["prepare_command"] and not plan["jobs"][1]["prepare_command"]
    assert plan["estimated_dataset_bytes"] == 10 * 10_000_000 * services.BYTES_PER_ROW


def test_a_campaign_that_would_take_thirty_hours_says_so_before_it_starts():
    specs = [InstanceSpecFactory() for _ in range(3)]
    targets = [TargetFactory(spec=spec) for spec in specs]
    scenarios = [ScenarioFactory(time_s=1800) for _ in range(5)]
    campaign = CampaignFactory(targets=targets, scenarios=scenarios, threads=[128, 256, 512, 1024])
    plan = services.campaign_plan(campaign=campaign)
    assert plan["job_count"] == 60
    assert plan["estimated_duration_s"] > 30 * 3600
    assert plan["estimated_duration"].startswith("1 d") or " h " in plan["estimated_duration"]


def test_thread_lists_per_spec_and_per_scenario_override_the_default():
    spec = InstanceSpecFactory(label="8-core 32 GB MEM")
    target = TargetFactory(spec=spec)
    point, write = ScenarioFactory(name="point"), ScenarioFactory(name="write")
    campaign = CampaignFactory(targets=[target], scenarios=[point, write], threads=[1],
                               threads_by_spec={"8-core 32 GB MEM": [32, 64]}, threads_by_scenario={"write": [16]})
    plan = services.campaign_plan(campaign=campaign)
    assert sorted((j["scenario"], j["threads"]) for j in plan["jobs"]) == [("point", 32), ("point", 64), ("write", 16)]


def test_a_scale_factor_shrinks_the_dataset_for_a_smoke_run():
    scenario = ScenarioFactory(dataset=DatasetFactory(name="full cache", tables=250, table_size=25_000))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], scale_factor=0.01)
    (job,) = services.campaign_plan(campaign=campaign)["jobs"]
    assert (job["tables"], job["table_size"]) == (3, 250)


def test_the_same_launch_request_twice_starts_one_run(django_capture_on_commit_callbacks):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    first = services.campaign_launch(campaign=campaign, idempotency_key="ci-build-42")
    second = services.campaign_launch(campaign=campaign, idempotency_key="ci-build-42")
    assert first.pk == second.pk and Run.objects.count() == 1


def test_launching_while_a_run_is_going_is_a_conflict():
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    services.campaign_launch(campaign=campaign)
    with pytest.raises(services.StateConflict, match="already has a run in progress"):
        services.campaign_launch(campaign=campaign)


def _running_run_of(campaign, *, started_s_ago: float, now, time_s: int = 4, warmup_s: int = 1):
    """A running run of the campaign's plan, its jobs carrying the campaign's overrides as a launch stores them."""
    from datetime import timedelta

    from campaigns.models import Job

    run = Run.objects.create(campaign=campaign, started_at=now - timedelta(seconds=started_s_ago))
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    run.status = Run.Status.RUNNING
    plan = services.campaign_plan(campaign=campaign)
    jobs = [Job.objects.create(run=run, target_id=p["target_id"], scenario_id=p["scenario_id"], threads=p["threads"],
                               position=p["position"], tables=p["tables"], table_size=p["table_size"],
                               time_s=time_s, warmup_s=warmup_s)
            for p in plan["jobs"]]
    return run, jobs, plan


def _finish(job, *, claimed_at, finished_at, status="succeeded"):
    from campaigns.models import Job

    Job.objects.filter(pk=job.pk).update(status=status, claimed_at=claimed_at, started_at=claimed_at,
                                         finished_at=finished_at)


def _prepared(job, *, prepare_s: float):
    from campaigns.execution.datasets import job_dataset_signature
    from campaigns.models import PreparedDataset

    PreparedDataset.objects.create(target=job.target, signature=job_dataset_signature(job), tables=job.tables,
                                   table_size=job.table_size, status=PreparedDataset.Status.READY,
                                   prepared_by=job, prepare_s=prepare_s)


@pytest.fixture
def a_live_worker(db):
    """A worker that beats: with none alive a run's ETA stops (tests/test_no_worker.py)."""
    from django.utils import timezone

    from campaigns.execution import host_queue
    from campaigns.models import ClientHost

    return ClientHost.objects.create(hostname="plan-worker", queue=host_queue("plan-worker"),
                                     last_heartbeat=timezone.now())


def test_with_no_live_worker_the_eta_stops_and_the_progress_says_why():
    from django.utils import timezone

    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()], threads=[1, 2])
    now = timezone.now()
    run, _, _ = _running_run_of(campaign, started_s_ago=10, now=now)
    progress = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=now)
    assert progress["eta_s"] is None
    assert progress["no_worker"]["message"] == "no worker has joined: start one, see the Hosts page"


@pytest.mark.usefixtures("a_live_worker")
def test_a_runs_eta_counts_the_jobs_own_time_and_warm_up_overrides_and_the_first_preparation():
    from django.utils import timezone

    # A smoke run of a template: scenarios of 300 s, run at 4 s measured + 1 s warm-up per job, on a
    # dataset of 1,000,000 rows that is not prepared on the target yet.
    scenario = ScenarioFactory(time_s=300, warmup_s=60, dataset=DatasetFactory(name="eta-1m", tables=4, table_size=250_000))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], threads=[1, 2, 4, 8],
                               run_time_s=4, warmup_override_s=1)
    now = timezone.now()
    run, jobs, plan = _running_run_of(campaign, started_s_ago=0, now=now)
    prepare_s = 1_000_000 / services.PREPARE_ROWS_PER_S
    assert plan["estimated_duration_s"] == pytest.approx(4 * (4 + 1 + services.JOB_OVERHEAD_S) + prepare_s)
    progress = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=now)
    # The plan's own estimate, not 4 × 360 s: the launch said as much.
    assert progress["eta_s"] == pytest.approx(plan["estimated_duration_s"])
    assert progress["overhead_s"] is None  # nothing measured yet: the plan's constant
    # Once the dataset is ready on the target (an earlier run left it), no job of the run prepares it.
    _prepared(jobs[0], prepare_s=9.0)
    again = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=now)
    assert again["eta_s"] == pytest.approx(4 * (4 + 1 + services.JOB_OVERHEAD_S))


@pytest.mark.usefixtures("a_live_worker")
def test_a_runs_eta_takes_the_median_overhead_its_jobs_measured_and_counts_down_while_a_job_runs():
    from datetime import timedelta

    from django.utils import timezone

    scenario = ScenarioFactory(time_s=300, warmup_s=60, dataset=DatasetFactory(name="eta-1m", tables=4, table_size=250_000))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario], threads=[1, 2, 4, 8],
                               run_time_s=4, warmup_override_s=1)
    now = timezone.now()
    run, jobs, _ = _running_run_of(campaign, started_s_ago=60, now=now)
    t0 = run.started_at
    # Job 1 prepared the dataset in 10 s and ended at 25 s: 10 s beyond its 5 s and its preparation.
    _finish(jobs[0], claimed_at=t0 + timedelta(seconds=1), finished_at=t0 + timedelta(seconds=25))
    _prepared(jobs[0], prepare_s=10.0)
    # Jobs 2 and 3 took 8 s each from the end of the one before: 3 s of overhead each.
    _finish(jobs[1], claimed_at=t0 + timedelta(seconds=26), finished_at=t0 + timedelta(seconds=33))
    _finish(jobs[2], claimed_at=t0 + timedelta(seconds=34), finished_at=t0 + timedelta(seconds=41))
    at_41 = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=t0 + timedelta(seconds=41))
    # The median (3 s), not the mean (5.3 s) nor the first job's 20 s with its preparation.
    assert at_41["overhead_s"] == pytest.approx(3.0)
    assert at_41["done"] == 3 and at_41["eta_s"] == pytest.approx(4 + 1 + 3)
    # The last job runs: its spent seconds come off, so the ETA counts down between two reads...
    from campaigns.models import Job
    Job.objects.filter(pk=jobs[3].pk).update(status=Job.Status.RUNNING, claimed_at=t0 + timedelta(seconds=42))
    at_45 = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=t0 + timedelta(seconds=45))
    assert at_45["eta_s"] == pytest.approx(8 - 3)
    assert at_45["elapsed_s"] == pytest.approx(45)
    # ...and past its estimate it is finishing: a second at most, never negative.
    late = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=t0 + timedelta(seconds=70))
    assert 0 < late["eta_s"] <= 1


@pytest.mark.usefixtures("a_live_worker")
def test_one_slow_first_job_is_not_multiplied_by_every_job_still_to_come():
    """The cause of "ETA 5 h 1 min" for a 4-minute quick run: the first job's preparation (and any wait before
    it) was spread as overhead over each of the remaining jobs."""
    from datetime import timedelta

    from django.utils import timezone

    scenario = ScenarioFactory(time_s=300, warmup_s=60, dataset=DatasetFactory(name="eta-4m", tables=1, table_size=4_000_000))
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[scenario],
                               threads=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], repetitions=4,
                               run_time_s=4, warmup_override_s=1)
    now = timezone.now()
    run, jobs, _ = _running_run_of(campaign, started_s_ago=60, now=now)
    t0 = run.started_at
    # It waited 15 s for the database and prepared 4 M rows in 35 s, then measured its 5 s.
    _finish(jobs[0], claimed_at=t0 + timedelta(seconds=15), finished_at=t0 + timedelta(seconds=57))
    _prepared(jobs[0], prepare_s=35.0)
    progress = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=t0 + timedelta(seconds=58))
    assert progress["overhead_s"] == pytest.approx(57 - 5 - 35)
    assert progress["eta_s"] == pytest.approx(39 * (5 + 17))  # the preparation is not counted again
    for i, job in enumerate(jobs[1:4], start=1):
        _finish(job, claimed_at=t0 + timedelta(seconds=57 + 7 * i - 6), finished_at=t0 + timedelta(seconds=57 + 7 * i))
    settled = services.run_progress(services.runs_with_progress().get(pk=run.pk), now=t0 + timedelta(seconds=78))
    assert settled["overhead_s"] == pytest.approx(2.0)  # median of 17, 2, 2, 2
    assert settled["eta_s"] == pytest.approx(36 * 7)  # about 4 minutes, not hours


@pytest.mark.usefixtures("a_live_worker")
def test_a_finished_run_has_no_eta_and_the_run_list_reads_progress_in_constant_queries(
        django_assert_max_num_queries):
    from django.utils import timezone

    now = timezone.now()
    runs = []
    for i in range(3):
        campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()], threads=[1, 2])
        runs.append(_running_run_of(campaign, started_s_ago=10, now=now)[0])
        if i == 0:
            Run.objects.filter(pk=runs[0].pk).update(status=Run.Status.SUCCEEDED, finished_at=now)
    listed = list(services.runs_with_progress().filter(pk__in=[r.pk for r in runs]).order_by("pk"))
    with django_assert_max_num_queries(3):  # jobs, datasets, client hosts' heartbeats
        progress = services.runs_progress(listed, now=now)
    assert progress[0]["eta_s"] is None and progress[0]["elapsed_s"] == pytest.approx(10, abs=0.01)
    assert all(p["eta_s"] == pytest.approx(2 * (4 + 1 + services.JOB_OVERHEAD_S) + 0.02) for p in progress[1:])
