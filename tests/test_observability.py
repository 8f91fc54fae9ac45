"""What an operator watches: /healthz, /readyz, /metrics, request ids, Sentry events, hashed static
files. Integration tests with real processes are in tests/test_observability_processes.py."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.utils import timezone

from campaigns import execution, services
from campaigns.models import ClientHost, Job
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db


def _live_worker(role: str = "all") -> ClientHost:
    return ClientHost.objects.create(hostname=f"w-{role}", queue=execution.host_queue(f"w-{role}"), role=role,
                                     last_heartbeat=timezone.now())


def test_healthz_answers_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"].startswith("max-age=0")


def test_readyz_is_ready_with_postgresql_redis_and_a_live_all_worker(client):
    _live_worker("all")
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok" and body["failing"] == []
    assert set(body["checks"]) == {"postgresql", "cache_redis", "broker_redis", "worker"}


def test_readyz_is_unavailable_naming_the_worker_when_only_client_workers_live(client):
    _live_worker("client")
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["worker"]
    assert "`all` role" in body["checks"]["worker"]["error"]


def test_readyz_names_the_broker_without_its_password(client, settings):
    _live_worker("all")
    settings.CELERY_BROKER_URL = "redis://:hunter2-broker@127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["broker_redis"]
    assert "hunter2" not in response.content.decode()


def test_metrics_are_refused_to_other_addresses_and_served_with_the_token(client, settings):
    settings.BENCHAPP_METRICS_TOKEN = "metrics-token-123"
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    response = client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer metrics-token-123")
    assert response.status_code == 200
    assert client.get("/metrics").status_code == 200  # loopback by default


def test_metrics_show_benchapp_series(client):
    _live_worker("all")
    target = TargetFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[ScenarioFactory(time_s=1)], threads=[1, 2])
    run = services.campaign_launch(campaign=campaign)
    Job.objects.filter(run=run, threads=2).update(status=Job.Status.WAITING,
                                                  wait_reason="the database is busy with run #9 (sbtest)")
    client.get("/healthz")
    text = client.get("/metrics").content.decode()
    assert 'benchapp_runs{status="running"} 1.0' in text or 'benchapp_runs{status="pending"} 1.0' in text
    assert 'benchapp_jobs{status="queued"} 1.0' in text
    assert 'benchapp_jobs_waiting{reason="dataset_busy"} 1.0' in text
    assert 'benchapp_client_hosts_online{role="all"} 1.0' in text
    assert 'benchapp_client_host_heartbeat_age_seconds{host="w-all",role="all"}' in text
    assert f'benchapp_celery_queue_length{{queue="{execution.server_queue()}"}}' in text
    assert 'benchapp_samples_stored_total{kind="interval"}' in text
    assert 'benchapp_job_phase_duration_seconds_bucket{le="+Inf",phase="run"}' in text
    assert "benchapp_regression_checks_total" in text and 'benchapp_notifications_total{outcome="failed"}' in text
    assert 'benchapp_regressions_found_total{kind="regression"}' in text
    assert "benchapp_build_info{commit=" in text and "benchapp_database_up 1.0" in text
    assert "benchapp_run_progress_age_max_seconds" in text and "run=" not in text
    assert "benchapp_webhook_retries_total" in text
    assert 'benchapp_http_request_duration_seconds_count{method="GET",status="200",view="healthz"}' in text


def test_a_request_is_served_under_its_x_request_id_or_a_new_one(client):
    assert client.get("/healthz", HTTP_X_REQUEST_ID="abc-123")["X-Request-ID"] == "abc-123"
    forged = client.get("/healthz", HTTP_X_REQUEST_ID="a b\nINFO forged line")["X-Request-ID"]
    assert forged != "a b\nINFO forged line" and len(forged) == 32


def test_json_logs_carry_the_request_id(tmp_path):
    code = ("import logging, django; django.setup(); from benchapp import requestid; "
            "requestid.activate('rid-42'); logging.getLogger('campaigns.x').warning('hello %s', 'there')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings",
                              "BENCHAPP_LOG_FORMAT": "json"}, check=True)
    lines = [json.loads(line) for line in out.stderr.splitlines() if line.startswith("{")]
    line = next(entry for entry in lines if entry["logger"] == "campaigns.x")
    assert line["message"] == "hello there" and line["request_id"] == "rid-42" and line["level"] == "WARNING"


# ---------------------------------------------------------------- Sentry: one event to a receiver of our own

class _Receiver(BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).bodies.append(body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def sentry_receiver() -> Iterator[tuple[str, list[bytes]]]:
    _Receiver.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)  # port 0: the kernel picks a free one
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://publickey@127.0.0.1:{server.server_address[1]}/1", _Receiver.bodies
    finally:
        server.shutdown()
        server.server_close()


SENTRY_SCRIPT = r'''
import django, sentry_sdk
django.setup()
from django.test import Client

def connect_target(host, port, password, api_token):
    dsn = f"mysql://root:{password}@{host}:{port}/sbtest"
    conn_kwargs = {"host": host, "passwd": password}
    raise ConnectionError(f"cannot connect with password={password} to {dsn}?token={api_token}")

try:
    connect_target("10.0.0.9", 3306, "tgt-pass-Secret-991", "apitok0123456789abcdef")
except ConnectionError:
    sentry_sdk.capture_exception()
# And one through Django itself: a request with an API token in its header and a secret in its query.
Client(raise_request_exception=False).get("/no-such-page/?password=qs-Secret-55",
                                          HTTP_AUTHORIZATION="Token apitok0123456789abcdef")
sentry_sdk.capture_message("a message from a request", level="error")
sentry_sdk.flush(timeout=10)
'''


@pytest.mark.slow  # a fresh Django process: 1.5 s
def test_a_sentry_event_reaches_the_receiver_without_any_secret(sentry_receiver):
    dsn, bodies = sentry_receiver
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings", "SENTRY_DSN": dsn,
           "REDIS_URL": "redis://:redis-Secret-77@127.0.0.1:6379/15", "BENCHAPP_CACHE_URL": os.environ["BENCHAPP_CACHE_URL"]}
    subprocess.run([sys.executable, "-c", SENTRY_SCRIPT], cwd=ROOT, env=env, check=True, timeout=120,
                   capture_output=True)
    sent = b"\n".join(bodies).decode(errors="replace")
    assert "cannot connect with password" in sent  # the event arrived, with its message
    assert "connect_target" in sent  # and its stack
    for secret in ("tgt-pass-Secret-991", "apitok0123456789abcdef", "redis-Secret-77", "qs-Secret-55"):
        assert secret not in sent, secret
    from django.conf import settings

    assert settings.SECRET_KEY not in sent


# ---------------------------------------------------------------- static files

@pytest.mark.slow  # collectstatic: 1.8 s
def test_collected_static_files_have_hashed_names_and_a_long_cache(tmp_path, settings):
    from django.core.management import call_command
    from whitenoise.middleware import WhiteNoiseMiddleware

    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "benchapp.staticfiles.StaticFilesStorage"}}
    call_command("collectstatic", "--noinput", verbosity=0)
    paths = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    hashed = paths["campaigns/build/picker.js"]
    assert hashed != "campaigns/build/picker.js" and (tmp_path / hashed).exists()
    # Every script the pages load and every module one imports resolves to a collected file.
    for name, target in paths.items():
        if name.startswith("campaigns/build/") and name.endswith(".js"):
            text = (tmp_path / target).read_text()
            for line in text.splitlines():
                if line.startswith("import ") and " from " in line:
                    imported = line.rsplit(" from ", 1)[1].strip(" ;'\"")
                    assert (tmp_path / target).parent.joinpath(imported).exists(), (name, imported)
    from django.test import override_settings

    with override_settings(WHITENOISE_AUTOREFRESH=False):
        middleware = WhiteNoiseMiddleware(lambda request: None)
        headers = middleware.files[f"/static/{hashed}"].get_response("GET", {}).headers
    assert dict(headers)["Cache-Control"] == "max-age=315360000, public, immutable"


def test_regression_counters_only_go_up_when_the_rows_they_counted_are_deleted(client):
    from campaigns.counters import counter_add

    def checks() -> float:
        line = next(x for x in client.get("/metrics").content.decode().splitlines()
                    if x.startswith("benchapp_regression_checks_total "))
        return float(line.split()[-1])

    before = checks()
    counter_add("regression_checks")
    run = services.campaign_launch(campaign=CampaignFactory(targets=[TargetFactory()],
                                                            scenarios=[ScenarioFactory(time_s=1)]))
    assert checks() == before + 1
    run.delete()
    assert checks() == before + 1


@pytest.mark.slow  # a fresh Django process: 2 s
def test_metrics_answer_503_in_the_exposition_format_while_postgresql_is_away():
    from tests.helpers.servers import free_port

    code = ("import django; django.setup(); from django.test import Client; r = Client().get('/metrics'); "
            "print(r.status_code, r['Content-Type']); print(r.content.decode())")
    away = f"postgres://postgres@127.0.0.1:{free_port()}/benchapp"  # nothing listens: what a stopped server gives
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings", "DATABASE_URL": away},
                         check=True)
    status, body = out.stdout.split("\n", 1)
    assert status == "503 text/plain; version=0.0.4; charset=utf-8", out.stdout + out.stderr
    assert "benchapp_database_up 0.0" in body and "benchapp_build_info{" in body
    assert "<html" not in body.lower()


@pytest.mark.parametrize("proxies", [0, 1])
def test_a_proxied_request_for_metrics_is_refused_without_the_token_whatever_the_proxies(client, settings, proxies):
    """/metrics needs its token when a request came through a proxy: behind the documented TLS proxy every request
    comes from 127.0.0.1, so trusting X-Forwarded-For from there made /metrics public."""
    settings.BENCHAPP_METRICS_TOKEN = "metrics-token-456"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": proxies}
    for header in ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"):
        value = "for=8.8.8.8" if header == "HTTP_FORWARDED" else "8.8.8.8"
        assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", **{header: value}).status_code == 403
        assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", **{header: "127.0.0.1"}).status_code == 403
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="8.8.8.8",
                          HTTP_AUTHORIZATION="Bearer metrics-token-456")
    assert response.status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200  # a scraper on this machine, direct


@pytest.mark.django_db
def test_the_sentry_scrubber_removes_sysbench_passwords_target_passwords_and_values_with_commas():
    # MYSQL_PWD=…, a password holding commas, and a target's password quoted anywhere.
    from benchapp.sentry import FILTERED, before_send
    from tests.factories import TargetFactory

    target = TargetFactory()
    target.set_password("tgt-Secret-77")
    target.save()
    event = {"message": "sysbench failed: MYSQL_PWD=a,b,c PGPASSWORD=p,q password='x, y' (target tgt-Secret-77)",
             "extra": {"env": {"MYSQL_PWD": "a,b,c", "PGPASSWORD": "p,q"}, "argv": ["--mysql-password=s,t,u"]}}
    sent = json.dumps(before_send(event))
    for leaked in ("a,b,c", "p,q", "x, y", "tgt-Secret-77", "s,t,u"):
        assert leaked not in sent, (leaked, sent)
    assert sent.count(FILTERED) >= 6


def _phase_series(text: str, name: str, phase: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(f"{name}{{") and f'phase="{phase}"' in line
                and ('le="+Inf"' in line or "_bucket" not in name))
    return float(line.rsplit(" ", 1)[1])


@pytest.mark.django_db
def test_a_closed_jobs_phases_are_counted_once_and_a_scrape_never_reads_the_jobs_for_them(
        client, settings, django_assert_max_num_queries):
    from campaigns.execution import results

    settings.CELERY_TASK_DEFAULT_QUEUE = f"phases-{os.getpid()}-{timezone.now().timestamp()}"  # counters of its own
    target, scenario = TargetFactory(), ScenarioFactory(time_s=1)
    run = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]))
    job = run.jobs.get()
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, phase=Job.Phase.FINALIZING, queued_at=now - timezone.timedelta(seconds=40),
        claimed_at=now - timezone.timedelta(seconds=38), started_at=now - timezone.timedelta(seconds=30),
        measured_at=now - timezone.timedelta(seconds=3), wall_time_s=25.0, warmup_wall_s=4.0)
    before = client.get("/metrics").content.decode()
    assert _phase_series(before, "benchapp_job_phase_duration_seconds_count", "run") == 0.0
    results.job_close(Job.objects.get(pk=job.pk), status=Job.Status.SUCCEEDED)
    text = client.get("/metrics").content.decode()
    assert _phase_series(text, "benchapp_job_phase_duration_seconds_count", "run") == 1.0
    assert _phase_series(text, "benchapp_job_phase_duration_seconds_sum", "run") == 25.0
    assert _phase_series(text, "benchapp_job_phase_duration_seconds_sum", "queued") == pytest.approx(2.0, abs=0.01)
    assert 'benchapp_job_phase_duration_seconds_bucket{le="30.0",phase="run"} 1.0' in text
    assert 'benchapp_job_phase_duration_seconds_bucket{le="10.0",phase="run"} 0.0' in text
    # Closed again (a redelivered close): the job is no longer this attempt's to close, nothing is counted twice.
    results.job_close(Job.objects.get(pk=job.pk), status=Job.Status.SUCCEEDED)
    assert _phase_series(client.get("/metrics").content.decode(), "benchapp_job_phase_duration_seconds_count",
                         "run") == 1.0
    # A scrape's queries do not grow with the jobs stored (the phases come from the counters).
    with django_assert_max_num_queries(40) as few:
        client.get("/metrics")
    Job.objects.bulk_create([Job(run=run, target=target, scenario=scenario, threads=1, position=n + 1,
                                 status=Job.Status.SUCCEEDED, finished_at=now, wall_time_s=1.0) for n in range(200)])
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get("/metrics")
