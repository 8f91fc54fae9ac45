"""Host tests as a user starts them (docs/host-tests.md): the dataset a host test's scenario stands on, and a host
job's line in a campaign's plan."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from campaigns.execution.hostjobs import host_phase_argv
from campaigns.execution.phases import JobFailure
from campaigns.execution.transitions import StateConflict
from campaigns.models import ClientHost, Dataset, Job
from campaigns.services.rows import row_write
from campaigns.sysbench.catalogue import TESTS
from campaigns.sysbench.command import format_command
from campaigns.sysbench.hosttests import HEADLINE_UNITS, host_bounds_problem, size_bytes

if TYPE_CHECKING:
    from campaigns.services.plans import PlannedJob

# A scenario refers to a dataset; a host test has no tables, so every host test's scenario refers to this one.
HOST_TEST_DATASET = "host test (no tables)"
# The per-job overhead of the plan's estimates (plans.JOB_OVERHEAD_S), and how fast fileio writes its files.
_OVERHEAD_S = 2.0
_FILE_PREPARE_BYTES_PER_S = 100 * 2**20


def host_test_dataset(*, user: Any = None) -> Dataset:
    """The dataset every host test's scenario refers to (one table of one row, never prepared), made once."""
    found = Dataset.objects.filter(name=HOST_TEST_DATASET).first()
    if found is not None:
        return found
    return row_write(Dataset(), {"name": HOST_TEST_DATASET, "tables": 1, "table_size": 1,
                                 "description": "host tests (cpu, memory, fileio, threads, mutex) create no tables"},
                     user=user)


def scenario_host_fields(fields: dict[str, Any], *, user: Any = None) -> dict[str, Any]:
    """A host test's scenario fields with the host-test dataset where none is given."""
    spec = TESTS.get(fields.get("test", ""))
    if spec is not None and spec.host and fields.get("dataset") is None and fields.get("dataset_id") is None:
        return {**fields, "dataset": host_test_dataset(user=user)}
    return fields


class HostTestRefused(StateConflict):
    """A host test that would take more of its client host than it may (sysbench.hosttests.host_bounds_problem):
    400 on "scenarios", naming the scenario, the host, the option and the host's figure."""


def host_bounds_check(*, planned: list[PlannedJob]) -> None:
    """Refuses a campaign (when saved and when launched) whose host test, at one of its thread counts, would take
    more of its client host's memory than it may; the host's figure is the memory it announced."""
    memory = dict(ClientHost.objects.filter(hostname__in={p.target.host for p in planned
                                                          if p.target.is_client_host()})
                  .values_list("hostname", "memory_gb"))
    seen: set[tuple[int, int, int]] = set()
    for p in planned:
        key = (p.target.pk, p.scenario.pk, p.threads)
        if not p.target.is_client_host() or key in seen:
            continue
        seen.add(key)
        memory_gb = memory.get(p.target.host) or 0
        problem = host_bounds_problem(p.scenario.test, p.scenario.options, threads=p.threads,
                                      memory_bytes=int(memory_gb * 2**30) if memory_gb else None,
                                      host=f"client host {p.target.host}")
        if problem is not None:
            raise HostTestRefused(f"scenario '{p.scenario.name}' with {p.threads} threads on client host "
                                  f"{p.target.host}: {problem[0]}: {problem[1]}")


def hostjob_plan(p: PlannedJob) -> dict[str, Any]:
    """A host job's line in the campaign's plan: its command on the client host, fileio's prepare, its estimate."""
    scenario = p.scenario
    shell_job = Job(target=p.target, scenario=scenario, threads=p.threads, tables=p.tables, table_size=p.table_size,
                    time_s=p.time_s, warmup_s=0)
    prepare_s = 0.0
    prepare_command = None
    commands: list[str] = []
    command_error = None
    try:
        commands = [format_command(host_phase_argv(job=shell_job, command="run"))]
        if scenario.test == "fileio":
            prepare_command = format_command(host_phase_argv(job=shell_job, command="prepare"))
            prepare_s = (size_bytes(str(scenario.options.get("file-total-size", "2G"))) or 0) / _FILE_PREPARE_BYTES_PER_S
    except JobFailure as exc:  # a scenario row written past the checks: shown, never run
        command_error = str(exc)
    duration_s = prepare_s + p.time_s + _OVERHEAD_S
    return {
        "position": p.position, "target": p.target.name, "target_id": p.target.pk,
        "scenario": scenario.name, "scenario_id": scenario.pk, "test": scenario.test,
        "threads": p.threads, "repetition": p.repetition, "tables": 0, "table_size": 0,
        "clients": 1, "threads_per_client": [p.threads], "client_host": p.target.host,
        "headline_unit": HEADLINE_UNITS.get(scenario.test, ""),
        "prepare_command": prepare_command, "commands": commands, "command_error": command_error,
        "table_ddl": None, "table_ddl_error": None, "estimated_prepare_s": round(prepare_s, 1),
        "prepare_note": (f"fileio writes its test files on {p.target.host} before the run and removes them after it"
                         if scenario.test == "fileio" else ""),
        "estimated_duration_s": round(duration_s, 1), "estimated_dataset_bytes": 0,
    }
