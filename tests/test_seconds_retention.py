"""Old seconds kept coarser: a job closed more than BENCHAPP_SECONDS_KEEP_DAYS ago keeps its packed seconds at
BENCHAPP_SECONDS_COARSE_S seconds a point (rates averaged, latency and threads their worst) by the daily retention
sweep, freeing most of their bytes, while every comparison of its run answers the same figures (they read the
stored result and its steady figures)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.utils import timezone

from campaigns import seconds
from campaigns.models import Job, PackedSeconds
from campaigns.seconds import Kind, coarse_rows, seconds_rows
from campaigns.services.retention import retention_sweep
from tests.factories import CampaignFactory, RunFactory, ScenarioFactory, TargetFactory
from tests.helpers.seconds import job_with_seconds
from tests.helpers.users import client_for, make_user


def test_a_coarse_point_averages_rates_keeps_the_worst_latency_and_threads_and_merges_lists_and_maps():
    rows = [{"t": t, "qps": 100.0 * t, "latency_pct_ms": float(t), "threads": 4 if t < 3 else 8,
             "per_core_busy_pct": [t, 2 * t], "top_other_name": "python" if t != 2 else "",
             "rates": {"Questions": 10 * t, **({"Innodb_rows_read": 5} if t == 1 else {})}} for t in range(1, 6)]
    (first, second) = coarse_rows(rows, 3)
    assert first == {"t": 3, "qps": 200.0, "latency_pct_ms": 3.0, "threads": 8, "per_core_busy_pct": [2, 4],
                     "top_other_name": "python", "rates": {"Innodb_rows_read": 5, "Questions": 20}}
    assert second["t"] == 5 and second["qps"] == 450.0 and second["latency_pct_ms"] == 5.0


@pytest.mark.django_db
def test_a_year_of_jobs_keeps_old_seconds_coarse_frees_their_bytes_and_compares_the_same(settings):
    settings.BENCHAPP_SECONDS_KEEP_DAYS, settings.BENCHAPP_SECONDS_COARSE_S = 90, 10
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    now = timezone.now()
    runs = []
    for days_ago in range(0, 365, 30):  # a nightly campaign's year, one run a month standing for the rest
        run = RunFactory(campaign=campaign, status="succeeded", started_at=now - timedelta(days=days_ago, hours=1),
                         finished_at=now - timedelta(days=days_ago))
        job_with_seconds(run, target, scenario, position=0, attempt=1, finished_ago_s=days_ago * 86400 + 60)
        runs.append((days_ago, run))
    assert seconds.seconds_pack_due(now=now + timedelta(hours=1)) == len(runs)
    old = [run for days_ago, run in runs if days_ago >= 90]  # closed 90 days and a minute ago, or longer
    api = client_for(make_user("viewer", "retention-viewer"))
    compared = {run.pk: api.get(f"/api/v1/comparisons/?runs={run.pk}").json() for _, run in runs}
    fine = {run.pk: seconds_rows(Kind.INTERVAL, {run.jobs.get().pk: 1}) for run in old}
    before = sum(len(p.data) for p in PackedSeconds.objects.all())

    assert retention_sweep(dry_run=True)["coarse_attempts"] == len(old)
    assert not PackedSeconds.objects.filter(step_s__gt=1).exists(), "a dry run changes nothing"
    swept = retention_sweep()
    assert swept["coarse_attempts"] == len(old) and swept["coarse_bytes_freed"] > 0
    after = sum(len(p.data) for p in PackedSeconds.objects.all())
    assert before - after == swept["coarse_bytes_freed"]
    old_jobs = Job.objects.filter(run__in=old)
    assert set(PackedSeconds.objects.filter(job__in=old_jobs).values_list("step_s", "count")) == {(10, 2)}
    assert set(PackedSeconds.objects.exclude(job__in=old_jobs).values_list("step_s", "count")) == {(1, 20)}
    old_bytes = sum(len(p.data) for p in PackedSeconds.objects.filter(job__in=old_jobs))
    # 20 s jobs: the fixed part of a packing (its columns' names, zlib's frame) is much of what is left; at 300 s a
    # job the points alone shrink tenfold.
    assert old_bytes < 0.7 * (before - after + old_bytes)
    # The curve at 10 s a point: each point the mean of its ten seconds (to the 0.01 packing keeps).
    for run in old:
        job = run.jobs.get()
        points = seconds_rows(Kind.INTERVAL, {job.pk: 1})
        for client in (0, 1):
            mine = [r for r in fine[run.pk] if r["client_index"] == client]
            got = [r for r in points if r["client_index"] == client]
            assert [p["t"] for p in got] == [10, 20]
            assert got[0]["qps"] == pytest.approx(sum(r["qps"] for r in mine[:10]) / 10, abs=0.01)
    cache.clear()
    for _, run in runs:
        assert api.get(f"/api/v1/comparisons/?runs={run.pk}").json() == compared[run.pk]
    # Once is enough: a second sweep finds nothing more, and the command says what it did.
    assert retention_sweep()["coarse_attempts"] == 0
    call_command("retention_sweep", "--dry-run")
