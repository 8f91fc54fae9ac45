"""Memory of `make run`'s processes: summed PSS of web, worker and beat before and after a day's use.

Starts the Procfile's three processes (scripts/web.sh, scripts/worker.sh, Celery beat) on a database, Redis
databases, a queue and a port of their own, plus a client host's worker (BENCHAPP_WORKER_ROLE=client, as
scripts/join-client.sh starts it), then drives them as a team does in a day: three runs of a campaign (one of them
fired by its nightly schedule, each followed by the worker's regression check), comparisons, a job's series, the
comparison report and a cell's history, each several times so that every gunicorn worker serves some. It prints
each process's PSS (Proportional Set Size, from /proc/PID/smaps_rollup: shared pages split between the processes
sharing them, so the sum is what the group costs) before and after.

    PYTHONPATH=. .venv/bin/python bench/memory.py [--runs 3] [--keep] [--root DIR]

--root runs the processes of another checkout (an older commit, its .venv and front-end build beside it) with this
same drive, for a before/after comparison.

Needs what `make run` needs: PostgreSQL, Redis and MariaDB on their usual ports, sysbench.
"""
from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _django import ROOT, setup
from _local import mariadb_database, mariadb_database_drop
from _stack import free_port

from tests.helpers.waiting import wait_for

if TYPE_CHECKING:
    from campaigns.models import Target

DB = "benchapp_memory_bench"
TARGET_DB = "memory_bench"
PASSWORD = "memory-bench-pw-1"


def pss_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    match = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) if match else 0


def tree(pid: int) -> list[int]:
    """pid and all its descendants (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def numerics(pid: int) -> str:
    """" +numpy" / " +scipy" when the process has them loaded."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""
    return "".join(f" +{name}" for name in ("numpy", "scipy") if f"/{name}/" in maps)


def describe(pid: int) -> str:
    line = cmdline(pid)
    for needle, name in (("gunicorn", "gunicorn"), (" beat", "celery beat"), ("worker", "celery worker")):
        if needle in line:
            return name
    return line[:40] or "?"


class Group:
    """One Procfile process (and the processes it starts)."""

    cwd = ROOT

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        self.log_path = log
        self._log = open(log, "wb")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(argv, cwd=self.cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def pids(self) -> list[int]:
        """The group's processes but the bash scripts that started them, in pid order."""
        return sorted(p for p in tree(self.proc.pid) if cmdline(p) and not cmdline(p).startswith(("bash ", "/bin/bash")))

    def processes(self) -> list[tuple[int, str, int]]:
        return [(pid, describe(pid) + numerics(pid), pss_kb(pid)) for pid in self.pids()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


def report(title: str, groups: list[Group]) -> dict[str, float]:
    print(f"\n{title}")
    totals = {}
    for group in groups:
        rows = group.processes()
        total = sum(kb for _, _, kb in rows) / 1024
        totals[group.name] = total
        detail = ", ".join(f"{name} {pid}: {kb / 1024:.0f}" for pid, name, kb in rows)
        print(f"  {group.name:<8} {total:7.1f} MB   ({detail})")
    server = sum(v for k, v in totals.items() if k != "client")
    print(f"  {'make run':<8} {server:7.1f} MB   (web + worker + beat)")
    return totals


class Http:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.token = token
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, *, api: bool = True) -> Any:
        headers = {"Authorization": f"Token {self.token}"} if api else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        with self.opener.open(request, timeout=120) as response:
            raw = response.read()
        return json.loads(raw) if api and raw[:1] in (b"{", b"[") else raw

    def login(self, username: str, password: str) -> None:
        self.call("GET", "/accounts/login/", api=False)
        csrf = next(c.value for c in self.jar if c.name == "csrftoken")
        form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": csrf})
        request = urllib.request.Request(self.base + "/accounts/login/", data=form.encode(), method="POST",
                                         headers={"Referer": self.base + "/accounts/login/",
                                                  "Content-Type": "application/x-www-form-urlencoded"})
        with self.opener.open(request, timeout=60) as response:
            response.read()


def run(cmd: list[str], env: dict[str, str]) -> None:
    subprocess.run(cmd, cwd=Group.cwd, env=env, check=True, stdout=subprocess.DEVNULL)


# What bench/memory.py and bench/memory_client.py both do around their drive: databases of their own, the
# processes' environment, the bench's own Django on the same database, and a target on the bench's MariaDB database.


def secrets_read() -> tuple[Path, dict[str, str]]:
    """var/secrets.env (or BENCHAPP_SECRETS_FILE) and its values: the machine's Redis asks for the password written
    there by scripts/setup.sh, the one the settings would use."""
    from benchapp import local_secrets

    secrets_file = Path(os.environ.get("BENCHAPP_SECRETS_FILE", ROOT / "var" / "secrets.env"))
    return secrets_file, local_secrets.local_secrets(secrets_file, write=False)


def redis_url(secrets: dict[str, str], db: int) -> str:
    password = secrets.get("BENCHAPP_REDIS_PASSWORD", "")
    return f"redis://:{password}@127.0.0.1:6379/{db}" if password else f"redis://127.0.0.1:6379/{db}"


def databases_create(env: dict[str, str], db: str, target_db: str, *, manage: Iterable[list[str]]) -> None:
    """A fresh PostgreSQL database `db` for benchapp and a fresh MariaDB database `target_db` for its target, then
    each `manage.py` command of `manage` on them (migrate, load_demo ...), as `make run` would."""
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", "--force", db], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", db], check=True)
    mariadb_database(target_db, fresh=True)
    for command in manage:
        run([str(ROOT / ".venv" / "bin" / "python"), "manage.py", *command], env)


def databases_drop(db: str, target_db: str) -> None:
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", "--force", db], check=False)
    mariadb_database_drop(target_db, check=False)


def django_setup(env: dict[str, str], names: Iterable[str]) -> None:
    """The bench's own Django, on the processes' database (the settings `names` taken from `env`), only to make the
    objects a user would make."""
    os.environ.update({name: env[name] for name in names})
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchapp.settings"
    setup()


def bench_target(name: str, database: str) -> Target:
    """A target on the bench's own MariaDB database, otherwise as load_demo's demo-mariadb."""
    from campaigns.models import Target

    demo = Target.objects.get(name="demo-mariadb")
    return Target.objects.create(name=name, product=demo.product, spec=demo.spec, driver=demo.driver,
                                 host=demo.host, port=demo.port, database=database, user=demo.user)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="campaign runs to drive (the last one by its schedule)")
    parser.add_argument("--rounds", type=int, default=6, help="times each page and API answer is asked for")
    parser.add_argument("--keep", action="store_true", help="leave the bench's databases behind")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose processes to start")
    parser.add_argument("--load", action="store_true",
                        help="then two users at once (pages and the API) while a run is in progress: the peak")
    args = parser.parse_args()
    Group.cwd = args.root.resolve()

    port = free_port()
    queue = f"memory-{os.getpid()}"
    secrets_file, secrets = secrets_read()
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}",
           "REDIS_URL": redis_url(secrets, 12), "BENCHAPP_CACHE_URL": redis_url(secrets, 13),
           "BENCHAPP_QUEUE": queue, "BENCHAPP_HOSTNAME": "memory-server", "BENCHAPP_PORT": str(port),
           "BENCHAPP_ADMIN_PASSWORD": PASSWORD, "PYTHONUNBUFFERED": "1",
           "BENCHAPP_SECRETS_FILE": str(secrets_file),
           "PROMETHEUS_MULTIPROC_DIR": str(ROOT / "var" / "prometheus" / f"memory-{port}")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    print("memory.py: migrate, collectstatic, load_demo (as `make run` does) ...", flush=True)
    databases_create(env, DB, TARGET_DB, manage=(["migrate", "--noinput"], ["collectstatic", "--noinput"],
                                                 ["load_demo"]))

    logs = ROOT / "var" / "memory-bench"
    logs.mkdir(parents=True, exist_ok=True)
    beat_argv = [str(ROOT / ".venv" / "bin" / "celery"), "-A", "benchapp", "beat", "--loglevel", "INFO",
                 "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"]
    groups = [Group("web", ["bash", "scripts/web.sh"], env, logs / "web.log"),
              Group("worker", ["bash", "scripts/worker.sh"], env, logs / "worker.log"),
              Group("beat", beat_argv, env, logs / "beat.log"),
              Group("client", ["bash", "scripts/worker.sh"],
                    {**env, "BENCHAPP_WORKER_ROLE": "client", "BENCHAPP_HOSTNAME": "memory-client"},
                    logs / "client.log")]
    try:
        drive(groups, env, port, args)
    finally:
        for group in groups:
            group.stop()
        if not args.keep:
            databases_drop(DB, TARGET_DB)


def drive(groups: list[Group], env: dict[str, str], port: int, args: argparse.Namespace) -> None:
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(base + "/accounts/login/", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    for group in groups:
        if group.proc.poll() is not None:
            raise SystemExit(f"{group.name} died:\n{group.log_path.read_text()[-2000:]}")
    wait_for(ready, timeout_s=120, what="the web process")
    for group in groups[1:2] + groups[3:]:
        wait_for(lambda group=group: "ready." in group.log_path.read_text(errors="replace"), timeout_s=120,
                 what=group.name)
    time.sleep(3)
    before = report("PSS after start-up (MB)", groups)

    django_setup(env, ("DATABASE_URL", "REDIS_URL", "BENCHAPP_CACHE_URL", "BENCHAPP_QUEUE"))
    from django.contrib.auth import get_user_model

    from campaigns import services
    from campaigns.models import Campaign, CampaignSchedule, Dataset, Job, Run, Scenario

    admin = get_user_model().objects.get(username="admin")
    client = Http(base, services.token_issue(user=admin))
    target = bench_target("memory-mariadb", TARGET_DB)
    dataset = Dataset.objects.create(name="memory-tiny", tables=1, table_size=2000)
    scenario = Scenario.objects.create(name="memory point select", test="oltp_point_select", dataset=dataset,
                                       time_s=3)
    campaign = Campaign.objects.create(name="memory nightly", threads=[1, 2], repetitions=1)
    campaign.targets.set([target])
    campaign.scenarios.set([scenario])
    schedule = client.call("POST", "/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 3 * * *",
                                                          "label": "nightly"})

    def finished(run_id: int) -> bool:
        return Run.objects.get(pk=run_id).status not in (Run.Status.PENDING, Run.Status.RUNNING)

    started = time.monotonic()
    run_ids = []
    for i in range(args.runs):
        if i == args.runs - 1:  # the nightly check: the schedule fires in the worker, as beat would send it
            from benchapp.celery import app

            app.send_task("campaigns.tasks.schedule_fire_task", args=(schedule["id"],),
                          queue=f"{env['BENCHAPP_QUEUE']}.server")
            wait_for(lambda: Run.objects.filter(campaign=campaign).count() > len(run_ids), timeout_s=60,
                     what="the nightly run")
            run_id = Run.objects.filter(campaign=campaign).order_by("-pk").first().pk  # type: ignore[union-attr]
        else:
            run_id = client.call("POST", f"/api/v1/campaigns/{campaign.pk}/launch/", {})["id"]
        wait_for(lambda run_id=run_id: finished(run_id), timeout_s=300, what=f"run {run_id}")
        wait_for(lambda run_id=run_id: Run.objects.get(pk=run_id).evaluated_at is not None, timeout_s=120,
                 what=f"run {run_id}'s regression check")
        run_ids.append(run_id)
    print(f"\n{len(run_ids)} runs ({', '.join(Run.objects.get(pk=r).status for r in run_ids)}) and their regression "
          f"checks in {time.monotonic() - started:.0f} s", flush=True)

    client.login("admin", PASSWORD)
    runs_query = "&".join(f"runs={r}" for r in run_ids)
    job = Job.objects.filter(run_id=run_ids[-1]).order_by("pk").first()
    assert job is not None
    cell = f"campaign={campaign.pk}&target={target.pk}&scenario={scenario.pk}&threads=1"
    for _ in range(args.rounds):
        client.call("GET", f"/api/v1/comparisons/?{runs_query}")
        client.call("GET", f"/compare/?{runs_query}", api=False)
        client.call("GET", f"/api/v1/jobs/{job.pk}/series/")
        client.call("GET", f"/compare/report/?{runs_query}", api=False)
        client.call("GET", f"/api/v1/regressions/history/?{cell}")
        client.call("GET", f"/runs/{run_ids[-1]}/", api=False)
        if (Group.cwd / "campaigns" / "observability").exists():
            client.call("GET", "/metrics", api=False)
    CampaignSchedule.objects.filter(pk=schedule["id"]).update(enabled=False)
    time.sleep(2)
    after = report("PSS after the runs, regression checks, comparisons, series, reports and history (MB)", groups)
    server_before = sum(v for k, v in before.items() if k != "client")
    server_after = sum(v for k, v in after.items() if k != "client")
    print(f"\nmake run: {server_before:.0f} MB after start-up, {server_after:.0f} MB after use (goal: under 600); "
          f"client host worker: {after['client']:.0f} MB (goal: under 80)")
    if args.load:
        two_users(groups, base, campaign, run_ids, job, cell, admin_token=client.token)


def two_users(groups: list[Group], base: str, campaign: Any, run_ids: list[int], job: Any, cell: str, *,
              admin_token: str) -> None:
    """Two users at once, each in a loop over the pages and API answers a team opens, while a run of the campaign
    is in progress (its jobs measuring, the worker writing seconds): summed PSS sampled every second, its peak."""
    import threading

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group as Role

    from campaigns import services
    from campaigns.models import Run

    operator = get_user_model().objects.filter(username="memory-operator").first()
    if operator is None:
        operator = get_user_model().objects.create_user(username="memory-operator", password=PASSWORD)
        operator.groups.add(Role.objects.get_or_create(name="operator")[0])
    users = [Http(base, admin_token), Http(base, services.token_issue(user=operator))]
    users[0].login("admin", PASSWORD)
    users[1].login("memory-operator", PASSWORD)
    campaign.scenarios.update(time_s=20)  # a run long enough to browse beside
    live = users[0].call("POST", f"/api/v1/campaigns/{campaign.pk}/launch/", {})["id"]
    runs_query = "&".join(f"runs={r}" for r in run_ids)
    paths = [(f"/api/v1/comparisons/?{runs_query}", True), (f"/compare/?{runs_query}", False),
             (f"/api/v1/jobs/{job.pk}/series/", True), (f"/compare/report/?{runs_query}", False),
             (f"/api/v1/regressions/history/?{cell}", True), (f"/runs/{live}/", False), (f"/api/v1/runs/{live}/", True),
             ("/runs/", False), ("/campaigns/", False), ("/metrics", False)]
    stop = threading.Event()
    asked = [0, 0]
    errors: list[str] = []

    def browse(n: int) -> None:
        while not stop.is_set():
            for path, api in paths:
                try:
                    users[n].call("GET", path, api=api)
                    asked[n] += 1
                except Exception as exc:  # noqa: BLE001 (said at the end; the load goes on)
                    errors.append(f"{path}: {exc}")
                if stop.is_set():
                    return

    threads = [threading.Thread(target=browse, args=(n,), daemon=True) for n in (0, 1)]
    for thread in threads:
        thread.start()
    peak: dict[str, float] = {}
    peak_total = 0.0
    started = time.monotonic()
    while time.monotonic() - started < 300:
        # benchapp's own processes: not the sysbench a job runs (nor its box's launchers), which are the benchmark's
        totals = {group.name: sum(pss_kb(pid) for pid in group.pids()
                                  if not cmdline(pid).split(" ", 1)[0].rsplit("/", 1)[-1].startswith(
                                      ("sysbench", "bwrap", "setpriv", "sudo", "prlimit"))) / 1024
                  for group in groups}
        total = sum(v for k, v in totals.items() if k != "client")
        if total > peak_total:
            peak_total, peak = total, totals
        if Run.objects.get(pk=live).status not in (Run.Status.PENDING, Run.Status.RUNNING):
            break
        time.sleep(1)
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    print(f"\nTwo users at once ({asked[0]} and {asked[1]} answers, {len(errors)} errors) while run {live} ran "
          f"({Run.objects.get(pk=live).status}, {time.monotonic() - started:.0f} s): peak summed PSS (MB)")
    for name, value in peak.items():
        print(f"  {name:<8} {value:7.1f} MB")
    print(f"  {'make run':<8} {peak_total:7.1f} MB   (web + worker + beat; goal: under 600)")
    for error in errors[:5]:
        print(f"  error: {error}")


if __name__ == "__main__":
    main()
