"""Host tests (cpu, memory, fileio, threads, mutex): their options, figures and commands, client-host targets,
verdicts that do not misfire, and a client host's self-measurement (docs/host-tests.md)."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import Client as PageClient
from django.test import override_settings
from django.utils import timezone

from campaigns import roles, services, validity
from campaigns.execution import selfmeasure
from campaigns.execution.hostjobs import job_dirs_sweep
from campaigns.models import Campaign, ClientHost, Job, JobClient, Run, Scenario, Target
from campaigns.models.hosttests import runs_on, self_measurement_text
from campaigns.sysbench import parser
from campaigns.sysbench.catalogue import TESTS, OptionError, scenario_options, validate_options
from campaigns.sysbench.hostcommand import build_host_argv
from campaigns.sysbench.hosttests import (
    HOST_TESTS,
    headline,
    host_figures,
    host_options_problem,
    host_second,
    size_bytes,
)
from tests.conftest import ROOT, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ProductFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user

DATA = Path(__file__).parent / "data" / "hosttests"


def _job(status: str = Job.Status.QUEUED) -> Job:
    run = Run.objects.create(campaign=CampaignFactory(), status=Run.Status.FAILED)
    return Job.objects.create(run=run, target=TargetFactory(), scenario=ScenarioFactory(), threads=1, status=status)


def _output(test: str) -> str:
    return (DATA / f"{test}.txt").read_text()


def _figures(test: str) -> tuple[parser.ParsedOutput, object]:
    text = _output(test)
    parsed = parser.parse_output(text)
    assert parsed.complete and parsed.summary is not None
    return parsed, host_figures(test, text, events=parsed.summary.events, duration_s=parsed.summary.duration_s)


# ---------------------------------------------------------------- catalogue, figures, commands (pure)


def test_every_host_test_is_in_the_catalogue_without_database_options() -> None:
    for test in HOST_TESTS:
        spec = TESTS[test]
        assert spec.host and not spec.prepares_tables and not spec.legacy
        assert not {"mysql-ignore-errors", "db-ps-mode", "tables"} & set(scenario_options(test))
    with pytest.raises(OptionError) as raised:
        validate_options("cpu", {"mysql-ignore-errors": "all"})
    assert raised.value.option == "mysql-ignore-errors" and "host test" in raised.value.message


def test_host_options_are_validated_like_the_bundled_tests_options() -> None:
    assert validate_options("memory", {"memory_block_size": "4K", "memory-oper": "READ"}) == {
        "memory-block-size": "4K", "memory-oper": "read"}
    assert validate_options("fileio", {"file-extra-flags": "direct,sync,direct"}) == {"file-extra-flags": "direct,sync"}
    for test, options, option in (("memory", {"memory-block-size": "4 K"}, "memory-block-size"),
                                  ("memory", {"memory-scope": "remote"}, "memory-scope"),
                                  ("fileio", {"file-test-mode": "rnd"}, "file-test-mode"),
                                  ("fileio", {"file-extra-flags": "odirect"}, "file-extra-flags"),
                                  ("cpu", {"cpu-max-prime": -5}, "cpu-max-prime"),
                                  ("threads", {"thread-locks": 0}, "thread-locks")):
        with pytest.raises(OptionError) as raised:
            validate_options(test, options)
        assert raised.value.option == option


def test_fileio_needs_its_mode_and_stays_within_the_size_limit() -> None:
    assert host_options_problem("fileio", {}, max_file_bytes=2**30)[0] == "file-test-mode"
    problem = host_options_problem("fileio", {"file-test-mode": "rndrw", "file-total-size": "2G"},
                                   max_file_bytes=2**30)
    assert problem is not None and problem[0] == "file-total-size" and "1,024 MiB" in problem[1]
    assert host_options_problem("fileio", {"file-test-mode": "rndrw", "file-total-size": "64M"},
                                max_file_bytes=2**30) is None
    assert size_bytes("1K") == 1024 and size_bytes("2g") == 2 * 2**30 and size_bytes("16384") == 16384
    assert size_bytes("1.5G") is None


def test_figures_of_each_host_test_are_read_from_its_real_output() -> None:
    parsed, cpu = _figures("cpu")
    assert cpu.events_per_s == pytest.approx(float(_line("cpu", "events per second:")))
    assert headline("cpu", cpu) == cpu.events_per_s and parsed.histogram
    _, memory = _figures("memory")
    assert memory.mib_per_s and memory.events_per_s and memory.mib_per_s < memory.events_per_s
    assert headline("memory", memory) == memory.mib_per_s
    _, fileio = _figures("fileio")
    assert fileio.reads_per_s == pytest.approx(float(_line("fileio", "reads/s:")))
    assert fileio.fsyncs_per_s == pytest.approx(float(_line("fileio", "fsyncs/s:")))
    assert fileio.mib_per_s == pytest.approx(fileio.read_mib_per_s + fileio.written_mib_per_s)
    parsed, threads = _figures("threads")
    assert threads.events_per_s == pytest.approx(parsed.summary.events / parsed.summary.duration_s)
    parsed, mutex = _figures("mutex")
    assert parsed.summary.events == 2 and mutex.events_per_s and mutex.events_per_s > 0


def _line(test: str, label: str) -> str:
    return next(line for line in _output(test).splitlines() if label in line).split()[-1]


def test_per_second_lines_of_each_host_test_are_read() -> None:
    for test in ("cpu", "memory", "fileio", "threads"):
        lines = [line for line in _output(test).splitlines() if line.startswith("[ ")]
        seconds = [host_second(test, line) for line in lines]
        assert lines and all(seconds), test
        assert [s.t for s in seconds] == sorted(s.t for s in seconds)
    fileio = host_second("fileio", next(line for line in _output("fileio").splitlines() if line.startswith("[ 1s ]")))
    assert fileio.headline == pytest.approx(fileio.read_mib_per_s + fileio.written_mib_per_s)
    assert fileio.fsyncs_per_s > 0 and fileio.latency_pct == 95.0
    assert host_second("mutex", "General statistics:") is None


def test_fileio_prepare_and_cleanup_carry_only_the_file_options() -> None:
    options = validate_options("fileio", {"file-test-mode": "rndrw", "file-num": 4, "file-total-size": "32M",
                                          "file-rw-ratio": 2})
    run = build_host_argv(sysbench="sysbench", test="fileio", command="run", options=options, threads=2, time_s=3,
                          report_interval_s=1, percentile=95, histogram=True)
    assert run[:2] == ["sysbench", "fileio"] and run[-1] == "run"
    assert {"--threads=2", "--time=3", "--report-interval=1", "--file-test-mode=rndrw", "--file-rw-ratio=2"} <= set(run)
    prepare = build_host_argv(sysbench="sysbench", test="fileio", command="prepare", options=options, time_s=3)
    assert prepare == ["sysbench", "fileio", "--file-num=4", "--file-total-size=32M", "prepare"]
    with pytest.raises(ValueError, match="no 'prepare'"):
        build_host_argv(sysbench="sysbench", test="cpu", command="prepare", options={})
    with pytest.raises(ValueError, match="not a host test"):
        build_host_argv(sysbench="sysbench", test="oltp_read_only", command="run", options={})


@pytest.mark.slow  # runs sysbench's cpu, memory, fileio and mutex tests: 4.5 s
def test_sysbench_runs_every_host_test_at_its_catalogue_defaults(tmp_path: Path) -> None:
    for test in HOST_TESTS:
        options = {name: spec.default for name, spec in TESTS[test].options.items() if spec.default not in (None, "")}
        if test == "fileio":
            options.update({"file-test-mode": "seqrd", "file-total-size": "4M", "file-num": 2})
        options = validate_options(test, options)
        for command in (("prepare", "run", "cleanup") if test == "fileio" else ("run",)):
            argv = build_host_argv(sysbench="sysbench", test=test, command=command, options=options, time_s=1,
                                   report_interval_s=1)
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, (test, command, done.stdout[-500:], done.stderr[-500:])
            if command == "run":
                assert parser.parse_output(done.stdout).complete, test
    assert list(tmp_path.iterdir()) == []  # fileio's cleanup removed its files


# ---------------------------------------------------------------- rows: targets, scenarios, campaigns


@pytest.mark.django_db
def test_a_client_host_target_names_a_registered_host_and_has_no_database() -> None:
    ClientHost.objects.create(hostname="vm-a", queue="q")
    product = ProductFactory(name="vm-a machine")
    target = services.target_create(name="host vm-a", kind=Target.Kind.CLIENT_HOST, product=product, host="vm-a")
    assert target.is_client_host() and target.endpoint_label() == "client host vm-a"
    with pytest.raises(ValidationError) as refused:
        services.target_create(name="host vm-z", kind=Target.Kind.CLIENT_HOST, product=product, host="vm-z")
    assert "no client host is registered as 'vm-z'" in refused.value.message_dict["host"][0]
    with pytest.raises(ValidationError) as refused:
        services.target_create(name="host vm-a 2", kind=Target.Kind.CLIENT_HOST, product=product, host="vm-a",
                               driver="mysql", port=3306, password="secret")
    assert set(refused.value.message_dict) == {"driver", "port", "password"}
    with pytest.raises(ValidationError) as refused:
        services.target_create(name="db", product=product, host="127.0.0.1")
    assert set(refused.value.message_dict) == {"driver", "port", "database", "user"}


@pytest.mark.django_db
def test_a_host_test_scenario_needs_no_dataset_and_prepares_no_tables() -> None:
    scenario = services.scenario_create(name="fio", test="fileio", cleanup="after_job", prepare_mode="always",
                                        options={"file_test_mode": "rndrw", "file-total-size": "64M"})
    assert scenario.dataset.name == services.HOST_TEST_DATASET
    assert (scenario.prepare_mode, scenario.cleanup) == ("never", "keep")
    with pytest.raises(ValidationError) as refused:
        services.scenario_create(name="fio-big", test="fileio",
                                 options={"file-test-mode": "rndrw", "file-total-size": "64G"})
    assert "file-total-size" in refused.value.message_dict["options"][0]
    with pytest.raises(ValidationError) as refused:
        services.scenario_create(name="fio-nomode", test="fileio", options={})
    assert "file-test-mode" in refused.value.message_dict["options"][0]


@pytest.mark.django_db
def test_a_campaign_pairs_host_tests_with_client_hosts_and_database_tests_with_databases() -> None:
    ClientHost.objects.create(hostname="vm-a", queue="q")
    host = services.target_create(name="host vm-a", kind=Target.Kind.CLIENT_HOST, product=ProductFactory(),
                                  host="vm-a")
    database = TargetFactory()
    cpu = services.scenario_create(name="cpu", test="cpu", time_s=5)
    oltp = ScenarioFactory()
    assert runs_on(host, cpu) and runs_on(database, oltp) and not runs_on(host, oltp) and not runs_on(database, cpu)
    campaign = CampaignFactory(targets=[host, database], scenarios=[cpu, oltp], threads=[2], clients_min=2)
    planned = services.campaign_expand(campaign=campaign)
    assert sorted((p.target.name, p.scenario.name, p.clients) for p in planned) == sorted(
        [("host vm-a", "cpu", 1), (database.name, oltp.name, 2)])
    plan = services.campaign_plan(campaign=campaign)
    host_job = next(j for j in plan["jobs"] if j["test"] == "cpu")
    assert host_job["commands"] == ["sysbench cpu --forced-shutdown=30 --histogram=on --percentile=95 "
                                    "--report-interval=1 --threads=2 --time=5 run"]
    assert host_job["client_host"] == "vm-a" and host_job["estimated_dataset_bytes"] == 0
    # Settings variants cross the database tests only: a host test measures the client host, which no variant
    # changes, so it runs once, under no variant's name.
    Campaign.objects.filter(pk=campaign.pk).update(
        variants=[{"name": "default"}, {"name": "lazy", "mysql": {"sync_binlog": "0"}}])
    campaign.refresh_from_db()
    planned = services.campaign_expand(campaign=campaign)
    assert sorted((p.target.name, p.scenario.name, p.variant) for p in planned) == sorted(
        [("host vm-a", "cpu", ""), (database.name, oltp.name, "default"), (database.name, oltp.name, "lazy")])


# ---------------------------------------------------------------- verdicts


def test_target_side_findings_do_not_misfire_on_a_host_test() -> None:
    busy = {"vm-a": [100.0] * 20}
    evidence = dict(time_s=20.0, duration_s=20.0, qps=[1000.0] * 20, client_busy_pct=busy, same_host=True,
                    server_total=1.0, sysbench_total=1000.0, window_s=60.0, full_cache=True, cache_hit_ratio=0.5)
    database_codes = {f.code for f in validity.judge(validity.Evidence(**evidence))[0]}
    assert {"client-bound", "same-host", "server-disagrees", "cache-cold"} <= database_codes
    findings, verdict = validity.judge(validity.Evidence(**evidence, host_test=True))
    assert not {f.code for f in findings} & validity.TARGET_SIDE and verdict == validity.VALID
    shared, verdict = validity.judge(validity.Evidence(**evidence, host_test=True, shared_with=["job #1 of run #2"]))
    assert [f.code for f in shared] == ["shared"] and verdict == validity.INVALID


# ---------------------------------------------------------------- self-measurement


def test_the_self_measurement_reads_as_a_sentence() -> None:
    assert self_measurement_text({}) == ""
    text = self_measurement_text({"cpu_events_per_s": 1234.4, "memory_mib_per_s": 5678.0,
                                  "measured_at": "2026-11-27T03:10:00+00:00"})
    assert text.startswith("cpu 1,234 events/s, memory 5,678 MiB/s, measured 2026-11-27 ")


@pytest.mark.django_db
def test_a_self_measurement_never_starts_beside_a_job_and_a_job_waits_for_one() -> None:
    ClientHost.objects.create(hostname="vm-a", queue="q")
    job = _job()
    client = JobClient.objects.create(job=job, index=0, host_name="vm-a", status=JobClient.Status.RUNNING)
    assert not selfmeasure.self_measure_claim(hostname="vm-a", seconds=1)
    assert ClientHost.objects.get(hostname="vm-a").self_measuring_until is None
    JobClient.objects.filter(pk=client.pk).update(status=JobClient.Status.SUCCEEDED)
    Job.objects.filter(pk=job.pk).update(claimed_by="vm-a", status=Job.Status.PREPARING)
    assert not selfmeasure.self_measure_claim(hostname="vm-a", seconds=1)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED)
    assert selfmeasure.self_measure_claim(hostname="vm-a", seconds=1)
    assert not selfmeasure.self_measure_claim(hostname="vm-a", seconds=1)  # one at a time
    # A job arriving meanwhile waits for the mark to pass (a worker killed mid-measurement frees it by itself).
    ClientHost.objects.filter(hostname="vm-a").update(self_measuring_until=timezone.now() + timedelta(seconds=0.6))
    assert 0.4 < selfmeasure.host_self_measure_wait("vm-a") < 5


@pytest.mark.slow  # runs sysbench: 2 s
@pytest.mark.django_db
def test_a_host_measures_itself_with_sysbench_and_is_due_again_a_day_later() -> None:
    ClientHost.objects.create(hostname="vm-a", queue="q", cores=1)
    assert selfmeasure.hosts_self_measure_due() == ["vm-a"]
    with override_settings(BENCHAPP_HOSTNAME="vm-a", BENCHAPP_SELF_MEASURE_S=1):
        measurement = selfmeasure.host_self_measure()
    host = ClientHost.objects.get(hostname="vm-a")
    assert measurement is not None and host.self_measurement == measurement and host.self_measuring_until is None
    assert measurement["cpu_events_per_s"] > 0 and measurement["memory_mib_per_s"] > 0
    assert host.self_measurement_text().startswith("cpu ") and "facts" not in host.facts()["self_measurement"]
    assert selfmeasure.hosts_self_measure_due() == []
    with override_settings(BENCHAPP_SELF_MEASURE_EVERY_S=0):
        assert selfmeasure.hosts_self_measure_due() == ["vm-a"]
    with override_settings(BENCHAPP_HOSTNAME="vm-b"), pytest.raises(ValueError, match="cannot measure"):
        selfmeasure.host_self_measure(hostname="vm-a")


@pytest.mark.django_db
def test_test_file_directories_of_finished_jobs_are_swept(tmp_path: Path) -> None:
    running, finished = _job(Job.Status.RUNNING), _job(Job.Status.SUCCEEDED)
    for job in (running, finished):
        (tmp_path / f"job-{job.pk}").mkdir()
    (tmp_path / "other").mkdir()
    with override_settings(BENCHAPP_HOSTTEST_DIR=tmp_path):
        assert job_dirs_sweep() == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"job-{running.pk}", "other"])


# ---------------------------------------------------------------- end to end: two client hosts compared


# Findings a host test may carry: its host was busy with other processes, its figure had not settled, it overran.
HOST_SIDE = {"host-busy", "not-settled", "overran"}


def _wait_run(run: Run, timeout_s: float) -> Run:
    def finished() -> bool:
        run.refresh_from_db()
        return run.is_finished()

    wait_for(finished, timeout_s=timeout_s, what=f"run {run.pk} to finish")
    return run


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_two_client_hosts_run_cpu_memory_and_fileio_and_are_compared(celery_worker_process, make_worker,
                                                                       target_databases, request):
    started = time.monotonic()
    # fileio writes as the sandbox's user, who must pass through the directory's parents (pytest's are 0700).
    hosttest_dir = Path(tempfile.mkdtemp(prefix="benchapp-hosttests-"))
    hosttest_dir.chmod(0o711)
    request.addfinalizer(lambda: shutil.rmtree(hosttest_dir, ignore_errors=True))
    # A host that joins measures itself (sysbench cpu and memory), and the Hosts page shows it.
    make_worker("host-b", extra_env={"BENCHAPP_SELF_MEASURE": "true", "BENCHAPP_SELF_MEASURE_S": "1",
                                     "BENCHAPP_HOSTTEST_DIR": str(hosttest_dir / "host-b")})
    measured = wait_for(lambda: ClientHost.objects.filter(hostname="host-b").exclude(self_measurement={}).first(),
                        timeout_s=60, what="host-b's self-measurement")
    assert measured.self_measurement["cpu_events_per_s"] > 0 and measured.self_measurement["memory_mib_per_s"] > 0
    assert measured.self_measuring_until is None
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "hosts-viewer"))
    hosts_html = page.get("/hosts/").content.decode()
    assert measured.self_measurement_text() in hosts_html and "cpu " in measured.self_measurement_text()
    wait_for(lambda: ClientHost.objects.online().filter(hostname__in=["client-a", "host-b"]).count() == 2,
             timeout_s=20, what="both client hosts online")

    # Targets and scenarios through the API, as a user makes them.
    operator = client_for(make_user(roles.OPERATOR, "hosts-operator"))
    targets = {}
    for hostname in ("client-a", "host-b"):
        product = operator.post("/api/v1/products/", {"name": f"machine {hostname}", "engine": "other"},
                                format="json")
        assert product.status_code == 201, product.json()
        answer = operator.post("/api/v1/targets/", {"name": f"host {hostname}", "kind": "client_host",
                                                    "product": product.json()["id"], "host": hostname}, format="json")
        assert answer.status_code == 201, answer.json()
        assert answer.json()["endpoint"] == f"client host {hostname}"
        targets[hostname] = answer.json()["id"]
    refused = operator.post("/api/v1/targets/", {"name": "host nowhere", "kind": "client_host",
                                                 "product": product.json()["id"], "host": "nowhere"}, format="json")
    assert refused.status_code == 400 and "nowhere" in refused.json()["host"][0]
    scenarios = {}
    for test, options in (("cpu", {"cpu-max-prime": 5000}), ("memory", {"memory-block-size": "4K"}),
                          ("fileio", {"file-test-mode": "rndrw", "file-total-size": "16M", "file-num": 4})):
        answer = operator.post("/api/v1/scenarios/", {"name": f"host {test}", "test": test, "options": options,
                                                      "time_s": 3, "report_interval_s": 1}, format="json")
        assert answer.status_code == 201, answer.json()
        scenarios[test] = answer.json()["id"]
    refused = operator.post("/api/v1/scenarios/", {"name": "fileio huge", "test": "fileio", "time_s": 3,
                                                   "options": {"file-test-mode": "seqrd", "file-total-size": "900G"}},
                            format="json")
    assert refused.status_code == 400 and "file-total-size" in str(refused.json())

    # One campaign with both client hosts, the three host tests, and a MariaDB target with a database test: each
    # kind of test runs only on its kind of target.
    database = TargetFactory()
    oltp = ScenarioFactory(time_s=2, dataset=DatasetFactory(name="tiny-hosttests", tables=1, table_size=200))
    campaign = CampaignFactory(targets=[Target.objects.get(pk=targets["client-a"]),
                                        Target.objects.get(pk=targets["host-b"]), database],
                               scenarios=[*Scenario.objects.filter(pk__in=scenarios.values()), oltp], threads=[1])
    run = _wait_run(services.campaign_launch(campaign=campaign), timeout_s=240)
    jobs = list(run.jobs.select_related("target", "scenario", "result").order_by("position"))
    assert [j.status for j in jobs] == [Job.Status.SUCCEEDED] * 7, [(j.pk, j.error) for j in jobs]
    assert sorted((j.target.name, j.scenario.test) for j in jobs) == sorted(
        [(f"host {h}", t) for h in ("client-a", "host-b") for t in ("cpu", "memory", "fileio")]
        + [(database.name, "oltp_point_select")])
    for job in (j for j in jobs if j.target.is_client_host()):
        client = job.clients.get()
        assert client.host_name == job.target.host and client.exit_code == 0
        assert "--mysql" not in client.command_line and "--db-driver" not in client.command_line
        figures = job.result.host_figures
        assert job.result.tps == pytest.approx(figures["events_per_s"]) and job.result.tps > 0
        assert job.samples.count() >= 2, job  # per-second lines, as sysbench printed them
        # Judged as the host's measurement: nothing about a target, only what disturbed the host itself (on a shared
        # machine other processes may well take its CPUs: "host-busy" then says so).
        assert not {f["code"] for f in job.findings} & validity.TARGET_SIDE
        assert {f["code"] for f in job.findings if f["level"] != "info"} <= HOST_SIDE, job.findings
        if job.scenario.test == "cpu":
            assert job.result.qps == pytest.approx(figures["events_per_s"])
        elif job.scenario.test == "memory":
            assert job.result.qps == pytest.approx(figures["mib_per_s"]) and figures["mib_per_s"] > 0
        else:
            assert figures["reads_per_s"] > 0 and figures["writes_per_s"] > 0 and figures["fsyncs_per_s"] > 0
            assert job.result.qps == pytest.approx(figures["read_mib_per_s"] + figures["written_mib_per_s"])
            assert "fileio" in client.prepare_output and "--file-total-size=16M" in client.prepare_output
            assert not (Path(ROOT) / "var" / "hosttests" / f"job-{job.pk}").exists()
            assert not (hosttest_dir / "host-b" / f"job-{job.pk}").exists()
        if job.target.host == "host-b":
            # The job's environment keeps the host's speed as it was when the job ran.
            assert client.host_facts["self_measurement"]["cpu_events_per_s"] > 0
            assert measured.self_measurement_text() in page.get(f"/jobs/{job.pk}/").content.decode()

    # The two hosts compared, as any two products are: one column each, Δ% against the first.
    viewer = client_for(make_user(roles.VIEWER, "hosts-compare-viewer"))
    comparison = viewer.get(f"/api/v1/comparisons/?targets={targets['client-a']},{targets['host-b']}").json()
    assert [p["name"] for p in comparison["products"]] == ["machine client-a", "machine host-b"]
    groups = {g["scenario"]["test"]: g for g in comparison["groups"]}
    assert set(groups) == {"cpu", "memory", "fileio"}
    for test, group in groups.items():
        (row,) = group["rows"]
        base, other = row["cells"]
        assert base["qps"]["value"] > 0 and other["qps"]["value"] > 0, test
        assert other["delta_pct"]["qps"] == pytest.approx(
            (other["qps"]["value"] / base["qps"]["value"] - 1) * 100, abs=0.01)
    # The comparison page labels each host test's headline column by its unit.
    html = page.get(f"/compare/?targets={targets['client-a']},{targets['host-b']}").content.decode()
    assert 'data-metric="qps">events/s</th>' in html and 'data-metric="qps">MiB/s</th>' in html
    # Its charts too: the titles, and the axis (the charts' data names the unit for compare.js).
    assert "<figcaption>events/s vs threads" in html and "<figcaption>MiB/s vs threads" in html
    assert "QPS vs threads" not in html
    assert '"qps_label": "MiB/s"' in html and '"qps_label": "QPS"' not in html
    record_measurement(f"host tests on two client hosts (cpu, memory, fileio × 2 hosts + 1 MariaDB job, "
                       f"3 s each), self-measurement at join included: {time.monotonic() - started:.0f} s end to end")


def _form_errors(html: str) -> list[str]:
    return re.findall(r'<p class="error" id="([^"]*)"[^>]*>(.*?)</p>', html, re.S)


@pytest.mark.django_db
def test_the_pages_make_a_client_host_target_and_a_host_test_scenario_without_a_dataset() -> None:
    ClientHost.objects.create(hostname="vm-a", queue="q")
    page = PageClient()
    page.force_login(make_user(roles.OPERATOR, "hosts-page-operator"))
    form = page.get("/scenarios/new/?test=fileio").content.decode()
    assert "host tests (measure a client host)" in form and "file-test-mode" in form.replace("_", "-")
    answer = page.post("/scenarios/new/", {"name": "fio page", "test": "fileio", "time_s": "5", "warmup_s": "0",
                                           "report_interval_s": "1", "percentile": "95", "prepare_threads": "1",
                                           "prepare_mode": "auto", "cleanup": "after_run",
                                           "opt__file_test_mode": "seqrd", "opt__file_total_size": "8M"})
    assert answer.status_code == 302, _form_errors(answer.content.decode())
    scenario = Scenario.objects.get(name="fio page")
    assert scenario.dataset.name == services.HOST_TEST_DATASET and scenario.options["file-test-mode"] == "seqrd"
    product = ProductFactory(name="vm-a machine")
    answer = page.post("/targets/new/", {"name": "host vm-a", "kind": "client_host", "product": product.pk,
                                         "host": "vm-a"})
    assert answer.status_code == 302, _form_errors(answer.content.decode())
    assert Target.objects.get(name="host vm-a").is_client_host()
    refused = page.post("/targets/new/", {"name": "host vm-z", "kind": "client_host", "product": product.pk,
                                          "host": "vm-z"}).content.decode()
    assert "no client host is registered as" in refused
