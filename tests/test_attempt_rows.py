"""An attempt is a row: a job's earlier measurements are Attempt rows and a client's earlier sends ClientSend rows;
a new attempt inserts one and starts every column of the attempt again (Job.ATTEMPT_FIELDS) while the cell's stay;
bundles carry them (and still read version 1's lists); and migration 0053 turns the lists of a database made
before it into rows without losing a second or a figure."""
from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from campaigns import seconds, services
from campaigns.execution import transitions
from campaigns.models import Attempt, ClientSend, Job, JobClient, PackedSeconds
from tests.factories import CampaignFactory, RunFactory, ScenarioFactory, TargetFactory
from tests.helpers.seconds import every_reading, job_with_seconds
from tests.helpers.ui import make_user


def test_every_column_of_a_job_is_either_its_attempts_or_its_cells():
    columns = {f.name for f in Job._meta.concrete_fields}
    attempt, cell = set(Job.ATTEMPT_FIELDS), set(Job.CELL_FIELDS)
    assert not attempt & cell, f"both: {sorted(attempt & cell)}"
    assert columns == attempt | cell, (f"neither (add each to Job.ATTEMPT_FIELDS or Job.CELL_FIELDS): "
                                       f"{sorted(columns - attempt - cell)}; gone: {sorted(attempt | cell - columns)}")
    assert Job.attempt_fresh()["status"] == Job.Status.QUEUED


def _run() -> tuple[Any, Any, Any]:
    target, scenario = TargetFactory(), ScenarioFactory()
    run = RunFactory(campaign=CampaignFactory(targets=[target], scenarios=[scenario]), status="succeeded",
                     started_at=timezone.now() - timedelta(hours=2), finished_at=timezone.now())
    return run, target, scenario


@pytest.mark.django_db
def test_a_new_attempt_inserts_a_row_and_starts_every_attempt_column_again_keeping_the_cells():
    run, target, scenario = _run()
    started = timezone.now() - timedelta(seconds=30)
    job = Job.objects.create(
        run=run, target=target, scenario=scenario, threads=8, position=3, variant="big pool",
        variant_settings={"innodb_buffer_pool_size": 1 << 30}, status=Job.Status.RUNNING, phase=Job.Phase.RUN,
        claimed_by="w1", started_at=started, heartbeat_at=timezone.now(), command_line="sysbench …",
        server_snapshot={"before": {"version": "10.11"}}, server_window={"start": {"Questions": 1}},
        findings=[{"code": "x", "level": "warning", "figure": "1", "message": "m"}], verdict=Job.Verdict.SUSPECT,
        cache_hit_ratio=0.5, cache_warning="cold", start_skew_ms=12.0, wall_time_s=31.0, prepare_wall_s=2.0,
        warmup_wall_s=5.0, prepare_progress={"sbtest1": 10}, notes=["the dataset was prepared again"],
        dispatch_count=2)
    JobClient.objects.create(job=job, index=0, host_name="c1", threads=8, status=JobClient.Status.RUNNING)
    cells = {name: getattr(job, name) for name in Job.CELL_FIELDS if name != "attempt"}

    assert transitions.job_requeue(job_id=job.pk, attempt=1, cause="client host c1 lost while measuring", t_s=6.0)
    assert not transitions.job_requeue(job_id=job.pk, attempt=1, cause="again", t_s=7.0), "attempt 1 has ended"

    job = Job.objects.get(pk=job.pk)
    (lost,) = job.attempts.all()
    assert (lost.number, lost.started_at, lost.cause, lost.t_s) == (1, started, "client host c1 lost while "
                                                                    "measuring", 6.0)
    assert job.attempt == 2 and not job.clients.exists()
    assert {name: getattr(job, name) for name in Job.ATTEMPT_FIELDS} == Job.attempt_fresh()
    assert {name: getattr(job, name) for name in cells} == cells
    history = job.attempt_history()
    assert [row["text"] for row in history] == ["attempt 1 lost at t = 6 s: client host c1 lost while measuring",
                                                "attempt 2: queued"]
    assert job.last_lost() == lost


@pytest.mark.django_db
def test_a_lost_send_is_a_row_of_its_client_and_the_api_lists_attempts_and_sends_as_rows():
    run, target, scenario = _run()
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=2, status=Job.Status.RUNNING,
                             phase=Job.Phase.RUN, started_at=timezone.now() - timedelta(seconds=5), attempt=2)
    Attempt.objects.create(job=job, number=1, ended_at=timezone.now() - timedelta(seconds=9), cause="worker lost")
    client = JobClient.objects.create(job=job, index=0, host_name="a", threads=2, status=JobClient.Status.READY,
                                      heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert transitions.client_resend(client_id=client.pk, attempt=1, host_name="b", heartbeat_before=timezone.now(),
                                     earlier={"attempt": 1, "host": "a", "sent_at": job.started_at,
                                              "ended_at": timezone.now(), "outcome": "lost", "cause": "host a lost"})
    (send,) = ClientSend.objects.filter(client=client)
    assert (send.number, send.host, send.sent_at, send.outcome, send.cause) == (1, "a", job.started_at, "lost",
                                                                               "host a lost")
    api = Client()
    api.force_login(make_user("attempt-viewer", "viewer"))
    body = api.get(f"/api/v1/jobs/{job.pk}/").json()
    assert [(a["attempt"], a["cause"]) for a in body["attempts"]] == [(1, "worker lost"), (2, "")]
    assert [(a["attempt"], a["host"], a["outcome"]) for a in body["clients"][0]["attempts"]] == [
        (1, "a", "lost"), (2, "b", "pending")]
    listed = api.get(f"/api/v1/jobs/?run={run.pk}").json()["results"]
    assert [a["attempt"] for a in listed[0]["attempts"]] == [1, 2]
    page = api.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200 and "attempt 1 lost before measuring: worker lost" in page.content.decode()


@pytest.mark.django_db
def test_a_bundle_carries_attempts_and_sends_and_a_version_1_bundles_lists_become_rows():
    run, target, scenario = _run()
    job = job_with_seconds(run, target, scenario, position=0, attempt=3)
    for number in (1, 2):
        Attempt.objects.create(job=job, number=number, started_at=timezone.now() - timedelta(hours=3),
                               ended_at=timezone.now() - timedelta(hours=2), cause=f"lost {number}", t_s=4.0 * number)
    client = job.clients.get(index=1)
    JobClient.objects.filter(pk=client.pk).update(attempt=2)
    ClientSend.objects.create(client=client, number=1, host="gone", ended_at=timezone.now() - timedelta(hours=2),
                              cause="host gone went offline")
    bundle = json.loads(services.bundle_json(services.run_export(run=run)))
    (item,) = bundle["jobs"]
    assert [(a["number"], a["cause"], a["t_s"]) for a in item["attempts"]] == [(1, "lost 1", 4.0), (2, "lost 2", 8.0)]
    assert [[s["host"] for s in c["sends"]] for c in item["clients"]] == [[], ["gone"]]

    copy = services.bundle_import(bundle=bundle)
    new_job = copy.jobs.get()
    assert list(new_job.attempts.values_list("number", "cause", "t_s")) == [(1, "lost 1", 4.0), (2, "lost 2", 8.0)]
    assert list(ClientSend.objects.filter(client__job=new_job).values_list("client__index", "host")) == [(1, "gone")]

    # The same bundle as version 1 wrote it: each row's lists under earlier_attempts, "attempt" for the number.
    bundle["version"] = 1
    item = bundle["jobs"][0]
    item["earlier_attempts"] = [{"attempt": a["number"], "started_at": a["started_at"], "ended_at": a["ended_at"],
                                 "cause": a["cause"], "t_s": a["t_s"]} for a in item.pop("attempts")]
    for c in item["clients"]:
        c["earlier_attempts"] = [{"attempt": s["number"], "host": s["host"], "sent_at": s["sent_at"],
                                  "ended_at": s["ended_at"], "outcome": s["outcome"], "cause": s["cause"]}
                                 for s in c.pop("sends")]
    old = services.bundle_import(bundle=bundle).jobs.get()
    assert list(old.attempts.values_list("number", "cause", "t_s")) == [(1, "lost 1", 4.0), (2, "lost 2", 8.0)]
    assert list(ClientSend.objects.filter(client__job=old).values_list("client__index", "host")) == [(1, "gone")]


def _migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


BEFORE = [("campaigns", "0052_packed_seconds")]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_migration_turns_earlier_attempts_into_rows_without_losing_a_second_or_a_figure(settings):
    settings.BENCHAPP_SECONDS_PACK_AFTER_S = 300
    run, target, scenario = _run()
    job = job_with_seconds(run, target, scenario, position=0, attempt=3)
    Job.objects.filter(pk=job.pk).update(variant="big pool", variant_settings={"innodb_buffer_pool_size": 1 << 30})
    ended = timezone.now() - timedelta(hours=2)
    for number in (1, 2):
        Attempt.objects.create(job=job, number=number, started_at=ended - timedelta(minutes=number), ended_at=ended,
                               cause=f"client host c{number} lost while measuring", t_s=3.0 + number)
    client = job.clients.get(index=1)
    JobClient.objects.filter(pk=client.pk).update(attempt=2)
    ClientSend.objects.create(client=client, number=1, host="gone", sent_at=ended, ended_at=ended, cause="host gone")
    seconds.attempt_pack(job_id=job.pk, attempt=1)  # a lost attempt's seconds packed, the others still rows
    other_run = RunFactory(campaign=run.campaign, status="succeeded")
    # Going back to 0052 and up again re-adds later migrations' columns at their defaults: the rows start there.
    type(run.campaign).objects.filter(pk=run.campaign_id).update(confirm_alarms=True)
    assert PackedSeconds.objects.filter(job=job, attempt=1).exists()
    api = Client()
    api.force_login(make_user("migration-viewer", "viewer"))
    before = every_reading(job, api)
    before["job"] = api.get(f"/api/v1/jobs/{job.pk}/").json()
    assert [a["attempt"] for a in before["job"]["attempts"]] == [1, 2, 3]

    try:
        old_apps = _migrate(BEFORE)
        OldJob, OldClient = old_apps.get_model("campaigns", "Job"), old_apps.get_model("campaigns", "JobClient")
        # Going back puts the rows into the lists they came from.
        assert [(a["attempt"], a["cause"], a["t_s"]) for a in OldJob.objects.get(pk=job.pk).earlier_attempts] == [
            (1, "client host c1 lost while measuring", 4.0), (2, "client host c2 lost while measuring", 5.0)]
        assert [s["host"] for s in OldClient.objects.get(pk=client.pk).earlier_attempts] == ["gone"]
        # A job of that time whose list lost a record, one with a record of no use, a client with the old keys.
        gap = OldJob.objects.create(run_id=other_run.pk, target_id=target.pk, scenario_id=scenario.pk, threads=1,
                                    position=1, status="succeeded", phase="done", attempt=3, earlier_attempts=[
                                        {"attempt": 2, "started_at": None, "ended_at": ended.isoformat(),
                                         "cause": "worker restarted", "t_s": None},
                                        {"attempt": "x"}, {"attempt": 9, "cause": "not this job's"}, "junk"])
        OldClient.objects.create(job_id=gap.pk, index=0, host_name="b", threads=1, status="succeeded", attempt=2,
                                 earlier_attempts=[{"attempt": 1, "host": "a", "sent_at": None,
                                                    "ended_at": "not a time", "outcome": "lost", "cause": "a lost"}])
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    cache.clear()
    after = every_reading(job, api)
    after["job"] = api.get(f"/api/v1/jobs/{job.pk}/").json()
    for key in before:
        assert after[key] == before[key], key
    job = Job.objects.get(pk=job.pk)
    assert (job.variant, job.variant_settings) == ("big pool", {"innodb_buffer_pool_size": 1 << 30})
    # Attempt 1's packed seconds are still there; the session's worker may meanwhile have packed the finished job's
    # other attempts too (its packing pass does not wait for this test), which changes no reading above.
    assert 1 in set(PackedSeconds.objects.filter(job=job).values_list("attempt", flat=True))
    gap_rows = list(Attempt.objects.filter(job_id=gap.pk).values_list("number", "cause"))
    assert gap_rows == [(1, "not recorded (this attempt was lost before benchapp kept why)"),
                        (2, "worker restarted")]
    (send,) = ClientSend.objects.filter(client__job_id=gap.pk)
    assert (send.number, send.host, send.cause) == (1, "a", "a lost") and send.ended_at is not None
