"""A client host's worker stays small (bench/memory_client.py): one process whose tasks run in threads,
started without Celery's command line, and none of the server's heavy modules loaded by what it imports."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PROBE = """
import sys
import django
django.setup()
from django.conf import settings
from benchapp.celery import app
app.loader.import_default_modules()
import campaigns.worker_signals, campaigns.execution, benchapp.client_worker
heavy = ("numpy", "scipy", "sqlglot", "rest_framework.serializers", "campaigns.services", "campaigns.monitoring",
         "campaigns.admin", "celery.bin.celery", "click_repl", "prompt_toolkit")
print(settings.CELERY_WORKER_POOL, ",".join(m for m in heavy if m in sys.modules) or "-")
"""


def _probe(role: str, **extra: str) -> list[str]:
    env = {**os.environ, "BENCHAPP_WORKER_ROLE": role, "DJANGO_SETTINGS_MODULE": "benchapp.settings",
           "PYTHONPATH": str(ROOT), **extra}
    if "BENCHAPP_WORKER_POOL" not in extra:
        env.pop("BENCHAPP_WORKER_POOL", None)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.split()


@pytest.mark.slow  # a fresh Celery process: 1.7 s
def test_a_client_hosts_worker_runs_threads_and_loads_none_of_the_servers_heavy_modules():
    assert _probe("client") == ["threads", "-"]


@pytest.mark.slow  # fresh Celery processes: 2.2 s
def test_the_servers_worker_keeps_prefork_and_a_client_may_choose_its_pool():
    pool, _ = _probe("all")
    assert pool == "prefork"
    assert _probe("client", BENCHAPP_WORKER_POOL="solo")[0] == "solo"


def test_an_unknown_pool_is_refused_by_name():
    env = {**os.environ, "BENCHAPP_WORKER_POOL": "gevent", "DJANGO_SETTINGS_MODULE": "benchapp.settings",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", "from django.conf import settings; settings.DEBUG"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "BENCHAPP_WORKER_POOL must be prefork, threads or solo" in done.stderr


@pytest.mark.parametrize(("args", "message"), [(["--concurrency", "0"], "--concurrency: at least 1"),
                                               (["--pool", "x"], "unrecognized arguments: --pool x")])
def test_the_client_worker_command_refuses_what_it_does_not_take(args, message):
    done = subprocess.run([sys.executable, "-m", "benchapp.client_worker", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and message in done.stderr
