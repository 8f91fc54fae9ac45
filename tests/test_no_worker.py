"""Nobody waits for a dead worker without being told, with real processes: the only worker of a run
SIGKILLed mid-job, a beat process of the test's own, a local webhook receiver. The run API and the run page say
"no worker alive since ..." within ~35 s and the ETA stops; beat (alive when no worker is) tells the webhook once;
a worker started again clears it all."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from campaigns import roles
from campaigns.models import Run
from tests.conftest import ROOT, WorkerProcess, record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, log_in, shot
from tests.helpers.faults import host_named, launch_through, wait_measuring
from tests.helpers.monitoring import WebhookReceiver
from tests.helpers.servers import OWN_QUEUE, RedisServer
from tests.helpers.users import API, client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]



class BeatProcess:
    """`celery beat` of the test's own: the process that watches for runs without a live worker."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.log_path = tmp_path / "beat.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "benchapp", "beat", "--loglevel", "INFO",
             "--scheduler", "celery.beat:PersistentScheduler", "--schedule", str(tmp_path / "beat-schedule")],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


def test_a_run_whose_only_worker_died_says_so_tells_the_webhook_once_and_clears_when_a_worker_is_back(
        own_redis, receiver, make_worker: Callable[..., WorkerProcess], test_db_name, fault_db, tmp_path,
        settings, live_server, monkeypatch):
    settings.BENCHAPP_WEBHOOK_ALLOW_PRIVATE = True
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{test_db_name}", **own_redis.env,
           "DB_CONN_MAX_AGE": "0", "PYTHONUNBUFFERED": "1", "BENCHAPP_WEBHOOK_ALLOW_PRIVATE": "true",
           "BENCHAPP_NO_WORKER_CHECK_S": "1"}
    beat = BeatProcess(tmp_path, env)
    try:
        _check(own_redis, receiver, make_worker, test_db_name, fault_db, beat, live_server)
    finally:
        beat.stop()


def _check(own_redis: RedisServer, receiver: WebhookReceiver, make_worker: Callable[..., WorkerProcess], test_db_name: str,
           fault_db: str, beat: BeatProcess, live_server: Any) -> None:
    victim = make_worker(host_named("client-dead"), extra_env={**own_redis.env, "BENCHAPP_HEARTBEAT_S": "1"})
    data = DatasetFactory(name="no-worker", tables=1, table_size=1000)
    campaign = CampaignFactory(targets=[TargetFactory(database=fault_db)], threads=[1, 2], webhook_url=receiver.url,
                               notify_emails="ops@example.com", no_worker_notify_min=0,
                               scenarios=[ScenarioFactory(name="no-worker", time_s=40, dataset=data)])
    run = launch_through(own_redis, campaign.pk, test_db_name)
    assert run.queue == OWN_QUEUE
    wait_measuring(run.jobs.order_by("position").first(), samples=2)
    api = client_for(make_user(roles.VIEWER, "no-worker-viewer"))

    def run_api() -> dict[str, Any]:
        answer = api.get(f"{API}/runs/{run.pk}/")
        assert answer.status_code == 200
        return answer.json()

    assert run_api()["no_worker"] is None, "a live worker: no warning"
    killed_at = time.monotonic()
    victim.stop(signal.SIGKILL)
    warned = wait_for(lambda: run_api()["no_worker"], timeout_s=60, interval_s=0.5,
                      what="the run API to say no worker is alive")
    warned_s = time.monotonic() - killed_at
    assert warned_s < 40, warned_s
    assert warned["message"].startswith("no worker alive since ") and "see the Hosts page" in warned["message"]
    # The ETA stops: nothing moves until a worker is back.
    from campaigns.services import run_progress, runs_with_progress

    progress = run_progress(runs_with_progress().get(pk=run.pk))
    assert progress["eta_s"] is None and progress["no_worker"]["message"] == warned["message"]

    # Beat, with no worker alive, tells the webhook: once.
    wait_for(lambda: receiver.bodies, timeout_s=60, what="beat to post the webhook")
    told_s = time.monotonic() - killed_at
    (body,) = receiver.bodies
    assert body["event"] == "no_worker" and body["run_id"] == run.pk and "no worker alive since" in body["text"]
    assert Run.objects.get(pk=run.pk).no_worker_notified_at is not None
    time.sleep(3)  # three more passes of beat's check (every second): still told once
    assert len(receiver.bodies) == 1

    # The run page and the dashboard say it too; the screenshot is for a person to look at.
    from django.contrib.auth import get_user_model
    from playwright.sync_api import sync_playwright

    get_user_model().objects.create_superuser("no-worker-admin", password="no-worker-pass-1")
    if True:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
            context.set_default_timeout(15_000)
            page = context.new_page()
            log_in(page, "no-worker-admin", "no-worker-pass-1")
            page.goto("/")
            assert "no worker alive since" in page.locator(f'[data-no-worker="{run.pk}"]').inner_text().lower()
            page.goto(f"/runs/{run.pk}/")
            warning = page.locator("#run-no-worker")
            assert warning.is_visible() and "No worker alive since" in warning.inner_text()
            assert page.locator("#run-eta-wrap").is_hidden()
            shot(page, "run-no-worker")

            # A worker is back: the warning goes (the live page polls), and a later absence would be told again.
            back = make_worker(host_named("client-back"), extra_env={**own_redis.env, "BENCHAPP_HEARTBEAT_S": "1"})
            wait_for(lambda: run_api()["no_worker"] is None, timeout_s=30, what="the warning to clear")
            page.locator("#run-no-worker").wait_for(state="hidden", timeout=30_000)
            wait_for(lambda: Run.objects.get(pk=run.pk).no_worker_notified_at is None, timeout_s=30,
                     what="beat to forget the telling once a worker is back")
            context.close()
            browser.close()
    assert back.proc.poll() is None
    record_measurement(f"no worker (the only one SIGKILLed mid-job): the run API said so after {warned_s:.1f} s "
                       f"(BENCHAPP_NO_WORKER_S=30), beat posted the webhook after {told_s:.1f} s "
                       f"(no_worker_notify_min=0, checked every 1 s), once")
