"""Workloads of one's own: Lua files sysbench runs, stored here by content hash and versioned."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from campaigns.sysbench.catalogue import TestSpec
from campaigns.sysbench.workloads import options_from_json, workload_spec

WORKLOAD_PREFIX = "workload:"


class Workload(models.Model):
    """A named workload of one's own (Percona's sysbench-tpcc, a team's own queries): the name scenarios show.
    Its code lives in its versions; editing it adds a version and never changes one."""

    name = models.CharField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    # Errors that are part of the workload (TPC-C's 1 % NewOrder rollbacks, deadlocks retried by design), as
    # sysbench's ignored errors per 100 transactions: counted and shown, and only errors beyond them make a job
    # suspect (campaigns.validity). None: every error counts against the job.
    expected_errors_pct = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(100.0)],
        help_text="ignored errors per 100 transactions that are part of the workload (e.g. 1 for TPC-C's "
                  "rollbacks); only errors beyond this rate make a job suspect")
    # The workload's shape and its own figures, declared by its owner (campaigns.services.workloads): the option
    # that takes the dataset's size per table set instead of --table-size (sysbench-tpcc's `scale`) and what that
    # size counts ("warehouses"); a global Lua function whose completed calls are counted per minute
    # (sysbench-tpcc's `new_order`, shown as "NewOrders"); a command of the script run after each job (`check`).
    size_option = models.CharField(max_length=60, blank=True, default="",
                                   help_text="the option that takes the dataset's size, e.g. scale")
    size_unit = models.CharField(max_length=40, blank=True, default="",
                                 help_text="what the dataset's size counts, e.g. warehouses (rows when empty)")
    counted_function = models.CharField(max_length=60, blank=True, default="",
                                        help_text="a global Lua function whose completed calls are counted, "
                                                  "e.g. new_order")
    counted_label = models.CharField(max_length=40, blank=True, default="",
                                     help_text="what those calls are called, e.g. NewOrders")
    check_command = models.CharField(max_length=60, blank=True, default="",
                                     help_text="a command of the script run after each job, e.g. check")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    DECLARED = ("expected_errors_pct", "size_option", "size_unit", "counted_function", "counted_label",
                "check_command")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def size_noun(self) -> str:
        """What the dataset's size counts for this workload: "warehouses", or "rows"."""
        return self.size_unit or "rows"

    def counted_noun(self) -> str:
        """What the counted calls are called on pages: "NewOrders", or the function's name."""
        return self.counted_label or self.counted_function

    def latest_version(self) -> WorkloadVersion | None:
        return self.versions.order_by("-number").first()


class WorkloadVersion(models.Model):
    """One version of a workload's code: every Lua file's text (`files`, path → text), the entry script sysbench
    runs, their content hash (sha256 of the entry's name and every file; the cache key on client hosts), and
    what `sysbench <entry> help` said when it was uploaded: the options with their defaults and the commands
    the script defines. A scenario refers to one version, so its results name the exact code that produced
    them; a version is never changed. Who uploaded it and when are recorded (a script is code that runs on
    client hosts)."""

    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    entry = models.CharField(max_length=200)
    files = models.JSONField()
    options = models.JSONField(default=list, blank=True)
    commands = models.JSONField(default=list, blank=True)
    help_text = models.TextField(blank=True)
    note = models.CharField(max_length=300, blank=True, help_text="what changed in this version")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workload__name", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["workload", "number"], name="workload_version_number_unique"),
            models.UniqueConstraint(fields=["workload", "content_hash"], name="workload_version_hash_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.workload.name} v{self.number}"

    def label(self) -> str:
        """What a scenario's `test` says: `workload:<name>@v<number>`."""
        return f"{WORKLOAD_PREFIX}{self.workload.name}@v{self.number}"

    def short_hash(self) -> str:
        return self.content_hash[:12]

    def total_bytes(self) -> int:
        return sum(len(text.encode()) for text in self.files.values())

    def test_spec(self, entry_path: str | None = None) -> TestSpec:
        """The version as a test of the catalogue (its options from sysbench's help); `entry_path` is where its
        entry script is on the host that runs it."""
        description = (f"your own workload {self.workload.name} v{self.number}: {self.entry} and "
                       f"{len(self.files) - 1} other file(s), content hash {self.short_hash()}")
        return workload_spec(label=self.label(), entry=entry_path or self.entry, description=description,
                             options=options_from_json(self.options), commands=tuple(self.commands),
                             size_option=self.workload.size_option, size_unit=self.workload.size_noun())

    def option_rows(self) -> list[dict[str, Any]]:
        return list(self.options)


class WorkloadApproval(models.Model):
    """Someone's word that one version's code may run: an admin's counts on every target that allows uploaded
    workloads, a target owner's on the targets they own (campaigns.services.workloads.version_approved_for). Who
    and when are kept, and shown with the version; withdrawing deletes the row."""

    version = models.ForeignKey(WorkloadVersion, on_delete=models.CASCADE, related_name="approvals")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    approved_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "approved_at"]
        constraints = [models.UniqueConstraint(fields=["version", "approved_by"],
                                               name="workload_approval_once_per_user")]

    def __str__(self) -> str:
        return f"{self.version} approved by {self.approved_by_id}"


def version_for_label(label: object) -> WorkloadVersion | None:
    """The version a scenario's `test` names (`workload:<name>@v<number>`), or None."""
    if not isinstance(label, str) or not label.startswith(WORKLOAD_PREFIX) or "@v" not in label:
        return None
    name, _, number = label[len(WORKLOAD_PREFIX):].rpartition("@v")
    if not number.isdigit() or len(number) > 9:
        return None
    return WorkloadVersion.objects.select_related("workload").filter(workload__name=name, number=int(number)).first()


def workload_test_choices() -> list[tuple[str, str]]:
    """Every version of every workload as a choice of the scenario form, newest first within a workload."""
    versions = WorkloadVersion.objects.select_related("workload").order_by("workload__name", "-number")
    return [(v.label(), f"{v.label()} ({v.entry}, {v.short_hash()})") for v in versions]


def version_approval_for(*, version: WorkloadVersion, target: Any) -> WorkloadApproval | None:
    """The approval under which `version` may run on `target`, or None: an active admin's (any target), or the
    target owner's. An approver who is no longer an admin, or was deactivated, approves nothing any more."""
    from campaigns import roles  # (roles reads the user model: imported once the apps are ready)

    for approval in version.approvals.select_related("approved_by").order_by("approved_at"):
        person = approval.approved_by
        if not person.is_active:
            continue
        if roles.can_admin(person) or (target.created_by_id is not None and target.created_by_id == person.pk):
            return approval
    return None


def version_not_approved(*, version: WorkloadVersion, target: Any) -> str | None:
    """Why `version` may not run on `target` yet (no approval that counts there), or None."""
    if version_approval_for(version=version, target=target) is not None:
        return None
    owner = target.created_by.get_username() if target.created_by is not None else None
    who = f"an admin or the target's owner ({owner})" if owner else "an admin"
    return (f"{version.label()} is not approved to run on target '{target.name}': {who} approves the version on "
            f"its workload page (or POST /api/v1/workload-versions/{version.pk}/approve/) once they have read it")
