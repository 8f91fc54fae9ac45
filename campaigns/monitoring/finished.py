"""What follows a run's end: notes, evaluation, change points, e-mails; the webhook is the caller's to enqueue."""
from __future__ import annotations

from django.utils import timezone

from campaigns.counters import counter_add
from campaigns.models import Run
from campaigns.monitoring.confirmation import alarms_confirm_start, confirmation_judge
from campaigns.monitoring.evaluation import annotations_auto, run_change_points, run_evaluate
from campaigns.monitoring.notifications import regressions_notify


def run_finished(*, run_id: int) -> list[int]:
    """After a run ends: find regressions against the baseline, measure the alarmed cells again (or, the run being
    that confirmation, judge them) and send e-mails; returns the regressions the webhook should hear about (the
    caller enqueues that, with this run's id: webhook_notify finds a confirmation's alarms through it)."""
    run = Run.objects.select_related("campaign").filter(pk=run_id).first()
    if run is None:
        return []
    if run.rerun == Run.Rerun.CONFIRM and run.is_finished():
        # A confirmation run, however it ended (a cancelled one too: its alarms are then told as not measured
        # again): the alarms it measured again are judged, and the ones that held are told for the run they were
        # found in.
        confirmation_judge(confirm_run=run)
        webhook_ids = regressions_notify(run=run.rerun_of) if run.rerun_of is not None else []
    elif run.status not in (Run.Status.SUCCEEDED, Run.Status.PARTIALLY_SUCCEEDED, Run.Status.FAILED):
        Run.objects.filter(pk=run.pk, evaluated_at__isnull=True).update(evaluated_at=timezone.now())
        return []
    else:
        annotations_auto(run=run)
        run_evaluate(run=run)
        if run.trigger == Run.Trigger.SCHEDULED:
            run_change_points(run=run)
        alarms_confirm_start(run=run)  # its threshold alarms wait for their confirmation run
        webhook_ids = regressions_notify(run=run)
    if Run.objects.filter(pk=run.pk, evaluated_at__isnull=True).exists():
        counter_add("regression_checks")  # once per run, however many times its message arrives
    Run.objects.filter(pk=run.pk).update(evaluated_at=timezone.now())
    return webhook_ids
