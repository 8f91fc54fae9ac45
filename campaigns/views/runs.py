"""Runs and jobs: status and progress, the live view of the running job, cancelling, a job's details."""
from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import Prefetch, prefetch_related_objects
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from campaigns import monitoring, roles, services, validity
from campaigns.comparison.published import published_links, template_keys
from campaigns.filtersets import RunFilterSet
from campaigns.models import Job, JobClient, Regression, RoundTrip, Run, SettingsChange
from campaigns.services import run_progress as progress
from campaigns.services import runs_progress, runs_with_progress
from campaigns.views.base import paginate, role_required
from campaigns.views.failures import job_failure, retry_label, run_failure
from campaigns.views.timeline import job_label, job_start_s, run_measured_nothing, run_timeline

TAIL_LINES = 40
_PENDING = (Job.Status.QUEUED, Job.Status.WAITING)


def job_progress_pct(job: Job, now: datetime) -> int:
    if job.is_finished():
        return 100
    if job.status == Job.Status.RUNNING and job.started_at:
        total = job.run_time_s() or 1
        return max(0, min(99, round((now - job.started_at).total_seconds() * 100 / total)))
    return 0


def _result_row(job: Job) -> dict[str, Any] | None:
    result = getattr(job, "result", None) if job.status == Job.Status.SUCCEEDED or job.imported else None
    if result is None:
        return None
    return {"qps": result.qps, "tps": result.tps, "latency_avg_ms": result.latency_avg_ms,
            "latency_pct": result.latency_pct, "latency_pct_ms": result.latency_pct_ms,
            "source": result.source}


def _run_jobs(run: Run) -> list[Job]:
    clients = JobClient.objects.only("id", "job_id", "index", "host_name", "status", "started_at").order_by("index")
    jobs = list(
        run.jobs.select_related("target__product", "target__spec", "scenario__dataset", "result")
        .prefetch_related(Prefetch("clients", queryset=clients))
        .order_by("position", "id")
    )
    # The lost attempts of the jobs measured again (a query only when there are some).
    prefetch_related_objects([job for job in jobs if job.attempt > 1], "attempts")
    return jobs


def _tail(job: Job | None) -> str:
    """The last lines sysbench printed for the running job: its run output once the worker has saved
    some (every few seconds), else what its prepare and warm-up printed."""
    if job is None:
        return ""
    client = JobClient.objects.filter(job=job).order_by("index").only("raw_output", "prepare_output").first()
    if client is None:
        return ""
    text = client.raw_output or client.prepare_output
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def _epoch(at: datetime | None) -> float | None:
    return None if at is None else round(at.timestamp(), 3)


def run_state(run: Run, jobs: list[Job], run_progress: dict[str, Any]) -> dict[str, Any]:
    """The run as the live page needs it: statuses, progress (elapsed and ETA at `now`, the server's clock, so
    that the page ticks them on from there), results and the running job with its output."""
    now = timezone.now()
    current = next((j for j in jobs if j.status in Job.ACTIVE), None)
    judged = [j.verdict for j in jobs if j.status == Job.Status.SUCCEEDED]
    verdicts = validity.RunVerdicts(valid=judged.count(Job.Verdict.VALID), suspect=judged.count(Job.Verdict.SUSPECT),
                                    invalid=judged.count(Job.Verdict.INVALID))
    rows = []
    for job in jobs:
        rows.append({
            "id": job.pk, "status": job.status, "phase": job.phase, "progress_pct": job_progress_pct(job, now),
            "error": job.error[:500], "wait_reason": job.wait_reason, "waiting": job.waiting_text(),
            "attempt": job.attempt, "result": _result_row(job),
            "cache_hit_ratio": job.cache_hit_ratio, "cache_warning": job.cache_warning,
            # A settings variant is a dimension as a target is: its jobs are a line of their own on the live chart.
            "threads": job.threads, "variant": job.variant,
            "cell": " · ".join(filter(None, (job.target.name, job.variant, job.scenario.name))),
        })
    running = None
    if current is not None:
        running = {
            "id": current.pk, "number": current.position + 1, "label": job_label(current),
            "status": current.status, "phase": current.phase, "time_s": current.run_time_s(),
            "elapsed_s": (now - current.started_at).total_seconds() if current.started_at else None,
            "start_s": job_start_s(current, run.started_at or run.created_at),
            "latency_pct": current.scenario.percentile,
            "prepare_text": (current.prepare_progress or {}).get("text") if current.status == Job.Status.PREPARING else None,
            "samples_url": reverse("api:job-samples", args=[current.pk]),
        }
    done = sum(1 for j in jobs if j.is_finished())
    return {
        "now": _epoch(now),
        "run": {"id": run.pk, "status": run.status, "status_text": run.status_text(verdicts),
                "verdict_level": verdicts.level(), "verdict_text": verdicts.text(),
                "finished": run.is_finished(), "done": done, "total": len(jobs),
                "error": run.error, "started_at": _epoch(run.started_at), "elapsed_s": run_progress["elapsed_s"],
                "eta_s": run_progress["eta_s"], "no_worker": run_progress.get("no_worker")},
        # The output pane shows this job's output, and only while the page shows this job.
        "jobs": rows, "running": running, "tail": _tail(current), "tail_job": current.pk if current else None,
    }


@role_required(roles.VIEWER)
def run_list(request: HttpRequest) -> HttpResponse:
    base = runs_with_progress().order_by("-created_at")
    filterset = RunFilterSet(request.GET, queryset=base, request=request)
    queryset = filterset.qs if filterset.is_valid() else base.none()
    page = paginate(request, queryset)
    listed = list(page.object_list)
    runs = list(zip(listed, runs_progress(listed), strict=True))
    return render(request, "campaigns/run_list.html", {"page": page, "runs": runs, "filterset": filterset})


def run_changes(run: Run, jobs: list[Job]) -> list[dict[str, Any]]:
    """The run's regressions and improvements, each with its cell's dataset size (from the run's own jobs,
    so scaled as it ran) and a link to the cell's history on the campaign page. One query."""
    sizes = {(j.target_id, j.scenario_id, j.threads): (j.tables, j.table_size) for j in jobs}
    history_url = reverse("campaigns-detail", args=[run.campaign_id])
    rows = []
    for change in (Regression.objects.filter(run=run).select_related("target__product", "scenario")
                   .order_by("kind", "target__name", "scenario__name", "threads", "metric")):
        tables, table_size = sizes.get((change.target_id, change.scenario_id, change.threads), (None, None))
        query = urlencode({"target": change.target_id, "scenario": change.scenario_id, "threads": change.threads,
                           **({"variant": change.variant} if change.variant else {})})
        rows.append({"change": change, "tables": tables, "table_size": table_size,
                     "history_url": f"{history_url}?{query}#history"})
    return rows


@role_required(roles.VIEWER)
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(runs_with_progress(), pk=pk)
    jobs = _run_jobs(run)
    run_progress = progress(run)
    state = run_state(run, jobs, run_progress)
    return render(request, "campaigns/run_detail.html", {
        "run": run, "jobs": jobs, "state": state, "progress": run_progress,
        "running": state["running"], "can_edit": roles.can_edit(request.user),
        "live_url": reverse("run-live", args=[run.pk]), "timeline_url": reverse("run-timeline", args=[run.pk]),
        "changes": run_changes(run, jobs),
        "held": list(SettingsChange.objects.filter(job__run=run, held_at__isnull=False).select_related(
            "target", "confirmed_by")),
        "pending_restore": list(SettingsChange.objects.pending_restore().filter(job__run=run).select_related(
            "target")),
        "invalid_left_out": sum(1 for j in jobs if j.verdict == Job.Verdict.INVALID),
        "waiting_for_target": [j for j in jobs if j.waiting_for_target()],
        "retryable": sum(1 for j in jobs if j.status in (Job.Status.FAILED, Job.Status.CANCELLED)),
        "retry_label": retry_label(jobs), "failure": run_failure(run, jobs),
        # A finished run that measured nothing says so instead of drawing empty timeline charts.
        "measured_nothing": run_measured_nothing(run, jobs),
        "unfinished": sum(1 for j in jobs if j.status not in Job.FINISHED),
        "reruns": list(run.reruns.order_by("pk").only("pk", "rerun", "status")),
        "annotations": list(run.annotations.select_related("created_by", "edited_by").order_by("at", "pk")),
        # A run of a campaign made from a seed template: its results beside the document's published figures.
        "published_links": ([] if run.campaign.is_template else
                            published_links(template_keys(run.campaign.template_key), f"runs={run.pk}")),
    })


@role_required(roles.VIEWER)
def run_live(request: HttpRequest, pk: int) -> JsonResponse:
    run = get_object_or_404(runs_with_progress(), pk=pk)
    return JsonResponse(run_state(run, _run_jobs(run), progress(run)))


@role_required(roles.VIEWER)
def run_timeline_json(request: HttpRequest, pk: int) -> JsonResponse:
    """The whole run's per-second QPS and latency with its job boundaries (campaigns.views.timeline)."""
    run = get_object_or_404(Run, pk=pk)
    return JsonResponse(run_timeline(run, _run_jobs(run)))


@role_required(roles.OPERATOR)
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    try:
        services.run_cancel(run=run)
    except services.StateConflict as exc:
        messages.error(request, f"Not cancelled: {exc}.")
    else:
        messages.success(request, f"Run #{run.pk} is being cancelled; a running sysbench stops within a second.")
    return HttpResponseRedirect(reverse("run-detail", args=[run.pk]))


@role_required(roles.OPERATOR)
@require_POST
def run_rerun(request: HttpRequest, pk: int, scope: str) -> HttpResponse:
    """"Retry failed jobs" (scope failed) and "Run again" (scope all) from the run page."""
    run = get_object_or_404(Run, pk=pk)
    try:
        new = services.run_rerun(run=run, user=request.user, scope=scope)
    except services.StateConflict as exc:
        messages.error(request, f"Not started: {exc}.")
        return HttpResponseRedirect(reverse("run-detail", args=[run.pk]))
    what = "retries the failed jobs of" if scope == Run.Rerun.FAILED else "runs again"
    messages.success(request, f"Run #{new.pk} {what} run #{run.pk}.")
    return HttpResponseRedirect(reverse("run-detail", args=[new.pk]))


@role_required(roles.OPERATOR)
@require_POST
def run_annotate(request: HttpRequest, pk: int) -> HttpResponse:
    """Adds a note to the run from its page (the API's POST /annotations/ does the same)."""
    run = get_object_or_404(Run, pk=pk)
    text = request.POST.get("text", "").strip()
    if not text or len(text) > 500:
        messages.error(request, "Not added: a note has 1 to 500 characters.")
    else:
        services.annotation_create(user=request.user, run=run, text=text)
        messages.success(request, "Note added.")
    return HttpResponseRedirect(reverse("run-detail", args=[run.pk]) + "#notes")


@role_required(roles.OPERATOR)
@require_POST
def run_pin_baseline(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("campaign"), pk=pk)
    try:
        monitoring.baseline_pin(campaign=run.campaign, run=run)
    except ValueError as exc:
        messages.error(request, f"Not pinned: {exc}.")
    else:
        warning = monitoring.baseline_trust_warning(run)
        if warning:
            messages.warning(request, f"Run #{run.pk} is now the baseline of {run.campaign.name}, but {warning}.")
        else:
            messages.success(request, f"Run #{run.pk} is now the baseline of {run.campaign.name}.")
    return HttpResponseRedirect(reverse("run-detail", args=[run.pk]) + "#changes")


@role_required(roles.OPERATOR)
@require_POST
def regression_acknowledge(request: HttpRequest, pk: int) -> HttpResponse:
    regression = get_object_or_404(Regression, pk=pk)
    try:
        monitoring.regression_acknowledge(regression=regression, user=request.user, note=request.POST.get("note", ""))
    except ValueError as exc:
        messages.error(request, f"Not acknowledged: {exc}.")
    else:
        messages.success(request, "Acknowledged.")
    return HttpResponseRedirect(reverse("run-detail", args=[regression.run_id]) + "#changes")


def _snapshot_settings(snapshot: dict[str, Any]) -> list[tuple[str, str, str]]:
    before = (snapshot.get("before") or {}).get("settings") or {}
    after = (snapshot.get("after") or {}).get("settings") or {}
    names = sorted(set(before) | set(after))
    return [(n, before.get(n, ""), after.get(n, "")) for n in names]


def _snapshot_status(snapshot: dict[str, Any]) -> list[tuple[str, Any, Any, Any]]:
    before = (snapshot.get("before") or {}).get("status") or {}
    after = (snapshot.get("after") or {}).get("status") or {}
    rows = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        rows.append((name, b, a, a - b if isinstance(a, int) and isinstance(b, int) else None))
    return rows


@role_required(roles.VIEWER)
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(
        Job.objects.select_related("run__campaign", "target__product", "target__spec", "scenario__dataset", "result"),
        pk=pk,
    )
    clients = list(job.clients.order_by("index"))
    snapshot = job.server_snapshot or {}
    result = getattr(job, "result", None)
    return render(request, "campaigns/job_detail.html", {
        "job": job, "result": result, "clients": clients,
        "percentiles": result.latency_percentiles() if result is not None else [],
        "latency_histogram": job.latency_histogram(clients),
        "settings_rows": _snapshot_settings(snapshot), "status_rows": _snapshot_status(snapshot),
        "version": (snapshot.get("before") or {}).get("version") or (snapshot.get("after") or {}).get("version"),
        "after_error": (snapshot.get("after") or {}).get("error"),
        "dataset_bytes": (snapshot.get("after") or snapshot.get("before") or {}).get("dataset_bytes"),
        "samples_url": reverse("api:job-samples", args=[job.pk]),
        "metrics_url": reverse("api:job-metrics", args=[job.pk]),
        "round_trips": list(RoundTrip.objects.filter(run_id=job.run_id, target_id=job.target_id)
                            .order_by("host_name")),
        "can_edit": roles.can_edit(request.user), "failure": job_failure(job),
        "held": list(job.settings_changes.filter(held_at__isnull=False).select_related("target", "confirmed_by")),
        "pending_restore": list(SettingsChange.objects.pending_restore().filter(job=job).select_related("target")),
        "per_client": _per_client(result, clients),
        # Clients whose share went to another host (its first host lost before it measured): every send of it.
        "attempts": [(client, client.attempt_history()) for client in clients if client.attempt > 1],
    })


def _per_client(result: Any, clients: list[JobClient]) -> dict[str, Any] | None:
    """Each client's own figures beside the job's, and whether the job's throughput is their sum (the figures a
    multi-client job stores are merged from these)."""
    if len(clients) < 2:
        return None
    rows: list[dict[str, Any]] = []
    for client in clients:
        summary = client.summary or {}
        latency = summary.get("latency_ms") or {}
        rows.append({"client": client, "qps": summary.get("qps"), "tps": summary.get("tps"),
                     "avg_ms": latency.get("avg"), "pct_ms": latency.get("percentile")})
    total = sum(r["qps"] for r in rows if r["qps"] is not None)
    check = None
    # The same check as the job's validity finding "client-sum".
    off_pct = validity.client_sum_off_pct(result.qps if result is not None else None, [r["qps"] for r in rows])
    if off_pct is not None:
        check = {"sum": total, "off_pct": off_pct, "ok": off_pct <= validity.CLIENT_SUM_PCT}
    return {"rows": rows, "check": check}
