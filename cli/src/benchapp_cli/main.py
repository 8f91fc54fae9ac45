"""The `benchapp` command.

Exit codes (launch --wait, wait, compare): 0 the run succeeded with no regression and every result trusted; 1 a
regression; 2 a usage error: click's own (a missing argument, an unknown option) and any request the server refused
(a wrong token, an unknown campaign, a conflict such as a run already in progress); 3 the run failed, was
cancelled, only partially succeeded or did not finish within --timeout-s, or the server could not be reached or
failed; 4 a result that cannot be trusted (its validity verdict is suspect or invalid), unless --allow-untrusted.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from benchapp_cli import report
from benchapp_cli.api import Api, ApiError

FORMATS = click.Choice(["table", "markdown", "csv", "json"])
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"benchapp: {message}", err=True)
    sys.exit(code)


@contextmanager
def _api_errors() -> Iterator[None]:
    """An ApiError as its one line and exit code: 2 when the request was refused, 3 when there was no answer."""
    try:
        yield
    except ApiError as exc:
        _fail(str(exc), report.EXIT_USAGE if exc.usage else report.EXIT_RUN_FAILED)


class State:
    def __init__(self, url: str | None, token: str | None) -> None:
        self._url, self._token = url, token
        self._api: Api | None = None

    def api(self) -> Api:
        if self._api is None:
            if not self._url:
                raise click.UsageError("no server: set BENCHAPP_URL or pass --url")
            if not self._token:
                raise click.UsageError("no token: set BENCHAPP_TOKEN or pass --token (POST /api/v1/auth/token/ "
                                       "with a username and password gives one)")
            with _api_errors():
                self._api = Api(url=self._url, token=self._token)
        return self._api


pass_state = click.make_pass_decorator(State)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="BENCHAPP_URL", metavar="URL", help="benchapp's address, e.g. https://bench.example "
              "(env BENCHAPP_URL).")
@click.option("--token", envvar="BENCHAPP_TOKEN", metavar="TOKEN", help="An API token (env BENCHAPP_TOKEN); "
              "never printed.")
@click.version_option(package_name="benchapp-cli", prog_name="benchapp")
@click.pass_context
def cli(ctx: click.Context, url: str | None, token: str | None) -> None:
    """benchapp's command-line client: launch campaigns, wait for runs and compare results, for CI pipelines."""
    ctx.obj = State(url, token)


def ci_outputs(function: F) -> F:
    options = [
        click.option("--format", "fmt", type=FORMATS, default="table", show_default=True,
                     help="How the result table is printed."),
        click.option("--junit", type=click.Path(dir_okay=False, writable=True, path_type=Path),
                     help="Write a JUnit XML file: one test per cell, failed on a regression."),
        click.option("--summary", type=click.Path(dir_okay=False, writable=True, path_type=Path),
                     help="Write a Markdown summary for a pull-request comment."),
        click.option("--allow-untrusted", is_flag=True,
                     help="A result whose validity verdict is suspect or invalid does not fail the command (exit 4 "
                          "without it); its JUnit test case is skipped instead of failed."),
        # Kept so that pipelines written for it still run: untrusted results fail by default now.
        click.option("--fail-on-invalid", "fail_on_invalid", is_flag=True, hidden=True, expose_value=False),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def wait_options(function: F) -> F:
    options = [
        click.option("--poll-s", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
                     help="Seconds between two looks at the run."),
        click.option("--timeout-s", type=click.FloatRange(min=0), default=None,
                     help="Give up (exit 3) when the run has not finished after this many seconds."),
        click.option("--settle-s", type=click.FloatRange(min=0), default=60.0, show_default=True,
                     help="After the run finishes, how long to wait for benchapp's regression check (it runs just "
                          "after) to store what it found."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


# ---------------------------------------------------------------- gathering and printing a run's results


def gather(api: Api, run_ids: list[int]) -> tuple[list[dict[str, Any]], list[report.Cell]]:
    """The runs, and their cells with Δ% and the regressions found on them."""
    runs = [api.run(run_id) for run_id in run_ids]
    cells: list[report.Cell] = []
    regressions: list[dict[str, Any]] = []
    for run_id in run_ids:
        cells += report.cells_of(run_id, api.comparison(run_id))
        regressions += api.regressions(run_id)
    report.deltas_set(cells)
    targets = {target_id: api.target(target_id) for target_id in sorted({r["target"] for r in regressions})}
    report.regressions_attach(cells, regressions, targets)
    return runs, cells


def emit(api: Api, runs: list[dict[str, Any]], cells: list[report.Cell], *, fmt: str, junit: Path | None,
         summary: Path | None, allow_untrusted: bool) -> int:
    """Prints the table, writes the CI files; returns the exit code the results call for."""
    code = report.exit_code(runs, cells, allow_untrusted=allow_untrusted)
    click.echo(report.render(cells, runs, fmt), nl=False)
    try:
        if junit is not None:
            junit.write_text(report.junit_xml(runs, cells, allow_untrusted=allow_untrusted), encoding="utf-8")
        if summary is not None:
            summary.write_text(report.summary_markdown(runs, cells, url=api.url, code=code), encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot write {exc.filename}: {exc.strerror}", report.EXIT_USAGE)
    return code


class Progress:
    """The run's progress on stderr: a bar on a terminal, else a line each time its job counts change (CI logs)."""

    def __init__(self, run: dict[str, Any]) -> None:
        self.tty = sys.stderr.isatty()
        self.last = ""
        self.bar: Any = None
        if self.tty:
            self.bar = click.progressbar(length=max(int(run.get("jobs_total") or 0), 1), file=sys.stderr,
                                         label=f"run {run['id']}", show_pos=True, show_eta=False)
            self.bar.__enter__()
        self.update(run)

    def update(self, run: dict[str, Any]) -> None:
        done = sum(int(run.get(k) or 0) for k in ("jobs_succeeded", "jobs_failed", "jobs_cancelled"))
        if self.bar is not None:
            self.bar.update(done - self.bar.pos)
            return
        line = report.run_line(run)
        if line != self.last:
            click.echo(line, err=True)
            self.last = line

    def close(self, run: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            click.echo(report.run_line(run), err=True)


def wait_for_run(api: Api, run: dict[str, Any], *, poll_s: float, timeout_s: float | None, settle_s: float) -> dict[str, Any]:
    """Polls the run until it finishes; then, if it was seen running, gives the regression check up to settle_s to
    store its findings (it runs as its own task once the run is closed). Exit 3 on timeout."""
    started = time.monotonic()
    seen_active = run["status"] not in report.RUN_FINISHED
    if not seen_active:
        return run
    progress = Progress(run)
    try:
        while run["status"] not in report.RUN_FINISHED:
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                progress.close(run)
                _fail(f"run {run['id']} has not finished after {timeout_s:g} s (it goes on on the server)",
                      report.EXIT_RUN_FAILED)
            time.sleep(poll_s)
            run = api.run(run["id"])
            progress.update(run)
    except KeyboardInterrupt:
        progress.close(run)
        _fail(f"stopped waiting; run {run['id']} goes on on the server", 130)
    progress.close(run)
    if seen_active and settle_s > 0 and run["status"] in ("succeeded", "partially_succeeded"):
        # The regression check runs as its own task once the run is closed: a server that says when it is done
        # (evaluated_at) is waited for, up to settle_s; an older one, until a regression shows or settle_s ends.
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline:
            if "evaluated_at" in run:
                if run["evaluated_at"] is not None:
                    break
            elif api.regressions(run["id"]):
                break
            time.sleep(min(1.0, poll_s))
            run = api.run(run["id"])
        # Alarms being measured again (the campaign confirms its alarms) are waited for as the run was: until the
        # confirmation run has judged them, or the time-out. One still pending counts as a regression.
        while any(r.get("confirmation") == "pending" for r in api.regressions(run["id"])):
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                break
            time.sleep(poll_s)
    return run


def finish(state: State, run: dict[str, Any], *, fmt: str, junit: Path | None, summary: Path | None,
           allow_untrusted: bool, poll_s: float, timeout_s: float | None, settle_s: float) -> NoReturn:
    """What launch --wait and wait share after the launch: wait, print, write the CI files, exit."""
    api = state.api()
    with _api_errors():
        wait_for_run(api, run, poll_s=poll_s, timeout_s=timeout_s, settle_s=settle_s)
        runs, cells = gather(api, [run["id"]])
        code = emit(api, runs, cells, fmt=fmt, junit=junit, summary=summary, allow_untrusted=allow_untrusted)
    if code == report.EXIT_RUN_FAILED:
        click.echo(f"benchapp: {report.run_line(runs[0])}", err=True)
    elif code == report.EXIT_REGRESSION:
        click.echo("benchapp: regression found", err=True)
    elif code == report.EXIT_UNTRUSTED:
        click.echo(f"benchapp: {report.untrusted_line(cells)} (--allow-untrusted to accept them)", err=True)
    sys.exit(code)


# ---------------------------------------------------------------- commands


@cli.command()
@click.argument("campaign")
@click.option("--wait", "wait_", is_flag=True, help="Wait for the run, then print its results and exit 0/1/3/4.")
@click.option("--label", default="", help="A label for the run (e.g. the commit).")
@click.option("--idempotency-key", metavar="KEY",
              help="Retrying with the same key gives the run the first launch created instead of another.")
@ci_outputs
@wait_options
@pass_state
def launch(state: State, campaign: str, wait_: bool, label: str, idempotency_key: str | None, fmt: str,
           junit: Path | None, summary: Path | None, allow_untrusted: bool, poll_s: float, timeout_s: float | None,
           settle_s: float) -> None:
    """Launch CAMPAIGN (its id or exact name). Without --wait, prints the new run's id."""
    api = state.api()
    with _api_errors():
        found = api.find("campaign", "campaigns/", campaign)
        run = api.launch(int(found["id"]), label=label, idempotency_key=idempotency_key)
    click.echo(f"launched run {run['id']} of campaign {found['name']!r}", err=True)
    if not wait_:
        click.echo(run["id"])
        return
    finish(state, run, fmt=fmt, junit=junit, summary=summary, allow_untrusted=allow_untrusted, poll_s=poll_s,
           timeout_s=timeout_s, settle_s=settle_s)


@cli.command()
@click.argument("run_id", metavar="RUN", type=click.IntRange(min=1))
@ci_outputs
@wait_options
@pass_state
def wait(state: State, run_id: int, fmt: str, junit: Path | None, summary: Path | None, allow_untrusted: bool,
         poll_s: float, timeout_s: float | None, settle_s: float) -> None:
    """Wait for RUN to finish (at once if it has), print its results and exit 0/1/3/4 as launch --wait does."""
    with _api_errors():
        run = state.api().run(run_id)
    finish(state, run, fmt=fmt, junit=junit, summary=summary, allow_untrusted=allow_untrusted, poll_s=poll_s,
           timeout_s=timeout_s, settle_s=settle_s)


@cli.command()
@click.argument("run_ids", metavar="RUN...", nargs=-1, required=True, type=click.IntRange(min=1))
@ci_outputs
@pass_state
def compare(state: State, run_ids: tuple[int, ...], fmt: str, junit: Path | None, summary: Path | None,
            allow_untrusted: bool) -> None:
    """Results of one or more runs side by side: one line per cell (scenario, spec, threads, product) and run,
    with Δ% of QPS against the first run's. Exits 0 whatever the figures (use `wait` for a regression verdict),
    but 4 when a cell cannot be trusted (its validity verdict is suspect or invalid), unless --allow-untrusted."""
    api = state.api()
    with _api_errors():
        runs, cells = gather(api, list(dict.fromkeys(run_ids)))
        emit(api, runs, cells, fmt=fmt, junit=junit, summary=summary, allow_untrusted=allow_untrusted)
    if not allow_untrusted and report.untrusted_cells(cells):
        click.echo(f"benchapp: {report.untrusted_line(cells)} (--allow-untrusted to accept them)", err=True)
        sys.exit(report.EXIT_UNTRUSTED)


@cli.command()
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=20, show_default=True)
@click.option("--campaign", help="Only this campaign's runs (id or exact name).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@pass_state
def runs(state: State, limit: int, campaign: str | None, fmt: str) -> None:
    """The most recent runs, newest first."""
    api = state.api()
    with _api_errors():
        campaign_id = int(api.find("campaign", "campaigns/", campaign)["id"]) if campaign else None
        rows = api.runs(limit=limit, campaign_id=campaign_id)
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    table = [["id", "campaign", "status", "trigger", "jobs", "created", "label"]]
    for run in rows:
        done = f"{run.get('jobs_succeeded', 0)}/{run.get('jobs_total', 0)}"
        table.append([str(run["id"]), str(run.get("campaign_name", "")), str(run["status"]), str(run.get("trigger", "")),
                      done, str(run.get("created_at", ""))[:19].replace("T", " "), str(run.get("label", ""))])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


@cli.command(name="import")
@click.argument("logs", metavar="LOG...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, readable=True, path_type=Path))
@click.option("--target", required=True, help="The target the logs were measured on (id or exact name).")
@click.option("--scenario", required=True, help="The scenario they ran (id or exact name).")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@pass_state
def import_logs(state: State, logs: tuple[Path, ...], target: str, scenario: str, fmt: str) -> None:
    """Store sysbench logs made outside benchapp as an imported run (one job per file); prints its results."""
    api = state.api()
    with _api_errors():
        target_id = int(api.find("target", "targets/", target)["id"])
        scenario_id = int(api.find("scenario", "scenarios/", scenario)["id"])
        answer = api.results_import(logs=list(logs), target_id=target_id, scenario_id=scenario_id)
        run = answer["run"]
        click.echo(f"imported {len(answer.get('results', []))} result(s) as run {run['id']}", err=True)
        runs, cells = gather(api, [int(run["id"])])
        emit(api, runs, cells, fmt=fmt, junit=None, summary=None, allow_untrusted=True)


@cli.group()
def targets() -> None:
    """Targets (database servers)."""


@targets.command(name="check")
@click.argument("name")
@pass_state
def targets_check(state: State, name: str) -> None:
    """Connect to target NAME (id or exact name): prints its server version and the settings that decide results.
    Exits 3 when the target cannot be reached."""
    api = state.api()
    with _api_errors():
        target = api.find("target", "targets/", name)
        try:
            answer = api.target_check(int(target["id"]), name=str(target["name"]))
        except ApiError as exc:
            if exc.code == "target_unreachable":
                _fail(f"target {target['name']!r} cannot be reached: {exc.detail}", report.EXIT_RUN_FAILED)
            raise
    click.echo(f"{target['name']}: {answer.get('version', '?')}")
    for key, value in sorted((answer.get("settings") or {}).items()):
        click.echo(f"  {key} = {value}")

