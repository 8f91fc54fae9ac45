"""What ran out, when it is the client host: a workload of the test's own that spends each event in sysbench's Lua
and sends one trivial query (tests/data/workloads/spin), at four times as many threads as this machine has cores.
Validity calls its jobs client-bound, and the comparison names the client host as the cell's bound, with its
evidence, and says the figures are the client's."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from campaigns import roles
from campaigns.models import Job, Run
from tests.conftest import record_measurement
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, TargetFactory
from tests.helpers.users import API, client_for, make_user
from tests.helpers.waiting import wait_for
from tests.helpers.workloads import workload_approved

SPIN = Path(__file__).resolve().parent / "data" / "workloads" / "spin" / "spin.lua"

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


# alone: the client host must be busy with sysbench only; beside make test's other processes its CPUs are busy with
# them too, which validity rightly calls a crowded host, not a saturated client.
@pytest.mark.alone
@pytest.mark.timeout(300)
def test_a_saturated_client_host_is_named_as_what_ran_out(celery_worker_process, target_databases):
    operator = make_user(roles.OPERATOR, "spin-op")
    api = client_for(operator)
    uploaded = workload_approved(api, {"name": "spin", "entry": "spin.lua", "files": {"spin.lua": SPIN.read_text()}},
                                 admin="spin-admin")
    dataset = DatasetFactory(name="spin, no tables", tables=1, table_size=1)
    scenario = api.post(f"{API}/scenarios/", {
        "name": "spin", "workload_version": uploaded["id"], "dataset": dataset.pk, "time_s": 8, "warmup_s": 1,
        "prepare_mode": "never", "cleanup": "keep"}, format="json")
    assert scenario.status_code == 201, scenario.content
    target = TargetFactory(name="spin-maria", product=ProductFactory(name="MariaDB spin"), workloads_allowed=True,
                           spec=InstanceSpecFactory(label="spin spec", cpu_cores=2, memory_gb=4.0))
    threads = 4 * (os.cpu_count() or 2)
    created = api.post(f"{API}/campaigns/", {
        "name": "spin", "targets": [target.pk], "scenarios": [scenario.json()["id"]], "threads": [threads],
        "repetitions": 2, "quiet_s": 0, "remeasure_spoiled": False, "confirm_alarms": False}, format="json")
    assert created.status_code == 201, created.content
    launched = api.post(f"{API}/campaigns/{created.json()['id']}/launch/")
    assert launched.status_code in (200, 201, 202), launched.content
    run = Run.objects.get(pk=launched.json()["id"])
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=240, what="the run to end")
    jobs = list(run.jobs.order_by("position"))
    assert all(j.status == Job.Status.SUCCEEDED for j in jobs), [(j.status, j.error) for j in jobs]
    codes = [sorted(f["code"] for f in j.findings if f["level"] == "invalid") for j in jobs]
    assert all("client-bound" in c for c in codes), [j.findings for j in jobs]

    compared = api.get(f"{API}/comparisons/?runs={run.pk}").json()
    ((row,),) = [g["rows"] for g in compared["groups"]]
    (cell,) = row["cells"]
    assert cell["bound"]["resource"] == "client", cell["bound"]
    assert "sysbench saturated the client host's CPUs" in cell["bound"]["evidence"], cell["bound"]
    assert "the figures are the client's, not the server's" in cell["bound"]["evidence"]
    record_measurement(f"client-bound: {threads} threads of spin.lua, {cell['qps']['value']:,.0f} QPS; bound "
                       f"{cell['bound']['evidence']}")
