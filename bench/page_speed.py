"""How fast is every page with the seed quick run's data in the database?

Goal (issue "A first comparison in five minutes", Measured): every page's server time (median of warm
requests) under 150 ms and its browser load event under 300 ms.

Data: the bench's own database (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/benchapp_pagespeed),
holding the runs of the one-click seed quick run (seeds 001 and 003 on the demo MariaDB and PostgreSQL). When it
holds no finished seed run, fill it once with real runs:
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/benchapp_pagespeed .venv/bin/python bench/quick_run.py
(about ten minutes on 2 cores; --load here does exactly that).

Prints, per page: the median server time of --repeat warm requests (and the Python process's CPU time in
them, steadier than wall time on a shared machine; the database's time is not in it) (Django's test client in this process, so
no network and no static files), the HTML size, the query count, and the median browser load-event time of
--loads loads in headless Chromium against gunicorn on a free port (static files from collectstatic).

Usage: .venv/bin/python bench/page_speed.py [--repeat 7] [--loads 5] [--no-browser] [--load]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from _django import ROOT, setup
from _local import pg_database_ensure

BENCH_DB = "postgres://postgres@127.0.0.1:5432/benchapp_pagespeed"
SERVER_GOAL_MS = 150
LOAD_GOAL_MS = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pages() -> list[tuple[str, str]]:
    """(what, path) of every page worth timing, from the data in the database."""
    from django.urls import reverse

    from campaigns.models import Campaign, Job, PublishedResult, Run

    pages = [("dashboard", reverse("dashboard")), ("quick compare", reverse("quick-compare")),
             ("seed papers", reverse("seeds")), ("runs", reverse("run-list")), ("compare (empty form)", reverse("compare"))]
    for key in ("targets", "products", "specs", "datasets", "scenarios", "campaigns"):
        pages.append((f"{key} list", reverse(f"{key}-list")))
    documents = sorted(set(PublishedResult.objects.values_list("document", flat=True)))
    for campaign in Campaign.objects.filter(is_template=False).exclude(template_key="").order_by("pk"):
        pages.append((f"campaign {campaign.template_key}", reverse("campaigns-detail", args=[campaign.pk])))
        run = Run.objects.filter(campaign=campaign).order_by("-pk").first()
        if run is None:
            continue
        pages.append((f"run {campaign.template_key}", reverse("run-detail", args=[run.pk])))
        job = Job.objects.filter(run=run, status=Job.Status.SUCCEEDED).order_by("pk").first()
        if job is not None:
            pages.append((f"job {campaign.template_key}", reverse("job-detail", args=[job.pk])))
        query = f"campaign={campaign.pk}"
        pages.append((f"compare {campaign.template_key}", f"{reverse('compare')}?{query}"))
        pages.append((f"report {campaign.template_key}", f"{reverse('compare-report')}?{query}"))
        document = campaign.template_key.removeprefix("seed-")
        if document in documents:
            pages.append((f"compare {campaign.template_key} + document tables",
                          f"{reverse('compare')}?{query}&published={document}"))
            product = PublishedResult.objects.filter(document=document).values_list("product_id", flat=True).first()
            pages.append((f"compare {campaign.template_key} beside published",
                          f"{reverse('compare')}?{query}&published_product={product}"))
    for document in documents:
        pages.append((f"document tables {document}", f"{reverse('compare')}?published={document}"))
    return pages


def _user() -> object:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user, _ = get_user_model().objects.get_or_create(username="page-speed-bench")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    return user


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--repeat", type=int, default=7)
    args.add_argument("--loads", type=int, default=5)
    args.add_argument("--no-browser", action="store_true")
    args.add_argument("--only", default="", help="time only the pages whose name contains this")
    args.add_argument("--load", action="store_true", help="fill the bench database with a real quick run first")
    opts = args.parse_args()
    os.environ.setdefault("DATABASE_URL", BENCH_DB)
    pg_database_ensure(os.environ["DATABASE_URL"])  # on a fresh machine it is not there yet
    if opts.load:
        subprocess.run([sys.executable, str(ROOT / "bench" / "quick_run.py")], check=True, env=os.environ)
    setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, reset_queries
    from django.test import Client

    from campaigns.models import Job, Run

    call_command("migrate", verbosity=0)
    runs = Run.objects.exclude(campaign__template_key="").filter(status=Run.Status.SUCCEEDED).count()
    if not runs:
        print(f"no finished seed run in {settings.DATABASES['default']['NAME']}: run with --load first")
        sys.exit(1)
    jobs = Job.objects.filter(status=Job.Status.SUCCEEDED).count()
    print(f"database {settings.DATABASES['default']['NAME']}: {runs} seed runs, {jobs} succeeded jobs")
    client = Client()
    client.force_login(_user())
    pages = [(what, path) for what, path in _pages() if opts.only in what]
    rows = []
    settings.DEBUG = True  # counts queries (connection.queries); templates are cached either way
    for what, path in pages:
        response = client.get(path)  # cold: fills caches
        if response.status_code != 200:
            print(f"{what}: {path} answered {response.status_code}")
            continue
        times, cpu = [], []
        for _ in range(opts.repeat):
            reset_queries()
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(path)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        rows.append({"what": what, "path": path, "server_ms": statistics.median(times),
                     "cpu_ms": statistics.median(cpu),
                     "kb": len(response.content) / 1024, "queries": len(connection.queries), "load_ms": None})
    settings.DEBUG = False
    if not opts.no_browser:
        _browser_loads(rows, client, opts.loads)
    print(f"\n{'page':<44} {'server ms':>9} {'cpu ms':>7} {'KB':>7} {'queries':>7} {'load ms':>8}")
    for row in rows:
        load = f"{row['load_ms']:8.0f}" if row["load_ms"] is not None else "       —"
        flag = " !" if row["server_ms"] > SERVER_GOAL_MS or (row["load_ms"] or 0) > LOAD_GOAL_MS else ""
        print(f"{row['what']:<44} {row['server_ms']:9.1f} {row['cpu_ms']:7.1f} {row['kb']:7.1f} {row['queries']:7d} {load}{flag}")
    worst = max(rows, key=lambda r: r["server_ms"])
    print(f"\nslowest server time: {worst['what']} {worst['server_ms']:.0f} ms (goal < {SERVER_GOAL_MS} ms)")
    loads = [r for r in rows if r["load_ms"] is not None]
    if loads:
        worst = max(loads, key=lambda r: r["load_ms"])
        print(f"slowest load event: {worst['what']} {worst['load_ms']:.0f} ms (goal < {LOAD_GOAL_MS} ms)")
    print("(medians; figures from a shared machine are noisy)")


def _browser_loads(rows: list[dict[str, object]], client: object, loads: int) -> None:
    """Each page's load event in headless Chromium, served by gunicorn as in production (2 workers)."""
    from playwright.sync_api import sync_playwright

    subprocess.run([sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"], check=True,
                   cwd=ROOT, env=os.environ)
    port = _free_port()
    server = subprocess.Popen([str(ROOT / ".venv/bin/gunicorn"), "benchapp.wsgi:application", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2", "--threads", "2"], cwd=ROOT, env=os.environ,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)  # noqa: S310  # our own server
                break
            except OSError:
                time.sleep(0.1)
        session = client.cookies["sessionid"].value  # type: ignore[attr-defined]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session, "url": f"http://127.0.0.1:{port}/"}])
            page = context.new_page()
            for row in rows:
                url = f"http://127.0.0.1:{port}{row['path']}"
                page.goto(url)  # warm: static files cached as a returning user has them
                times = []
                for _ in range(loads):
                    page.goto(url, wait_until="load")
                    times.append(page.evaluate(
                        "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; }"))
                row["load_ms"] = statistics.median(times)
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a busy shared machine: its workers did not stop in time
            server.kill()
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
