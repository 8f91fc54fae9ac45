"""A variant's settings that cannot be put back because the server does not answer are not forgotten: the job
fails with the cause and the statements a DBA would run, its notes and the run and job pages say so, no job starts
on that server meanwhile, the reconciler tries again, and after BENCHAPP_VARIANT_RESTORE_HOLD_H hours the server is
held for a person to confirm."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.execution.turns import target_busy
from campaigns.execution.variants import settings_changes_sweep, variant_restore
from campaigns.models import Campaign, Job, SettingsChange
from campaigns.monitoring.notifications import settings_held_notify
from tests.factories import JobFactory, TargetFactory

pytestmark = pytest.mark.django_db


def _changed_then_gone(port: int) -> tuple[Job, SettingsChange]:
    """A job that ended under a variant whose server is gone (nothing answers on its port)."""
    target = TargetFactory(name="gone server", port=port)
    job = JobFactory(target=target, status=Job.Status.SUCCEEDED, variant="flush=2",
                     variant_settings={"innodb_flush_log_at_trx_commit": "2"},
                     finished_at=timezone.now() - timedelta(minutes=5))
    change = SettingsChange.objects.create(
        job=job, target=target, variant="flush=2", wanted={"innodb_flush_log_at_trx_commit": "2"},
        originals={"innodb_flush_log_at_trx_commit": {"value": "1", "in_auto_conf": False}},
        applied_at=timezone.now() - timedelta(minutes=6))
    return job, change


def test_a_restore_the_server_does_not_answer_is_said_on_the_job_and_run_and_holds_the_server_later(
        refused_port, role_client, settings, sent_tasks, receiver, mailoutbox, django_capture_on_commit_callbacks,
        caplog):
    sent = sent_tasks
    settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE = True
    job, change = _changed_then_gone(refused_port)
    campaign = job.run.campaign
    campaign.set_webhook_url(receiver.url)
    campaign.save()
    Campaign.objects.filter(pk=campaign.pk).update(notify_emails="dba@example.com")
    (cause,) = variant_restore(job_id=job.pk)
    assert f"settings variant 'flush=2' NOT put back on 127.0.0.1:{refused_port}: the server could not be reached" \
        in cause and "a DBA runs, as a superuser: SET GLOBAL innodb_flush_log_at_trx_commit = 1;" in cause
    job.refresh_from_db()
    change.refresh_from_db()
    assert change.restored_at is None and change.held_at is None and change.restore_tried_at is not None
    (note,) = [n for n in job.notes if "not yet put back" in n]
    assert f"settings variant 'flush=2' not yet put back on 127.0.0.1:{refused_port}" in note
    assert "no job starts on that server until they are back" in note
    client = role_client("viewer")
    for url in (f"/runs/{job.run_id}/", f"/jobs/{job.pk}/"):
        page = client.get(url).content.decode()
        assert 'data-testid="settings-pending"' in page and f"127.0.0.1:{refused_port}" in page, url
    # No other job starts on that server meanwhile.
    other = JobFactory(target=TargetFactory(name="same server", port=refused_port, database="other"),
                       status=Job.Status.PREPARING, claimed_at=timezone.now())
    assert target_busy(other) is not None

    # The reconciler tries again; within the hours it only records the try.
    SettingsChange.objects.filter(pk=change.pk).update(restore_tried_at=timezone.now() - timedelta(minutes=1))
    settings.BENCHAPP_VARIANT_RESTORE_HOLD_H = 1
    settings_changes_sweep()
    change.refresh_from_db()
    assert change.held_at is None
    # Once the job ended longer ago than that, a person decides: the server is held, the page says what to run.
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(hours=2))
    SettingsChange.objects.filter(pk=change.pk).update(restore_tried_at=timezone.now() - timedelta(minutes=1))
    assert sent.tasks == [], "nothing told while benchapp still tries"
    with django_capture_on_commit_callbacks(execute=True), caplog.at_level("ERROR", logger="campaigns.execution.variants"):
        settings_changes_sweep()
    change.refresh_from_db()
    # The log says it too, with the statements a DBA must run (the operators' alerting reads the log).
    (line,) = [r.getMessage() for r in caplog.records if "NOT put back" in r.getMessage()]
    assert "server held" in line and "innodb_flush_log_at_trx_commit" in line and "1" in line
    # The campaign's people hear of it once: its task is sent with the change's id (never the URL), and it posts
    # what a DBA must run and where to confirm.
    assert sent.tasks == [("settings_held_notify_task", [change.pk])]
    settings_held_notify(change_id=change.pk)
    (body,) = receiver.bodies
    assert body["event"] == "settings_held" and body["server"] == f"127.0.0.1:{refused_port}"
    assert "innodb_flush_log_at_trx_commit" in body["dba_sql"] and body["confirm"].endswith("/settings-confirm/")
    (mail,) = mailoutbox
    assert mail.to == ["dba@example.com"] and "NOT put back" in mail.body
    assert change.held_at is not None and change.is_held()
    assert "the server has not answered for 1 h since the job ended" in change.restore_error
    assert "SET GLOBAL innodb_flush_log_at_trx_commit = 1;" in change.dba_sql
    assert "a DBA must run, as a superuser: SET GLOBAL innodb_flush_log_at_trx_commit = 1;" in change.restore_error
    page = client.get(f"/runs/{job.run_id}/").content.decode()
    assert 'data-testid="settings-held"' in page and 'data-testid="settings-pending"' not in page


def test_a_job_whose_settings_could_not_be_put_back_fails_and_so_does_its_run(refused_port):
    from campaigns.execution import transitions
    from campaigns.execution.results import job_close
    from campaigns.models import Run

    job, change = _changed_then_gone(refused_port)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, phase=Job.Phase.RUN, finished_at=None)
    Run.objects.filter(pk=job.run_id).update(status=Run.Status.RUNNING)
    job.refresh_from_db()
    job_close(job, status=Job.Status.SUCCEEDED)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert f"NOT put back on 127.0.0.1:{refused_port}" in job.error and "SET GLOBAL" in job.error
    assert transitions.run_close(run=Run.objects.get(pk=job.run_id))
    assert Run.objects.get(pk=job.run_id).status == Run.Status.FAILED
    change.refresh_from_db()
    assert change.restored_at is None and change.held_at is None  # the reconciler goes on trying
