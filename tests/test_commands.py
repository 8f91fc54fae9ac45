"""The sysbench management commands: parse a pasted command, parse an output, import logs."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from campaigns.models import IntervalSample, Job, JobResult, Run
from tests.factories import ScenarioFactory, TargetFactory

DATA = Path(__file__).resolve().parent / "data" / "sysbench"


def _run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_parse_sysbench_command_prints_a_scenario_without_the_password():
    text = ("sysbench --db-driver=mysql --mysql-host=10.0.0.5 --mysql-port=3306 --mysql-user=bench "
            "--mysql-password=Hunter2secret --mysql-db=sbtest --tables=10 --table-size=10000000 --threads=256 "
            "--time=300 --percentile=95 --report-interval=1 oltp_read_only --skip-trx=1 run")
    parsed = json.loads(_run("parse_sysbench_command", text))
    assert parsed["test"] == "oltp_read_only"
    assert parsed["tables"] == 10 and parsed["table_size"] == 10_000_000
    assert parsed["threads"] == [256] and parsed["time_s"] == 300
    assert parsed["options"]["skip-trx"] is True
    assert parsed["target_hint"]["host"] == "10.0.0.5"
    assert "Hunter2secret" not in json.dumps(parsed)


def test_parse_sysbench_command_maps_05_spellings():
    text = ("sysbench --test=/usr/share/sysbench/tests/include/oltp_legacy/oltp.lua --oltp_tables_count=8 "
            "--oltp-table-size=10000000 --num-threads=128 --max-time=1800 --max-requests=0 run")
    parsed = json.loads(_run("parse_sysbench_command", text))
    assert parsed["test"] == "oltp_legacy/oltp.lua"
    assert parsed["tables"] == 8 and parsed["threads"] == [128] and parsed["time_s"] == 1800


def test_parse_sysbench_command_refuses_text_without_a_test():
    with pytest.raises(CommandError):
        _run("parse_sysbench_command", "echo hello")


def test_parse_sysbench_output_prints_the_json_shape_and_stores_nothing(db):
    path = DATA / "mysql_oltp_read_only_histogram.txt"
    parsed = json.loads(_run("parse_sysbench_output", str(path)))
    assert set(parsed) >= {"sysbench_version", "test", "threads", "complete", "errors", "summary", "intervals", "histogram"}
    assert parsed["complete"] is True and parsed["histogram"]
    assert set(parsed["summary"]["latency_ms"]) == {"min", "avg", "max", "percentile", "pct", "sum"}
    assert IntervalSample.objects.count() == 0


def test_parse_sysbench_output_reports_a_killed_run_as_incomplete(db):
    parsed = json.loads(_run("parse_sysbench_output", str(DATA / "mysql_oltp_read_only_killed.txt")))
    assert parsed["complete"] is False
    assert parsed["intervals"]


@pytest.mark.django_db
def test_import_sysbench_log_stores_an_imported_run_with_its_samples(tmp_path):
    target, scenario = TargetFactory(), ScenarioFactory()
    path = DATA / "mysql_oltp_point_select.txt"
    out = _run("import_sysbench_log", str(path), "--target", target.name, "--scenario", scenario.name)
    assert "imported 1 log" in out
    run = Run.objects.get(trigger=Run.Trigger.IMPORT)
    job = run.jobs.get()
    assert job.imported and job.status == Job.Status.SUCCEEDED
    printed = [line for line in path.read_text().splitlines() if line.startswith("[") and "thds:" in line]
    assert job.samples.count() == len(printed)
    assert JobResult.objects.get(job=job).source == JobResult.Source.IMPORTED


@pytest.mark.django_db
def test_import_sysbench_log_refuses_a_file_that_is_not_sysbench_output_and_stores_nothing(tmp_path):
    target, scenario = TargetFactory(), ScenarioFactory()
    good = DATA / "mysql_oltp_point_select.txt"
    bad = tmp_path / "notes.txt"
    bad.write_text("Meeting notes\nnothing to see here\n")
    with pytest.raises(CommandError, match="notes.txt: not sysbench output"):
        _run("import_sysbench_log", str(good), str(bad), "--target", target.name, "--scenario", scenario.name)
    assert Run.objects.count() == 0 and Job.objects.count() == 0 and IntervalSample.objects.count() == 0


@pytest.mark.django_db
def test_import_sysbench_log_names_an_unknown_target():
    scenario = ScenarioFactory()
    with pytest.raises(CommandError, match="--target"):
        _run("import_sysbench_log", str(DATA / "mysql_oltp_point_select.txt"), "--target", "nope",
             "--scenario", scenario.name)


def test_a_seed_001_command_cut_off_before_its_test_parses_with_an_assumed_test():
    text = "sysbench --db-driver=mysql --mysql-host=XXX --mysql-port=XXX --mysql-user=XXX --mys"
    with pytest.raises(CommandError, match="cut off"):
        _run("parse_sysbench_command", text)
    parsed = json.loads(_run("parse_sysbench_command", text, "--test", "oltp_write_only"))
    assert parsed["test"] == "oltp_write_only"
    assert any("assum" in w for w in parsed["warnings"])
