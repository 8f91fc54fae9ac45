"""Nightly campaigns: statistics on repetitions, regression detection, notifications, schedules."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys

import pytest
from django.utils import timezone

from campaigns import monitoring, tasks
from campaigns.models import CampaignSchedule, Job, JobResult, Regression, Run, ScheduleFiring
from campaigns.statistics import cell_stats, compare
from tests.conftest import LOG_DIR, ROOT, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.monitoring import WebhookReceiver, history

# ---------------------------------------------------------------- statistics (pure)


def test_cell_stats_gives_median_mean_cv_and_a_confidence_interval():
    stats = cell_stats([100.0, 102.0, 98.0, 101.0, 99.0])
    assert stats.n == 5 and stats.median == 100.0 and stats.mean == 100.0
    assert stats.cv_pct == pytest.approx(1.58, abs=0.01)
    assert stats.ci95_low < 100.0 < stats.ci95_high
    assert not stats.noisy


def test_a_cell_whose_cv_exceeds_the_threshold_is_noisy():
    assert cell_stats([100.0, 130.0, 80.0]).noisy


def test_a_ten_percent_drop_is_significant_and_three_percent_noise_is_not():
    history = [10000.0, 10300.0, 9700.0, 10150.0, 9850.0]
    drop = compare(history, [9000.0])
    # Δ% compares the geometric means, the statistic the test on log values compares.
    assert drop.significant and drop.change_pct == pytest.approx((9000 / statistics.geometric_mean(history) - 1) * 100)
    noise = compare(history, [9750.0])
    assert not noise.significant
    assert noise.verdict() == "within noise"


def test_compare_says_untested_when_it_cannot_tell():
    assert compare([100.0], [90.0]).verdict() == "untested"


# ---------------------------------------------------------------- regressions on stored runs




@pytest.mark.django_db
def test_a_synthetic_history_with_a_ten_percent_drop_is_flagged():
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850])
    (current,) = history(campaign, target, scenario, [9000])
    found = monitoring.run_evaluate(run=current)
    assert len(found) == 1
    regression = found[0]
    assert regression.kind == Regression.Kind.REGRESSION and regression.metric == "qps"
    assert regression.change_pct == pytest.approx(-10.0, abs=0.05)
    assert len(regression.baseline_run_ids) == 5


@pytest.mark.django_db
def test_a_history_with_three_percent_noise_is_not_flagged():
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    runs = history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850, 10290, 9720])
    for run in runs[5:]:
        assert monitoring.run_evaluate(run=run) == []
    assert not Regression.objects.exists()


@pytest.mark.django_db
def test_a_pinned_baseline_and_an_improvement_are_recorded_as_such():
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    (pinned,) = history(campaign, target, scenario, [1000], trigger=Run.Trigger.MANUAL)
    # Repetitions make the comparison testable: three values on each side.
    for value in (1010, 990):
        job = Job.objects.create(run=pinned, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED)
        JobResult.objects.create(job=job, qps=value, latency_pct_ms=10.0)
    campaign.baseline_run = pinned
    campaign.save()
    (current,) = history(campaign, target, scenario, [1300])
    for value in (1290, 1310):
        job = Job.objects.create(run=current, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED)
        JobResult.objects.create(job=job, qps=value, latency_pct_ms=10.0)
    (found,) = monitoring.run_evaluate(run=current)
    assert found.kind == Regression.Kind.IMPROVEMENT and found.baseline_label == f"pinned run #{pinned.pk}"


# ---------------------------------------------------------------- notifications




@pytest.fixture
def eager_tasks():
    """Celery tasks run in this process as they are sent (retries included, without their countdown)."""
    from benchapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.mark.django_db
def test_the_webhook_receives_the_regressions_as_slack_compatible_json(settings, eager_tasks):
    settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    receiver = WebhookReceiver()
    try:
        target, scenario = TargetFactory(), ScenarioFactory()
        campaign = CampaignFactory(targets=[target], scenarios=[scenario], webhook_url=receiver.url)
        history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850])
        (current,) = history(campaign, target, scenario, [9000])
        tasks.run_finished_task.delay(current.pk)
        assert len(receiver.bodies) == 1
        body = receiver.bodies[0]
        assert "regression" in body["text"] and body["changes"][0]["change_pct"] == pytest.approx(-10.0, abs=0.05)
        regression = Regression.objects.get()
        assert regression.notified_at is not None and regression.notification_error == ""
    finally:
        receiver.close()


@pytest.mark.django_db
def test_a_night_within_the_campaign_s_spread_is_not_flagged_and_a_30_percent_drop_is_sent_to_the_webhook(
        settings, eager_tasks):
    settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE = True
    receiver = WebhookReceiver()
    try:
        target, scenario = TargetFactory(), ScenarioFactory()
        campaign = CampaignFactory(targets=[target], scenarios=[scenario], webhook_url=receiver.url)
        # Fifteen nights spread by about 8%, then five that happened to agree within 1%.
        history(campaign, target, scenario, [10000 * f for f in (1.08, 0.93, 1.1, 0.9, 1.02, 0.95, 1.07, 0.92, 1.0,
                                                                   1.05, 0.97, 1.12, 0.89, 1.04, 0.96)])
        history(campaign, target, scenario, [10000, 10100, 9900, 10050, 9950])
        (ordinary,) = history(campaign, target, scenario, [9150])  # −8.5%: the five alone would call it a regression
        tasks.run_finished_task.delay(ordinary.pk)
        assert not Regression.objects.exists() and receiver.bodies == []
        (slowed,) = history(campaign, target, scenario, [7000])
        tasks.run_finished_task.delay(slowed.pk)
        regression = Regression.objects.get()
        assert regression.run_id == slowed.pk and regression.kind == Regression.Kind.REGRESSION
        assert "spread of 20 runs" in regression.method and regression.p_adjusted is not None
        assert len(receiver.bodies) == 1 and receiver.bodies[0]["changes"][0]["change_pct"] == pytest.approx(
            regression.change_pct)
        assert regression.notified_at is not None and regression.notification_error == ""
    finally:
        receiver.close()


@pytest.mark.django_db
def test_a_failing_webhook_is_retried_with_back_off_by_its_own_task_and_never_fails_the_run(settings, eager_tasks):
    settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE = True
    receiver = WebhookReceiver(status=500)
    try:
        target, scenario = TargetFactory(), ScenarioFactory()
        campaign = CampaignFactory(targets=[target], scenarios=[scenario], webhook_url=receiver.url)
        history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850])
        (current,) = history(campaign, target, scenario, [9000])
        # The task closing the run only finds the regression and hands the post to webhook_notify_task.
        assert monitoring.run_finished(run_id=current.pk) == [Regression.objects.get().pk]
        assert receiver.bodies == []
        tasks.webhook_notify_task.delay(current.pk, [Regression.objects.get().pk])
        assert len(receiver.bodies) == tasks.webhook_notify_task.max_retries + 1 == 6
        regression = Regression.objects.get()
        assert "HTTP 500" in regression.notification_error and "after 6 attempts" in regression.notification_error
        assert receiver.url not in regression.notification_error
        current.refresh_from_db()
        assert current.status == Run.Status.SUCCEEDED
    finally:
        receiver.close()


# ---------------------------------------------------------------- schedules


@pytest.mark.django_db
def test_a_schedule_with_a_bad_cron_or_time_zone_is_refused_naming_the_field():
    from django.core.exceptions import ValidationError

    campaign = CampaignFactory()
    with pytest.raises(ValidationError) as err:
        monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="61 * * * *", timezone="UTC"))
    assert "cron" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="0 2 * * *", timezone="Mars/Base"))
    assert "timezone" in err.value.message_dict


@pytest.mark.django_db
def test_a_schedule_skips_and_records_it_while_the_previous_run_is_going():
    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    schedule = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="0 2 * * *"))
    assert schedule.periodic_task.task == "campaigns.tasks.schedule_fire_task"
    Run.objects.create(campaign=campaign, status=Run.Status.RUNNING)
    firing = monitoring.schedule_fire(schedule_id=schedule.pk)
    assert firing.outcome == ScheduleFiring.Outcome.SKIPPED and "still running" in firing.reason
    # A replay of the same firing a moment later does nothing at all (no burst after beat downtime).
    assert monitoring.schedule_fire(schedule_id=schedule.pk) is None
    assert ScheduleFiring.objects.count() == 1


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_celery_beat_fires_a_schedule_that_runs_a_real_campaign(celery_worker_process, target_databases, test_db_name):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-nightly", tables=1, table_size=200))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1])
    schedule = monitoring.schedule_save(schedule=CampaignSchedule(campaign=campaign, cron="* * * * *",
                                                                  label="every minute"))
    env = dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{test_db_name}", PYTHONUNBUFFERED="1")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = open(LOG_DIR / "beat-database-scheduler.log", "wb")  # noqa: SIM115
    started = timezone.now()
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "benchapp", "beat", "--loglevel", "INFO",
         "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler", "--max-interval", "2"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        run = wait_for(lambda: Run.objects.filter(campaign=campaign, trigger=Run.Trigger.SCHEDULED).first(),
                       timeout_s=90, interval_s=0.5, what="beat to fire the schedule")
        wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED, timeout_s=60,
                 what="the scheduled run to finish")
        record_measurement(f"beat fired the schedule {(run.created_at - started).total_seconds():.1f} s after start")
    finally:
        beat.terminate()
        beat.wait(timeout=20)
        log.close()
    firing = ScheduleFiring.objects.get(schedule=schedule, run=run)
    assert firing.outcome == ScheduleFiring.Outcome.LAUNCHED
    assert run.label == "scheduled: every minute"


@pytest.mark.django_db
def test_the_dashboard_lists_a_regression(admin_client):
    target, scenario = TargetFactory(), ScenarioFactory(name="write nightly")
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850])
    (current,) = history(campaign, target, scenario, [9000])
    monitoring.run_evaluate(run=current)
    page = admin_client.get("/").content.decode()
    assert "write nightly" in page and "-10.0%" in page


@pytest.mark.django_db
def test_an_operator_adds_pauses_and_deletes_a_schedule_from_the_campaign_page(admin_client):
    campaign = CampaignFactory(targets=[TargetFactory()], scenarios=[ScenarioFactory()])
    response = admin_client.post(f"/campaigns/{campaign.pk}/schedules/",
                                 {"label": "nightly", "cron": "0 2 * * *", "timezone": "Europe/Paris", "enabled": "on"})
    assert response.status_code == 302
    schedule = CampaignSchedule.objects.get(campaign=campaign)
    assert schedule.periodic_task.crontab.timezone.key == "Europe/Paris"
    page = admin_client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "0 2 * * *" in page and "nightly" in page
    admin_client.post(f"/schedules/{schedule.pk}/toggle/")
    schedule.refresh_from_db()
    assert not schedule.enabled and not schedule.periodic_task.enabled
    bad = admin_client.post(f"/campaigns/{campaign.pk}/schedules/", {"cron": "every night", "timezone": "UTC"},
                            follow=True)
    assert "cron" in bad.content.decode() and CampaignSchedule.objects.count() == 1
    admin_client.post(f"/schedules/{schedule.pk}/delete/")
    assert not CampaignSchedule.objects.exists()


@pytest.mark.django_db
def test_a_viewer_cannot_add_a_schedule(client):
    from django.contrib.auth.models import Group, User

    viewer = User.objects.create_user("v", password="pw-123456")
    viewer.groups.add(Group.objects.get(name="viewer"))
    client.force_login(viewer)
    campaign = CampaignFactory()
    response = client.post(f"/campaigns/{campaign.pk}/schedules/", {"cron": "0 2 * * *", "timezone": "UTC"})
    assert response.status_code == 403 and not CampaignSchedule.objects.exists()
