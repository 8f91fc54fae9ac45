"""What was measured beside sysbench: each client host's and the target server's per-second figures, and the
client → target round trip of a run. They tell whether a job's numbers can be believed (campaigns.validity)."""
from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from campaigns.models.core import Job, Run, Target


class HostSample(models.Model):
    """One second of one client host while its sysbench ran (psutil), on sysbench's time axis.

    CPU figures are percentages of the whole host (every core) except `sysbench_cpu_pct`, which is the
    sysbench process's own use in percent of one core (400 = four cores busy) and `per_core_busy_pct`.
    `client_cpus_busy_pct` is the busy share of the CPUs sysbench may run on (its affinity), leaving out the
    target server's own processes when it runs on the same host.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="host_samples")
    client_index = models.PositiveSmallIntegerField(default=0)
    attempt = models.PositiveIntegerField(default=1, db_default=1, help_text="the job's attempt (Job.attempt)")
    t = models.PositiveIntegerField(help_text="seconds since the client's sysbench started")
    cpu_user_pct = models.FloatField()
    cpu_system_pct = models.FloatField()
    cpu_iowait_pct = models.FloatField()
    cpu_steal_pct = models.FloatField()
    cpu_busy_pct = models.FloatField()
    per_core_busy_pct = ArrayField(models.FloatField(), default=list)
    client_cpus_busy_pct = models.FloatField(help_text="busy share of the CPUs sysbench may use, "
                                                       "without the target server's processes")
    sysbench_cpu_pct = models.FloatField(null=True, blank=True)
    load_1m = models.FloatField()
    context_switches_per_s = models.FloatField()
    net_bytes_in_per_s = models.FloatField()
    net_bytes_out_per_s = models.FloatField()
    net_packets_in_per_s = models.FloatField()
    net_packets_out_per_s = models.FloatField()
    memory_used_pct = models.FloatField()
    # Who took the host's CPU besides sysbench, in percent of one core like sysbench_cpu_pct: the target server
    # when it runs here, and every other process (a hog, a backup, another tool), with the busiest of them by name.
    server_cpu_pct = models.FloatField(null=True, blank=True)
    others_cpu_pct = models.FloatField(null=True, blank=True)
    top_other_name = models.CharField(max_length=100, blank=True, default="")
    top_other_cpu_pct = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["job_id", "t", "client_index"]
        constraints = [models.UniqueConstraint(fields=["job", "client_index", "attempt", "t"], name="host_sample_once")]

    def __str__(self) -> str:
        return f"job #{self.job_id} client {self.client_index} t={self.t} cpu={self.cpu_busy_pct:.0f}%"


class ServerSample(models.Model):
    """One second of the target server as it reports itself through SQL (SHOW GLOBAL STATUS deltas on
    MySQL/MariaDB, pg_stat_database deltas and pg_stat_activity on PostgreSQL), on sysbench's time axis.

    `rates` holds per-second deltas of counters by their server names (Questions, Com_select, xact_commit ...);
    `gauges` the instantaneous values (Threads_running, active backends ...)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="server_samples")
    attempt = models.PositiveIntegerField(default=1, db_default=1, help_text="the job's attempt (Job.attempt)")
    t = models.PositiveIntegerField(help_text="seconds since the job's sysbench started")
    rates = models.JSONField(default=dict)
    gauges = models.JSONField(default=dict)

    class Meta:
        ordering = ["job_id", "t"]
        constraints = [models.UniqueConstraint(fields=["job", "attempt", "t"], name="server_sample_once")]

    def __str__(self) -> str:
        return f"job #{self.job_id} server t={self.t}"


class PackedSeconds(models.Model):
    """One ended attempt's seconds of one kind, packed (campaigns.packing): sysbench's lines of one client
    (IntervalSample), one client host's (HostSample) or the server's (ServerSample, client_index 0).

    While an attempt measures its seconds are rows, which clients insert and live pages read; once it has ended
    campaigns.seconds packs them here, a few bytes a second instead of about 1.3 kB, and reads them back as the
    rows they were (figures kept to 0.01 of their unit; sysbench's own are exact)."""

    class Kind(models.TextChoices):
        INTERVAL = "interval"
        HOST = "host"
        SERVER = "server"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="packed_seconds")
    attempt = models.PositiveIntegerField()
    kind = models.CharField(max_length=8, choices=Kind.choices)
    client_index = models.PositiveSmallIntegerField(default=0)
    count = models.PositiveIntegerField(help_text="seconds packed")
    data = models.BinaryField()
    # 1: every second as sysbench printed it; more once old (campaigns.seconds.attempt_coarsen): a point stands for
    # that many seconds, t its last one.
    step_s = models.PositiveSmallIntegerField(default=1, help_text="seconds each stored point stands for")

    class Meta:
        ordering = ["job_id", "attempt", "kind", "client_index"]
        constraints = [models.UniqueConstraint(fields=["job", "attempt", "kind", "client_index"],
                                               name="packed_seconds_once")]

    def __str__(self) -> str:
        return f"job #{self.job_id} attempt {self.attempt} {self.kind} {self.client_index}: {self.count} s"


class RoundTrip(models.Model):
    """Client host → target round trips of `SELECT 1`, measured once per host and target in a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="round_trips")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="+")
    host_name = models.CharField(max_length=255)
    count = models.PositiveIntegerField()
    median_ms = models.FloatField()
    p99_ms = models.FloatField()
    measured_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "target_id", "host_name"]
        constraints = [models.UniqueConstraint(fields=["run", "target", "host_name"], name="round_trip_once")]

    def __str__(self) -> str:
        return f"{self.host_name} → {self.target}: {self.median_ms:.3f} ms median"
