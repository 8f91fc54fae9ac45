"""A sampled on-CPU profile of the target server (perf) during each job's steady window, where a campaign asks for
one and the server runs on the client host: parsed from perf's report, merged per cell by samples, shown beside the
baseline cell's in the side panel; never taken of a server elsewhere; off by default. The real test profiles this
machine's MariaDB under sysbench through a real worker."""
from __future__ import annotations

import shutil

import pytest

from campaigns import services
from campaigns.comparison import comparison_layout
from campaigns.comparison.panel import cell_details
from campaigns.comparison.selection import Selection
from campaigns.execution.metrics import Samplers
from campaigns.execution.profiles import perf_report_parse, profile_window, profiles_merged, server_processes
from campaigns.models import Campaign, Job, JobClient, Run
from campaigns.sysbench.command import Connection
from tests.conftest import record_measurement
from tests.factories import CampaignFactory, DatasetFactory, ProductFactory, ScenarioFactory, TargetFactory
from tests.helpers.waiting import wait_for

REPORT = """# To display the perf.data header info, please use --header/--header-only options.
#
# Total Lost Samples: 0
#
# Samples: 246  of event 'cpu-clock'
# Event count (approx.): 2484848460
#
# Overhead  Shared Object      Symbol
# ........  .................  ............................................................
#
    17.07%  [kernel.kallsyms]  [k] finish_task_switch.isra.0
     2.03%  libc.so.6          [.] __send
     6.91%  [kernel.kallsyms]  [k] _raw_spin_unlock_irqrestore
     2.03%  mariadbd           [.] JOIN::optimize_inner
     1.22%  mariadbd           [.] 0x0000000000854031

#
# (Tip: To set sample time separation other than 100ms with --sort time use --time-quantum)
#
"""


def test_perfs_report_is_read_by_shared_object_and_symbol_largest_first():
    samples, symbols = perf_report_parse(REPORT)
    assert samples == 246
    assert symbols[:3] == [["kernel", "finish_task_switch.isra.0", 17.07], ["kernel", "_raw_spin_unlock_irqrestore", 6.91],
                           ["libc.so.6", "__send", 2.03]]
    assert ["mariadbd", "JOIN::optimize_inner", 2.03] in symbols and len(symbols) == 5
    assert perf_report_parse("") == (0, [])
    # perf abbreviates large counts.
    assert perf_report_parse("# Samples: 12K  of event 'cpu-clock'\n")[0] == 12_000
    assert perf_report_parse("# Samples: 1.5M  of event 'cpu-clock'\n")[0] == 1_500_000


def test_only_a_database_servers_processes_and_their_children_are_profiled():
    import os

    import psutil

    postmaster = next((p for p in psutil.process_iter(["name", "ppid"]) if p.info["name"] == "postgres"
                       and psutil.Process(p.info["ppid"]).name() != "postgres"), None)
    if postmaster is None:
        pytest.skip("no PostgreSQL server runs on this machine")
    found = server_processes({postmaster.pid})
    # PostgreSQL's work is done in the postmaster's children (its backends), which count too.
    assert postmaster.pid in found and {c.pid for c in postmaster.children(recursive=True)} <= found
    # A pid that is no database server (another machine's numbering, read from a server in a container) is not.
    assert server_processes({os.getpid()}) == set()
    assert server_processes({2**22 + 12345}) == set()


def test_a_bundles_profile_is_checked_and_a_malformed_one_never_breaks_a_comparison():
    from campaigns.models.checks import profile_problem

    assert profile_problem({}) is None and profile_problem({"error": "perf is not installed"}) is None
    assert profile_problem({"samples": 5, "hz": 99, "window_s": 4.2, "symbols": [["m", "f", 1.0]], "other_pct": 99.0}) \
        is None
    assert profile_problem({"samples": "a", "symbols": []}) == "samples must be a whole number ≥ 0"
    assert profile_problem({"samples": 5, "symbols": [["x"]]}).startswith("symbols must be a list")
    assert profile_problem([]) == "must be an object"
    assert profiles_merged([{"samples": 5, "symbols": [["x"]]}, {"samples": "a", "symbols": [["m", "f", 1]]}]) is None


def test_profiles_merge_by_their_samples_and_the_window_leaves_out_the_ends():
    merged = profiles_merged([
        {"samples": 300, "symbols": [["m", "parse", 30.0], ["k", "switch", 10.0]]},
        {"samples": 100, "symbols": [["m", "parse", 10.0], ["m", "read", 50.0]]},
        {"error": "perf is not installed"},
    ])
    assert merged == {"samples": 400, "profiles": 2,
                      "symbols": [["m", "parse", 25.0], ["m", "read", 12.5], ["k", "switch", 7.5]]}
    assert profiles_merged([{"error": "x"}, {}]) is None
    assert profile_window(60) == (12.0, pytest.approx(42.0))
    assert profile_window(1) == (0.2, 1.0)


def test_a_server_elsewhere_is_never_profiled(settings):
    settings.BENCHAPP_METRICS_SAMPLING = False
    conn = Connection(driver="mysql", host="203.0.113.9", port=3306, database="sbtest", user="u", password="secret")
    remote = Samplers(job_id=1, client_index=0, conn=conn, sample_server=True, same_host=False, profile_time_s=30)
    remote.start(pid=1)
    assert remote.profiler is None and remote.profile_end() == {}
    # Asked for nothing, nothing is taken even on the server's own host.
    local = Samplers(job_id=1, client_index=0, conn=conn, sample_server=True, same_host=True, profile_time_s=0)
    local.start(pid=1)
    assert local.profiler is None


@pytest.mark.django_db
def test_profiling_is_off_by_default_and_set_through_the_api(admin_client):
    assert CampaignFactory().profile_server is False
    made = admin_client.post("/api/v1/campaigns/", {"name": "profiled", "threads": [1], "profile_server": True},
                             content_type="application/json")
    assert made.status_code == 201 and made.json()["profile_server"] is True
    assert Campaign.objects.get(pk=made.json()["id"]).profile_server
    refused = admin_client.post("/api/v1/campaigns/", {"name": "profiled 2", "threads": [1], "profile_server": "maybe"},
                                content_type="application/json")
    assert refused.status_code == 400 and "profile_server" in refused.json()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf (Debian's linux-perf) is not installed")
def test_the_local_servers_cpu_is_profiled_during_the_steady_window(celery_worker_process, target_databases):
    target = TargetFactory(name="profiled maria", product=ProductFactory(name="MariaDB profiled"))
    # 1,000 transactions per second: enough of the server's CPU time for tens of samples, little of make test's.
    scenario = ScenarioFactory(test="oltp_point_select", time_s=6, warmup_s=1, options={"rate": 1000},
                               dataset=DatasetFactory(name="profile 1x2000", tables=1, table_size=2000))
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1, 4], repetitions=1, quiet_s=0,
                               profile_server=True, remeasure_spoiled=False)
    run = services.campaign_launch(campaign=campaign)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=240, what="the profiled run to end")
    jobs = list(Job.objects.filter(run=run).order_by("threads"))
    assert [j.status for j in jobs] == [Job.Status.SUCCEEDED] * 2, [(j.status, j.error) for j in jobs]
    for job in jobs:
        (client,) = JobClient.objects.filter(job=job)
        profile = client.profile
        assert "error" not in profile, profile
        # 99 Hz of the server's on-CPU time over 70 % of 6 s: tens of samples at one thread, more at four.
        assert profile["samples"] >= 5 and profile["hz"] == 99 and profile["window_s"] == pytest.approx(4.2), profile
        assert any(dso == "mariadbd" for dso, _symbol, _pct in profile["symbols"]), profile["symbols"][:10]
        # (perf rounds each share to 0.01: forty of them may sum a little over 100, "other" then 0.)
        assert sum(pct for *_, pct in profile["symbols"]) + profile["other_pct"] == pytest.approx(100, abs=1)
    layout = comparison_layout(Selection(runs=[run.pk]))
    panels = cell_details(layout)["cells"]
    assert len(panels) == 2 and all(p["profile"]["samples"] >= 5 for p in panels.values()), panels
    record_measurement("server profile: " + ", ".join(f"{j.threads} threads {JobClient.objects.get(job=j).profile['samples']}"
                                                      " samples" for j in jobs))
