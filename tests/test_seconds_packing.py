"""An ended attempt's seconds are packed into a few bytes a second and read back as the rows they were: the codec
alone, and a job of two clients and two attempts whose every reader (verdict's evidence, costs, job metrics, the
samples and series API, the run timeline, the run bundle) answers the same before and after packing."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from campaigns import seconds
from campaigns.models import HostSample, IntervalSample, Job, PackedSeconds, ServerSample
from campaigns.packing import PackError, pack, unpack
from tests.factories import CampaignFactory, RunFactory, ScenarioFactory, TargetFactory
from tests.helpers.seconds import every_reading, job_with_seconds
from tests.helpers.ui import make_user


def test_every_kind_of_column_comes_back_as_it_went_in():
    rnd = random.Random(7)
    n = 500
    columns = {
        "t": [float(i + 1) for i in range(n)],
        "threads": [16] * n,
        "qps": [round(rnd.uniform(15_000, 16_000), 2) for _ in range(n)],
        "falls": [round(rnd.uniform(-5, 5), 2) for _ in range(n)],
        "lat": [None if i % 50 == 7 else round(rnd.uniform(1, 3), 2) for i in range(n)],
        "name": [None if i % 3 == 0 else "mariadbd" for i in range(n)],
        "cores": [[round(rnd.uniform(0, 100), 2) for _ in range(1 + i % 3)] if i != 4 else None for i in range(n)],
        "huge": [1e300, float("inf"), *[2.5] * (n - 2)],
        "counts": [rnd.randint(0, 10 ** 12) for _ in range(n)],
        "empty": [None] * n,
    }
    assert unpack(pack(columns)) == columns
    # sysbench's own figures, two decimals each, cost a few bytes a second.
    sysbench = {k: columns[k] for k in ("t", "threads", "qps", "lat")}
    assert len(pack(sysbench)) / n < 8


def test_figures_are_kept_to_a_hundredth_and_bad_shapes_and_blobs_are_refused_naming_why():
    assert unpack(pack({"cpu": [33.333333, 0.004, 0.006]}))["cpu"] == [33.33, 0.0, 0.01]
    with pytest.raises(PackError, match="different lengths"):
        pack({"a": [1], "b": [1, 2]})
    with pytest.raises(PackError, match="column 'a': not a number: True"):
        pack({"a": [True]})
    with pytest.raises(PackError, match="not a packing"):
        unpack(b"xyz")
    with pytest.raises(PackError, match="damaged"):
        unpack(b"BS1" + b"\x00" * 10)
    assert unpack(pack({})) == {}


@pytest.mark.django_db
def test_a_packed_attempt_reads_back_the_same_everywhere_and_its_rows_are_gone(settings, django_assert_max_num_queries):
    settings.BENCHAPP_SECONDS_PACK_AFTER_S = 300
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status="succeeded",
                     started_at=timezone.now() - timedelta(hours=2), finished_at=timezone.now())
    job = job_with_seconds(run, target, scenario, position=0)
    api = Client()
    api.force_login(make_user("packing-viewer", "viewer"))
    before = every_reading(job, api)
    assert before["api"]["samples"]["samples"] and before["metrics"]["hosts"] and not before["nothing"]

    assert seconds.seconds_pack_due() == 2  # both attempts: the earlier at once, the current closed an hour ago
    assert not IntervalSample.objects.filter(job=job).exists()
    assert not HostSample.objects.filter(job=job).exists() and not ServerSample.objects.filter(job=job).exists()
    packed = PackedSeconds.objects.filter(job=job)
    assert sorted(packed.values_list("attempt", "kind", "client_index", "count")) == [
        (a, kind, c, 20) for a in (1, 2) for kind, c in (("host", 0), ("host", 1), ("interval", 0), ("interval", 1),
                                                        ("server", 0))]
    # Every reader answers as before (the API's cache is per closed job: cleared, so the answers are read again).
    from django.core.cache import cache
    cache.clear()
    after = every_reading(job, api)
    for key in before:
        assert after[key] == before[key], key
    # A few bytes a job-second for two clients with their host and the server, all kinds and attempts together.
    size = sum(len(bytes(d)) for d in packed.values_list("data", flat=True))
    assert size / (2 * 20) < 300, size
    assert seconds.seconds_pack_due() == 0  # nothing left to do


@pytest.mark.django_db
def test_only_ended_attempts_are_packed_and_a_late_row_is_folded_into_its_packing(settings):
    settings.BENCHAPP_SECONDS_PACK_AFTER_S = 300
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status="running")
    measuring = job_with_seconds(run, target, scenario, position=0, status=Job.Status.RUNNING)
    just_closed = job_with_seconds(run, target, scenario, position=1, attempt=1, finished_ago_s=10)
    assert seconds.seconds_pack_due() == 1  # the measuring job's first attempt only
    assert set(PackedSeconds.objects.values_list("job_id", "attempt").distinct()) == {(measuring.pk, 1)}
    assert IntervalSample.objects.filter(job=measuring, attempt=2).count() == 40  # still rows, still live
    assert IntervalSample.objects.filter(job=just_closed).count() == 40  # inside BENCHAPP_SECONDS_PACK_AFTER_S

    # Read in the middle: a packing and rows of the same attempt count the packing once (no second twice).
    IntervalSample.objects.create(job=measuring, client_index=0, attempt=1, t=21.0, threads=2, tps=1, qps=2,
                                  reads_per_s=0, writes_per_s=0, other_per_s=0, errors_per_s=0, reconnects_per_s=0)
    rows = seconds.seconds_rows(seconds.Kind.INTERVAL, {measuring.pk: 1})
    assert len(rows) == 40 and max(r["t"] for r in rows) == 20.0
    # The next pass folds the late second into the packing.
    assert seconds.seconds_pack_due() == 1
    rows = seconds.seconds_rows(seconds.Kind.INTERVAL, {measuring.pk: 1})
    assert len(rows) == 41 and rows[20]["t"] == 21.0 and rows[20]["qps"] == 2.0

    settings.BENCHAPP_SECONDS_PACK_AFTER_S = 0
    assert seconds.seconds_pack_due() == 1  # now the closed job too; never the one still measuring
    assert not IntervalSample.objects.filter(job=just_closed).exists()
    assert IntervalSample.objects.filter(job=measuring, attempt=2).count() == 40


@pytest.mark.django_db
def test_a_packing_that_fails_midway_leaves_every_row_in_place(monkeypatch, settings):
    settings.BENCHAPP_SECONDS_PACK_AFTER_S = 0
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status="succeeded")
    job = job_with_seconds(run, target, scenario, position=0, attempt=1)
    calls = []

    def failing(columns):
        calls.append(1)
        if len(calls) == 3:
            raise PackError("column 'x': the disk is full")
        return pack(columns)

    monkeypatch.setattr("campaigns.packing.pack", failing)
    assert seconds.seconds_pack_due() == 0  # said in the log; the rows stay, and are read as rows
    assert IntervalSample.objects.filter(job=job).count() == 40 and HostSample.objects.filter(job=job).count() == 40
    assert not PackedSeconds.objects.exists()


@pytest.mark.django_db
def test_the_command_packs_everything_left_in_batches_and_refuses_a_batch_of_nothing(settings):
    from io import StringIO

    from django.core.management import CommandError, call_command

    settings.BENCHAPP_SECONDS_PACK_AFTER_S = 300
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status="succeeded")
    jobs = [job_with_seconds(run, target, scenario, position=p) for p in range(3)]  # two attempts each
    out = StringIO()
    call_command("seconds_pack", "--batch", "2", stdout=out)
    assert out.getvalue().strip() == "seconds: 6 attempts packed"
    assert not IntervalSample.objects.filter(job__in=jobs).exists()
    with pytest.raises(CommandError, match="--batch must be 1 or more, not 0"):
        call_command("seconds_pack", "--batch", "0")
