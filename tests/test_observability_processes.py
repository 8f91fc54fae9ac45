"""Operability with real processes: /metrics scraped during a real run, /readyz against a Redis of the
test's own that stops and comes back, and a request id from gunicorn's access log into a Celery task's log."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from campaigns import execution, roles, services
from campaigns.models import ClientHost, Job, Run
from tests.conftest import LOG_DIR, ROOT, SESSION_QUEUE, TEST_REDIS_URL, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.servers import free_port
from tests.helpers.users import make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _series(text: str, name: str, **labels: str) -> float | None:
    """One sample's value from Prometheus text, labels in any order."""
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(value)
    return None


# ---------------------------------------------------------------- /metrics during a real run

def test_metrics_show_the_queue_and_the_jobs_moving_during_a_real_run(client, make_worker, target_databases):
    queue = f"{os.environ['BENCHAPP_QUEUE']}-metrics"
    with override_settings(CELERY_TASK_DEFAULT_QUEUE=queue):
        target = TargetFactory(database=target_databases["mysql"])
        scenario = ScenarioFactory(time_s=4, dataset=DatasetFactory(name="obs-metrics", tables=1, table_size=500))
        run = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario],
                                                                threads=[1]))
        scrapes: list[str] = []

        def scrape() -> str:
            response = client.get("/metrics")
            assert response.status_code == 200
            scrapes.append(response.content.decode())
            return scrapes[-1]

        # No worker consumes this queue yet: the job's message waits in it.
        wait_for(lambda: (_series(scrape(), "benchapp_celery_queue_length", queue=queue) or 0) >= 1,
                 timeout_s=30, what="the job's message in its queue")
        assert _series(scrapes[-1], "benchapp_jobs", status="queued") == 1
        samples_before = _series(scrapes[-1], "benchapp_samples_stored_total", kind="interval") or 0
        make_worker("obs-metrics", extra_env={"BENCHAPP_QUEUE": queue})
        wait_for(lambda: _series(scrape(), "benchapp_jobs", status="running") == 1, timeout_s=120, interval_s=0.3,
                 what="the job running in /metrics")
        assert _series(scrapes[-1], "benchapp_celery_queue_length", queue=queue) == 0
        assert _series(scrapes[-1], "benchapp_runs", status="running") == 1
        assert _series(scrapes[-1], "benchapp_run_progress_age_max_seconds") is not None
        age = _series(scrapes[-1], "benchapp_client_host_heartbeat_age_seconds", host="obs-metrics", role="all")
        assert age is not None and age < 30
        wait_for(lambda: _series(scrape(), "benchapp_jobs", status="succeeded") == 1, timeout_s=120,
                 interval_s=0.5, what="the job succeeded in /metrics")
        assert Job.objects.get(run=run).status == Job.Status.SUCCEEDED
        # PostgreSQL's insert counter reaches /metrics within its stats interval.
        wait_for(lambda: (_series(scrape(), "benchapp_samples_stored_total", kind="interval") or 0) >= samples_before + 3,
                 timeout_s=30, what="samples stored counted")
        assert _series(scrapes[-1], "benchapp_job_phase_duration_seconds_count", phase="run") >= 1
        assert _series(scrapes[-1], "benchapp_jobs", status="running") == 0
        # Task outcomes, counted by the worker when each ended; its processes, seen from the web's scrape.
        wait_for(lambda: (_series(scrape(), "benchapp_tasks_total", task="job_execute_task", outcome="success")
                          or 0) >= 1, timeout_s=30, what="the job's task counted")
        assert (_series(scrapes[-1], "benchapp_processes", program="worker") or 0) >= 2  # main process and pool
        assert (_series(scrapes[-1], "benchapp_process_resident_memory_bytes", program="worker") or 0) > 20e6
        assert (_series(scrapes[-1], "benchapp_process_cpu_seconds", program="worker") or 0) > 0


# ---------------------------------------------------------------- a web server and a Redis of the test's own

class WebServer:
    """scripts/web.sh (gunicorn) on a free port, its log in test-output/."""

    def __init__(self, name: str, db_name: str, env: dict[str, str]) -> None:
        self.port = free_port()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"web-{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop())
        full = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db_name}", "DB_CONN_MAX_AGE": "0",
                "BENCHAPP_PORT": str(self.port), "WEB_WORKERS": "1", "WEB_THREADS": "2",
                "PROMETHEUS_MULTIPROC_DIR": str(LOG_DIR / f"prometheus-{name}"), **env}
        self.proc = subprocess.Popen(["bash", "scripts/web.sh"], cwd=ROOT, env=full, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: self.get("/healthz")[0] == 200 or self.proc.poll() is not None, timeout_s=90,
                 what="gunicorn to answer")
        assert self.proc.poll() is None, self.log_text()[-3000:]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(self.url(path), headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError:
            return 0, b""

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


@pytest.fixture
def web_server(test_db_name: str) -> Iterator[Callable[..., WebServer]]:
    started: list[WebServer] = []

    def start(name: str, **env: str) -> WebServer:
        server = WebServer(name, test_db_name, env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_readyz_answers_503_naming_redis_while_its_redis_is_stopped_and_200_when_it_is_back(web_server, own_redis):
    ClientHost.objects.create(hostname="obs-ready", queue=execution.host_queue("obs-ready"), role="all",
                              last_heartbeat=timezone.now() + timezone.timedelta(minutes=10))
    redis_url = f"redis://127.0.0.1:{own_redis.port}/0"
    web = web_server("readyz", REDIS_URL=redis_url, BENCHAPP_CACHE_URL=f"redis://127.0.0.1:{own_redis.port}/1")
    status, body = web.get("/readyz")
    assert status == 200, body

    own_redis.kill()
    status, body = web.get("/readyz")
    answer = json.loads(body)
    assert status == 503, answer
    assert answer["failing"] == ["cache_redis", "broker_redis"]
    assert str(own_redis.port) in answer["checks"]["broker_redis"]["error"]
    assert answer["checks"]["postgresql"]["ok"] and answer["checks"]["worker"]["ok"]

    own_redis.start()
    wait_for(lambda: web.get("/readyz")[0] == 200, timeout_s=30, what="/readyz to be ready again")
    assert web.get("/healthz")[0] == 200
    # gunicorn's workers keep the latency histogram in prometheus-client's multi-process files.
    status, body = web.get("/metrics")
    assert status == 200
    count = _series(body.decode(), "benchapp_http_request_duration_seconds_count", view="readyz", status="503")
    assert count is not None and count >= 1


# ---------------------------------------------------------------- a request id from the access log to a task's log

def test_a_request_id_is_in_its_access_log_line_and_in_the_log_of_the_task_it_started(web_server, make_worker):
    # A queue of the test's own: the session's worker (started by earlier tests) must not take the task, whose log
    # line this test reads in this worker's log.
    queue = f"{SESSION_QUEUE}-rid"
    worker = make_worker("obs-rid", extra_env={"BENCHAPP_QUEUE": queue})
    user = make_user(roles.OPERATOR, "obs-operator")
    token = services.token_issue(user=user)
    # A target nothing listens on: the job fails at its connection check (no wait for the target: target_wait_s 0),
    # after logging under the request's id.
    target = TargetFactory(port=free_port())
    campaign = CampaignFactory(targets=[target], scenarios=[ScenarioFactory(time_s=1)], threads=[1], target_wait_s=0)
    web = web_server("rid", REDIS_URL=TEST_REDIS_URL, BENCHAPP_QUEUE=queue)
    assert web.get("/s/share-Secret-token-42/")[0] == 404
    request_id = f"rid-{time.time_ns()}"
    request = urllib.request.Request(web.url(f"/api/v1/campaigns/{campaign.pk}/launch/"), method="POST", data=b"{}",
                                     headers={"Authorization": f"Token {token}", "X-Request-ID": request_id,
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 202
        assert response.headers["X-Request-ID"] == request_id
    run = Run.objects.get(campaign=campaign)
    wait_for(lambda: Job.objects.get(run=run).is_finished(), timeout_s=90, what="the job to end")
    assert "share-Secret-token-42" not in web.log_text() and '"GET /s/***/ HTTP/1.1" 404' in web.log_text()
    access = [line for line in web.log_text().splitlines() if f"/api/v1/campaigns/{campaign.pk}/launch/" in line]
    assert access and f"request_id={request_id}" in access[0], web.log_text()[-2000:]
    # Celery writes the task's last line ("Task ... succeeded") once the task returns, maybe after the job's end.
    wait_for(lambda: any("job_execute_task" in line and request_id in line for line in worker.log_text().splitlines()),
             timeout_s=30, what=f"the task's log line with {request_id}:\n{worker.log_text()[-3000:]}")




def test_with_json_logs_gunicorns_access_line_is_json_with_the_request_id(web_server):
    web = web_server("json", REDIS_URL=TEST_REDIS_URL, BENCHAPP_LOG_FORMAT="json")
    assert web.get("/healthz", headers={"X-Request-ID": "json-rid-7"})[0] == 200
    web.stop()  # flushes the log

    def access_lines() -> list[dict[str, Any]]:
        entries = [json.loads(line) for line in web.log_text().splitlines() if line.startswith("{")]
        return [e for e in entries if e.get("logger") == "gunicorn.access" and e.get("path") == "/healthz"]

    line = next(e for e in access_lines() if e["request_id"] == "json-rid-7")
    assert line["method"] == "GET" and line["status"] == "200" and "duration_ms" in line
