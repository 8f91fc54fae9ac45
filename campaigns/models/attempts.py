"""The measurements of a job that did not count, and the sends of a client's share that were lost, as rows.

A job is the cell of a run (target × scenario × threads × repetition × variant) and its current attempt: the
job's own status, phase, timings, snapshot, verdict, clients and result are the attempt being measured now (or
the one that counted). When the infrastructure spoils a measurement (a worker, pool child or client host lost,
sysbench killed by a signal benchapp did not send, the target restarted mid-run), that attempt ends as an
Attempt row, its per-second rows stay stored under its number, and the job is measured again as number + 1
(campaigns.execution.transitions.job_requeue). Likewise a client host lost before its sysbench began measuring
hands its share to another host, and the lost send ends as a ClientSend row (transitions.client_resend).
"""
from __future__ import annotations

from typing import Any

from django.db import models


class Attempt(models.Model):
    """An earlier measurement of a job, lost to the infrastructure and measured again.

    Its seconds stay stored under (job, number), in the samples' own tables or packed (campaigns.seconds).
    """

    job = models.ForeignKey("campaigns.Job", on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField(help_text="1 = the job's first measurement")
    started_at = models.DateTimeField(null=True, blank=True,
                                      help_text="when it began measuring (or, lost before that, when it was claimed)")
    ended_at = models.DateTimeField(help_text="when it was found lost")
    cause = models.TextField(blank=True, help_text="why it was lost")
    t_s = models.FloatField(null=True, blank=True,
                            help_text="how far into its measurement it was lost (None: before it measured)")
    # A lost attempt's sysbench may outlive the worker that ran it (a pool child killed, a host cut off): until its
    # own --time has run out it may still load the server and its client hosts, which it holds until then against
    # every job, this job's next attempt included (campaigns.execution.turns). None: it never began measuring.
    lease_until = models.DateTimeField(null=True, blank=True,
                                       help_text="until when a sysbench of it may still run (its --time and a grace)")
    hosts = models.JSONField(default=list, blank=True, help_text="the client hosts its sysbench ran on")

    class Meta:
        ordering = ["job_id", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="attempt_once")]

    def __str__(self) -> str:
        return f"attempt {self.number} of job #{self.job_id}"

    def lingers(self, now: Any) -> bool:
        """Whether a sysbench of it may still run at `now`."""
        return self.lease_until is not None and self.lease_until > now

    def text(self) -> str:
        """"attempt 1 lost at t = 6 s: client host vm lost while measuring …"."""
        when = f"at t = {self.t_s:.0f} s" if self.t_s is not None and self.t_s > 0 else "before measuring"
        return f"attempt {self.number} lost {when}: {self.cause}"

    def record(self) -> dict[str, Any]:
        """The row as the job's attempt list shows it (Job.attempt_history)."""
        return {"attempt": self.number, "started_at": self.started_at, "ended_at": self.ended_at,
                "cause": self.cause, "t_s": self.t_s, "text": self.text()}


class ClientSend(models.Model):
    """An earlier send of a client's share to a host that was lost before its sysbench began measuring."""

    client = models.ForeignKey("campaigns.JobClient", on_delete=models.CASCADE, related_name="earlier_sends")
    number = models.PositiveIntegerField(help_text="1 = the share's first send")
    host = models.CharField(max_length=255)
    sent_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(help_text="when it was found lost")
    outcome = models.CharField(max_length=12, default="lost")
    cause = models.TextField(blank=True)

    class Meta:
        ordering = ["client_id", "number"]
        constraints = [models.UniqueConstraint(fields=["client", "number"], name="client_send_once")]

    def __str__(self) -> str:
        return f"send {self.number} of client #{self.client_id}"

    def record(self) -> dict[str, Any]:
        """The row as the client's send list shows it (JobClient.attempt_history)."""
        return {"attempt": self.number, "host": self.host, "sent_at": self.sent_at, "ended_at": self.ended_at,
                "outcome": self.outcome, "cause": self.cause}
