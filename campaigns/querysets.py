"""Queries over many rows, named for what they select."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone

# The models' own status tuples, spelled out: campaigns.models imports this module, not the reverse.
RUN_ACTIVE = ("pending", "running")
RUN_FINISHED = ("succeeded", "partially_succeeded", "failed", "cancelled")
JOB_ACTIVE = ("preparing", "running")


VERDICTS = ("valid", "suspect", "invalid")
UNTRUSTED = ("suspect", "invalid")


class RunQuerySet(models.QuerySet):
    def active(self) -> RunQuerySet:
        return self.filter(status__in=RUN_ACTIVE)

    def finished(self) -> RunQuerySet:
        return self.filter(status__in=RUN_FINISHED)

    def _succeeded_jobs(self, verdicts: tuple[str, ...]) -> models.QuerySet:
        job: Any = self.model._meta.get_field("jobs").related_model
        return job.objects.filter(run=models.OuterRef("pk"), status="succeeded", verdict__in=verdicts)

    def with_verdicts(self) -> RunQuerySet:
        """Annotated with jobs_valid, jobs_suspect and jobs_invalid: its succeeded jobs by verdict (Run.verdicts()).
        Correlated subqueries, evaluated only for the rows returned (a page of runs), not a join of every job."""
        def count(verdict: str) -> Coalesce:
            rows = self._succeeded_jobs((verdict,)).order_by().values("run")
            return Coalesce(models.Subquery(rows.annotate(n=models.Count("*")).values("n")), 0)

        return self.annotate(**{f"jobs_{verdict}": count(verdict) for verdict in VERDICTS})

    def with_validity(self, validity: str) -> RunQuerySet:
        """Runs by what their succeeded jobs' verdicts say: "untrusted" (a job suspect or invalid), "invalid" (a
        job invalid), "trusted" (finished, with a succeeded job and none suspect or invalid)."""
        if validity == "untrusted":
            return self.filter(models.Exists(self._succeeded_jobs(UNTRUSTED)))
        if validity == "invalid":
            return self.filter(models.Exists(self._succeeded_jobs(("invalid",))))
        if validity == "trusted":
            return self.finished().filter(models.Exists(self._succeeded_jobs(("valid",)))).exclude(
                models.Exists(self._succeeded_jobs(UNTRUSTED)))
        raise ValueError(f"unknown validity {validity!r}")


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
        return self.filter(last_heartbeat__gte=limit, offline_since__isnull=True)
