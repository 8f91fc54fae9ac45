"""The white paper's environment and method for the compared jobs: server versions and settings, client hosts,
and one exact command per scenario and product."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Max

from campaigns.comparison.rows import ComparisonLayout, EnvironmentRow, HostRow, MethodRow, ReportSections
from campaigns.models import Campaign, ClientHost, JobClient


def report_sections(layout: ComparisonLayout) -> ReportSections:
    """Environment (server versions and settings from the jobs' snapshots, client hosts) and method
    (one exact command per scenario and target) of the compared jobs."""
    if not layout["tables"] or not layout["selection"].measured():
        return {"environment": [], "hosts": [], "method": []}
    jobs = layout["selection"].jobs()
    environment: list[EnvironmentRow] = []
    for row in (jobs.order_by("target_id", "-finished_at").distinct("target_id")
                .values("target__name", "target__product__name", "target__spec__label", "server_snapshot")):
        before = (row["server_snapshot"] or {}).get("before") or {}
        environment.append({
            "target": row["target__name"], "product": row["target__product__name"],
            "spec": row["target__spec__label"], "version": before.get("version", ""),
            "settings": sorted((before.get("settings") or {}).items()),
        })
    threads: dict[str, set[int]] = defaultdict(set)
    for scenario, count in jobs.values_list("scenario__name", "threads").distinct():
        threads[scenario].add(count)
    method: list[MethodRow] = []
    # One command per scenario and product: targets of one product differ only in where they are.
    for command in (jobs.exclude(command_line="").order_by("scenario__name", "target__product__name", "-threads")
                    .distinct("scenario__name", "target__product__name")
                    .values("scenario__name", "scenario__test", "target__name", "target__product__name",
                            "command_line", "imported")):
        method.append({
            "scenario": command["scenario__name"], "test": command["scenario__test"],
            "target": command["target__name"], "product": command["target__product__name"],
            "command": command["command_line"], "imported": command["imported"],
            "threads": ", ".join(str(t) for t in sorted(threads[command["scenario__name"]])),
        })
    host_rows = list(JobClient.objects.filter(job__in=jobs).values("host_name")
                     .annotate(jobs=Count("job_id", distinct=True), sysbench=Max("sysbench_version"))
                     .order_by("host_name"))
    known = {h.hostname: h for h in ClientHost.objects.filter(hostname__in=[r["host_name"] for r in host_rows])}
    hosts: list[HostRow] = []
    for client in host_rows:
        host = known.get(client["host_name"])
        hosts.append({"hostname": client["host_name"], "jobs": client["jobs"], "sysbench": client["sysbench"],
                      "cores": host.cores if host else None, "memory_gb": host.memory_gb if host else None})
    return {"environment": environment, "hosts": hosts, "method": method, "order": _order(jobs)}


def _order(jobs: Any) -> list[str]:
    """How each campaign of the compared jobs ordered them, and whether it shared servers on purpose: what a reader
    needs to judge a drift over the run and another run's load."""
    lines = []
    for name, order, shares in (jobs.values_list("run__campaign__name", "run__campaign__job_order",
                                                 "run__campaign__share_server").distinct()
                                .order_by("run__campaign__name")):
        words = Campaign.JobOrder(order).label if order in Campaign.JobOrder.values else order
        line = f"Campaign {name}: jobs {words}"
        if shares:
            line += ("; it shares servers and client hosts on purpose with other runs that share, so its figures "
                     "may include their load")
        lines.append(line + ".")
    return lines
