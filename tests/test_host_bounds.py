"""Host tests have bounds from the host's own facts: memory per thread × threads under half the
host's RAM, fileio's files under its free space, thread stacks capped; refused when the scenario or campaign is
saved and when it is launched, naming the option and the host's figure. The attack saved memory-block-size=1T with
memory-scope=local and 64 threads, file-block-size=1G and thread-stack-size=100G (201 each)."""
from __future__ import annotations

import pytest
from django.utils import timezone

from campaigns import roles, services
from campaigns.execution.hostjobs import host_phase_argv
from campaigns.execution.phases import JobFailure
from campaigns.models import Campaign, ClientHost, Job, Scenario, Target
from campaigns.services.hosttests import HostTestRefused
from campaigns.sysbench.catalogue import OptionError, validate_options
from campaigns.sysbench.hosttests import host_bounds_problem
from tests.helpers.users import client_for, make_user

GIB = 2**30


def test_memory_per_thread_times_threads_must_fit_in_half_the_hosts_ram():
    options = {"memory-block-size": "1T", "memory-scope": "local"}
    option, why = host_bounds_problem("memory", options, threads=64, memory_bytes=24 * GIB, host="client host vm-a")
    assert option == "memory-block-size"
    assert why == "1.0 TiB × 64 threads (memory-scope=local) = 64.0 TiB is above 50% of the RAM of client host " \
                  "vm-a (24.0 GiB)"
    # Global scope allocates one block for every thread; 4 GiB of 24 is fine, 16 GiB is not.
    assert host_bounds_problem("memory", {"memory-block-size": "4G"}, threads=64, memory_bytes=24 * GIB) is None
    assert host_bounds_problem("memory", {"memory-block-size": "16G"}, threads=1, memory_bytes=24 * GIB)[0] == \
        "memory-block-size"
    assert host_bounds_problem("fileio", {"file-block-size": GIB}, threads=64, memory_bytes=24 * GIB)[0] == \
        "file-block-size"
    assert host_bounds_problem("fileio", {"file-total-size": "900G"}, threads=1, memory_bytes=24 * GIB,
                               free_bytes=100 * GIB, host="vm-a") == \
        ("file-total-size", "900.0 GiB of test files is above the 100.0 GiB free on vm-a")
    assert host_bounds_problem("cpu", {"thread-stack-size": "32M"}, threads=1000, memory_bytes=24 * GIB)[0] == \
        "thread-stack-size"
    # Unknown memory: only the caps that need none.
    assert host_bounds_problem("memory", options, threads=64, memory_bytes=None) is None


def test_a_thread_stack_above_the_cap_is_refused_for_every_test():
    for test in ("oltp_read_write", "cpu"):
        with pytest.raises(OptionError, match="thread-stack-size.*100G per thread is above the cap of 64M"):
            validate_options(test, {"thread-stack-size": "100G"})
    assert validate_options("cpu", {"thread-stack-size": "1M"})["thread-stack-size"] == "1M"


def _host(name: str, memory_gb: float) -> Target:
    ClientHost.objects.create(hostname=name, memory_gb=memory_gb, cores=2, last_heartbeat=timezone.now())
    from tests.factories import ProductFactory

    return Target.objects.create(name=f"host {name}", kind=Target.Kind.CLIENT_HOST, host=name,
                                 product=ProductFactory(name=f"machine {name}"))


@pytest.mark.django_db
def test_the_api_refuses_the_attacks_host_tests_naming_the_option_and_the_hosts_figure():
    target = _host("vm-bounds", 24.0)
    api = client_for(make_user(roles.OPERATOR, "bounds-operator"))
    # A block no thread count fits in: refused when the scenario is saved, against the largest host known.
    refused = api.post("/api/v1/scenarios/", {"name": "huge block", "test": "memory", "time_s": 3,
                                              "options": {"memory-block-size": "1T", "memory-scope": "local"}},
                       format="json")
    assert refused.status_code == 400, refused.content
    assert "memory-block-size: 1.0 TiB is above 50% of the RAM of the largest client host, vm-bounds (24.0 GiB)" in \
        refused.json()["options"][0]
    refused = api.post("/api/v1/scenarios/", {"name": "huge stack", "test": "threads", "time_s": 3,
                                              "options": {"thread-stack-size": "100G"}}, format="json")
    assert refused.status_code == 400 and "thread-stack-size" in str(refused.json())
    # 1 G per thread is saved; a campaign running it with 64 threads on that host is not.
    made = api.post("/api/v1/scenarios/", {"name": "big block", "test": "memory", "time_s": 3,
                                           "options": {"memory-block-size": "1G", "memory-scope": "local"}},
                    format="json")
    assert made.status_code == 201, made.content
    refused = api.post("/api/v1/campaigns/", {"name": "bomb", "targets": [target.pk],
                                              "scenarios": [made.json()["id"]], "threads": [64]}, format="json")
    assert refused.status_code == 400, refused.content
    said = refused.json()["scenarios"][0]
    assert "scenario 'big block' with 64 threads on client host vm-bounds: memory-block-size: 1.0 GiB × 64 threads" \
           in said and "the RAM of client host vm-bounds (24.0 GiB)" in said
    assert not Campaign.objects.filter(name="bomb").exists()
    fine = api.post("/api/v1/campaigns/", {"name": "fine", "targets": [target.pk],
                                           "scenarios": [made.json()["id"]], "threads": [4]}, format="json")
    assert fine.status_code == 201, fine.content
    # At launch, against what the host announced since (a smaller machine under the same name).
    ClientHost.objects.filter(hostname="vm-bounds").update(memory_gb=4.0)
    with pytest.raises(HostTestRefused, match=r"memory-block-size: 1.0 GiB × 4 threads .* \(4.0 GiB\)"):
        services.campaign_launch(campaign=Campaign.objects.get(pk=fine.json()["id"]))
    launched = api.post(f"/api/v1/campaigns/{fine.json()['id']}/launch/", {}, format="json")
    assert launched.status_code == 400 and "memory-block-size" in str(launched.json())


@pytest.mark.django_db
def test_a_host_job_is_refused_on_the_host_against_its_own_ram(settings):
    target = _host("vm-small", 0)  # announced nothing: only the host itself knows
    scenario = Scenario(name="local bomb", test="memory", time_s=3,
                        options={"memory-block-size": "1G", "memory-scope": "local"})
    job = Job(target=target, scenario=scenario, threads=100_000, tables=1, table_size=1, time_s=3, warmup_s=0)
    settings.BENCHAPP_HOSTNAME = "vm-small"
    with pytest.raises(JobFailure, match="memory-block-size: 1.0 GiB × 100000 threads .* the RAM of client host vm-small"):
        host_phase_argv(job=job, command="run")
