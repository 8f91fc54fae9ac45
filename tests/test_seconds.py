"""Seconds counted once, and adding up, and a starved client host judged by who took it.

The outputs are real captured sysbench outputs from tests/data/sysbench; where a doubled or a missing second is
needed, a copy is edited in the test, as a stalled machine would have printed it (said at each edit).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from campaigns import validity
from campaigns.execution.results import DUPLICATE, REFUSED, STORED, result_store, sample_store, steady_figures
from campaigns.execution.verdict import job_judge
from campaigns.models import IntervalSample, Job, JobClient, JobResult, Run
from campaigns.services.imports import results_import
from campaigns.sysbench import parser
from campaigns.validity import Evidence, judge
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

DATA = Path(__file__).parent / "data" / "sysbench"
# 2 threads, --time=9, one report a second, every second printed ([ 1s ] … [ 9s ]).
NINE_S = (DATA / "mysql_oltp_read_write_checkpoints_whole_run.txt").read_text()
STEADY = [1000.0, 1004.0, 998.0, 1001.0, 999.0, 1003.0, 997.0, 1002.0, 1000.0, 1001.0, 999.0, 1000.0]


def _report_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if parser.parse_interval_line(line) is not None]


def _job(*, clients: int = 1, time_s: int = 9, attempt: int = 1) -> tuple[Job, list[JobClient]]:
    target, scenario = TargetFactory(), ScenarioFactory(time_s=time_s)
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    run = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING, trigger=Run.Trigger.MANUAL,
                             started_at=timezone.now())
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=2 * clients,
                             clients_needed=clients, status=Job.Status.RUNNING, attempt=attempt, time_s=time_s)
    made = [JobClient.objects.create(job=job, index=i, host_name=f"client-{i}", threads=2,
                                     status=JobClient.Status.RUNNING) for i in range(clients)]
    return job, made


def _measure(job: Job, client: JobClient, output: str) -> list[str]:
    """What the client task does with each line sysbench prints, then its close: the outcome of each line."""
    outcomes = [sample_store(job_id=job.pk, client_index=client.index, attempt=job.attempt, interval=interval)
                for line in output.splitlines() if (interval := parser.parse_interval_line(line)) is not None]
    parsed = parser.parse_output(output)
    JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.SUCCEEDED, raw_output=output,
                                                  summary=parsed.to_dict()["summary"] or {})
    return outcomes


def _close(job: Job) -> Job:
    job.refresh_from_db()
    result_store(job=job, clients=list(job.clients.order_by("index")), source=JobResult.Source.MEASURED)
    job_judge(job_id=job.pk)
    job.refresh_from_db()
    return job


def _finding(job: Job, code: str) -> dict[str, str]:
    return next(f for f in job.findings if f["code"] == code)


# ---------------------------------------------------------------- counted once, adding up


@pytest.mark.django_db
def test_a_complete_output_adds_up_to_sysbenchs_own_count_and_is_not_flagged():
    job, (client,) = _job()
    assert set(_measure(job, client, NINE_S)) == {STORED}
    job = _close(job)
    assert job.samples.count() == 9
    assert not {"per-second-incomplete", "per-second-duplicated", "per-second-gaps"} & {f["code"] for f in job.findings}


@pytest.mark.django_db
def test_a_second_printed_twice_is_stored_once_counted_and_said():
    # Edited copy: the stalled machine's report thread woke late, and the interval after [ 5s ] was labelled 5 s
    # again (sysbench rounds the elapsed time): "[ 5s ]" printed twice, "[ 6s ]" never. The copy is kept out; the
    # next second, 2 s after the kept one, weighs 2 s, so the count still adds up: said, not held against the job.
    lines = _report_lines(NINE_S)
    doubled = NINE_S.replace(lines[5], lines[5].replace("[ 6s ]", "[ 5s ]"))
    job, (client,) = _job()
    outcomes = _measure(job, client, doubled)
    assert outcomes.count(DUPLICATE) == 1 and outcomes.count(STORED) == 8
    assert sorted(job.samples.values_list("t", flat=True)) == [1, 2, 3, 4, 5, 7, 8, 9]
    job = _close(job)
    finding = _finding(job, "per-second-gaps")
    assert finding["level"] == "info"
    assert "printed 1 second(s) twice (t = 5 s), each stored once; 1 report interval(s) without a line" in \
        finding["message"]
    assert job.result.steady_qps is not None and job.samples.count() == 8


@pytest.mark.django_db
def test_a_second_printed_twice_that_does_not_add_up_is_duplicated_and_the_job_not_valid():
    # Edited copy: before the real "[ 5s ]" line, a copy of it with every figure zeroed (a report of the stalled
    # second, then the real one under the same t). The first is kept, the real one refused as a duplicate: the rows
    # lack that second's transactions.
    lines = _report_lines(NINE_S)
    stalled = parser.parse_interval_line(lines[4])
    assert stalled is not None and stalled.t == 5
    zeroed = "[ 5s ] thds: 2 tps: 0.00 qps: 0.00 (r/w/o: 0.00/0.00/0.00) lat (ms,95%): 0.00 err/s: 0.00 reconn/s: 0.00"
    doubled = NINE_S.replace(lines[4], zeroed + "\n" + lines[4])
    job, (client,) = _job()
    outcomes = _measure(job, client, doubled)
    assert outcomes.count(DUPLICATE) == 1 and job.samples.get(t=5).tps == 0
    job = _close(job)
    finding = _finding(job, "per-second-duplicated")
    assert finding["level"] == "invalid" and job.verdict == Job.Verdict.INVALID
    assert "printed 1 second(s) twice (t = 5 s)" in finding["message"]
    assert float(finding["figure"].split()[0]) < -2


@pytest.mark.django_db
def test_seconds_missing_at_the_end_make_the_per_second_figures_incomplete():
    # Edited copy: the lines of [ 5s ] … [ 9s ] removed, as an overloaded machine printed none of them (the
    # summary still counts every transaction of the 9 s).
    cut = "\n".join(line for line in NINE_S.splitlines()
                    if (i := parser.parse_interval_line(line)) is None or i.t <= 4)
    job, (client,) = _job()
    _measure(job, client, cut)
    job = _close(job)
    finding = _finding(job, "per-second-incomplete")
    assert finding["level"] == "invalid" and job.verdict == Job.Verdict.INVALID
    assert float(finding["figure"].split()[0]) < -30
    assert "4 report interval(s) without a line" in finding["message"]


# Every captured real output with report lines and a summary (the *_v05_* files were reconstructed, not captured).
MEASURED = sorted(p.name for p in DATA.glob("*.txt") if "_v05_" not in p.name
                  and (out := parser.parse_output(p.read_text())).summary is not None and out.intervals)


@pytest.mark.parametrize("name", MEASURED)
def test_every_captured_real_output_adds_up_to_its_own_count(name):
    # Real runs of 2–9 s whose last second sysbench often left unreported: each must add up within the rule.
    parsed = parser.parse_output((DATA / name).read_text())
    assert parsed.summary is not None
    first = {}
    for interval in parsed.intervals:
        first.setdefault(interval.t, (interval.t, interval.tps, interval.qps))
    account = validity.seconds_account(
        seconds=list(first.values()), printed_t=[i.t for i in parsed.intervals], interval_s=1,
        transactions=parsed.summary.transactions, queries=parsed.summary.queries,
        duration_s=parsed.summary.duration_s)
    assert abs(account.off_pct() or 0) <= validity.SECONDS_SUM_PCT and not account.duplicated, account


@pytest.mark.django_db
def test_a_printed_second_that_was_not_stored_makes_the_figures_incomplete():
    job, (client,) = _job()
    _measure(job, client, NINE_S)
    job.samples.filter(t=5).delete()  # as a write lost on its way would leave it
    job = _close(job)
    finding = _finding(job, "per-second-incomplete")
    assert finding["level"] == "invalid" and finding["figure"] == "1 second(s) not stored"
    assert "(t = 5 s)" in finding["message"]


def test_a_late_report_that_covers_the_seconds_it_skipped_still_adds_up():
    # Edited copy: [ 4s ] … [ 6s ] not printed and [ 7s ] covering them (its rate over 4 s, as sysbench computes a
    # late report's), so the count still adds up: said as information, not held against the job.
    parsed = parser.parse_output(NINE_S)
    rows = [(i.t, i.tps, i.qps) for i in parsed.intervals if not 4 <= i.t <= 7]
    covered = [i for i in parsed.intervals if 4 <= i.t <= 7]
    rows.append((7.0, sum(i.tps for i in covered) / 4, sum(i.qps for i in covered) / 4))
    summary = parsed.summary
    assert summary is not None
    account = validity.seconds_account(seconds=rows, printed_t=[t for t, _, _ in rows], interval_s=1,
                                       transactions=summary.transactions, queries=summary.queries,
                                       duration_s=summary.duration_s)
    assert account.missing == 3 and abs(account.off_pct() or 0) < validity.SECONDS_SUM_PCT
    codes = [(f.code, f.level) for f in judge(Evidence(qps=STEADY, seconds={"client-a": account}))[0]]
    assert codes == [("per-second-gaps", "info")]


@pytest.mark.django_db
def test_samples_of_a_job_that_no_longer_runs_or_of_an_earlier_attempt_are_refused():
    job, (client,) = _job(attempt=2)
    first = parser.parse_interval_line(_report_lines(NINE_S)[0])
    assert first is not None
    assert sample_store(job_id=job.pk, client_index=0, attempt=1, interval=first) == REFUSED  # a lost attempt's
    assert sample_store(job_id=job.pk, client_index=0, attempt=2, interval=first) == STORED
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED)  # failed elsewhere: its lost client goes on
    later = parser.parse_interval_line(_report_lines(NINE_S)[1])
    assert later is not None
    assert sample_store(job_id=job.pk, client_index=0, attempt=2, interval=later) == REFUSED
    assert list(IntervalSample.objects.filter(job=job).values_list("attempt", "t")) == [(2, 1.0)]


@pytest.mark.django_db
def test_the_steady_figures_count_only_seconds_every_client_reported_and_no_idle_seconds_after_the_run():
    job, (one, two) = _job(clients=2, time_s=9)
    lines = _report_lines(NINE_S)
    _measure(job, one, NINE_S)
    # Client 1: the same real output, its last line ([ 9s ]) not printed (its sysbench ended a moment earlier).
    _measure(job, two, NINE_S.replace(lines[-1] + "\n", ""))
    # A hung target held client 0's sysbench past --time: a zero second at t = 10 (edited: a copy of [ 9s ] zeroed).
    IntervalSample.objects.create(job=job, client_index=0, attempt=1, t=10, threads=2, tps=0, qps=0, reads_per_s=0,
                                  writes_per_s=0, other_per_s=0, errors_per_s=0, reconnects_per_s=0)
    IntervalSample.objects.create(job=job, client_index=1, attempt=1, t=10, threads=2, tps=0, qps=0, reads_per_s=0,
                                  writes_per_s=0, other_per_s=0, errors_per_s=0, reconnects_per_s=0)
    steady = steady_figures(job)  # its attempt 1, time_s 9
    per_t = {i.t: i.qps for i in parser.parse_output(NINE_S).intervals}
    expected = sum(2 * per_t[t] for t in range(2, 9)) / 7  # t = 2 … 8: both clients; 9 had one, 10 is idle
    assert steady["steady_qps"] == pytest.approx(expected)
    job = _close(job)
    assert _finding(job, "partial-seconds")["figure"] == "1 second(s)"


@pytest.mark.django_db
def test_an_imported_log_with_a_second_printed_twice_stores_it_once_and_says_so():
    # Edited copy, as in the second doubled-second test above: a zeroed "[ 5s ]" before the real one.
    lines = _report_lines(NINE_S)
    zeroed = "[ 5s ] thds: 2 tps: 0.00 qps: 0.00 (r/w/o: 0.00/0.00/0.00) lat (ms,95%): 0.00 err/s: 0.00 reconn/s: 0.00"
    doubled = NINE_S.replace(lines[4], zeroed + "\n" + lines[4])
    run = results_import(files=[("stalled.log", doubled)], target=TargetFactory(), scenario=ScenarioFactory(time_s=9))
    job = run.jobs.get()
    assert job.samples.count() == 9 and job.samples.get(t=5).tps == 0  # the first of the two, as measured
    assert _finding(job, "per-second-duplicated")["level"] == "invalid"


# ---------------------------------------------------------------- a starved host


def _host(idle: float, sysbench: float, server: float | None, others: float, top: str, n: int = 20) -> dict:
    return {"client_idle_pct": {"vm": [idle] * n}, "client_sysbench_pct": {"vm": [sysbench] * n},
            "client_server_pct": {"vm": [server] * n}, "client_others_pct": {"vm": [others] * n},
            "client_top_other": {"vm": [top] * n}, "client_top_other_pct": {"vm": [others * 0.9] * n},
            "client_cores": {"vm": 2},
            "client_busy_pct": {"vm": [74.0] * n}}


def test_a_host_starved_by_other_processes_is_not_valid_and_says_free_the_host():
    # The measured case: the host 100 % busy, sysbench 28–40 % of a core, others ≈ 140 %, the client rule at 71–76 %.
    findings, verdict = judge(Evidence(qps=STEADY, **_host(0.0, 35.0, None, 140.0, "sysbench cpu")))
    assert verdict == validity.INVALID
    finding = next(f for f in findings if f.code == "host-busy")
    assert ("the host was busy with other processes (sysbench 35 %, others 140 %: `sysbench cpu`): free the host"
            in finding.message)
    assert "client-bound" not in [f.code for f in findings]


def test_a_saturated_load_generator_says_add_a_client_host_and_a_shared_host_keeps_todays_rule():
    findings, verdict = judge(Evidence(qps=STEADY, **_host(1.0, 150.0, 40.0, 10.0, "")))
    assert verdict == validity.INVALID
    assert "the load generator is saturated: add a client host" in next(
        f for f in findings if f.code == "client-bound").message
    # Only sysbench and a local server, sharing: the shared-host note, nothing held against the job.
    findings, verdict = judge(Evidence(qps=STEADY, same_host=True, **_host(1.0, 60.0, 130.0, 10.0, "")))
    assert [f.code for f in findings] == ["same-host"] and verdict == validity.VALID


def test_a_host_starved_for_a_fifth_of_the_run_or_less_is_not_judged_starved():
    host = _host(0.0, 35.0, None, 140.0, "sysbench cpu", n=20)
    host["client_idle_pct"] = {"vm": [0.0] * 4 + [50.0] * 16}
    assert "host-busy" not in [f.code for f in judge(Evidence(qps=STEADY, **host))[0]]
