"""A small measured world at distinctive addresses (share-link tests look for them in what is shown)."""
from __future__ import annotations

import re
from typing import Any

from django.test import Client

from campaigns.models import Campaign, ClientHost, JobClient, Run
from campaigns.sysbench.command import Connection, build_argv, format_command
from tests.factories import (
    InstanceSpecFactory,
    JobFactory,
    JobResultFactory,
    ProductFactory,
    ScenarioFactory,
    TargetFactory,
)

HOSTS = ("db-alpha-7f3a.internal.example", "10.77.31.204")


PORTS = (33917, 45821)


USERS = ("sbuser_51xq", "sbuser_62yr")


DATABASES = ("sbdb_73yz", "sbdb_84za")


CLIENT_HOSTS = ("loadgen-9c2e-east", "loadgen-4d1f-west")


SECRETS = (*HOSTS, *(str(p) for p in PORTS), *USERS, *DATABASES, *CLIENT_HOSTS)


def share_command(target: Any, threads: int) -> str:
    conn = Connection(driver=target.driver, host=target.host, port=target.port, database=target.database,
                      user=target.user, password="pw-never-shown")
    return format_command(build_argv(sysbench="sysbench", test="oltp_point_select", command="run", connection=conn,
                                     tables=2, table_size=1000, options={}, threads=threads, time_s=3,
                                     report_interval_s=1, percentile=95, histogram=True))


def make_world() -> dict[str, Any]:
    """Two products on two targets at distinctive addresses, measured by one run from two named client hosts."""
    spec = InstanceSpecFactory(label="4-core share spec")
    scenario = ScenarioFactory(name="share point select")
    campaign = Campaign.objects.create(name="share campaign", threads=[4, 8])
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED)
    targets = []
    for index, (product_name, qps) in enumerate((("ShareDB Alpha", 1000.0), ("ShareDB Beta", 1300.0))):
        target = TargetFactory(name=f"share target {index}", product=ProductFactory(name=product_name), spec=spec,
                               host=HOSTS[index], port=PORTS[index], user=USERS[index], database=DATABASES[index])
        targets.append(target)
        for threads in (4, 8):
            job = JobFactory(run=run, target=target, scenario=scenario, threads=threads,
                             command_line=share_command(target, threads),
                             server_snapshot={"before": {"version": f"10.11.6-MariaDB on {HOSTS[index]}",
                                                         "settings": {"max_connections": "151",
                                                                      "port": str(PORTS[index])}}})
            JobResultFactory(job=job, qps=qps * threads / 4)
            JobClient.objects.create(job=job, index=0, host_name=CLIENT_HOSTS[index], threads=threads)
    for name in CLIENT_HOSTS:
        ClientHost.objects.create(hostname=name, queue=f"host.{name}", cores=8, memory_gb=16)
    return {"targets": targets, "run": run, "scenario": scenario, "campaign": campaign,
            "query": f"targets={targets[0].pk}&targets={targets[1].pk}"}


def share_link_create(client: Client, query: str, shows: str = "comparison", days: str = "7") -> Any:
    return client.post(f"/compare/share/?{query}", {"shows": shows, "expires_in_days": days})


def share_link_url(response: Any) -> str:
    match = re.search(r'value="(http://testserver/s/[A-Za-z0-9_-]+/)"', response.content.decode())
    assert match, response.content.decode()[:2000]
    return match.group(1).removeprefix("http://testserver")

