"""Schedules: a campaign launched by cron, its Celery beat entry (django-celery-beat) kept in step with the
schedule row, firing (once per minute at most, whatever beat replays) and the next firing a page shows."""
from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from campaigns import execution
from campaigns.models import Run
from campaigns.models.monitoring import CampaignSchedule, ScheduleFiring, cron_expand
from campaigns.services import StateConflict, campaign_launch

# A schedule never fires twice within this window, whatever beat replays after a restart.
MIN_FIRING_GAP_S = 50.0


def _may_edit_check(schedule: CampaignSchedule, user: Any) -> None:
    if user is not None and schedule.pk is not None and not schedule.may_edit(user):
        raise PermissionDenied("only the schedule's owner or an admin may change or delete it")


def schedule_save(*, schedule: CampaignSchedule, user: Any = None) -> CampaignSchedule:
    """Validates and saves a schedule, keeping its Celery beat entry in step; a shorthand (@nightly, …) is stored
    written out. With `user` (a person's request): a new schedule is theirs, and an existing one may be changed only
    by its owner or an admin (PermissionDenied)."""
    if user is not None and schedule.pk is not None:
        # Who may edit is decided by the stored row, not by fields the request may have set on this instance.
        stored = CampaignSchedule.objects.select_related("campaign").get(pk=schedule.pk)
        _may_edit_check(stored, user)
    elif user is not None and schedule.created_by_id is None:
        schedule.created_by = user
    schedule.cron = cron_expand(schedule.cron)
    schedule.full_clean()
    minute, hour, day, month, weekday = schedule.cron.split()
    with transaction.atomic():
        crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=minute, hour=hour, day_of_month=day, month_of_year=month, day_of_week=weekday,
            timezone=schedule.timezone,
        )
        schedule.save()
        name = f"benchapp schedule #{schedule.pk}"
        task = schedule.periodic_task
        if task is None:
            task = PeriodicTask(name=name)
        task.crontab = crontab
        task.task = "campaigns.tasks.schedule_fire_task"
        task.args = json.dumps([schedule.pk])
        task.enabled = schedule.enabled
        task.queue = execution.server_queue()  # it imports numpy: never on a client host's worker
        task.save()
        if schedule.periodic_task_id != task.pk:
            schedule.periodic_task = task
            schedule.save(update_fields=["periodic_task"])
    return schedule


def schedule_delete(*, schedule: CampaignSchedule, user: Any = None) -> None:
    """Deletes a schedule and its Celery beat entry; with `user`, only its owner or an admin (PermissionDenied)."""
    _may_edit_check(schedule, user)
    with transaction.atomic():
        if schedule.periodic_task_id:
            PeriodicTask.objects.filter(pk=schedule.periodic_task_id).delete()
        schedule.delete()


def schedule_fire(*, schedule_id: int) -> ScheduleFiring | None:
    """Launches the schedule's campaign, or records why it did not (previous run still going)."""
    with transaction.atomic():
        schedule = CampaignSchedule.objects.select_for_update().select_related("campaign").filter(pk=schedule_id).first()
        if schedule is None:
            return None
        now = timezone.now()
        if not schedule.enabled:
            return ScheduleFiring.objects.create(schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                                                 reason="schedule is disabled")
        if schedule.last_fired_at and (now - schedule.last_fired_at).total_seconds() < MIN_FIRING_GAP_S:
            # A replay of a firing just handled (beat restarted, duplicate message): not a new night.
            return None
        schedule.last_fired_at = now
        schedule.save(update_fields=["last_fired_at"])
        active = Run.objects.filter(campaign=schedule.campaign).active().first()
        if active is not None:
            return ScheduleFiring.objects.create(
                schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                reason=f"previous run #{active.pk} is still {active.status}",
            )
        owner_id = schedule.owner_id()
        owner = get_user_model().objects.filter(pk=owner_id, is_active=True).first() if owner_id else None
        if owner_id and owner is None:
            return ScheduleFiring.objects.create(
                schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                reason="its owner's account is gone or inactive: an admin may take the schedule over")
        try:
            # As its owner: a schedule runs only on targets its owner may use (services.targets.target_may_use).
            run = campaign_launch(
                campaign=schedule.campaign, user=owner, trigger=Run.Trigger.SCHEDULED,
                label=f"scheduled: {schedule.label or schedule.cron}",
                idempotency_key=f"schedule-{schedule.pk}-{now:%Y%m%d%H%M}",
            )
        except StateConflict as exc:
            return ScheduleFiring.objects.create(schedule=schedule, outcome=ScheduleFiring.Outcome.SKIPPED,
                                                 reason=str(exc))
        return ScheduleFiring.objects.create(schedule=schedule, outcome=ScheduleFiring.Outcome.LAUNCHED, run=run)


def schedule_next_firing(schedule: CampaignSchedule) -> Any:
    """When an enabled schedule fires next, in its own time zone (None when paused): the first minute after now
    that celery's parse of the cron expression allows (day of month and day of week both, as beat checks them).
    """
    if not schedule.enabled:
        return None
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from celery.schedules import crontab

    minute, hour, day_of_month, month, day_of_week = schedule.cron.split()
    rule: Any = crontab(minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month,
                        day_of_week=day_of_week)  # its parsed sets (hour, minute, ...) are untyped
    zone = ZoneInfo(schedule.timezone)
    now = timezone.now().astimezone(zone)
    hours, minutes = sorted(rule.hour), sorted(rule.minute)
    for days in range(0, 366 * 4 + 1):
        day = (now + timedelta(days=days)).date()
        # celery counts days of the week from Sunday = 0; Python from Monday = 0.
        if (day.month not in rule.month_of_year or day.day not in rule.day_of_month
                or (day.weekday() + 1) % 7 not in rule.day_of_week):
            continue
        for h in hours:
            for m in minutes:
                at = datetime(day.year, day.month, day.day, h, m, tzinfo=zone)
                if at > now:
                    return at
    return None
