"""Which of a comparison's cells not to trust and why: one query over the selection's suspect and invalid jobs, the
banner above the comparison ("13 of 24 jobs invalid: the client host's CPU was saturated — why") and each
untrusted cell's reasons with a job to read them on."""
from __future__ import annotations

from typing import Any, TypedDict

from django.urls import reverse

from campaigns.comparison.rows import CellTrust, TrustReason
from campaigns.comparison.selection import Selection
from campaigns.models import Job
from campaigns.validity import reason

CellKey = tuple[Any, ...]  # (scenario id, spec id, threads, table size, tables, product id)
# The banner and the cells need a job per reason, not every job: past this many untrusted jobs the reasons come from
# the first ones (the counts come from comparison_build's cells, which count every job).
JOBS_READ = 2000


def _job_url(pk: int) -> str:
    return reverse("job-detail", args=[pk]) + "#validity-h"


class UntrustedCells(TypedDict):
    reasons: list[TrustReason]  # the banner's
    cells: dict[CellKey, CellTrust]


def untrusted_cells(selection: Selection) -> UntrustedCells:
    """The banner's reasons and, per cell key, its untrusted jobs' reasons: {"reasons": [{"level", "text", "jobs",
    "url"}], "cells": {key: {"reasons", "url", "jobs"}}}, each url a job page's findings."""
    rows = list(selection.jobs().filter(verdict__in=(Job.Verdict.SUSPECT, Job.Verdict.INVALID))
                .order_by("pk").values_list("pk", "verdict", "findings", "scenario_id", "target__spec_id", "threads",
                                            "table_size", "tables", "target__product_id")[:JOBS_READ])
    reasons: dict[tuple[str, str], TrustReason] = {}
    cells: dict[CellKey, CellTrust] = {}
    for pk, verdict, findings, *key in rows:
        causes = [f for f in findings or [] if f.get("level") == verdict] or [{"code": "", "level": verdict}]
        cell = cells.setdefault(tuple(key), {"reasons": [], "url": _job_url(pk), "jobs": 0})
        cell["jobs"] += 1
        for finding in causes:
            text = reason(finding.get("code") or "") if finding.get("code") else "see the job's findings"
            if text not in cell["reasons"]:
                cell["reasons"].append(text)
            entry = reasons.setdefault((verdict, text), {"level": verdict, "text": text, "jobs": 0,
                                                         "url": _job_url(pk)})
            entry["jobs"] += 1
    ordered = sorted(reasons.values(), key=lambda r: (r["level"] != Job.Verdict.INVALID, -r["jobs"]))
    return {"reasons": ordered, "cells": cells}
