"""A workload of one's own on the host that runs it: its files from the database into the local cache.

Client hosts share no file system with the server: each one writes a version's files from the database into
BENCHAPP_WORKLOAD_DIR/<content hash>/ the first time it runs it (campaigns.sysbench.workloads.workload_materialize)
and gives sysbench the entry script's absolute path; the runner sets LUA_PATH to that folder, so `require`
finds the other files.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings

from campaigns.models import Scenario
from campaigns.sysbench.workloads import WorkloadError, counting_wrapper, workload_materialize


class WorkloadUnavailable(Exception):
    """The workload's files could not be written on this host (the message says why)."""


def scenario_test(scenario: Scenario) -> Any:
    """What build_argv takes as the test: a bundled test's name, or the workload version's spec whose script
    is the entry's path in this host's cache."""
    version = scenario.workload_version
    if version is None:
        return scenario.test
    function = version.workload.counted_function
    try:
        generated = dict([counting_wrapper(entry=version.entry, function=function)]) if function else {}
        entry_path = workload_materialize(cache_dir=settings.BENCHAPP_WORKLOAD_DIR, digest=version.content_hash,
                                          files=version.files, entry=version.entry, generated=generated)
    except (WorkloadError, OSError) as exc:
        raise WorkloadUnavailable(f"workload {version} could not be written on {settings.BENCHAPP_HOSTNAME}: "
                                  f"{exc}") from None
    if generated:  # sysbench runs the wrapper beside the entry, which loads the entry itself
        entry_path = entry_path.parent / next(iter(generated)).rpartition("/")[2]
    return version.test_spec(str(entry_path))


def workload_refusal(*, target: Any, scenario: Scenario) -> str | None:
    """Why the scenario's uploaded workload may not run on the target now ("" rules as at launch: the target
    allows uploaded workloads, and an admin or its owner approved the version), or None."""
    from campaigns.models.workloads import version_not_approved

    version = scenario.workload_version
    if version is None:
        return None
    if not target.workloads_allowed:
        return (f"target '{target.name}' does not allow uploaded workloads (scenario '{scenario.name}' runs "
                f"{scenario.test}): its owner or an admin may allow them")
    problem = version_not_approved(version=version, target=target)
    return f"scenario '{scenario.name}': {problem}" if problem else None


def scenario_runs_command(scenario: Scenario, command: str) -> bool:
    """Whether sysbench has `command` (prepare, cleanup) for the scenario: always for a bundled test, for a
    workload only when its entry script defines it (sysbench would fail on one it does not)."""
    version = scenario.workload_version
    return version is None or command in (version.commands or [])
