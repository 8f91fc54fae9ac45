"""Workloads of one's own: the list, one workload with its versions (who uploaded which code, when, and what
sysbench said of it), and the upload form (files, or a script pasted), which calls the one service."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from campaigns import roles
from campaigns.forms import form_errors_add
from campaigns.models import Target, Workload, WorkloadVersion
from campaigns.services.workloads import (
    WorkloadInUse,
    workload_approve,
    workload_delete,
    workload_files_from_uploads,
    workload_in_use,
    workload_may_edit,
    workload_save,
    workload_unapprove,
)
from campaigns.views.base import role_required


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (Django's documented recipe: FileField cleans one file at a time)."""

    def clean(self, data: Any, initial: Any = None) -> Any:
        if isinstance(data, (list, tuple)):
            return [super(MultipleFileField, self).clean(item, initial) for item in data]
        return super().clean(data, initial)


class WorkloadUploadForm(forms.Form):
    """Lua files uploaded, a script pasted, or both; the service checks them all."""

    name = forms.CharField(max_length=80, required=False, help_text="letters, digits, '_', '-' and '.'")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    entry = forms.CharField(max_length=200, label="Entry script",
                            help_text="the file sysbench runs, e.g. tpcc.lua; the others are found with require")
    lua_files = MultipleFileField(required=False, widget=MultipleFileInput(attrs={"accept": ".lua", "multiple": True}),
                            label="Lua files")
    pasted_name = forms.CharField(max_length=200, required=False, label="Pasted file's name",
                                  help_text="e.g. oltp_custom.lua (the entry script when left empty)")
    pasted = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}),
                             label="Or paste a Lua script", max_length=300_000)
    note = forms.CharField(max_length=300, required=False, label="What changed (for a new version)")
    expected_errors_pct = forms.FloatField(
        required=False, min_value=0.0, max_value=100.0, label="Expected errors (per 100 transactions)",
        help_text="errors that are part of the workload, e.g. 1 for TPC-C's NewOrder rollbacks: only errors beyond "
                  "this rate make a job suspect; leave empty to count every error")
    size_option = forms.CharField(max_length=60, required=False, label="Option that takes the dataset's size",
                                  help_text="e.g. scale for sysbench-tpcc: the dataset's size per table set goes "
                                            "there instead of --table-size")
    size_unit = forms.CharField(max_length=40, required=False, label="What the size counts",
                                help_text="e.g. warehouses (rows when empty)")
    counted_function = forms.CharField(max_length=60, required=False, label="Function to count",
                                       help_text="a global Lua function whose completed calls are shown per minute, "
                                                 "e.g. new_order")
    counted_label = forms.CharField(max_length=40, required=False, label="Its calls are called",
                                    help_text="e.g. NewOrders")
    check_command = forms.CharField(max_length=60, required=False, label="Command run after each job",
                                    help_text="e.g. check: a command of the script that checks the data")

    def __init__(self, *args: Any, new: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if new:
            self.fields["name"].required = True
            del self.fields["note"]
        else:
            del self.fields["name"]


def _files(form: WorkloadUploadForm, request: HttpRequest) -> dict[str, Any]:
    files: dict[str, Any] = workload_files_from_uploads(request.FILES.getlist("lua_files"))
    pasted = form.cleaned_data.get("pasted") or ""
    if pasted.strip():
        name = form.cleaned_data.get("pasted_name") or form.cleaned_data["entry"]
        if name in files:
            raise ValidationError({"pasted_name": f"file {name} was both uploaded and pasted"})
        files[name] = pasted.replace("\r\n", "\n")
    return files


def _save(request: HttpRequest, form: WorkloadUploadForm, workload: Workload | None) -> Any:
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        return workload_save(user=request.user, workload=workload, name=data.get("name", ""),
                             files=_files(form, request), entry=data["entry"],
                             description=data.get("description") or (None if workload else ""),
                             note=data.get("note") or "", expected_errors_pct=data.get("expected_errors_pct"),
                             declared={field: data.get(field) or "" for field in Workload.DECLARED[1:]})
    except ValidationError as exc:
        form_errors_add(form, exc)
    except PermissionDenied as exc:
        form.add_error(None, str(exc))
    return None


@role_required(roles.VIEWER)
def workload_list(request: HttpRequest) -> HttpResponse:
    workloads = Workload.objects.select_related("created_by").prefetch_related("versions__uploaded_by")
    return render(request, "campaigns/workload_list.html", {
        "workloads": workloads, "can_edit": roles.can_edit(request.user)})


@role_required(roles.VIEWER)
def workload_detail(request: HttpRequest, pk: int) -> HttpResponse:
    workload = get_object_or_404(Workload.objects.select_related("created_by"), pk=pk)
    versions = list(workload.versions.select_related("uploaded_by").order_by("-number"))
    shown = next((v for v in versions if str(v.number) == request.GET.get("version")), versions[0] if versions else None)
    approvals = list(shown.approvals.select_related("approved_by")) if shown else []
    return render(request, "campaigns/workload_detail.html", {
        "workload": workload, "versions": versions, "shown": shown,
        "scenarios": shown.scenarios.order_by("name") if shown else [],
        "can_edit": roles.can_edit(request.user), "approvals": approvals,
        "may_delete": roles.can_edit(request.user) and workload_may_edit(user=request.user, workload=workload)
        and workload_in_use(workload) is None,
        "approved_by_me": any(a.approved_by_id == request.user.pk for a in approvals),
        "may_approve": roles.can_admin(request.user) or Target.objects.filter(created_by=request.user).exists()})


@role_required(roles.OPERATOR)
def workload_version_approve(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """POST: the user approves the version (or, with `withdraw`, withdraws their approval): the same services
    as the API (services.workloads.workload_approve / workload_unapprove)."""
    version = get_object_or_404(WorkloadVersion.objects.select_related("workload"), workload_id=pk, number=number)
    url = f"{reverse('workload-detail', args=[pk])}?version={number}"
    if request.method != "POST":
        return HttpResponseRedirect(url)
    try:
        if request.POST.get("withdraw"):
            workload_unapprove(user=request.user, version=version)
            messages.success(request, f"Your approval of {version.label()} is withdrawn.")
        else:
            workload_approve(user=request.user, version=version)
            messages.success(request, f"You approved {version.label()} to run"
                                      f"{' on every target that allows uploaded workloads' if roles.can_admin(request.user) else ' on the targets you own'}.")
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    return HttpResponseRedirect(url)


@role_required(roles.OPERATOR)
def workload_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    """POST: deletes the workload (services.workloads.workload_delete, as the API): its owner or an admin, once no
    scenario uses it; else back to its page saying why."""
    workload = get_object_or_404(Workload, pk=pk)
    if request.method != "POST":
        return HttpResponseRedirect(reverse("workload-detail", args=[pk]))
    try:
        workload_delete(user=request.user, workload=workload)
    except (PermissionDenied, WorkloadInUse) as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(reverse("workload-detail", args=[pk]))
    messages.success(request, f"Workload {workload.name} is deleted, with its versions.")
    return HttpResponseRedirect(reverse("workload-list"))


@role_required(roles.OPERATOR)
def workload_new(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """A new workload, or (with pk) a new version of one."""
    workload = get_object_or_404(Workload, pk=pk) if pk else None
    if request.method == "POST":
        form = WorkloadUploadForm(request.POST, request.FILES, new=workload is None)
        version = _save(request, form, workload)
        if version is not None:
            messages.success(request, f"Saved {version.label()}: sysbench lists {len(version.options)} option(s).")
            url = reverse("workload-detail", args=[version.workload_id])
            return HttpResponseRedirect(f"{url}?version={version.number}")
    else:
        latest = workload.latest_version() if workload else None
        initial = {field: getattr(workload, field) for field in Workload.DECLARED} if workload else {}
        form = WorkloadUploadForm(new=workload is None, initial={**initial, **({"entry": latest.entry} if latest
                                                                               else {})})
    return render(request, "campaigns/workload_form.html", {"form": form, "workload": workload})
