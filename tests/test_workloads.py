"""Workloads of one's own: Lua files uploaded, checked by sysbench itself, versioned by content
hash, run on client hosts from their own cache, and compared like the bundled tests."""
from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client as PageClient

from campaigns import roles, services
from campaigns.models import ClientHost, Job, PreparedDataset, Run, Scenario, Workload, WorkloadVersion
from campaigns.services.workloads import workload_save
from campaigns.sysbench import workloads as workloads_module
from campaigns.sysbench.catalogue import validate_options
from campaigns.sysbench.command import Connection, build_argv
from campaigns.sysbench.runner import script_lua_path
from campaigns.sysbench.workloads import (
    MAX_FILE_BYTES,
    MAX_FILES,
    WorkloadError,
    content_hash,
    files_check,
    options_from_json,
    workload_inspect,
    workload_materialize,
    workload_spec,
)
from tests.conftest import record_measurement, wait_for
from tests.factories import CampaignFactory, DatasetFactory, PgTargetFactory, ProductFactory, TargetFactory
from tests.helpers.users import client_for, make_user

KV = Path(__file__).resolve().parent / "data" / "workloads" / "kv"


def kv_files() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(KV.glob("*.lua"))}


# ---------------------------------------------------------------- the files and what sysbench says of them


def test_sysbench_lists_the_entry_scripts_own_options_with_their_defaults():
    found = workload_inspect(files=kv_files(), entry="kv.lua")
    assert {name: (spec.type, spec.default) for name, spec in found.options.items()} == {
        "kv-mode": ("str", "mixed"), "reads-per-event": ("int", 2), "table-size": ("int", 1000),
        "tables": ("int", 1), "update-share": ("float", 0.25),
    }
    assert found.options["reads-per-event"].help == "Point reads in one event"
    assert found.commands == ("cleanup", "prepare")
    assert "kv.lua options:" in found.help_text


@pytest.mark.parametrize(("files", "entry", "message"), [
    ({"../evil.lua": "x = 1"}, "../evil.lua", "path traversal"),
    ({"/etc/evil.lua": "x = 1"}, "/etc/evil.lua", "relative path"),
    ({"notes.txt": "x = 1"}, "notes.txt", "is not a .lua file"),
    ({"a.lua": "function event() end"}, "", "no entry script"),
    ({"a.lua": "function event() end"}, "b.lua", "entry script 'b.lua' is not among the files"),
    ({"a.lua": "x" * (MAX_FILE_BYTES + 1)}, "a.lua", "file a.lua is too big"),
    ({f"f{n}.lua": "x = 1" for n in range(MAX_FILES + 1)}, "f0.lua", f"a workload has at most {MAX_FILES}"),
    ({"a.lua": b"\xff\xfe binary"}, "a.lua", "file a.lua: not Lua source"),
    ({"a.lua": "x = 1\x00"}, "a.lua", "file a.lua: not Lua source"),
])
def test_a_bad_file_set_is_refused_naming_the_file_or_cause(files, entry, message):
    with pytest.raises(WorkloadError) as caught:
        files_check(files, entry)
    assert message in str(caught.value)


@pytest.mark.parametrize(("files", "message"), [
    ({"kv.lua": "function event() end", "helper.lua": "local x = (\n"}, "file helper.lua: not valid Lua"),
    ({"kv.lua": "local h = require('missing_helper')\nfunction event() end"},
     "entry script kv.lua fails when loaded: kv.lua:1: module 'missing_helper' not found"),
    ({"kv.lua": "x = 1"}, "entry script kv.lua defines no event() function"),
    # Waits for its 2 s limit: make test runs it.
    pytest.param({"kv.lua": "while true do end"}, "did not end within", marks=pytest.mark.slow),
])
def test_lua_that_sysbench_cannot_use_is_refused_with_its_cause(files, message, monkeypatch):
    if "did not end within" in message:
        # The loop is stopped at the limit: 2 s here rather than the 10 s of a real upload (a core busy all along).
        monkeypatch.setattr(workloads_module, "HELP_TIMEOUT_S", 2.0)
    started = time.monotonic()
    with pytest.raises(WorkloadError) as caught:
        workload_inspect(files=files, entry="kv.lua")
    assert message in str(caught.value)
    assert time.monotonic() - started < 8  # a script that hangs is stopped (HELP_TIMEOUT_S)


def test_the_cache_holds_each_version_once_by_hash_and_only_its_owner_writes_there(tmp_path):
    cache = tmp_path / "workloads"
    files = kv_files()
    digest = content_hash(files, "kv.lua")
    entry = workload_materialize(cache_dir=cache, digest=digest, files=files, entry="kv.lua")
    assert entry == cache / digest / "kv.lua" and entry.read_text() == files["kv.lua"]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert not entry.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    # A file changed behind benchapp's back is written again from the database's copy.
    os.chmod(entry, 0o600)
    entry.write_text("-- changed\n")
    assert workload_materialize(cache_dir=cache, digest=digest, files=files, entry="kv.lua").read_text() == \
        files["kv.lua"]
    os.chmod(cache, 0o777)
    with pytest.raises(WorkloadError, match="writable by nobody else"):
        workload_materialize(cache_dir=cache, digest=digest, files=files, entry="kv.lua")


def test_the_entry_scripts_folder_is_on_lua_path_and_only_declared_dataset_options_are_passed():
    spec = workload_spec(label="workload:kv@v1", entry="/cache/abc/kv.lua", commands=("prepare",),
                         options=options_from_json([{"name": "tables", "type": "int", "default": 1}]))
    conn = Connection(driver="mysql", host="127.0.0.1", port=3306, database="db", user="u")
    argv = build_argv(sysbench="sysbench", test=spec, command="prepare", connection=conn, tables=2,
                      table_size=5000, options={})
    assert argv[1] == "/cache/abc/kv.lua" and "--tables=2" in argv
    assert not any(item.startswith("--table-size") for item in argv)  # sysbench refuses an undeclared option
    assert script_lua_path(argv) == {"LUA_PATH": "/cache/abc/?.lua;/cache/abc/?/init.lua;;"}
    assert script_lua_path(["sysbench", "oltp_read_only", "run"]) == {}
    with pytest.raises(ValueError, match="not an option of"):
        validate_options(spec, {"point-selects": 1})


# ---------------------------------------------------------------- saving, versions, roles


@pytest.mark.django_db
def test_saving_the_same_files_again_keeps_the_version_and_an_edit_makes_a_new_one():
    operator = make_user(roles.OPERATOR, "wl-operator")
    first = workload_save(user=operator, name="kv", files=kv_files(), entry="kv.lua", description="key-value")
    assert (first.number, first.uploaded_by, first.workload.created_by) == (1, operator, operator)
    assert first.label() == "workload:kv@v1" and first.content_hash == content_hash(kv_files(), "kv.lua")
    assert workload_save(user=operator, name="kv", files=kv_files(), entry="kv.lua") == first
    edited = {**kv_files(), "kv.lua": kv_files()["kv.lua"].replace('"mixed"}', '"read"}')}
    second = workload_save(user=operator, workload=first.workload, files=edited, entry="kv.lua", note="reads only")
    assert second.number == 2 and second.content_hash != first.content_hash
    assert {o["name"]: o["default"] for o in second.options}["kv-mode"] == "read"
    # The first version is unchanged: a scenario on it still runs exactly that code.
    first.refresh_from_db()
    assert first.files == kv_files()


@pytest.mark.django_db
def test_a_viewer_may_not_upload_code_that_runs_on_client_hosts():
    with pytest.raises(PermissionDenied):
        workload_save(user=make_user(roles.VIEWER, "wl-viewer"), name="kv", files=kv_files(), entry="kv.lua")
    response = client_for(make_user(roles.VIEWER, "wl-viewer-api")).post(
        "/api/v1/workloads/", {"name": "kv", "entry": "kv.lua", "files": kv_files()}, format="json")
    assert response.status_code == 403
    assert not Workload.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_bad_uploads_naming_the_file_and_stores_nothing():
    api = client_for(make_user(roles.OPERATOR, "wl-api-operator"))
    cases = [
        ({"name": "kv", "entry": "kv.lua", "files": {"kv.lua": "x = (", }}, "files", "file kv.lua: not valid Lua"),
        ({"name": "kv", "entry": "kv.lua", "files": {"../kv.lua": "x"}}, "files", "path traversal"),
        ({"name": "kv", "entry": "main.lua", "files": kv_files()}, "entry", "entry script 'main.lua' is not among"),
        ({"name": "bad name!", "entry": "kv.lua", "files": kv_files()}, "name", "letters, digits"),
        ({"name": "kv", "entry": "kv.lua", "files": "kv.lua"}, "files", "an object of file names"),
    ]
    for body, field, message in cases:
        response = api.post("/api/v1/workloads/", body, format="json")
        assert response.status_code == 400, response.content
        assert message in json.dumps(response.json()[field]), response.json()
    assert not Workload.objects.exists() and not WorkloadVersion.objects.exists()


@pytest.mark.django_db
def test_a_multipart_upload_and_a_scenario_on_its_version_validated_against_its_own_options():
    api = client_for(make_user(roles.OPERATOR, "wl-multipart"))
    uploads = [SimpleUploadedFile(name, text.encode()) for name, text in kv_files().items()]
    response = api.post("/api/v1/workloads/", {"name": "kv", "entry": "kv.lua", "files": uploads},
                        format="multipart")
    assert response.status_code == 201, response.content
    version = response.json()
    assert version["test_label"] == "workload:kv@v1" and version["uploaded_by"] == "wl-multipart"
    assert {o["name"] for o in version["options"]} >= {"reads-per-event", "kv-mode"}
    dataset = DatasetFactory(name="kv-tiny", tables=2, table_size=300).pk
    refused = api.post("/api/v1/scenarios/", {"name": "kv bad", "workload_version": version["id"], "dataset": dataset,
                                              "options": {"reads-per-event": "many"}}, format="json")
    assert refused.status_code == 400 and "reads-per-event" in json.dumps(refused.json()["options"])
    refused = api.post("/api/v1/scenarios/", {"name": "kv bad2", "workload_version": version["id"],
                                              "dataset": dataset, "options": {"point-selects": 1}}, format="json")
    assert refused.status_code == 400 and "not an option of workload:kv@v1" in json.dumps(refused.json())
    made = api.post("/api/v1/scenarios/", {"name": "kv reads", "workload_version": version["id"], "dataset": dataset,
                                           "options": {"reads_per_event": "3"}}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["test"] == "workload:kv@v1" and made.json()["options"] == {"reads-per-event": 3}
    # The workload page shows who uploaded which version, when, and its options.
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "wl-page-viewer"))
    html = page.get(f"/workloads/{version['workload']}/").content.decode()
    assert "wl-multipart" in html and "reads-per-event" in html and version["content_hash"][:12] in html


@pytest.mark.django_db
def test_a_run_bundle_carries_the_workloads_files_and_its_import_goes_through_the_same_checks():
    owner = make_user(roles.OPERATOR, "wl-bundle-owner")
    version = workload_save(user=owner, name="kv", files=kv_files(), entry="kv.lua")
    scenario = services.scenario_create(user=owner, name="kv bundle", workload_version=version,
                                        dataset=DatasetFactory(name="kv-bundle"), options={})
    log = (Path(__file__).parent / "data" / "sysbench" / "mysql_oltp_point_select.txt").read_text()
    run = services.results_import(files=[("a.log", log)], target=TargetFactory(), scenario=scenario)
    bundle = json.loads(services.bundle_json(services.run_export(run=run)))
    assert bundle["scenarios"][0]["workload"]["content_hash"] == version.content_hash
    importer = make_user(roles.OPERATOR, "wl-bundle-importer")
    copy = services.bundle_import(bundle=bundle, user=importer)
    assert copy.jobs.get().scenario.workload_version == version  # the same files: the same version
    bundle["scenarios"][0]["workload"]["files"] = {"../kv.lua": "function event() end"}
    with pytest.raises(services.BundleRejected, match=r"scenarios\[0\]\.workload\.files: .*path traversal"):
        services.bundle_import(bundle=bundle, user=importer)


@pytest.mark.django_db
def test_an_operator_uploads_and_pastes_on_the_page_and_makes_a_scenario_with_the_workloads_options():
    page = PageClient()
    page.force_login(make_user(roles.OPERATOR, "wl-page-operator"))
    response = page.post("/workloads/new/", {
        "name": "kv", "entry": "kv.lua", "lua_files": [SimpleUploadedFile("kv_common.lua", kv_files()["kv_common.lua"]
                                                                          .encode())],
        "pasted": kv_files()["kv.lua"], "pasted_name": "", "description": "", "note": ""})
    assert response.status_code == 302, response.content.decode()[-2000:]
    version = WorkloadVersion.objects.get()
    assert set(version.files) == {"kv.lua", "kv_common.lua"} and version.uploaded_by.username == "wl-page-operator"
    # A bad paste is refused beside the form, naming the file, and nothing is stored.
    refused = page.post("/workloads/new/", {"name": "kv2", "entry": "bad.lua", "pasted": "local x = (",
                                            "pasted_name": "", "description": "", "note": ""})
    assert refused.status_code == 200 and "file bad.lua: not valid Lua" in refused.content.decode()
    assert WorkloadVersion.objects.count() == 1
    # The scenario form offers the version and shows the options sysbench listed, with their defaults.
    form = page.get(f"/scenarios/new/?test={version.label()}").content.decode()
    assert 'name="opt__reads_per_event"' in form and "default (mixed)" in form.replace('placeholder="mixed"',
                                                                                           "default (mixed)")
    fields = {"name": "kv page", "test": version.label(), "dataset": DatasetFactory(name="kv-page").pk,
              "time_s": 5, "warmup_s": 0, "report_interval_s": 1, "percentile": 95, "prepare_mode": "auto",
              "cleanup": "keep", "prepare_threads": 2, "table_ddl": "", "preset": "", "description": ""}
    bad = page.post("/scenarios/new/", {**fields, "opt__reads_per_event": "many"})
    assert bad.status_code == 200 and "whole number" in bad.content.decode()
    saved = page.post("/scenarios/new/", {**fields, "opt__reads_per_event": "4"})
    assert saved.status_code == 302
    scenario = Scenario.objects.get(name="kv page")
    assert scenario.workload_version == version and scenario.options == {"reads-per-event": 4}
    detail = page.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert version.short_hash() in detail and "wl-page-operator" in detail
    viewer = PageClient()
    viewer.force_login(make_user(roles.VIEWER, "wl-page-viewer2"))
    assert viewer.get("/workloads/new/").status_code == 403
    assert "kv" in viewer.get("/workloads/").content.decode()


@pytest.mark.slow  # workload_save runs sysbench on the entry script (seconds)
@pytest.mark.django_db
def test_a_scenario_of_an_uploaded_workload_saves_with_a_new_dataset_typed_into_the_form():
    # The form once looked the workload's label up among sysbench's built-in tests and answered 500.
    version = workload_save(files=kv_files(), entry="kv.lua", name="newuser-pointsel",
                            user=make_user(roles.OPERATOR, "wl-new-dataset"))
    page = PageClient()
    page.force_login(version.uploaded_by)
    answer = page.post("/scenarios/new/", {
        "name": "kv new dataset", "test": version.label(), "dataset": "", "new_dataset_name": "kv typed",
        "new_dataset_tables": "2", "new_dataset_table_size": "500", "time_s": 5, "warmup_s": 0,
        "report_interval_s": 1, "percentile": 95, "prepare_mode": "auto", "cleanup": "keep", "prepare_threads": 2,
        "table_ddl": "", "preset": "", "description": ""})
    assert answer.status_code == 302, answer.content.decode()[-2000:]
    scenario = Scenario.objects.get(name="kv new dataset")
    assert scenario.workload_version == version
    assert (scenario.dataset.name, scenario.dataset.tables, scenario.dataset.table_size) == ("kv typed", 2, 500)
    # Left blank, the new dataset's fields are asked for beside the form, not a 500.
    blank = page.post("/scenarios/new/", {"name": "kv blank", "test": version.label(), "dataset": "",
                                          "time_s": 5, "warmup_s": 0, "report_interval_s": 1, "percentile": 95,
                                          "prepare_mode": "auto", "cleanup": "keep", "prepare_threads": 2})
    assert blank.status_code == 200 and "Required for a new dataset" in blank.content.decode()


# ---------------------------------------------------------------- the "done when" run


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_two_file_workload_runs_on_mariadb_and_postgresql_with_two_clients_and_is_compared(
        celery_worker_process, make_worker, target_databases):
    started = time.monotonic()
    make_worker("client-b")
    operator = make_user(roles.OPERATOR, "wl-e2e")
    api = client_for(operator)
    # Uploaded through the API: sysbench lists the options the entry script declares.
    response = api.post("/api/v1/workloads/", {"name": "kv-e2e", "entry": "kv.lua", "files": kv_files(),
                                               "description": "two-file test workload"}, format="json")
    assert response.status_code == 201, response.content
    version = WorkloadVersion.objects.get(pk=response.json()["id"])
    assert [o["name"] for o in response.json()["options"]] == \
        ["kv-mode", "reads-per-event", "table-size", "tables", "update-share"]
    made = api.post("/api/v1/scenarios/", {
        "name": "kv e2e", "workload_version": version.pk,
        "dataset": DatasetFactory(name="kv-e2e", tables=2, table_size=500).pk,
        "options": {"reads-per-event": 3}, "time_s": 3, "warmup_s": 1, "cleanup": "after_run",
    }, format="json")
    assert made.status_code == 201, made.content
    scenario = Scenario.objects.get(pk=made.json()["id"])
    # Their owners allow uploaded workloads on them (off by default).
    maria = TargetFactory(product=ProductFactory(name="MariaDB kv"), workloads_allowed=True)
    postgres = PgTargetFactory(product=ProductFactory(name="PostgreSQL kv"), workloads_allowed=True)
    # An admin has read the version and approved it (services.workloads.workload_approve).
    assert client_for(make_user(roles.ADMIN, "wl-e2e-admin")).post(
        f"/api/v1/workload-versions/{version.pk}/approve/").status_code == 200
    wait_for(lambda: ClientHost.objects.online().filter(hostname__in=["client-a", "client-b"]).count() == 2,
             timeout_s=30, what="both client hosts online")
    campaign = CampaignFactory(targets=[maria, postgres], scenarios=[scenario], threads=[2], clients_min=2)
    run = services.campaign_launch(campaign=campaign)

    def finished() -> bool:
        return all(job.is_finished() for job in run.jobs.all())

    wait_for(finished, timeout_s=180, what="both jobs to finish")
    for job in run.jobs.select_related("target", "result"):
        assert job.status == Job.Status.SUCCEEDED, (job.target.name, job.error)
        clients = list(job.clients.order_by("index"))
        assert {c.host_name for c in clients} == {"client-a", "client-b"}
        for client in clients:
            # The code that ran is named by its content hash, from each host's own cache.
            assert f"/{version.content_hash}/kv.lua" in client.command_line
            assert "--reads-per-event=3" in client.command_line and "--tables=2" in client.command_line
            assert client.exit_code == 0 and client.summary["qps"] > 0
        assert job.result.qps == pytest.approx(sum(c.summary["qps"] for c in clients))
        assert job.samples.count() >= 2  # per-second samples, as the live chart reads them
        assert any("Creating table 'kv_items1'" in c.prepare_output for c in clients)
        # Its prepare's progress is the time it ran, never rows of an sbtest1 the workload does not have.
        progress = job.prepare_progress or {}
        assert progress.get("counted") is False and "sbtest" not in progress["text"], progress
        assert progress["text"].startswith("prepared with the workload's own prepare command: "), progress
        # Judged as any job is (on this shared 2-core machine the busy-host finding may make it "invalid").
        assert job.verdict != "" and job.findings
    # The run's end drops the workload's tables with its own cleanup command (cleanup "after_run").
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=60, what="the run to end")
    wait_for(lambda: set(PreparedDataset.objects.filter(target__in=[maria, postgres]).values_list("status", flat=True))
             == {PreparedDataset.Status.DROPPED}, timeout_s=60, what="the workload's tables dropped")
    page = PageClient()
    page.force_login(operator)
    job_page = page.get(f"/jobs/{run.jobs.first().pk}/").content.decode()
    assert "workload:kv-e2e@v1" in job_page and version.content_hash in job_page
    # The comparison puts the two servers side by side for the workload.
    compared = api.get(f"/api/v1/comparisons/?runs={run.pk}")
    assert compared.status_code == 200
    body = json.dumps(compared.json())
    assert "workload:kv-e2e@v1" in body and "MariaDB kv" in body and "PostgreSQL kv" in body
    elapsed = time.monotonic() - started
    record_measurement(f"workload e2e (upload, 2 targets x 2 clients, compare): {elapsed:.1f} s")
