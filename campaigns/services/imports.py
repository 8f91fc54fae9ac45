"""Importing sysbench logs made outside benchapp as a run of their own."""
from __future__ import annotations

from typing import Any

from django.db import transaction

from campaigns.execution import transitions
from campaigns.execution.results import result_store, samples_bulk_store
from campaigns.execution.verdict import job_judge
from campaigns.models import Campaign, JobResult, Run, Scenario, Target
from campaigns.services.campaigns import campaign_create, campaign_update
from campaigns.sysbench import parser


class ImportRejected(ValueError):
    """An uploaded file is not usable sysbench output; the message names the file and why."""


def results_import(*, files: list[tuple[str, str]], target: Target, scenario: Scenario, user: Any = None) -> Run:
    """Stores sysbench logs produced outside benchapp as an imported run, one job per file.

    Every file is checked first; if any is refused, nothing at all is stored. The run's status follows
    its jobs by the same rule as a measured run's (a log that ends early is a failed job), and each
    result is stored by the same function, with the same steady-state rule, as a measured job's.
    """
    parsed_files = []
    for name, text in files:
        if "\x00" in text:
            raise ImportRejected(f"{name}: binary data, not sysbench output")
        if not parser.looks_like_sysbench_output(text):
            raise ImportRejected(f"{name}: not sysbench output (no sysbench banner, report lines or statistics)")
        parsed = parser.parse_output(text)
        if parsed.summary is None and not parsed.intervals:
            raise ImportRejected(f"{name}: sysbench output without any figures (no report lines, no final statistics)")
        parsed_files.append((name, text, parsed))
    name = f"Imported logs: {target.name} / {scenario.name}"[:200]
    campaign = Campaign.objects.filter(name=name).first()
    if campaign is None:
        campaign = campaign_create(user=user, name=name, targets=[target], scenarios=[scenario],
                                   description="Results imported from sysbench logs made outside benchapp.")
    elif not (campaign.targets.filter(pk=target.pk).exists() and campaign.scenarios.filter(pk=scenario.pk).exists()):
        campaign = campaign_update(campaign=campaign, user=user, targets=[*campaign.targets.all(), target],
                                   scenarios=[*campaign.scenarios.all(), scenario])
    tables, table_size = scenario.dataset.size_for(target.spec)
    with transaction.atomic():
        run = transitions.run_create_imported(
            campaign=campaign, trigger=Run.Trigger.IMPORT,
            label=", ".join(name for name, _, _ in parsed_files)[:200],
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        for position, (name, text, parsed) in enumerate(parsed_files):
            threads = parsed.threads or (parsed.intervals[0].threads if parsed.intervals else 1)
            job = transitions.job_create_imported(
                complete=parsed.complete,
                error="" if parsed.complete else "; ".join(parsed.errors)[:2000] or "the log ends before the final statistics",
                run=run, target=target, scenario=scenario, threads=max(1, threads), position=position,
                tables=tables, table_size=table_size,
            )
            client = transitions.client_create_imported(
                complete=parsed.complete, job=job, index=0, host_name="imported", threads=job.threads,
                raw_output=text, sysbench_version=parsed.sysbench_version or "",
                summary=parsed.to_dict()["summary"] or {},
                # Only a histogram of the whole run (see parser: --report-checkpoints).
                histogram=([list(b) for b in parsed.histogram]
                           if parsed.histogram and parsed.histogram_whole_run else None),
                command_line=f"(imported from {name})",
            )
            samples_bulk_store(job_id=job.pk, client_index=0, intervals=parsed.intervals)
            result_store(job=job, clients=[client], source=JobResult.Source.IMPORTED)
            job_judge(job_id=job.pk)
        transitions.run_close(run=run)
    return run
