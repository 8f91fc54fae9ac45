"""Nightly-check helpers: a history of scheduled runs with given figures, and a local webhook receiver."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from django.utils import timezone

from campaigns.models import Job, JobResult, Run


def history(campaign, target, scenario, values: list[float], *, trigger=Run.Trigger.SCHEDULED) -> list[Run]:
    runs = []
    for value in values:
        run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED, trigger=trigger,
                                 started_at=timezone.now(), finished_at=timezone.now())
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=8, status=Job.Status.SUCCEEDED)
        JobResult.objects.create(job=job, qps=value, tps=value / 20, latency_pct_ms=10.0, latency_pct=95.0)
        runs.append(run)
    return runs


class WebhookReceiver:
    """A small HTTP server on 127.0.0.1 standing in for a Slack-compatible webhook."""

    def __init__(self, status: int = 200):
        self.bodies: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

