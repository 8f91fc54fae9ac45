"""Queries over many rows, named for what they select."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

# The models' own status tuples, spelled out: campaigns.models imports this module, not the reverse.
RUN_ACTIVE = ("pending", "running")
RUN_FINISHED = ("succeeded", "partially_succeeded", "failed", "cancelled")
JOB_ACTIVE = ("preparing", "running")


class RunQuerySet(models.QuerySet):
    def active(self) -> RunQuerySet:
        return self.filter(status__in=RUN_ACTIVE)

    def finished(self) -> RunQuerySet:
        return self.filter(status__in=RUN_FINISHED)


class JobQuerySet(models.QuerySet):
    def finished(self) -> JobQuerySet:
        return self.filter(status__in=("succeeded", "failed", "cancelled"))

    def active(self) -> JobQuerySet:
        return self.filter(status__in=JOB_ACTIVE)

    def unsettled(self) -> JobQuerySet:
        """Jobs that still hold their target: active ones, and ones stopped (cancelled, failed) while measuring
        whose clients and closer have yet to finish (sysbench being killed, the results stored, the cleanup
        dropping the tables). The reconciler closes such a job when its worker is gone."""
        return self.filter(models.Q(status__in=JOB_ACTIVE) | models.Q(phase__in=("run", "finalizing")))

    def pending(self) -> JobQuerySet:
        return self.filter(status__in=("queued", "waiting"))

    def for_target(self, target: models.Model) -> JobQuerySet:
        return self.filter(target=target)

    def on_database(self, *, driver: str, host: str, port: int | None, database: str) -> JobQuerySet:
        """Jobs whose target is that database, under whatever target name."""
        return self.filter(target__driver=driver, target__host=host, target__port=port, target__database=database)

    def stale(self, *, older_than_s: float) -> JobQuerySet:
        """Active jobs whose executing worker stopped sending heartbeats."""
        limit = timezone.now() - timedelta(seconds=older_than_s)
        return self.active().filter(heartbeat_at__lt=limit)


class ClientHostQuerySet(models.QuerySet):
    def online(self) -> ClientHostQuerySet:
        limit = timezone.now() - timedelta(seconds=settings.BENCHAPP_HOST_OFFLINE_S)
        return self.filter(last_heartbeat__gte=limit)
