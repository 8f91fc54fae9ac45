"""Rules of rows that host tests add to the core models (docs/host-tests.md): a target that is a client host, and
a client host's own speed (ClientHost.self_measurement), as pages show it."""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from campaigns.sysbench.catalogue import TESTS
from campaigns.sysbench.hosttests import host_bounds_problem, host_options_problem

if TYPE_CHECKING:
    from campaigns.models.core import Scenario, Target


def client_host_target_problems(target: Target) -> dict[str, str]:
    """Per field, why a client-host target cannot be saved: its host must be a registered client host's name,
    and it has no database endpoint (driver, port, database, user, password) to keep."""
    from campaigns.models.core import ClientHost

    problems: dict[str, str] = {}
    if not target.host:
        problems["host"] = "the client host's name is required"
    elif not ClientHost.objects.filter(hostname=target.host).exists():
        known = ", ".join(ClientHost.objects.order_by("hostname").values_list("hostname", flat=True)[:20]) or "none"
        problems["host"] = (f"no client host is registered as {target.host!r} (registered: {known}); a host "
                            "registers when its worker joins")
    for name in ("driver", "port", "database", "user"):
        if getattr(target, name) not in (None, ""):
            problems[name] = "a client-host target has no database: leave it empty"
    if target.has_password():
        problems["password"] = "a client-host target has no database: it takes no password"
    return problems


def self_measurement_text(measurement: dict[str, Any] | None) -> str:
    """"cpu 1,234 events/s, memory 5,678 MiB/s, measured 2026-11-27 03:10", or "" before the first measurement."""
    if not measurement or measurement.get("cpu_events_per_s") is None:
        return ""
    parts = [f"cpu {measurement['cpu_events_per_s']:,.0f} events/s"]
    if measurement.get("memory_mib_per_s") is not None:
        parts.append(f"memory {measurement['memory_mib_per_s']:,.0f} MiB/s")
    when = measurement.get("measured_at")
    if when:
        at = timezone.localtime(datetime.fromisoformat(when)).strftime("%Y-%m-%d %H:%M")
        parts.append(f"measured {at}")
    return ", ".join(parts)


def host_scenario_clean(scenario: Scenario) -> None:
    """A host test's scenario (options already validated): fileio's mode and size limit, no table DDL; and no
    dataset preparation or cleanup of tables, which it has none of (fileio prepares and removes its files itself,
    per job), so prepare_mode and cleanup are set to never and keep."""
    spec = TESTS.get(scenario.test)
    if spec is None or not spec.host:
        return
    if scenario.table_ddl:
        raise ValidationError({"table_ddl": f"{scenario.test} is a host test: it creates no tables"})
    problem = host_options_problem(scenario.test, scenario.options, max_file_bytes=settings.BENCHAPP_HOSTTEST_MAX_BYTES)
    if problem is None:
        # One thread on the largest client host known: a campaign checks its own threads on its own hosts.
        from campaigns.models.core import ClientHost

        largest = ClientHost.objects.exclude(memory_gb=0).order_by("-memory_gb").first()
        if largest is not None:
            problem = host_bounds_problem(scenario.test, scenario.options, threads=1,
                                          memory_bytes=int(largest.memory_gb * 2**30),
                                          host=f"the largest client host, {largest.hostname}")
    if problem is not None:
        raise ValidationError({"options": f"{problem[0]}: {problem[1]}"})
    scenario.prepare_mode = scenario.PrepareMode.NEVER
    scenario.cleanup = scenario.Cleanup.KEEP


def runs_on(target: Target, scenario: Scenario) -> bool:
    """Whether a campaign pairs this target with this scenario: host tests run on client-host targets only, the
    database tests on database targets only (the other pairs are no job)."""
    spec = TESTS.get(scenario.test)
    return target.is_client_host() == bool(spec is not None and spec.host)
