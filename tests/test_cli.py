"""The `benchapp` command-line client (cli/), installed from ./cli into a fresh virtual environment without Django
and run as a subprocess against the app served by live_server, with a real token.

Stored runs (succeeded, regressed, failed, with an invalid verdict) show the exit-code decision through
`benchapp wait RUN`, which is the code path `launch --wait` takes once its run is launched; one real
`launch --wait` goes end to end through a Celery worker and sysbench.
"""
from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from campaigns import services
from campaigns.execution.transitions import StateConflict
from campaigns.models import Campaign, Job, JobResult, Regression, Run, Scenario, Target
from tests.factories import CampaignFactory, DatasetFactory, ProductFactory, ScenarioFactory, TargetFactory

ROOT = Path(__file__).resolve().parent.parent
# slow: every test needs the CLI installed into a fresh virtual environment from PyPI (30-40 s), too long for
# `make check`'s loop; `make test` runs them.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _cli_sources() -> list[Path]:
    skip = {"build", "__pycache__"}
    return sorted(p for p in (ROOT / "cli").rglob("*") if p.is_file() and not skip.intersection(p.parts)
                  and not any(part.endswith(".egg-info") for part in p.parts))


@pytest.fixture(scope="session")
def benchapp_cli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `benchapp` executable of a virtual environment made with `pip install ./cli` (from a copy, so the
    build leaves nothing in the tree). It is named by a digest of cli/'s files, so a changed client is always
    installed afresh, and xdist workers (or a later session) share an unchanged one: the first builds it under a
    lock."""
    digest = hashlib.sha256()
    for path in _cli_sources():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    shared = tmp_path_factory.getbasetemp().parent
    venv = shared / f"benchapp-cli-venv-{digest.hexdigest()[:16]}"
    with open(shared / "benchapp-cli-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "ready").exists():
            shutil.rmtree(venv, ignore_errors=True)
            source = venv.with_name(venv.name + "-source")
            shutil.rmtree(source, ignore_errors=True)
            shutil.copytree(ROOT / "cli", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                        "--disable-pip-version-check", str(source)], capture_output=True, text=True)
            assert installed.returncode == 0, installed.stdout + installed.stderr
            shutil.rmtree(source, ignore_errors=True)
            (venv / "ready").touch()
    return venv / "bin" / "benchapp"


@dataclass
class Outcome:
    code: int
    out: str
    err: str


@pytest.fixture
def server(live_server: Any) -> dict[str, str]:
    """The live server's URL and a token of an admin."""
    user = get_user_model().objects.create_superuser("cli-admin", password="cli-pw-12345678")
    return {"url": live_server.url, "token": services.token_issue(user=user)}


def run_cli(executable: Path, server: dict[str, str], *args: str, token: str | None = None,
            timeout_s: float = 120) -> Outcome:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHAPP_", "DJANGO_"))}
    env.update({"BENCHAPP_URL": server["url"], "BENCHAPP_TOKEN": token or server["token"], "NO_COLOR": "1"})
    done = subprocess.run([str(executable), *args], env=env, capture_output=True, text=True, timeout=timeout_s)
    # Whatever happens, the token is never printed, and a failure is one line, never a traceback.
    for text in (done.stdout, done.stderr):
        assert server["token"] not in text and "Traceback" not in text, text
    return Outcome(done.returncode, done.stdout, done.stderr)


# ---------------------------------------------------------------- stored runs


def _cell(name: str) -> tuple[Campaign, Target, Scenario]:
    target = TargetFactory(name=f"{name}-target", product=ProductFactory(name=f"{name} MariaDB"))
    scenario = ScenarioFactory(name=f"{name} point select",
                               dataset=DatasetFactory(name=f"{name} data", tables=4, table_size=25_000))
    return CampaignFactory(name=name, targets=[target], scenarios=[scenario], threads=[8, 16]), target, scenario


def _stored_run(campaign: Campaign, target: Target, scenario: Scenario, qps: dict[int, list[float]], *,
                status: str = Run.Status.SUCCEEDED, failed_jobs: int = 0, verdict: str = Job.Verdict.VALID,
                label: str = "") -> Run:
    """A finished run with one succeeded job per repetition (qps by thread count) and `failed_jobs` failed ones."""
    now = timezone.now()
    run = Run.objects.create(campaign=campaign, status=status, trigger=Run.Trigger.API, label=label,
                             started_at=now, finished_at=now)
    for threads, values in qps.items():
        for repetition, value in enumerate(values):
            job = Job.objects.create(run=run, target=target, scenario=scenario, threads=threads, tables=4,
                                     table_size=25_000, repetition=repetition, status=Job.Status.SUCCEEDED,
                                     verdict=verdict)
            JobResult.objects.create(job=job, qps=value, tps=value / 20, latency_avg_ms=1000 * threads / value,
                                     latency_pct_ms=2e5 / value, latency_pct=95.0)
    for _ in range(failed_jobs):
        Job.objects.create(run=run, target=target, scenario=scenario, threads=8, tables=4, table_size=25_000,
                           status=Job.Status.FAILED, error="sysbench exited with code 1")
    return run


def _regression(run: Run, target: Target, scenario: Scenario, *, threads: int) -> Regression:
    return Regression.objects.create(
        campaign=run.campaign, run=run, target=target, scenario=scenario, threads=threads,
        metric=Regression.Metric.QPS, kind=Regression.Kind.REGRESSION, baseline_value=10_000.0, current_value=8_000.0,
        change_pct=-20.0, p_value=0.001, p_adjusted=0.002, method="Welch's t-test on per-second QPS",
        baseline_run_ids=[], baseline_label="last 5 runs")


def test_it_installs_without_django_and_lists_recent_runs(benchapp_cli, server):
    venv_python = benchapp_cli.parent / "python"
    no_django = subprocess.run([str(venv_python), "-c", "import django"], capture_output=True, text=True)
    assert no_django.returncode != 0 and "No module named 'django'" in no_django.stderr
    campaign, target, scenario = _cell("nightly-list")
    older = _stored_run(campaign, target, scenario, {8: [10_000.0]}, label="v1.0")
    newer = _stored_run(campaign, target, scenario, {8: [9_000.0]}, status=Run.Status.FAILED, label="v1.1")

    listed = run_cli(benchapp_cli, server, "runs")
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert lines[0].split() == ["id", "campaign", "status", "trigger", "jobs", "created", "label"]
    assert lines[1].split()[:3] == [str(newer.pk), "nightly-list", "failed"] and lines[1].endswith("v1.1")
    assert lines[2].split()[:3] == [str(older.pk), "nightly-list", "succeeded"]

    as_json = run_cli(benchapp_cli, server, "runs", "--limit", "1", "--campaign", "nightly-list", "--format", "json")
    assert [r["id"] for r in json.loads(as_json.out)] == [newer.pk]


def test_compare_prints_two_runs_side_by_side_in_every_format(benchapp_cli, server, tmp_path):
    campaign, target, scenario = _cell("nightly-compare")
    first = _stored_run(campaign, target, scenario, {8: [10_000.0, 10_200.0, 9_800.0], 16: [15_000.0]})
    second = _stored_run(campaign, target, scenario, {8: [9_000.0, 9_180.0, 8_820.0], 16: [15_300.0]})
    _regression(second, target, scenario, threads=8)

    as_json = run_cli(benchapp_cli, server, "compare", str(first.pk), str(second.pk), "--format", "json")
    assert as_json.code == 0, as_json.err
    data = json.loads(as_json.out)
    assert [r["id"] for r in data["runs"]] == [first.pk, second.pk]
    cells = {(c["run"], c["threads"]): c for c in data["cells"]}
    # A cell's figure is the geometric mean of its repetitions, as the comparison page shows it.
    first_8 = statistics.geometric_mean([10_000.0, 10_200.0, 9_800.0])
    assert cells[(first.pk, 8)]["qps"] == pytest.approx(first_8) and cells[(first.pk, 8)]["n"] == 3
    assert cells[(second.pk, 8)]["qps"] == pytest.approx(0.9 * first_8)
    assert cells[(second.pk, 8)]["delta_qps_pct"] == pytest.approx(-10.0)
    assert cells[(second.pk, 16)]["delta_qps_pct"] == pytest.approx(2.0)
    assert cells[(second.pk, 8)]["regressions"] and not cells[(second.pk, 16)]["regressions"]
    assert cells[(first.pk, 8)]["product"] == "nightly-compare MariaDB"

    as_csv = run_cli(benchapp_cli, server, "compare", str(first.pk), str(second.pk), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(as_csv.out)))
    assert len(rows) == 4
    regressed = [r for r in rows if r["regression"]]
    assert [(int(r["run"]), int(r["threads"])) for r in regressed] == [(second.pk, 8)]
    assert "-20.0%" in regressed[0]["regression"] and float(regressed[0]["qps"]) == pytest.approx(0.9 * first_8)

    table = run_cli(benchapp_cli, server, "compare", str(first.pk), str(second.pk))
    header, rule, *body = table.out.splitlines()
    assert header.split()[:4] == ["run", "scenario", "spec", "threads"] and set(rule) <= {"-", " "}
    assert len(body) == 4 and sum("REGRESSION" in line for line in body) == 1
    assert any(f"{0.9 * first_8:,.1f}" in line and "-10.00" in line and "REGRESSION" in line for line in body)

    markdown = run_cli(benchapp_cli, server, "compare", str(first.pk), str(second.pk), "--format", "markdown",
                       "--junit", str(tmp_path / "junit.xml"), "--summary", str(tmp_path / "summary.md"))
    md_lines = markdown.out.splitlines()
    assert md_lines[0].startswith("| run | scenario |") and md_lines[1].startswith("|---|")
    assert len(md_lines) == 6 and sum("**regression**" in line for line in md_lines) == 1
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    assert [s.get("failures") for s in suites.findall("testsuite")] == ["0", "1"]
    failed = [c for c in suites.iter("testcase") if c.find("failure") is not None]
    assert len(failed) == 1 and "8 threads" in failed[0].get("name", "")
    assert "-20.0%" in (failed[0].find("failure").get("message") or "")  # type: ignore[union-attr]
    summary = (tmp_path / "summary.md").read_text()
    assert "1 cell(s) regressed" in summary and f"/runs/{second.pk}/" in summary


def test_wait_exits_0_on_a_succeeded_run_without_regression_and_writes_junit(benchapp_cli, server, tmp_path):
    campaign, target, scenario = _cell("nightly-ok")
    run = _stored_run(campaign, target, scenario, {8: [10_000.0, 10_100.0], 16: [15_000.0]})
    junit, summary = tmp_path / "out" / "junit.xml", tmp_path / "summary.md"
    (tmp_path / "out").mkdir()

    waited = run_cli(benchapp_cli, server, "wait", str(run.pk), "--junit", str(junit), "--summary", str(summary))
    assert waited.code == 0, waited.err
    assert len(waited.out.splitlines()) == 4  # header, rule, a line per cell
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "0"
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names[0] == "run outcome" and any("16 threads" in (n or "") for n in names)
    assert summary.read_text().startswith("### benchapp: ✅ no regression")


def test_wait_exits_1_on_a_regression_and_fails_its_junit_testcase(benchapp_cli, server, tmp_path):
    campaign, target, scenario = _cell("nightly-regressed")
    run = _stored_run(campaign, target, scenario, {8: [8_000.0], 16: [15_000.0]})
    _regression(run, target, scenario, threads=8)

    waited = run_cli(benchapp_cli, server, "wait", str(run.pk), "--junit", str(tmp_path / "j.xml"))
    assert waited.code == 1 and "regression found" in waited.err
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    failures = {name: case.find("failure") for name, case in cases.items() if case.find("failure") is not None}
    assert len(failures) == 1
    ((name, failure),) = failures.items()
    assert "8 threads" in (name or "") and failure.get("type") == "regression"


@pytest.mark.parametrize("status", [Run.Status.FAILED, Run.Status.PARTIALLY_SUCCEEDED, Run.Status.CANCELLED])
def test_wait_exits_3_when_the_run_did_not_succeed(benchapp_cli, server, tmp_path, status):
    campaign, target, scenario = _cell(f"nightly-{status}")
    run = _stored_run(campaign, target, scenario, {8: [10_000.0]}, status=status, failed_jobs=1)
    _regression(run, target, scenario, threads=8)  # a failed run is a 3 even when it also regressed

    waited = run_cli(benchapp_cli, server, "wait", str(run.pk), "--junit", str(tmp_path / "j.xml"))
    assert waited.code == 3, waited.err
    assert f"run {run.pk} of nightly-{status}: {status.replace('_', ' ')}, 1/2 jobs succeeded (1 failed" in waited.err
    outcome = next(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))
    assert outcome.get("name") == "run outcome" and outcome.find("failure") is not None


@pytest.mark.parametrize("verdict", [Job.Verdict.INVALID, Job.Verdict.SUSPECT])
def test_an_untrusted_cell_fails_wait_and_compare_by_default_and_is_only_skipped_when_allowed(
        benchapp_cli, server, tmp_path, verdict):
    campaign, target, scenario = _cell(f"nightly-{verdict}")
    run = _stored_run(campaign, target, scenario, {8: [10_000.0]}, verdict=verdict)
    junit, summary = tmp_path / "j.xml", tmp_path / "s.md"

    strict = run_cli(benchapp_cli, server, "wait", str(run.pk), "--junit", str(junit), "--summary", str(summary))
    assert strict.code == 4, strict.err
    assert f"benchapp: 1 of 1 cell untrusted (1 {verdict}) (--allow-untrusted to accept them)" in strict.err
    (failed,) = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None]
    assert failed.find("failure").get("type") == "untrusted"  # type: ignore[union-attr]
    assert "no regression" not in summary.read_text()
    assert summary.read_text().startswith(f"### benchapp: ❌ 1 of 1 cell untrusted (1 {verdict})")
    compared = run_cli(benchapp_cli, server, "compare", str(run.pk))
    assert compared.code == 4 and "untrusted" in compared.err
    # The old flag still parses (untrusted cells fail by default now).
    assert run_cli(benchapp_cli, server, "wait", str(run.pk), "--fail-on-invalid").code == 4

    allowed = run_cli(benchapp_cli, server, "wait", str(run.pk), "--allow-untrusted", "--junit", str(junit),
                      "--summary", str(summary))
    assert allowed.code == 0, allowed.err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("skipped")) == ("0", "1")
    assert summary.read_text().startswith("### benchapp: ⚠️ nothing to conclude: 1 of 1 cell untrusted")
    assert run_cli(benchapp_cli, server, "compare", str(run.pk), "--allow-untrusted").code == 0


# ---------------------------------------------------------------- launch, errors and usage


def test_launch_without_wait_prints_the_run_and_a_second_launch_is_a_conflict(benchapp_cli, server):
    campaign, _, _ = _cell("ci-launch")

    launched = run_cli(benchapp_cli, server, "launch", "ci-launch", "--label", "commit abc123",
                       "--idempotency-key", "pipeline-17")
    assert launched.code == 0, launched.err
    run = Run.objects.get(campaign=campaign)
    assert launched.out.strip() == str(run.pk) and run.label == "commit abc123" and run.trigger == Run.Trigger.API
    again = run_cli(benchapp_cli, server, "launch", str(campaign.pk), "--idempotency-key", "pipeline-17")
    assert again.code == 0 and again.out.strip() == str(run.pk)  # the same key: the same run

    conflict = run_cli(benchapp_cli, server, "launch", "ci-launch")
    assert conflict.code == 2 and conflict.err.count("\n") == 1
    assert conflict.err.startswith("benchapp: conflict: ") and "in progress" in conflict.err
    # Not left running for the next test; a worker may already have finished it (make test's fresh clone did).
    with contextlib.suppress(StateConflict):
        services.run_cancel(run=run)


def test_errors_are_one_line_naming_the_cause(benchapp_cli, server):
    bad_token = run_cli(benchapp_cli, server, "runs", token="not-a-token")
    assert bad_token.code == 2 and bad_token.err == ("benchapp: authentication failed (Invalid token.): check "
                                                     "BENCHAPP_TOKEN or --token\n")
    unknown = run_cli(benchapp_cli, server, "launch", "no-such-campaign", "--wait")
    assert unknown.code == 2
    assert unknown.err == "benchapp: campaign 'no-such-campaign' not found on the server (give its exact name or its id)\n"
    missing = run_cli(benchapp_cli, server, "wait", "987654")
    assert missing.code == 2 and missing.err == "benchapp: run 987654 not found on the server\n"
    unreachable = run_cli(benchapp_cli, {**server, "url": "http://127.0.0.1:9"}, "runs")
    assert unreachable.code == 3 and unreachable.err.startswith("benchapp: cannot reach http://127.0.0.1:9")


@pytest.mark.parametrize("args", [[], ["compare"], ["compare", "1", "--format", "xml"], ["launch"],
                                  ["wait", "abc"], ["frobnicate"], ["import", "--target", "x"]])
def test_usage_errors_exit_2(benchapp_cli, server, args):
    outcome = run_cli(benchapp_cli, server, *args)
    assert outcome.code == 2 and ("Usage:" in outcome.err or "Usage:" in outcome.out)


def test_without_url_or_token_it_says_which_is_missing(benchapp_cli, server):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHAPP_")}
    done = subprocess.run([str(benchapp_cli), "runs"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "set BENCHAPP_URL or pass --url" in done.stderr
    done = subprocess.run([str(benchapp_cli), "--url", server["url"], "runs"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "set BENCHAPP_TOKEN or pass --token" in done.stderr
    done = subprocess.run([str(benchapp_cli), "--url", server["url"], "--token", server["token"], "runs"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and server["token"] not in done.stdout + done.stderr


def test_import_stores_logs_as_a_run_and_prints_its_results(benchapp_cli, server, tmp_path):
    captured = ROOT / "tests" / "data" / "sysbench"
    logs = [captured / "mysql_oltp_point_select.txt", captured / "mysql_oltp_read_only.txt"]
    target = TargetFactory(name="imported-target", product=ProductFactory(name="Imported MariaDB"))
    scenario = ScenarioFactory(name="imported point select", dataset=DatasetFactory(name="imported data"))

    imported = run_cli(benchapp_cli, server, "import", *map(str, logs), "--target", "imported-target",
                       "--scenario", str(scenario.pk), "--format", "json")
    assert imported.code == 0, imported.err
    run = Run.objects.get(trigger=Run.Trigger.IMPORT)
    assert f"as run {run.pk}" in imported.err
    data = json.loads(imported.out)
    stored = JobResult.objects.filter(job__run=run)
    assert data["runs"][0]["id"] == run.pk and stored.count() == len(logs)
    assert sum(c["n"] for c in data["cells"]) == len(logs) and data["cells"][0]["product"] == "Imported MariaDB"
    assert target.pk == run.jobs.first().target_id  # type: ignore[union-attr]

    refused = run_cli(benchapp_cli, server, "import", str(tmp_path / "missing.log"), "--target", "x", "--scenario", "y")
    assert refused.code == 2
    empty = tmp_path / "empty.log"
    empty.write_text("not sysbench output\n")
    rejected = run_cli(benchapp_cli, server, "import", str(empty), "--target", "imported-target", "--scenario",
                       "imported point select")
    assert rejected.code == 2 and rejected.err.startswith("benchapp: the server refused the request for the import")


def test_targets_check_names_an_unreachable_target(benchapp_cli, server):
    TargetFactory(name="nowhere", host="127.0.0.1", port=9)

    checked = run_cli(benchapp_cli, server, "targets", "check", "nowhere")
    assert checked.code == 3 and checked.err.startswith("benchapp: target 'nowhere' cannot be reached: ")
    assert checked.err.count("\n") == 1 and "refused the request" not in checked.err
    assert run_cli(benchapp_cli, server, "targets", "check", "no-such-target").code == 2


# ---------------------------------------------------------------- a real launch through a worker


@pytest.mark.integration
def test_launch_wait_runs_the_campaign_through_a_worker_and_exits_0_or_4_for_untrusted_results(benchapp_cli, server, tmp_path,
                                                                    celery_worker_process, target_databases):
    target = TargetFactory(name="cli-mariadb", database=target_databases["mysql"])
    scenario = ScenarioFactory(name="cli point select", time_s=2,
                               dataset=DatasetFactory(name="cli tiny", tables=1, table_size=300))
    CampaignFactory(name="cli-e2e", targets=[target], scenarios=[scenario], threads=[1, 2])
    checked = run_cli(benchapp_cli, server, "targets", "check", "cli-mariadb")
    assert checked.code == 0 and checked.out.startswith("cli-mariadb: ") and "innodb" in checked.out.lower()

    launched = run_cli(benchapp_cli, server, "launch", "cli-e2e", "--wait", "--poll-s", "0.5", "--settle-s", "2",
                       "--timeout-s", "150", "--junit", str(tmp_path / "junit.xml"), "--format", "csv",
                       timeout_s=200)
    run = Run.objects.get(campaign__name="cli-e2e")
    # On a busy machine (make test's other processes) the host checks may judge a job suspect or invalid: the
    # command then says so and exits 4, as it must; on a quiet one, 0.
    verdicts = list(Job.objects.filter(run=run).values_list("verdict", flat=True))
    untrusted = sum(v in (Job.Verdict.SUSPECT, Job.Verdict.INVALID) for v in verdicts)
    assert launched.code == (4 if untrusted else 0), launched.err + "\n".join(
        Job.objects.filter(run=run).values_list("error", flat=True))
    assert run.status == Run.Status.SUCCEEDED
    assert f"run {run.pk} of cli-e2e: succeeded, 2/2 jobs succeeded" in launched.err
    rows = list(csv.DictReader(io.StringIO(launched.out)))
    stored = {j.threads: j.result.qps for j in Job.objects.filter(run=run).select_related("result")}
    assert {int(r["threads"]): float(r["qps"]) for r in rows} == pytest.approx(stored, rel=1e-4)
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == str(untrusted), verdicts


@pytest.mark.integration
def test_launch_wait_exits_3_when_the_run_fails_in_the_worker(benchapp_cli, server, tmp_path, celery_worker_process,
                                                              target_databases):
    target = TargetFactory(name="cli-denied", database=target_databases["mysql"], password="not-roots-password")
    scenario = ScenarioFactory(name="cli denied point select", time_s=2,
                               dataset=DatasetFactory(name="cli denied tiny", tables=1, table_size=200))
    CampaignFactory(name="cli-e2e-denied", targets=[target], scenarios=[scenario], threads=[1])

    launched = run_cli(benchapp_cli, server, "launch", "cli-e2e-denied", "--wait", "--poll-s", "0.5",
                       "--timeout-s", "150", "--summary", str(tmp_path / "summary.md"), timeout_s=200)
    run = Run.objects.get(campaign__name="cli-e2e-denied")
    assert run.status == Run.Status.FAILED and launched.code == 3, launched.err
    assert f"benchapp: run {run.pk} of cli-e2e-denied: failed, 0/1 jobs succeeded (1 failed, 0 cancelled)" in launched.err
    assert launched.out == "no results: the runs have no succeeded job\n"
    assert (tmp_path / "summary.md").read_text().startswith("### benchapp: ⚠️ the run did not succeed")


# alone: beside make test's other processes the host-busy check made both jobs invalid, and no regression is
# computed from invalid jobs.
@pytest.mark.alone
@pytest.mark.integration
def test_launch_wait_exits_1_when_the_run_is_slower_than_its_pinned_baseline(benchapp_cli, server, tmp_path,
                                                                           celery_worker_process, target_databases):
    """The baseline is a stored run a hundred times faster than this machine can be: the regression check that
    benchapp runs after the run finds the real run slower, and launch --wait waits for it (--settle-s)."""
    target = TargetFactory(name="cli-regressed", database=target_databases["mysql"])
    scenario = ScenarioFactory(name="cli regressed point select", time_s=2,
                               dataset=DatasetFactory(name="cli regressed tiny", tables=1, table_size=200))
    campaign = CampaignFactory(name="cli-e2e-regressed", targets=[target], scenarios=[scenario], threads=[1],
                               repetitions=2)
    # Three repetitions against the run's two: Welch's t-test on the repetitions of the two runs.
    baseline = _stored_run(campaign, target, scenario, {}, label="pinned baseline")
    for repetition, qps in enumerate([5.0e7, 5.1e7, 4.9e7]):
        job = Job.objects.create(run=baseline, target=target, scenario=scenario, threads=1, tables=1, table_size=200,
                                 repetition=repetition, status=Job.Status.SUCCEEDED, verdict=Job.Verdict.VALID)
        JobResult.objects.create(job=job, qps=qps, tps=qps, latency_avg_ms=0.001, latency_pct_ms=0.001,
                                 latency_pct=95.0)
    campaign.baseline_run = baseline
    campaign.save(update_fields=["baseline_run"])

    launched = run_cli(benchapp_cli, server, "launch", "cli-e2e-regressed", "--wait", "--poll-s", "0.5",
                       "--timeout-s", "150", "--junit", str(tmp_path / "junit.xml"), timeout_s=200)
    run = Run.objects.exclude(pk=baseline.pk).get(campaign=campaign)
    assert run.status == Run.Status.SUCCEEDED, launched.err
    jobs = list(run.jobs.values_list("verdict", "result__qps"))
    assert Regression.objects.filter(run=run, kind=Regression.Kind.REGRESSION).exists(), jobs
    assert launched.code == 1 and "benchapp: regression found" in launched.err, launched.err
    (failed,) = [c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase") if c.find("failure") is not None]
    assert "1 threads" in (failed.get("name") or "")
