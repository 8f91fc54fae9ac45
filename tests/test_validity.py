"""The validity verdict's rules on made-up evidence (each finding at its threshold), no database."""
from __future__ import annotations

import pytest

from campaigns import validity
from campaigns.validity import Evidence, judge

STEADY = [1000.0, 1004.0, 998.0, 1001.0, 999.0, 1003.0, 997.0, 1002.0, 1000.0, 1001.0, 999.0, 1000.0]


def _codes(evidence: Evidence) -> list[tuple[str, str]]:
    findings, _ = judge(evidence)
    return [(f.code, f.level) for f in findings]


def test_a_quiet_steady_run_is_valid_with_nothing_to_say():
    findings, verdict = judge(Evidence(time_s=12, duration_s=12.0, qps=STEADY, errors_per_s=[0] * 12,
                                       reconnects_per_s=[0] * 12, client_busy_pct={"a": [40.0] * 12}))
    assert findings == [] and verdict == validity.VALID


def test_sharing_a_host_is_information_not_a_failure():
    findings, verdict = judge(Evidence(qps=STEADY, same_host=True))
    assert [(f.code, f.level) for f in findings] == [("same-host", "info")] and verdict == validity.VALID
    assert "share a host" in findings[0].message


@pytest.mark.parametrize(("busy", "steal", "code"), [
    ([95.0] * 3 + [50.0] * 9, [], "client-bound"),        # 25 % of the seconds over 90 %
    ([95.0] * 2 + [50.0] * 10, [], None),                 # 17 %: not more than a fifth
    ([50.0] * 12, [12.0] * 4 + [0.0] * 8, "host-busy"),   # steal above 10 % for a third of the run
    ([95.0] * 12, [30.0] * 12, "host-busy"),              # busy because stolen: the hypervisor's, not sysbench's
    ([90.0] * 12, [10.0] * 12, None),                     # at the thresholds, not above
])
def test_busy_client_cpus_are_client_bound_and_stolen_ones_a_host_taken_from_outside(busy, steal, code):
    findings, _ = judge(Evidence(qps=STEADY, client_busy_pct={"client-a": busy},
                                 client_steal_pct={"client-a": steal}))
    assert [f.code for f in findings if f.level == "invalid"] == ([code] if code else [])
    if code == "host-busy":
        assert "steal above 10 % for" in findings[0].message and "other processes" not in findings[0].message
        assert "hypervisor" in findings[0].message


def test_the_server_disagreeing_by_more_than_5_percent_is_invalid_and_short_runs_are_not_checked():
    base = {"qps": STEADY, "server_measure": "queries", "sysbench_total": 100_000.0}
    assert _codes(Evidence(**base, server_total=104_000.0, window_s=60)) == []
    findings, verdict = judge(Evidence(**base, server_total=112_000.0, window_s=60))
    assert [(f.code, f.figure) for f in findings] == [("server-disagrees", "+12.0 %")] and verdict == "invalid"
    assert "112,000 queries" in findings[0].message
    assert _codes(Evidence(**base, server_total=150_000.0, window_s=20)) == [("server-not-checked", "info")]


def test_a_trend_or_noise_in_the_last_half_is_not_settled_and_short_runs_are_too_short_to_judge():
    rising = STEADY[:6] + [1000.0, 1020.0, 1040.0, 1060.0, 1080.0, 1100.0]
    assert _codes(Evidence(qps=rising)) == [("not-settled", "suspect")]
    noisy = STEADY[:6] + [900.0, 1100.0, 1000.0, 1000.0, 1100.0, 900.0]  # no trend, CV 8.9 %
    findings, _ = judge(Evidence(qps=noisy, noise_cv_pct=5.0))
    assert [(f.code, f.figure) for f in findings] == [("not-settled", "CV 8.9 %")]
    assert _codes(Evidence(qps=noisy, noise_cv_pct=10.0)) == []
    assert _codes(Evidence(qps=STEADY[:9])) == [("too-short", "info")]
    # A large fitted slope that the noise explains (CV within the setting) is not a trend.
    chance = STEADY[:6] + [950.0, 1060.0, 930.0, 1070.0, 980.0, 1050.0]
    assert validity.trend_pct(chance[6:]) > 5 and abs(validity.trend_t(chance[6:])) < validity.TREND_T
    assert _codes(Evidence(qps=chance, noise_cv_pct=10.0)) == []


def test_errors_reconnects_cold_cache_overrun_shared_each_say_so():
    assert _codes(Evidence(qps=STEADY, errors_per_s=[0.0] * 11 + [3.0])) == [("errors", "suspect")]
    assert _codes(Evidence(qps=STEADY, reconnects_per_s=[1.0] * 12)) == [("reconnects", "suspect")]
    assert _codes(Evidence(qps=STEADY, full_cache=True, cache_hit_ratio=0.95)) == [("cache-cold", "suspect")]
    assert _codes(Evidence(qps=STEADY, full_cache=True, cache_hit_ratio=0.995)) == []
    assert _codes(Evidence(qps=STEADY, full_cache=False, cache_hit_ratio=0.5)) == []
    assert _codes(Evidence(qps=STEADY, time_s=60, duration_s=67.0)) == [("overran", "suspect")]
    assert _codes(Evidence(qps=STEADY, time_s=60, duration_s=65.0)) == []
    assert _codes(Evidence(qps=STEADY, shared_with=["job #3 of run #2 (nightly)"])) == [("shared", "invalid")]
    # The banner names what was shared: the client host is not "the target".
    host = validity.judge(Evidence(qps=STEADY, shared_host_with=["job #4 of run #2 (nightly)"]))[0]
    assert [(f.code, f.level) for f in host] == [("shared-host", "invalid")]
    assert "same client host" in host[0].message
    assert validity.reason("shared-host") == "another job used the client host at the same time"


@pytest.mark.parametrize(("job_qps", "clients", "off"), [
    (3000.0, [1000.0, 2000.0], False),        # the sum
    (3014.0, [1000.0, 2000.0], False),        # within 0.5 %
    (3100.0, [1000.0, 2000.0], True),         # a client's figures left out of the job's, or counted twice
    (3100.0, [3000.0], False),                # one client: nothing to sum
    (3100.0, [1000.0, None], False),          # a client without a summary: nothing to check against
])
def test_a_multi_client_job_whose_figure_is_not_the_sum_of_its_clients_is_invalid(job_qps, clients, off):
    findings, verdict = judge(Evidence(qps=STEADY, job_rates={"qps": job_qps}, client_rates={"qps": clients}))
    assert [(f.code, f.level) for f in findings] == ([("client-sum", "invalid")] if off else [])
    if off:
        assert verdict == validity.INVALID and "is not the sum of its 2 clients' (3000.0)" in findings[0].message


def test_the_verdict_is_the_worst_finding_and_a_cell_takes_the_worst_of_its_jobs():
    _, verdict = judge(Evidence(qps=STEADY, same_host=True, errors_per_s=[1.0] * 12,
                                shared_with=["job #1"]))
    assert verdict == "invalid"
    assert validity.worst(["valid", "suspect", "valid"]) == "suspect"
    assert validity.worst(["valid", "", "invalid"]) == "invalid"
    assert validity.worst(["", ""]) == ""


def test_the_trend_is_the_fitted_change_over_the_span():
    assert validity.trend_pct([100.0, 101.0, 102.0, 103.0, 104.0]) == pytest.approx(4.0)
    assert validity.trend_pct([5.0, 5.0, 5.0]) == 0.0
    # A fall is a share of where it fell from: 470 → 100 TPS is −78.7 %, not −191.9 % (of the mean).
    falling = [470.0 - 370.0 * i / 9 for i in range(10)]
    assert validity.trend_pct(falling) == pytest.approx(-78.72, abs=0.01)
    findings, _ = validity.judge(Evidence(qps=[470.0] * 10 + falling))
    settled = next(f for f in findings if f.code == "not-settled")
    assert settled.figure == "-78.7 %" and "fell by 78.7 %" in settled.message


# ---------------------------------------------------------------- verdicts where results are shown


def _cell_data():
    from tests.factories import JobFactory, JobResultFactory, RunFactory, ScenarioFactory, TargetFactory

    target, scenario, run = TargetFactory(), ScenarioFactory(), RunFactory()
    verdicts = {8: ["valid", "valid"], 16: ["valid", "invalid"], 32: ["suspect", "valid"], 64: ["", ""]}
    for threads, levels in verdicts.items():
        for repetition, verdict in enumerate(levels, start=1):
            job = JobFactory(run=run, target=target, scenario=scenario, threads=threads, repetition=repetition,
                             verdict=verdict, findings=[{"code": "shared", "level": verdict, "figure": "1 job(s)",
                                                         "message": "Another benchapp job used the target"}]
                             if verdict == "invalid" else [])
            JobResultFactory(job=job, qps=1000.0 * threads)
    return target, run


@pytest.mark.django_db
def test_a_comparison_cell_carries_the_worst_verdict_of_its_jobs_and_the_switch_leaves_out_the_doubtful():
    from campaigns.comparison.query import comparison_build

    target, run = _cell_data()
    rows = comparison_build(run_ids=[run.pk])["groups"][0]["rows"]
    assert {r["threads"]: r["cells"][0]["verdict"] for r in rows} == {8: "valid", 16: "invalid", 32: "suspect",
                                                                      64: ""}
    trusted = comparison_build(run_ids=[run.pk], trusted_only=True)
    assert [r["threads"] for r in trusted["groups"][0]["rows"]] == [8, 64] and trusted["cells_left_out"] == 2


@pytest.mark.django_db
def test_the_api_csv_and_the_page_show_verdicts_and_honour_trusted_only(admin_client):
    import csv
    import io

    target, run = _cell_data()
    data = admin_client.get(f"/api/v1/comparisons/?runs={run.pk}&trusted_only=true").json()
    assert [r["threads"] for r in data["groups"][0]["rows"]] == [8, 64]
    text = b"".join(admin_client.get(f"/api/v1/comparisons/?runs={run.pk}&format=csv").streaming_content).decode()
    assert {row["threads"]: row["verdict"] for row in csv.DictReader(io.StringIO(text))} == {
        "8": "valid", "16": "invalid", "32": "suspect", "64": ""}
    page = admin_client.get(f"/compare/?runs={run.pk}").content.decode()
    assert 'class="badge verdict-invalid"' in page and 'class="badge verdict-suspect"' in page
    trusted = admin_client.get(f"/compare/?runs={run.pk}&trusted_only=on").content.decode()
    assert 'data-verdict="invalid"' not in trusted and "2 such cells left out" in trusted
    export = list(csv.DictReader(io.StringIO(admin_client.get(f"/compare/comparison.csv?runs={run.pk}")
                                             .content.decode())))
    assert sorted(row["verdict"] for row in export) == ["", "invalid", "suspect", "valid"]
    markdown = admin_client.get(f"/compare/comparison.md?runs={run.pk}").content.decode()
    assert "(invalid: another job used the target at the same time)" in markdown
    assert "(suspect: see the job's findings)" in markdown


@pytest.mark.django_db
def test_the_job_page_and_api_show_the_findings_and_the_run_page_the_jobs_left_out_of_regressions(admin_client):
    from campaigns.models import Job

    target, run = _cell_data()
    job = Job.objects.get(run=run, threads=16, verdict="invalid")
    page = admin_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'data-verdict="invalid"' in page and "Another benchapp job used the target" in page
    assert admin_client.get(f"/api/v1/jobs/{job.pk}/").json()["findings"][0]["code"] == "shared"
    metrics = admin_client.get(f"/api/v1/jobs/{job.pk}/metrics/").json()
    assert metrics["verdict"] == "invalid" and metrics["hosts"] == [] and metrics["server"]["t"] == []
    assert admin_client.get(f"/api/v1/jobs/?run={run.pk}").json()["results"][0]["verdict"] in (
        "valid", "invalid", "suspect", "")
    run_page = admin_client.get(f"/runs/{run.pk}/").content.decode()
    assert "1 job of this run was left out of the regression check" in run_page


@pytest.mark.django_db
def test_the_regression_check_ignores_invalid_jobs():
    from django.utils import timezone

    from campaigns import monitoring
    from campaigns.models import Job, JobResult, Run
    from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

    target, scenario = TargetFactory(), ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])

    def history(values: list[float], verdict: str = "valid") -> Run:
        run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=Run.Trigger.SCHEDULED,
                                 started_at=timezone.now(), finished_at=timezone.now())
        for value in values:
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=8,
                                     status=Job.Status.SUCCEEDED, verdict=verdict)
            JobResult.objects.create(job=job, qps=value, tps=value / 20, latency_pct_ms=10.0, latency_pct=95.0)
        return run

    for value in (10000, 10300, 9700, 10150, 9850):
        history([value])
    assert monitoring.run_evaluate(run=history([9000], verdict="invalid")) == []  # a busy client, not a regression
    assert len(monitoring.run_evaluate(run=history([9000]))) == 1


def test_errors_a_workload_declares_are_counted_but_only_those_beyond_make_a_job_suspect():
    # TPC-C's 1 % NewOrder rollbacks are sysbench errors; at 100 TPS that is about 1 a second.
    within = Evidence(qps=STEADY, errors_per_s=[1.0, 0.0, 2.0] * 4, expected_errors_per_s=1.0,
                      expected_errors_pct=1.0)
    findings, verdict = judge(within)
    assert [(f.code, f.level) for f in findings] == [("errors-expected", "info")] and verdict == "valid"
    assert "within the 1.00/s the workload declares as part of it (1 per 100 transactions)" in findings[0].message
    beyond = Evidence(qps=STEADY, errors_per_s=[5.0] * 12, expected_errors_per_s=1.0, expected_errors_pct=1.0)
    findings, verdict = judge(beyond)
    assert [(f.code, f.level) for f in findings] == [("errors", "suspect")] and verdict == "suspect"
    assert "above the 1.00/s the workload declares" in findings[0].message
    # Without a declared rate every error counts, as before.
    assert _codes(Evidence(qps=STEADY, errors_per_s=[1.0] * 12)) == [("errors", "suspect")]


def test_a_host_crowded_by_other_processes_is_said_so_before_its_steal_and_steal_alone_is_the_hypervisors():
    n = len(STEADY)
    base = {"qps": STEADY, "client_busy_pct": {"vm": [99.0] * n}, "client_idle_pct": {"vm": [1.0] * n},
            "client_sysbench_pct": {"vm": [30.0] * n}, "client_server_pct": {"vm": [20.0] * n},
            "client_cores": {"vm": 2}, "client_top_other": {"vm": ["python"] * n},
            "client_top_other_pct": {"vm": [100.0] * n}}
    crowded, _ = judge(Evidence(**base, client_others_pct={"vm": [120.0] * n}, client_steal_pct={"vm": [20.0] * n}))
    (finding,) = [f for f in crowded if f.level == "invalid"]
    assert finding.code == "host-busy" and "other processes" in finding.message and "`python`" in finding.message
    # Nothing else on the host: its idle time went to the hypervisor, never called sysbench's saturation.
    stolen, _ = judge(Evidence(**base, client_others_pct={"vm": [5.0] * n}, client_steal_pct={"vm": [40.0] * n}))
    assert [(f.code, "hypervisor" in f.message) for f in stolen if f.level == "invalid"] == [("host-busy", True)]


def test_clients_claiming_more_work_than_benchapps_server_saw_the_target_do_are_invalid():
    """The server's own count spans the job's start to its close, so an honest claim is never above it; a forged one
    (the attack: a client host turned 1,544 QPS into 99,999) is, and the job ends invalid naming both figures."""
    base = {"qps": STEADY, "server_measure": "queries"}
    assert _codes(Evidence(**base, server_work_total=100_000.0, server_work_claimed=100_000.0)) == []
    assert _codes(Evidence(**base, server_work_total=130_000.0, server_work_claimed=100_000.0)) == []  # it did more
    assert _codes(Evidence(**base, server_work_total=100_000.0, server_work_claimed=110_000.0)) == []  # within slack
    findings, verdict = judge(Evidence(**base, server_work_total=92_640.0, server_work_claimed=5_999_940.0))
    assert [(f.code, f.level) for f in findings] == [("server-contradicts-clients", "invalid")]
    assert verdict == "invalid"
    assert "5,999,940 queries" in findings[0].message and "92,640" in findings[0].message
    assert _codes(Evidence(**base, server_work_total=None, server_work_claimed=5_999_940.0)) == []  # not read
    # A host test has no target server: never judged by it.
    assert _codes(Evidence(**base, server_work_total=10.0, server_work_claimed=1e6, host_test=True)) == []
