"""Telling people: a run's regressions and improvements by e-mail (then the webhook, from its own task with
retries), and a run no live worker can take (from the beat process)."""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Q
from django.utils import timezone

from campaigns import execution
from campaigns.counters import counter_add
from campaigns.crypto import DecryptionError
from campaigns.models import Campaign, Run, SettingsChange
from campaigns.models.monitoring import Regression
from campaigns.webhooks import WEBHOOK_MAX_RETRIES, WebhookFailed, WebhookRefused, webhook_post

log = logging.getLogger(__name__)


def _message(run: Run, regressions: list[Regression]) -> str:
    lines = [f"benchapp: {len(regressions)} change(s) in {run.campaign.name} run #{run.pk}"]
    for r in regressions:
        where = f" (change point at run #{r.run_id})" if r.detector == Regression.Detector.CHANGE_POINT else ""
        if r.explanation:
            where += f" [near: {r.explanation}]"
        if r.confirmation:
            where += f" [{r.confirmation_text()}]"
        variant = f" [{r.variant}]" if r.variant else ""
        lines.append(f"- {r.kind}{where}: {r.target.name}{variant} / {r.scenario.name} @ {r.threads} threads: {r.metric} "
                     f"{r.baseline_value:,.1f} → {r.current_value:,.1f} ({r.change_pct:+.1f}%, {r.method}, "
                     f"baseline {r.baseline_label})")
    return "\n".join(lines)


def _changes_payload(run: Run, regressions: list[Regression]) -> dict[str, Any]:
    return {"text": _message(run, regressions), "run_id": run.pk, "campaign": run.campaign.name,
            "changes": [{"kind": r.kind, "detector": r.detector, "run_id": r.run_id, "target": r.target.name,
                         "variant": r.variant, "scenario": r.scenario.name,
                         "threads": r.threads, "metric": r.metric, "baseline": r.baseline_value,
                         "current": r.current_value, "change_pct": r.change_pct,
                         "confirmation": r.confirmation, "confirm_run_id": r.confirm_run_id,
                         "confirm_change_pct": r.confirm_change_pct} for r in regressions]}


def _notification_error_add(regression_ids: list[int], error: str) -> None:
    counter_add("notifications", len(regression_ids), outcome="failed")
    for regression in Regression.objects.filter(pk__in=regression_ids).only("pk", "notification_error"):
        text = "; ".join(e for e in (regression.notification_error, error) if e)[:2000]
        Regression.objects.filter(pk=regression.pk).update(notification_error=text)


def regressions_notify(*, run: Run) -> list[int]:
    """E-mails the campaign's recipients about the run's regressions and improvements, and marks them notified.

    Returns the ids of those the campaign's webhook should hear about: posting is the work of a task of its
    own (tasks.webhook_notify_task), with Celery's retries and back-off, never of the task closing a run.
    """
    # An alarm being measured again waits for its confirmation; one that its second measurement did not uphold is
    # never told (campaigns.monitoring.confirmation).
    pending = list(Regression.objects.filter(Q(run=run) | Q(found_in_run=run), notified_at__isnull=True)
                   .exclude(confirmation__in=(Regression.Confirmation.PENDING, Regression.Confirmation.NOT_CONFIRMED))
                   .select_related("target", "scenario").order_by("pk"))
    if not pending:
        return []
    campaign = run.campaign
    errors = []
    recipients = campaign.recipients()
    if recipients:
        try:
            send_mail(f"benchapp: changes in {campaign.name}", _message(run, pending), None, recipients)
        except Exception as exc:  # a mail server problem must never fail the run
            errors.append(f"e-mail failed: {exc}")
    ids = [r.pk for r in pending]
    Regression.objects.filter(pk__in=ids).update(notified_at=timezone.now(), notification_error="; ".join(errors)[:2000])
    for kind in {r.kind for r in pending}:  # each pending regression is a new one: counted once, here
        counter_add("regressions_found", sum(1 for r in pending if r.kind == kind), kind=kind)
    counter_add("notifications", len(ids), outcome="failed" if errors else "sent")
    return ids if campaign.has_webhook() else []


def webhook_notify(*, run_id: int, regression_ids: list[int], final_attempt: bool) -> None:
    """Posts a run's changes to its campaign's webhook, once.

    The address is checked where the URL resolves now (BENCHAPP_WEBHOOK_ALLOW_PRIVATE); a refused one is
    recorded on the regressions and not retried. A receiver that fails raises WebhookFailed for the task to
    retry, and on the final attempt its error is recorded instead. Nothing here writes the URL anywhere.
    """
    run = Run.objects.select_related("campaign", "rerun_of__campaign").filter(pk=run_id).first()
    if run is not None and run.rerun == Run.Rerun.CONFIRM and run.rerun_of is not None:
        run = run.rerun_of  # a confirmation run tells the alarms of the run they were found in
    regressions = list(Regression.objects.filter(Q(run_id=run_id) | Q(found_in_run_id=run_id) | Q(confirm_run_id=run_id),
                                                 pk__in=regression_ids)
                       .select_related("target", "scenario").order_by("pk"))
    if run is None or not regressions or not run.campaign.has_webhook():
        return
    try:
        url = run.campaign.get_webhook_url()
    except DecryptionError:
        _notification_error_add(regression_ids, "webhook: the stored URL cannot be decrypted; set it again")
        return
    try:
        webhook_post(url, _changes_payload(run, regressions), allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
    except WebhookRefused as exc:
        _notification_error_add(regression_ids, f"webhook refused: {exc}")
    except WebhookFailed as exc:
        if not final_attempt:
            raise
        _notification_error_add(regression_ids, f"webhook failed after {WEBHOOK_MAX_RETRIES + 1} attempts: {exc}")


def _recipients(campaign: Campaign) -> list[str]:
    """The campaign's e-mail addresses, however they were separated (the API joins them with new lines)."""
    text = campaign.notify_emails.replace(";", ",").replace("\n", ",")
    return [address.strip() for address in text.split(",") if address.strip()]


def runs_no_worker_notify(*, now: Any = None) -> list[int]:
    """Tells each campaign's webhook and e-mail recipients, once per absence, that a run of this installation's
    queue has had no worker alive for longer than the campaign's no_worker_notify_min; forgets the telling when a
    worker is back, so that a later absence is told again. Returns the runs told.

    Called from the beat process (worker_signals: a thread started at beat_init), never as a Celery task: with
    every worker dead, no task runs, and this is exactly when it must. The webhook is posted once, at once, without
    Celery's retries (a failure is logged): the warning itself stays on the run's pages and in its API meanwhile.
    """
    now = now or timezone.now()
    hosts = execution.host_heartbeats()
    told = []
    runs = (Run.objects.exclude(status__in=Run.FINISHED).filter(queue__in=execution.own_queues())
            .select_related("campaign"))
    for run in runs:
        absent = execution.run_no_worker(run=run, hosts=hosts, now=now)
        if absent is None:
            if run.no_worker_notified_at is not None:
                Run.objects.filter(pk=run.pk).update(no_worker_notified_at=None)
            continue
        campaign = run.campaign
        silent_since = absent.since or run.started_at or run.created_at
        if run.no_worker_notified_at is not None or now - silent_since < timedelta(minutes=campaign.no_worker_notify_min):
            continue
        # Claimed first, so that two beats (a second installation's, a restart) never tell twice.
        if not Run.objects.filter(pk=run.pk, no_worker_notified_at__isnull=True).update(no_worker_notified_at=now):
            continue
        told.append(run.pk)
        text = f"benchapp: run #{run.pk} of {campaign.name} is stalled: {absent.message()}."
        recipients = _recipients(campaign)
        if recipients:
            try:
                send_mail(f"benchapp: run #{run.pk} of {campaign.name} has no worker", text, None, recipients)
            except Exception:  # a mail server problem must not stop the webhook or the next run's check
                log.exception("could not e-mail the recipients of campaign %s about run %s", campaign.pk, run.pk)
        if campaign.has_webhook():
            payload = {"text": text, "event": "no_worker", "run_id": run.pk, "campaign": campaign.name,
                       "since": absent.as_dict()["since"]}
            try:
                webhook_post(campaign.get_webhook_url(), payload, allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
            except (WebhookRefused, WebhookFailed, DecryptionError) as exc:
                log.warning("webhook of campaign %s about run %s without a worker: %s", campaign.pk, run.pk, exc)
    return told


def settings_held_notify(*, change_id: int, first_attempt: bool = True, final_attempt: bool = False) -> None:
    """Tells the campaign's e-mail recipients and webhook that a settings variant could not be put back and its
    server is held (execution.variants.change_hold): what a DBA must run, and where to confirm. Once per hold (the
    task is sent once, when the change is held); WebhookFailed is the task's to retry, the mail is sent on the
    first attempt only."""
    change = (SettingsChange.objects.filter(pk=change_id, held_at__isnull=False)
              .select_related("target", "job__run__campaign").first())
    if change is None or change.job is None:
        return
    run, target = change.job.run, change.target
    campaign = run.campaign
    text = (f"benchapp: settings of variant {change.variant!r} (job #{change.job_id}, run #{run.pk} of "
            f"{campaign.name}) were NOT put back on {target.host}:{target.port}; no job starts on that server until "
            f"a person has put them back and confirmed it. A DBA must run, as a superuser:\n{change.dba_sql}")
    recipients = _recipients(campaign)
    if recipients and first_attempt:
        try:
            send_mail(f"benchapp: settings not put back on {target.host}:{target.port}", text, None, recipients)
        except Exception:  # a mail server problem must not stop the webhook
            log.exception("could not e-mail the recipients of campaign %s about held settings", campaign.pk)
    if not campaign.has_webhook():
        return
    payload = {"text": text, "event": "settings_held", "run_id": run.pk, "job_id": change.job_id,
               "campaign": campaign.name, "target": target.name, "server": f"{target.host}:{target.port}",
               "variant": change.variant, "dba_sql": change.dba_sql,
               "confirm": f"/api/v1/targets/{target.pk}/settings-confirm/"}
    try:
        webhook_post(campaign.get_webhook_url(), payload, allow_private=settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE)
    except (WebhookRefused, DecryptionError) as exc:
        log.warning("webhook of campaign %s about held settings of job %s: %s", campaign.pk, change.job_id, exc)
    except WebhookFailed as exc:
        if final_attempt:
            log.warning("webhook of campaign %s about held settings of job %s failed: %s", campaign.pk,
                        change.job_id, exc)
            return
        raise
