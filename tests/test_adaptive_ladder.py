"""The adaptive thread ladder: after a run's planned thread counts, counts between them around each peak, knee and
latency limit, until each is located to within the campaign's resolution; never beyond the planned range, at most
ladder.MAX_ADDED counts per ladder; only launches grow, not reruns. The real test runs a workload of our own whose
peak lies between two planned counts (tests/data/workloads/peak) on a real MariaDB through a real worker."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client as PageClient

from campaigns import roles
from campaigns.execution.ladder import ladder_extend
from campaigns.ladder import MAX_ADDED, Point, between, ladder_next, within
from campaigns.models import Job, JobResult, Run
from campaigns.services.plans import campaign_plan
from tests.conftest import record_measurement
from tests.factories import (
    CampaignFactory,
    DatasetFactory,
    JobFactory,
    ProductFactory,
    RunFactory,
    ScenarioFactory,
    TargetFactory,
)
from tests.helpers.users import API, client_for, make_user
from tests.helpers.waiting import wait_for
from tests.helpers.workloads import workload_approved

PEAK = Path(__file__).resolve().parent / "data" / "workloads" / "peak"


def synthetic(threads: int, *, peak: int = 8, base_s: float = 0.002) -> float:
    """The QPS of tests/data/workloads/peak: threads / (base × (1 + (threads / peak)⁴ / 3))."""
    return threads / (base_s * (1 + (threads / peak) ** 4 / 3))


def locate(planned: list[int], qps, *, resolution_pct: float = 25, sla=None, sla_ms=None):
    """Runs the ladder to its end over a known curve: the counts measured and the rounds it took."""
    measured = set(planned)
    rounds = 0
    added = 0
    while True:
        points = [Point(t, qps(t), sla(t) if sla else None) for t in sorted(measured)]
        more = ladder_next(points, resolution_pct=resolution_pct, sla_ms=sla_ms, added_so_far=added)
        if not more:
            return sorted(measured), rounds
        assert all(a.threads not in measured for a in more)
        assert all(min(planned) < a.threads < max(planned) for a in more), "never beyond the planned range"
        measured |= {a.threads for a in more}
        added += len(more)
        rounds += 1


def test_within_and_between_are_ratios_with_a_floor_of_one_thread():
    assert within(4, 5, resolution_pct=10) and within(200, 250, resolution_pct=25)
    assert not within(200, 251, resolution_pct=25) and not within(4, 6, resolution_pct=25)
    assert between(4, 32) == 11 and between(2, 4) == 3 and between(7, 8) is None
    assert between(1, 1000) == 32  # geometric: a ladder from 1 to 1,000 is spaced by ratios
    assert between(3, 5) == 4


def test_a_peak_between_two_planned_counts_is_located_to_the_resolution():
    measured, rounds = locate([2, 4, 32], synthetic)
    points = {t: synthetic(t) for t in measured}
    found = max(points, key=points.__getitem__)
    assert found == 8, measured
    neighbours = [t for t in measured if t != found]
    low, high = max(t for t in neighbours if t < found), min(t for t in neighbours if t > found)
    assert within(low, found, resolution_pct=25) and within(found, high, resolution_pct=25)
    assert len(measured) - 3 <= MAX_ADDED and rounds >= 2
    # A finer resolution takes more counts, a coarser one fewer.
    assert len(locate([2, 4, 32], synthetic, resolution_pct=100)[0]) < len(measured)


def test_a_peak_at_the_top_of_the_ladder_is_not_chased_beyond_it():
    rising = [Point(t, t * 100.0) for t in (1, 2, 4, 8)]  # scales perfectly: no peak inside, no knee
    assert ladder_next(rising, resolution_pct=25) == [a for a in ladder_next(rising, resolution_pct=25)
                                                       if a.threads < 8]
    assert all(a.threads < 8 for a in ladder_next(rising, resolution_pct=25))


def test_the_knee_and_the_latency_limit_get_counts_of_their_own():
    flat_after_16 = [Point(1, 100), Point(16, 1600), Point(256, 1700)]
    knees = ladder_next(flat_after_16, resolution_pct=25)
    assert {(a.threads, a.why) for a in knees} >= {(64, "peak")}
    # Scaling ends between 16 and 256: the step gets a count of its own.
    assert any(16 < a.threads < 256 for a in knees)
    latency = {1: 1.0, 4: 2.0, 16: 60.0, 64: 200.0}
    points = [Point(t, t * 10.0, latency[t]) for t in (1, 4, 16, 64)]
    sla = ladder_next(points, resolution_pct=25, sla_ms=50)
    assert [(a.threads, a.why) for a in sla if a.why == "sla"] == [(8, "sla")]
    assert ladder_next(points, resolution_pct=25) == [a for a in sla if a.why != "sla"]


def test_a_ladder_stops_at_its_most_added_counts_and_never_tries_a_failed_count_again():
    points = [Point(2, 941.0), Point(4, 1600.0), Point(32, 941.0)]
    assert ladder_next(points, resolution_pct=25, added_so_far=MAX_ADDED) == []
    assert [a.threads for a in ladder_next(points, resolution_pct=25, added_so_far=MAX_ADDED - 1)] == [3]
    assert 11 not in [a.threads for a in ladder_next(points, resolution_pct=25, tried=[11])]
    assert ladder_next(points[:1], resolution_pct=25) == []


def _measured(run: Run, threads: int, qps: float, **fields) -> Job:
    job = JobFactory(run=run, threads=threads, status=Job.Status.SUCCEEDED, phase=Job.Phase.DONE,
                     verdict=Job.Verdict.VALID, **fields)
    JobResult.objects.create(job=job, qps=qps, tps=qps, latency_pct=95.0, latency_pct_ms=1.0)
    return job


@pytest.mark.django_db
def test_a_finished_ladder_grows_by_jobs_of_the_same_cell_after_the_last_position():
    campaign = CampaignFactory(threads=[2, 4, 32], repetitions=2, adaptive_ladder=True, ladder_resolution_pct=25)
    run = RunFactory(campaign=campaign, status=Run.Status.RUNNING)
    target, scenario = TargetFactory(), ScenarioFactory()
    for position, (threads, rep) in enumerate((t, r) for t in (2, 4, 32) for r in (1, 2)):
        _measured(run, threads, synthetic(threads), repetition=rep, position=position, target=target,
                  scenario=scenario, time_s=3, variant="flush", variant_settings={"sync_binlog": "0"})
    # An invalid repetition does not count beside a trusted one: 32's other repetition says 99,999 QPS.
    bad = Job.objects.get(run=run, threads=32, repetition=2)
    Job.objects.filter(pk=bad.pk).update(verdict=Job.Verdict.INVALID)
    JobResult.objects.filter(job=bad).update(qps=99_999)
    added = ladder_extend(run=run)
    assert sorted({(j.threads, j.added_for) for j in added}) == [(3, "peak"), (11, "peak")]
    assert sorted((j.threads, j.repetition) for j in added) == [(3, 1), (3, 2), (11, 1), (11, 2)]
    assert [j.position for j in added] == [6, 7, 8, 9]
    assert {(j.target_id, j.scenario_id, j.variant, j.time_s) for j in added} == {(target.pk, scenario.pk, "flush", 3)}
    assert all(j.status == Job.Status.QUEUED and j.variant_settings == {"sync_binlog": "0"} for j in added)
    # Nothing more while they are not measured; then the next round.
    assert ladder_extend(run=run) == []
    for job in added:
        Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, verdict=Job.Verdict.VALID)
        JobResult.objects.create(job=job, qps=synthetic(job.threads), latency_pct_ms=1.0)
    assert sorted({j.threads for j in ladder_extend(run=run)}) == [7, 19]
    # A count whose every repetition is invalid still counts (the comparison shows it, marked): 7 says 1 QPS.
    for job in Job.objects.filter(run=run, threads__in=(7, 19)):
        Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, verdict=Job.Verdict.INVALID)
        JobResult.objects.create(job=job, qps=1.0 if job.threads == 7 else synthetic(19), latency_pct_ms=1.0)
    # The peak stays at 11, between 7 and 19 (9 and 14); the knee falls between 4 and 7 (5).
    assert sorted({j.threads for j in ladder_extend(run=run)}) == [5, 9, 14]


@pytest.mark.django_db
def test_a_run_being_cancelled_does_not_grow_and_added_jobs_keep_each_size_together():
    campaign = CampaignFactory(threads=[2, 4, 32], repetitions=2, adaptive_ladder=True)
    run = RunFactory(campaign=campaign, status=Run.Status.RUNNING)
    target, scenario = TargetFactory(), ScenarioFactory()
    for size in (1000, 2000):
        for threads in (2, 4, 32):
            for rep in (1, 2):
                _measured(run, threads, synthetic(threads), repetition=rep, target=target, scenario=scenario,
                          table_size=size)
    # Interleaved: one size's added jobs, then the other's (each dataset prepared once), the turn reversed every
    # second repetition.
    added = ladder_extend(run=run)
    assert [(j.table_size, j.threads, j.repetition) for j in added] == [
        (size, t, r) for size in (1000, 2000) for t in (3, 11) for r in (1, 2)]
    for job in added:
        Job.objects.filter(pk=job.pk).update(status=Job.Status.CANCELLED)
    assert ladder_extend(run=run) == []  # the run is being cancelled


@pytest.mark.django_db
def test_a_rerun_or_a_campaign_without_the_option_does_not_grow():
    campaign = CampaignFactory(threads=[2, 4, 32], adaptive_ladder=False)
    run = RunFactory(campaign=campaign)
    cell = {"target": TargetFactory(), "scenario": ScenarioFactory()}
    for threads in (2, 4, 32):
        _measured(run, threads, synthetic(threads), **cell)
    assert ladder_extend(run=run) == []
    campaign.adaptive_ladder = True
    campaign.save()
    rerun = RunFactory(campaign=campaign, rerun_of=run, rerun=Run.Rerun.ALL)
    for threads in (2, 4, 32):
        _measured(rerun, threads, synthetic(threads), **cell)
    assert ladder_extend(run=rerun) == []
    assert ladder_extend(run=Run.objects.get(pk=run.pk))


@pytest.mark.django_db
def test_the_plan_says_how_much_the_ladder_may_add():
    target, scenario = TargetFactory(), ScenarioFactory(time_s=10, warmup_s=0)
    campaign = CampaignFactory(threads=[2, 4, 32], repetitions=2, adaptive_ladder=True)
    campaign.targets.set([target])
    campaign.scenarios.set([scenario])
    plan = campaign_plan(campaign=campaign)
    assert plan["job_count"] == 6
    assert plan["adaptive_ladder"]["max_added_jobs"] == MAX_ADDED * 2
    assert plan["adaptive_ladder"]["resolution_pct"] == 25
    narrow = CampaignFactory(threads=[4, 5, 7], adaptive_ladder=True)
    narrow.targets.set([target])
    narrow.scenarios.set([scenario])
    assert campaign_plan(campaign=narrow)["adaptive_ladder"]["max_added_jobs"] == 1  # only 6 lies between
    assert campaign_plan(campaign=CampaignFactory(threads=[1, 8]))["adaptive_ladder"] is None


@pytest.mark.django_db
def test_the_api_and_the_form_refuse_a_resolution_out_of_range_naming_it():
    api = client_for(make_user(roles.OPERATOR, "ladder-op"))
    for value in (0, 101, "x"):
        answer = api.post(f"{API}/campaigns/", {"name": f"ladder {value}", "threads": [1, 8], "adaptive_ladder": True,
                                                "ladder_resolution_pct": value}, format="json")
        assert answer.status_code == 400 and "ladder_resolution_pct" in answer.json(), answer.content
    made = api.post(f"{API}/campaigns/", {"name": "ladder ok", "threads": [1, 8], "adaptive_ladder": True,
                                          "ladder_resolution_pct": 10}, format="json")
    assert made.status_code == 201 and made.json()["adaptive_ladder"] is True
    assert made.json()["ladder_resolution_pct"] == 10


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_ladder_finds_a_peak_between_two_planned_counts(celery_worker_process, target_databases):
    operator = make_user(roles.OPERATOR, "ladder-real")
    api = client_for(operator)
    uploaded = workload_approved(api, {"name": "peak-at-8", "entry": "peak.lua",
                                       "files": {"peak.lua": (PEAK / "peak.lua").read_text()}}, admin="ladder-admin")
    dataset = DatasetFactory(name="no tables", tables=1, table_size=1)
    scenario = api.post(f"{API}/scenarios/", {
        "name": "peak at 8", "workload_version": uploaded["id"], "dataset": dataset.pk, "time_s": 3,
        "warmup_s": 0, "prepare_mode": "never", "cleanup": "keep"}, format="json")
    assert scenario.status_code == 201, scenario.content
    target = TargetFactory(name="ladder-maria", product=ProductFactory(name="MariaDB ladder"), workloads_allowed=True)
    created = api.post(f"{API}/campaigns/", {
        "name": "ladder", "targets": [target.pk], "scenarios": [scenario.json()["id"]], "threads": [2, 4, 24],
        "adaptive_ladder": True, "ladder_resolution_pct": 25, "quiet_s": 0,
        "confirm_alarms": False}, format="json")
    assert created.status_code == 201, created.content
    launched = api.post(f"{API}/campaigns/{created.json()['id']}/launch/")
    assert launched.status_code in (200, 201, 202), launched.content
    run = Run.objects.get(pk=launched.json()["id"])
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=300, what="the adaptive run to end")
    run.refresh_from_db()
    jobs = list(run.jobs.select_related("result").order_by("position"))
    assert run.status == Run.Status.SUCCEEDED, [(j.threads, j.status, j.error) for j in jobs]
    planned = [j.threads for j in jobs if not j.added_for]
    added = [j.threads for j in jobs if j.added_for]
    assert sorted(planned) == [2, 4, 24] and added and len(added) <= MAX_ADDED, [
        (j.threads, j.verdict, [(f["code"], f["level"]) for f in j.findings]) for j in jobs]
    assert all(2 < t < 24 for t in added), added
    qps = {j.threads: j.result.qps for j in jobs}
    found = max(qps, key=qps.__getitem__)
    record_measurement("adaptive ladder: planned 2, 4, 24; added " + ", ".join(map(str, added)) + "; QPS "
                       + ", ".join(f"{t}: {q:,.0f}" for t, q in sorted(qps.items())) + f"; peak found at {found}")
    # The true peak is at 8 threads (a little above, with the server's own time per query): found to ±25 %.
    assert 6 <= found <= 10, qps
    low = max(t for t in qps if t < found)
    high = min(t for t in qps if t > found)
    assert within(low, found, resolution_pct=25) and within(found, high, resolution_pct=25), sorted(qps)
    # The comparison's curve names the located peak and its measured neighbours.
    compared = api.get(f"{API}/comparisons/?runs={run.pk}").json()
    (curve,) = compared["curves"]
    assert curve["peak_threads"] == found
    assert f"between {low:,} and {high:,}" in curve["sentence"], curve["sentence"]
    pages = PageClient()
    pages.force_login(operator)
    page = pages.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and 'data-testid="added-for"' in page.content.decode()
