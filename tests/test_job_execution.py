"""A registered target to stored per-second results, through a real Celery worker and sysbench."""
from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import MySQLdb
import pytest

from campaigns import execution, services
from campaigns.models import IntervalSample, Job, JobClient, PreparedDataset, Run, Scenario, Target
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, PgTargetFactory, ScenarioFactory, TargetFactory
from tests.helpers.fake_servers import FakeMysql, FakePostgres, fake_server

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _launch(target: Target, scenario: Scenario, threads: list[int] | None = None) -> Run:
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=threads or [2])
    return services.campaign_launch(campaign=campaign)


def _wait_finished(job: Job, timeout_s: float = 60) -> Job:
    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished()

    wait_for(finished, timeout_s=timeout_s, what=f"job {job.pk} to finish")
    return job


def _printed(raw: str, label: str) -> float:
    """A figure from sysbench's final block, read from the stored raw output."""
    match = re.search(rf"^\s*{label}:\s+(\d+)\s+\(([\d.]+) per sec\.\)", raw, re.M)
    assert match, f"{label} not in output"
    return float(match.group(2))


def _assert_result_matches_output(job: Job) -> None:
    client = job.clients.get()
    raw = client.raw_output
    result = job.result
    assert result.tps == pytest.approx(_printed(raw, "transactions"))
    assert result.qps == pytest.approx(_printed(raw, "queries"))
    avg = float(re.search(r"^\s*avg:\s+([\d.]+)", raw, re.M).group(1))
    pct = float(re.search(r"^\s*95th percentile:\s+([\d.]+)", raw, re.M).group(1))
    assert result.latency_avg_ms == pytest.approx(avg)
    assert result.latency_pct_ms == pytest.approx(pct)
    assert result.latency_pct == 95.0
    printed_intervals = [line for line in raw.splitlines() if line.startswith("[") and "thds:" in line]
    samples = list(job.samples.order_by("t"))
    assert len(samples) == len(printed_intervals) >= 2
    first = re.search(r"tps: ([\d.]+) qps: ([\d.]+)", printed_intervals[0])
    assert samples[0].tps == pytest.approx(float(first.group(1)))
    assert samples[0].qps == pytest.approx(float(first.group(2)))


def test_it_runs_point_select_on_mariadb_and_stores_what_sysbench_printed(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(dataset=DatasetFactory(name="tiny-mysql", tables=2, table_size=1000))
    run = _launch(target, scenario)
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    _assert_result_matches_output(job)
    client = job.clients.get()
    assert client.exit_code == 0
    assert client.sysbench_version.startswith("1.0")
    assert client.host_name == "client-a"
    assert "--mysql-host=127.0.0.1" in job.command_line and "oltp_point_select" in job.command_line
    assert job.server_snapshot["before"]["version"]
    assert PreparedDataset.objects.get(target=target).status == PreparedDataset.Status.READY
    run.refresh_from_db()
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED, timeout_s=10, what="run to finish")


def test_it_runs_point_select_on_postgresql_and_stores_what_sysbench_printed(celery_worker_process, target_databases):
    target = PgTargetFactory()
    scenario = ScenarioFactory(dataset=DatasetFactory(name="tiny-pg", tables=2, table_size=1000))
    run = _launch(target, scenario)
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    _assert_result_matches_output(job)
    # benchapp's server's own count of the server's transactions (one per point select here) holds all sysbench ran.
    work = job.server_work
    assert work["driver"] == "pgsql" and work["after"] - work["before"] >= job.result.queries, work
    assert "server-contradicts-clients" not in [f["code"] for f in job.findings]


def test_interval_rows_are_stored_while_the_job_is_still_running(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=6, dataset=DatasetFactory(name="tiny-live", tables=1, table_size=500))
    run = _launch(target, scenario, threads=[1])
    job = run.jobs.get()

    def sample_while_running() -> bool:
        count = IntervalSample.objects.filter(job=job).count()
        return count >= 2 and Job.objects.get(pk=job.pk).status == Job.Status.RUNNING

    wait_for(sample_while_running, timeout_s=45, interval_s=0.1, what="samples during the run")
    _wait_finished(job)
    assert job.status == Job.Status.SUCCEEDED


def test_it_prepares_once_and_reuses_the_dataset_for_the_next_job(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-reuse", tables=1, table_size=300))
    run = _launch(target, scenario, threads=[1, 2])
    jobs = list(run.jobs.order_by("position"))
    for job in jobs:
        _wait_finished(job)
        assert job.status == Job.Status.SUCCEEDED, job.error
    first, second = (JobClient.objects.get(job=j) for j in jobs)
    assert "prepare" in first.prepare_output
    assert second.prepare_output == ""


def _other_rows_snapshot() -> dict[str, list]:
    return {
        "targets": list(Target.objects.order_by("pk").values()),
        "scenarios": list(Scenario.objects.order_by("pk").values()),
        "prepared": list(PreparedDataset.objects.order_by("pk").values()),
    }


@pytest.mark.parametrize(
    ("target_kwargs", "prepare_mode", "expected"),
    [
        ({"password": "wrong-pw-123"}, "auto", "access denied for user 'root'"),
        ({"port": 3307}, "auto", "connection refused to 127.0.0.1:3307"),
        ({"database": os.environ["BENCHAPP_TEST_TARGET_DB"] + "_empty"}, "never",
         "doesn't exist: the dataset is not prepared"),
    ],
    ids=["wrong-password", "closed-port", "run-before-prepare"],
)
def test_it_marks_job_failed_with_an_actionable_cause(celery_worker_process, target_databases, target_kwargs,
                                                     prepare_mode, expected):
    target = TargetFactory(**target_kwargs)
    scenario = ScenarioFactory(prepare_mode=prepare_mode, dataset=DatasetFactory(name="tiny-fail"))
    # target_wait_s=0: a closed port fails the job at once (tests/test_job_attempts.py waits for a target instead).
    campaign = CampaignFactory(targets=[target], scenarios=[scenario], target_wait_s=0)
    before = _other_rows_snapshot()
    run = services.campaign_launch(campaign=campaign)
    job = _wait_finished(run.jobs.get(), timeout_s=30)
    assert job.status == Job.Status.FAILED
    assert expected in job.error
    assert "wrong-pw-123" not in job.error
    after = _other_rows_snapshot()
    # A failed attempt may record a failed dataset preparation for its own target, nothing else.
    after["prepared"] = [p for p in after["prepared"] if p["target_id"] != target.pk]
    before["prepared"] = [p for p in before["prepared"] if p["target_id"] != target.pk]
    assert after == before


class ProcScanner:
    """Reads every process's command line (/proc/*/cmdline, what `ps` shows any local user) every few
    milliseconds while a job runs: the secret must never be in one, and sysbench must have been seen."""

    def __init__(self, secret: str, *, marker: str) -> None:
        self.secret = secret.encode()
        self.marker = marker.encode()  # in the argv of this test's sysbench, not another session's
        self.leaks: list[str] = []
        self.sysbench_pids: set[int] = set()
        self.environ_has_secret = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._scan, daemon=True)

    def __enter__(self) -> ProcScanner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _scan(self) -> None:
        while not self._stop.is_set():
            for path in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    cmdline = path.read_bytes()
                except OSError:
                    continue
                if self.secret in cmdline:
                    self.leaks.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
                argv0 = cmdline.split(b"\0", 1)[0]
                if (argv0 == b"sysbench" or argv0.endswith(b"/sysbench")) and self.marker in cmdline:
                    self.sysbench_pids.add(int(path.parent.name))
                    try:
                        self.environ_has_secret |= self.secret in (path.parent / "environ").read_bytes()
                    except OSError:
                        pass
            time.sleep(0.02)


def test_the_target_password_never_reaches_stored_commands_outputs_or_logs(celery_worker_process, target_databases):
    secret = "S3cret-Pw-4242"
    # PostgreSQL here trusts local connections, so the job succeeds whatever the password is.
    target = PgTargetFactory(password=secret)
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-secret", tables=1, table_size=200))
    with ProcScanner(secret, marker=f"-db={target.database}\0") as scanner:
        run = _launch(target, scenario, threads=[1])
        job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert scanner.sysbench_pids and not scanner.leaks, scanner.leaks
    assert scanner.environ_has_secret  # PGPASSWORD, readable by its owner only
    assert "--pgsql-password=***" in job.command_line
    client = job.clients.get()
    stored = " ".join([job.command_line, job.error, str(job.server_snapshot), client.command_line,
                       client.raw_output, client.prepare_output, client.error])
    assert secret not in stored
    assert secret not in Target.objects.filter(pk=target.pk).values_list("password_encrypted", flat=True)[0]
    assert secret not in celery_worker_process.log_text()


@pytest.fixture
def mariadb_user_with_password(target_databases: dict[str, str]) -> Iterator[tuple[str, str]]:
    """A MariaDB account that needs its password, on this session's target database; made through a library
    connection, not the mariadb command line, whose argv would show the password."""
    user, secret = f"pw_{target_databases['mysql']}"[:80], "Pw-In-Env-Only-7731"
    admin = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", password="")
    try:
        cur = admin.cursor()
        cur.execute("CREATE OR REPLACE USER %s@'%%' IDENTIFIED BY %s", [user, secret])
        cur.execute(f"GRANT ALL ON `{target_databases['mysql']}`.* TO %s@'%%'", [user])
        yield user, secret
        cur.execute("DROP USER IF EXISTS %s@'%%'", [user])
    finally:
        admin.close()


def test_a_running_sysbench_shows_no_password_in_any_process_list(celery_worker_process, mariadb_user_with_password):
    user, secret = mariadb_user_with_password
    target = TargetFactory(user=user, password=secret)
    scenario = ScenarioFactory(time_s=3, warmup_s=1,
                               dataset=DatasetFactory(name="tiny-ps", tables=1, table_size=200))
    with ProcScanner(secret, marker=f"-db={target.database}\0") as scanner:
        run = _launch(target, scenario, threads=[1])
        job = _wait_finished(run.jobs.get())
    # MariaDB checks the password: the job authenticated with it, through MYSQL_PWD.
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert len(scanner.sysbench_pids) >= 2  # prepare, warm-up and the measured run were all watched
    assert not scanner.leaks, scanner.leaks
    assert scanner.environ_has_secret
    assert "--mysql-password=***" in job.command_line and secret not in job.command_line
    assert secret not in celery_worker_process.log_text()


def test_a_wrong_password_still_fails_the_job_with_access_denied(celery_worker_process, mariadb_user_with_password):
    user, _secret = mariadb_user_with_password
    target = TargetFactory(user=user, password="not-the-password")
    run = _launch(target, ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-denied", tables=1,
                                                                          table_size=200)), threads=[1])
    job = _wait_finished(run.jobs.get())
    assert job.status == Job.Status.FAILED and "access denied" in job.error


@pytest.mark.parametrize("kind, make", [(FakePostgres, PgTargetFactory), (FakeMysql, TargetFactory)])
def test_a_job_on_a_server_asking_for_a_clear_text_password_fails_before_sysbench(celery_worker_process,
                                                                                   target_databases, kind, make):
    secret = "Never-In-Clear-5150"
    with fake_server(kind) as server:
        target = make(password=secret, port=server.port)
        run = _launch(target, ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-fake", tables=1,
                                                                              table_size=200)), threads=[1])
        job = _wait_finished(run.jobs.get())
        received = server.received()
    assert job.status == Job.Status.FAILED
    assert "clear text" in job.error and f"127.0.0.1:{server.port}" in job.error, job.error
    assert secret.encode() not in received and secret not in job.error
    assert not job.clients.exists()  # sysbench never started


def test_a_duplicated_message_runs_the_job_once(celery_worker_process, target_databases):
    target = TargetFactory()
    scenario = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-dup", tables=1, table_size=200))
    run = _launch(target, scenario, threads=[1])
    job = run.jobs.get()
    execution.job_dispatch(job=job)
    execution.job_dispatch(job=job)
    _wait_finished(job)
    assert job.status == Job.Status.SUCCEEDED
    assert JobClient.objects.filter(job=job).count() == 1
