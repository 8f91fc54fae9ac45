"""Queries over many rows, named for what they select."""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from campaigns.models import Target


class RunQuerySet(models.QuerySet):
    def active(self) -> RunQuerySet:
        return self.filter(status__in=("pending", "running"))

    def finished(self) -> RunQuerySet:
        return self.filter(status__in=("succeeded", "failed", "cancelled"))


class JobQuerySet(models.QuerySet):
    def finished(self) -> JobQuerySet:
        return self.filter(status__in=("succeeded", "failed", "cancelled"))

    def active(self) -> JobQuerySet:
        return self.filter(status__in=("preparing", "running"))

    def pending(self) -> JobQuerySet:
        return self.filter(status__in=("queued", "waiting"))

    def for_target(self, target: Target) -> JobQuerySet:
        return self.filter(target=target)

    def stale(self, *, older_than_s: float) -> JobQuerySet:
        """Active jobs whose executing worker stopped sending heartbeats."""
        limit = timezone.now() - timedelta(seconds=older_than_s)
        return self.active().filter(heartbeat_at__lt=limit)


class ClientHostQuerySet(models.QuerySet):
    def online(self) -> ClientHostQuerySet:
        limit = timezone.now() - timedelta(seconds=settings.BENCHAPP_HOST_OFFLINE_S)
        return self.filter(last_heartbeat__gte=limit)
