"""A job's latency distribution: p50 … p99.9 from the merged --histogram buckets, in the API and on the
job page, and a plain reason instead of zeros when there is no histogram of the whole run."""
from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client

from campaigns import roles
from campaigns.execution.phases import phase_argv, target_connection
from campaigns.execution.results import (
    NO_HISTOGRAM_CHECKPOINTS,
    NO_HISTOGRAM_OFF,
    NO_HISTOGRAM_PERCENTILE_0,
    result_store,
)
from campaigns.models import Job, JobClient, JobResult, Scenario
from campaigns.services import results_import
from campaigns.sysbench.parser import histogram_percentile, merge_histograms, parse_output
from tests.factories import JobFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import PASSWORD, SHOTS, USER, log_in, phone_shots, wait_js
from tests.helpers.users import API, client_for, make_user

LOGS = Path(__file__).resolve().parent / "data" / "sysbench"
KEYS = ["50", "90", "95", "99", "99.9"]
FIELDS = ["latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms"]


def log(name: str) -> str:
    return (LOGS / f"{name}.txt").read_text()


def imported_job(name: str, *, percentile: float = 95.0) -> Job:
    scenario = ScenarioFactory(test="oltp_read_only", percentile=percentile)
    run = results_import(files=[(f"{name}.txt", log(name))], target=TargetFactory(), scenario=scenario)
    return run.jobs.get()


@pytest.fixture
def viewer() -> Any:
    return client_for(make_user(roles.VIEWER))


@pytest.fixture
def page(db: Any) -> Client:
    client = Client()
    client.force_login(make_user(roles.VIEWER, "page-viewer"))
    return client


@pytest.mark.django_db
def test_a_job_with_a_histogram_gets_p50_to_p99_9_in_the_api(viewer):
    job = imported_job("mysql_oltp_read_only_histogram")
    rows = parse_output(log("mysql_oltp_read_only_histogram")).histogram
    assert rows
    body = viewer.get(f"{API}/jobs/{job.pk}/").json()
    result = body["result"]
    expected = [histogram_percentile(rows, float(k)) for k in KEYS]
    assert [result[f] for f in FIELDS] == expected
    assert expected == sorted(expected) and expected[0] < expected[-1]
    # The p95 is the very bucket sysbench printed as its own "95th percentile" (to 2 decimals).
    assert result["latency_p95_ms"] == pytest.approx(result["latency_pct_ms"], abs=0.011)
    assert result["latency_percentiles_missing"] is None
    # The chart's data: every bucket, adding up to the job's events.
    assert body["latency_histogram"] == [[v, c] for v, c in rows]
    assert sum(c for _, c in body["latency_histogram"]) == job.result.events
    listed = viewer.get(f"{API}/jobs/?run={job.run_id}").json()["results"][0]["result"]
    assert listed["latency_p999_ms"] == expected[-1]
    results = viewer.get(f"{API}/results/?run={job.run_id}").json()["results"][0]
    assert results["latency_p99_ms"] == expected[3] and results["latency_percentiles_missing"] is None


@pytest.mark.django_db
def test_percentile_0_says_there_is_no_histogram_instead_of_zeros(viewer, page):
    job = imported_job("mysql_oltp_point_select_percentile_0", percentile=0)
    body = viewer.get(f"{API}/jobs/{job.pk}/").json()
    assert [body["result"][f] for f in FIELDS] == [None] * 5
    assert body["result"]["latency_pct_ms"] is None
    assert body["result"]["latency_percentiles_missing"] == NO_HISTOGRAM_PERCENTILE_0
    assert body["latency_histogram"] is None
    html = page.get(f"/jobs/{job.pk}/").content.decode()
    assert "no latency histogram: sysbench ran with --percentile=0" in html
    assert 'data-testid="latency-percentiles"' not in html and "latency-histogram-data" not in html
    assert "Latency per second: not measured (sysbench ran with --percentile=0)" in html
    assert " p0 " not in html and "p0.00" not in html


@pytest.mark.django_db
def test_a_checkpointed_log_has_no_whole_run_distribution(viewer):
    job = imported_job("mysql_oltp_read_write_checkpoints_whole_run")
    # Its histogram covers only the last 3 s of 9: not kept, not used.
    assert job.clients.get().histogram is None
    result = viewer.get(f"{API}/jobs/{job.pk}/").json()["result"]
    assert [result[f] for f in FIELDS] == [None] * 5
    assert result["latency_percentiles_missing"] == NO_HISTOGRAM_CHECKPOINTS


@pytest.mark.django_db
def test_a_log_without_histogram_says_so(viewer):
    job = imported_job("mysql_oltp_read_only")
    result = viewer.get(f"{API}/results/?run={job.run_id}").json()["results"][0]
    assert result["latency_p50_ms"] is None and result["latency_percentiles_missing"] == NO_HISTOGRAM_OFF
    # sysbench's own printed percentile is still there: it is a different thing (one figure, as printed).
    assert result["latency_pct_ms"] is not None


def two_client_job() -> tuple[Job, list[list[tuple[float, int]]]]:
    """A job whose two clients printed real, different histograms (MariaDB's and PostgreSQL's captures)."""
    job = JobFactory(clients_needed=2)
    histograms = []
    for index, name in enumerate(["mysql_oltp_read_only_histogram", "pgsql_oltp_read_only_histogram"]):
        parsed = parse_output(log(name))
        assert parsed.histogram and parsed.summary
        histograms.append(parsed.histogram)
        JobClient.objects.create(job=job, index=index, host_name=f"client-{index}", status=JobClient.Status.SUCCEEDED,
                                 summary=parsed.to_dict()["summary"], histogram=[list(b) for b in parsed.histogram])
    return job, histograms


@pytest.mark.django_db
def test_several_clients_percentiles_come_from_their_merged_histograms(page):
    job, histograms = two_client_job()
    result = result_store(job=job, clients=list(job.clients.all()), source=JobResult.Source.MEASURED)
    assert result is not None
    merged = merge_histograms(histograms)
    assert [getattr(result, f) for f in FIELDS] == [histogram_percentile(merged, float(k)) for k in KEYS]
    # Not either client's own figure: the distribution of every event of the job.
    for alone in histograms:
        assert [getattr(result, f) for f in FIELDS] != [histogram_percentile(alone, float(k)) for k in KEYS]
    html = page.get(f"/jobs/{job.pk}/").content.decode()
    table = re.search(r'data-testid="latency-percentiles".*?</table>', html, re.S)
    assert table is not None
    cells = dict(re.findall(r'data-pct="([\d.]+)">([^<]+)<', table.group(0)))
    assert list(cells) == KEYS
    assert cells["99.9"].strip() != "—"
    assert "all 2 clients' histograms merged" in table.group(0)
    assert "latency-histogram-data" in html and "build/latency.js" in html
    # Per-second latency stays the worst client's, and the caption says so.
    assert "the worst client's p95 each second" in html


@pytest.mark.django_db
def test_the_migration_fills_stored_results_measured_and_imported(viewer):
    job, histograms = two_client_job()
    imported = imported_job("pgsql_oltp_read_only_histogram")
    checkpointed = imported_job("mysql_oltp_read_only_checkpoints")
    # As stored before the migration: histograms kept on the clients, no distribution on the result.
    for j in (job, imported, checkpointed):
        JobResult.objects.update_or_create(job=j, defaults={"qps": 1.0})
    # An old checkpointed row: the last block's summary, histogram and figures (775.92 tps of the last 2 s).
    old_parse = parse_output(log("mysql_oltp_read_only_checkpoints"))
    assert old_parse.last_segment is not None
    JobClient.objects.filter(job=checkpointed).update(
        histogram=[list(b) for b in old_parse.histogram or []], summary=old_parse.last_segment.to_dict())
    JobResult.objects.filter(job=checkpointed).update(tps=775.92, transactions=1553, latency_pct=95.0,
                                                      latency_pct_ms=1.55)
    JobResult.objects.update(**{f: None for f in FIELDS}, latency_percentiles_missing="")
    migration = importlib.import_module("campaigns.migrations.0020_result_latency_percentiles")
    migration.fill_latency_percentiles(apps, None)
    merged = merge_histograms(histograms)
    assert JobResult.objects.get(job=job).latency_p99_ms == histogram_percentile(merged, 99.0)
    pg = parse_output(log("pgsql_oltp_read_only_histogram")).histogram or []
    assert JobResult.objects.get(job=imported).latency_p999_ms == histogram_percentile(pg, 99.9)
    old = JobResult.objects.get(job=checkpointed)
    assert old.latency_p50_ms is None and old.latency_percentiles_missing == NO_HISTOGRAM_CHECKPOINTS
    # Its figures are now the whole run's: 822 + 765 + 1,553 transactions over 4.0025 s.
    assert old.tps == pytest.approx(784.51) and old.transactions == 3140 and old.duration_s == 4.0025
    assert old.latency_pct_ms is None and old.latency_avg_ms == pytest.approx(1.27)
    client = JobClient.objects.get(job=checkpointed)
    assert client.histogram is None and client.summary["checkpoints"] == 2
    # The others' figures are untouched.
    assert JobResult.objects.get(job=imported).qps == 1.0


@pytest.mark.django_db
def test_a_percentile_0_scenario_is_run_without_histogram_which_sysbench_would_refuse():
    # sysbench 1.0.20: "FATAL: --histogram cannot be used with --percentile=0" (SYSBENCH-NOTES.md): such a job
    # used to fail before its first second.
    target = TargetFactory()
    scenario = ScenarioFactory(percentile=0)
    job = JobFactory(target=target, scenario=scenario)
    conn = target_connection(target=target)
    argv = phase_argv(job=job, conn=conn, command="run")
    assert "--percentile=0" in argv and not any(a.startswith("--histogram") for a in argv)
    Scenario.objects.filter(pk=scenario.pk).update(percentile=99)
    job = Job.objects.select_related("scenario").get(pk=job.pk)
    argv = phase_argv(job=job, conn=conn, command="run")
    assert "--percentile=99" in argv and "--histogram=on" in argv


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_job_page_draws_the_latency_histogram_and_says_when_there_is_none(browser_page, live_server):
    browser, page, problems = browser_page
    get_user_model().objects.create_superuser(USER, "lat@example.com", PASSWORD)
    job, histograms = two_client_job()
    result_store(job=job, clients=list(job.clients.all()), source=JobResult.Source.MEASURED)
    no_histogram = imported_job("mysql_oltp_point_select_percentile_0", percentile=0)
    log_in(page, USER, PASSWORD)

    page.goto(f"/jobs/{job.pk}/")
    wait_js(page, "window.Chart && Chart.getChart(document.getElementById('chart-latency-histogram'))")
    drawn = page.evaluate("""() => {
        const chart = Chart.getChart(document.getElementById('chart-latency-histogram'));
        const data = chart.data.datasets[0].data;
        return {buckets: data.filter(p => p.y > 0).map(p => [p.x, p.y]), events: data.reduce((s, p) => s + p.y, 0),
                xType: chart.scales.x.type, xTitle: chart.options.scales.x.title.text};
    }""")
    merged = merge_histograms(histograms)
    assert drawn == {"buckets": [list(b) for b in merged], "events": sum(c for _, c in merged),
                     "xType": "logarithmic", "xTitle": "latency (ms, log scale)"}
    table = page.locator("[data-testid=latency-percentiles]")
    assert table.locator("th").all_inner_texts() == ["p50", "p90", "p95", "p99", "p99.9"]
    p999 = table.locator("[data-pct='99.9']").inner_text().strip()
    assert p999 == f"{histogram_percentile(merged, 99.9):.2f}"
    page.locator("[data-testid=latency-distribution]").screenshot(path=str(SHOTS / "latency-distribution.png"))
    page.screenshot(path=str(SHOTS / "latency-job-page.png"), full_page=True)

    page.goto(f"/jobs/{no_histogram.pk}/")
    assert page.locator("[data-testid=latency-missing]").inner_text() == NO_HISTOGRAM_PERCENTILE_0 + "."
    assert page.locator("#chart-latency-histogram").count() == 0
    page.locator("[data-testid=latency-distribution]").screenshot(path=str(SHOTS / "latency-percentile-0.png"))
    phone_shots(browser, live_server, problems, {"latency-job-phone": f"/jobs/{job.pk}/"})
    assert not problems.items, "\n".join(problems.items)
