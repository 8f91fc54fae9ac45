"""A client host joins (issue "Client hosts for real", Joining): it announces its facts, the host list, the API and
each job's environment section show them, and a client host's worker stays small (no numpy, scipy)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import psycopg
import pytest
from django.utils import timezone

from campaigns import execution
from campaigns.models import ClientHost, Job, JobClient, Run
from tests.conftest import ROOT
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory


def _join(hostname: str) -> ClientHost:
    """What a worker does at start-up (worker_signals._register_host), on this machine."""
    facts = execution.local_host_facts()
    return execution.host_heartbeat(hostname=hostname, cores=facts["cores"], memory_gb=facts["memory_gb"],
                                    version=facts["version"], labels=["lab"], facts=facts)


@pytest.mark.django_db
def test_a_joining_host_announces_its_address_cpu_kernel_libraries_and_clock():
    host = ClientHost.objects.get(pk=_join("joiner-1").pk)
    # The tests reach PostgreSQL on 127.0.0.1: the address this host connects from is the loopback one.
    assert host.address == "127.0.0.1"
    assert host.cores == os.cpu_count() and host.memory_gb > 0
    assert host.cpu_model and host.kernel == f"Linux {platform.release()}"
    assert host.sysbench_version.startswith("1.")
    versions = host.client_versions
    assert versions["psycopg"] == psycopg.__version__ and versions["python"] == platform.python_version()
    assert versions["mysqlclient"] and versions["libmysqlclient"] and versions["libpq"].split(".")[0].isdigit()
    # One clock for both ends here: the offset is at most the reading's uncertainty plus scheduling noise.
    assert host.clock_rtt_ms is not None and host.clock_rtt_ms > 0
    assert host.clock_offset_ms is not None and abs(host.clock_offset_ms) < 50 + host.clock_rtt_ms
    # A heartbeat keeps the facts; only a join replaces them.
    execution.host_heartbeat(hostname="joiner-1")
    assert ClientHost.objects.get(pk=host.pk).cpu_model == host.cpu_model


@pytest.mark.django_db
def test_the_clock_offset_is_this_hosts_clock_minus_the_servers(monkeypatch):
    """A host whose clock runs 2.5 s ahead says +2500 ms (time.time is this process's clock, not the server's)."""
    real_time = execution.hosts.time.time
    monkeypatch.setattr(execution.hosts.time, "time", lambda: real_time() + 2.5)
    measured = execution.hosts.join_facts_measure()
    assert abs(measured["clock_offset_ms"] - 2500) < 50 + measured["clock_rtt_ms"]


@pytest.mark.django_db
def test_the_api_and_the_host_list_show_the_facts_which_an_operator_cannot_edit(role_client):
    host = _join("joiner-2")
    viewer = role_client("viewer")
    row = next(h for h in viewer.get("/api/v1/client-hosts/").json()["results"] if h["hostname"] == "joiner-2")
    assert row["address"] == "127.0.0.1" and row["cpu_model"] == host.cpu_model and row["kernel"] == host.kernel
    assert row["client_versions"]["psycopg"] == psycopg.__version__
    assert row["clock_offset_ms"] == host.clock_offset_ms and row["clock_rtt_ms"] == host.clock_rtt_ms
    response = role_client("admin").patch(f"/api/v1/client-hosts/{host.pk}/", {"cpu_model": "forged"},
                                           content_type="application/json")
    assert response.status_code == 400 and "cpu_model" in response.json()
    html = viewer.get("/hosts/").content.decode()
    assert 'data-host="joiner-2"' in html and host.cpu_model in html and host.kernel in html
    assert f"psycopg {psycopg.__version__}" in html and "127.0.0.1" in html


@pytest.mark.django_db
def test_a_jobs_environment_section_shows_each_clients_host_as_it_was(role_client):
    host = _join("joiner-3")
    target, scenario = TargetFactory(), ScenarioFactory()
    run = Run.objects.create(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[2]),
                             status=Run.Status.SUCCEEDED, started_at=timezone.now())
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=2, status=Job.Status.SUCCEEDED)
    JobClient.objects.create(job=job, index=0, host_name="joiner-3", threads=1,
                             host_facts=json.loads(json.dumps(host.facts())))
    JobClient.objects.create(job=job, index=1, host_name="gone-host", threads=1)
    # The host was upgraded since: the job still shows the kernel it ran on.
    ClientHost.objects.filter(pk=host.pk).update(kernel="Linux 9.9.9-later")
    html = role_client("viewer").get(f"/jobs/{job.pk}/").content.decode()
    section = html[html.index('data-testid="environment"'):]
    section = section[:section.index("</section>")]
    assert host.kernel in section and "9.9.9-later" not in section and host.cpu_model in section
    assert f"psycopg {psycopg.__version__}" in section and "127.0.0.1" in section
    assert 'data-client="1"' in section and "not recorded" in section
    api = role_client("viewer").get(f"/api/v1/jobs/{job.pk}/").json()
    assert api["clients"][0]["host_facts"]["kernel"] == host.kernel


_IMPORT_CLIENT_PATH = """
import sys
from benchapp.celery import app
from celery.fixups.django import DjangoWorkerFixup
DjangoWorkerFixup(app).validate_models()  # what `celery worker` does at start-up (Django's checks, unless skipped)
from celery.apps import worker
from campaigns import tasks, worker_signals
from campaigns.execution import client, coordinator, reconcile
heavy = sorted(name for name in ("numpy", "scipy", "pandas", "matplotlib") if name in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


@pytest.mark.slow  # three fresh worker processes importing everything: 4 s of CPU, left to make test
def test_a_client_hosts_worker_loads_neither_numpy_nor_scipy():
    env = dict(os.environ, BENCHAPP_WORKER_ROLE="client", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _IMPORT_CLIENT_PATH], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert "HEAVY=\n" in done.stdout, done.stdout + done.stderr
    # The server's own worker loads them on first use only (campaigns/lazy.py): not at start-up either.
    env["BENCHAPP_WORKER_ROLE"] = "all"
    done = subprocess.run([sys.executable, "-c", _IMPORT_CLIENT_PATH], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert "HEAVY=\n" in done.stdout, done.stdout + done.stderr
    # The probe sees them once something uses them.
    used = _IMPORT_CLIENT_PATH.replace("heavy = ", "from campaigns.lazy import LazyModule\nLazyModule('scipy.stats').t\n"
                                       "LazyModule('numpy').zeros(1)\nheavy = ")
    done = subprocess.run([sys.executable, "-c", used], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    assert "HEAVY=numpy,scipy" in done.stdout, done.stdout + done.stderr


def test_server_tasks_go_to_the_server_queue_which_only_a_full_worker_consumes(settings):
    """A full worker: the shared queue (-Q), its host's and the server's. A client host's worker: its host's queue
    only, where everything it gets comes with its password sealed for it."""
    from celery.app.amqp import Queues
    from kombu import Queue

    from campaigns import worker_signals

    def consumed(role: str) -> set[str]:
        shared = settings.CELERY_TASK_DEFAULT_QUEUE
        queues = Queues([Queue(shared)])
        queues.select([shared])  # what the worker's -Q gives
        instance = type("W", (), {"app": type("A", (), {"amqp": type("Q", (), {"queues": queues})()})()})()
        settings.BENCHAPP_WORKER_ROLE = role
        worker_signals._add_host_queue(None, instance)
        return set(queues.consume_from)

    host = execution.host_queue(settings.BENCHAPP_HOSTNAME)
    assert consumed("client") == {host}
    assert consumed("all") == {settings.CELERY_TASK_DEFAULT_QUEUE, host, execution.server_queue()}
    assert execution.server_queue() == f"{settings.CELERY_TASK_DEFAULT_QUEUE}.server"
