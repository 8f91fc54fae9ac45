"""A workload declares its shape and its own figures: the option that takes the dataset's size (sysbench-tpcc's
scale, in warehouses), a function whose completed calls are counted, and a check command run after each job. One
service (workload_save) checks them against what sysbench listed of the script, for the API, the page and a bundle;
the job's command gives the size to the workload's option; an option that contradicts the dataset is refused naming
both; the counting wrapper runs the workload unchanged."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import Client as PageClient

from campaigns import roles
from campaigns.models import Scenario, Workload
from campaigns.services.workloads import declared_problems, workload_export, workload_import, workload_save
from campaigns.sysbench import parser
from campaigns.sysbench.command import Connection, build_argv
from campaigns.sysbench.workloads import counting_wrapper, files_check, workload_materialize
from tests.factories import DatasetFactory, ScenarioFactory
from tests.helpers.users import API, client_for, make_user

ORDERS = Path(__file__).resolve().parent / "data" / "workloads" / "orders"
OPTIONS = [{"name": "warehouses", "type": "int", "default": 2}, {"name": "mode", "type": "str", "default": "a"}]
COMMANDS = ["prepare", "cleanup", "check"]


def orders_files() -> dict[str, str]:
    return {path.relative_to(ORDERS).as_posix(): path.read_text() for path in sorted(ORDERS.rglob("*.lua"))}


@pytest.mark.parametrize(("values", "field", "words"), [
    ({"size_option": "scale"}, "size_option", "not an option of the script (sysbench lists: mode, warehouses)"),
    ({"size_option": "mode"}, "size_option", "takes a str"),
    ({"size_option": "tables"}, "size_option", "not an option"),
    ({"counted_function": "event"}, "counted_function", "sysbench's own names"),
    ({"counted_function": "new order()"}, "counted_function", "global Lua function"),
    ({"check_command": "verify"}, "check_command", "not a command of the script (it defines: prepare, cleanup, check)"),
    ({"check_command": "cleanup"}, "check_command", "not a check"),
    ({"counted_label": "NewOrders"}, "counted_label", "needs counted_function"),
    ({"size_unit": "<b>rows</b>"}, "size_unit", "letters, digits"),
    ({"expected_errors_pct": 101}, "expected_errors_pct", "from 0 to 100"),
    ({"warehouses": "x"}, "warehouses", "not a workload declaration"),
])
def test_a_declaration_the_script_does_not_bear_out_is_refused_naming_the_field(values, field, words):
    problems = declared_problems(values, options=OPTIONS, commands=COMMANDS)
    assert field in problems and words in problems[field], problems


def test_declarations_the_script_bears_out_pass():
    good = {"size_option": "warehouses", "size_unit": "warehouses", "counted_function": "new_order",
            "counted_label": "NewOrders", "check_command": "check", "expected_errors_pct": 1.0}
    assert declared_problems(good, options=OPTIONS, commands=COMMANDS) == {}


def test_the_size_goes_to_the_workloads_own_option_and_an_option_that_contradicts_it_is_refused(db):
    version = workload_save(user=None, name="orders-shape", files=orders_files(), entry="orders.lua",
                            declared={"size_option": "warehouses", "size_unit": "warehouses"})
    spec = version.test_spec("/cache/orders.lua")
    assert (spec.size_option, spec.size_unit) == ("warehouses", "warehouses")
    conn = Connection(driver="mysql", host="127.0.0.1", port=3306, user="u", password="", database="d")
    argv = build_argv(sysbench="sysbench", test=spec, command="run", connection=conn, tables=1, table_size=3,
                      options={}, threads=2, time_s=5)
    assert "--warehouses=3" in argv and not any(a.startswith("--table-size") for a in argv)
    dataset = DatasetFactory(name="three warehouses", tables=1, table_size=3)
    scenario = Scenario(name="orders at 2", test=version.label(), workload_version=version, dataset=dataset,
                        options={"warehouses": 2})
    with pytest.raises(ValidationError) as raised:
        scenario.full_clean()
    message = str(raised.value.message_dict["options"])
    assert "warehouses=2 contradicts the dataset 'three warehouses' (1 table × 3 warehouses)" in message
    assert "--warehouses" in message
    # The same value is harmless; the pages say warehouses where they said rows.
    same = ScenarioFactory(name="orders at 3", test=version.label(), workload_version=version, dataset=dataset,
                           options={"warehouses": 3})
    assert same.size_noun() == "warehouses"


def test_the_api_the_page_and_a_bundle_store_declarations_through_one_service(db):
    user = make_user(roles.OPERATOR, "shape-operator")
    api = client_for(user)
    bad = api.post(f"{API}/workloads/", {"name": "orders-api", "entry": "orders.lua", "files": orders_files(),
                                         "size_option": "scale"}, format="json")
    assert bad.status_code == 400 and "size_option" in bad.json(), bad.content
    assert "warehouses" in bad.json()["size_option"][0] and not Workload.objects.filter(name="orders-api").exists()
    made = api.post(f"{API}/workloads/", {"name": "orders-api", "entry": "orders.lua", "files": orders_files(),
                                          "size_option": "warehouses", "size_unit": "warehouses",
                                          "counted_function": "new_order", "counted_label": "NewOrders"},
                    format="json")
    assert made.status_code == 201, made.content
    workload = Workload.objects.get(name="orders-api")
    shown = api.get(f"{API}/workloads/{workload.pk}/").json()
    assert {k: shown[k] for k in ("size_option", "size_unit", "counted_function", "counted_label",
                                  "check_command")} == {
        "size_option": "warehouses", "size_unit": "warehouses", "counted_function": "new_order",
        "counted_label": "NewOrders", "check_command": ""}
    # The orders script defines no check: refused naming what it defines, nothing changed.
    refused = api.post(f"{API}/workloads/{workload.pk}/versions/", {"entry": "orders.lua", "files": orders_files(),
                                                                   "check_command": "check"}, format="json")
    assert refused.status_code == 400 and "prepare" in refused.json()["check_command"][0]
    assert Workload.objects.get(pk=workload.pk).check_command == ""
    page = PageClient()
    page.force_login(user)
    detail = page.get(f"/workloads/{workload.pk}/").content.decode()
    assert "<strong>warehouses</strong> per table set" in detail and "NewOrders per minute" in detail
    form = page.get(f"/workloads/{workload.pk}/versions/new/").content.decode()
    assert 'name="size_option"' in form and 'value="warehouses"' in form
    # A bundle carries them and its import stores them through workload_save.
    version = workload.versions.get()
    exported = workload_export(ScenarioFactory(test=version.label(), workload_version=version, options={}))
    assert exported["workload"]["counted_function"] == "new_order"
    Workload.objects.filter(pk=workload.pk).update(counted_label="", counted_function="")
    workload_import(exported["workload"], "scenarios[0].workload", user=user)
    assert Workload.objects.get(pk=workload.pk).counted_label == "NewOrders"
    broken = {**exported["workload"], "size_option": "nope"}
    with pytest.raises(ValueError, match=r"scenarios\[0\]\.workload\.size_option: 'nope' is not an option"):
        workload_import(broken, "scenarios[0].workload", user=user)


def test_no_upload_may_use_the_name_of_benchapps_own_files():
    with pytest.raises(Exception, match="reserved by benchapp"):
        files_check({"__benchapp_count_x.lua": "x = 1", "a.lua": "y = 1"}, "a.lua")


def test_the_counting_wrapper_runs_the_workload_unchanged_and_counts_each_threads_completed_calls(tmp_path):
    files = {"w.lua": (
        'sysbench.cmdline.options = {rounds = {"Rounds", 3}}\n'
        "calls = 0\n"
        "function new_order(i) if i % 4 == 0 then error('deadlock, retried') end return i end\n"
        "function event() end\n"
        "function thread_done() io.write('workload done\\n') end\n"
        "function cmd_run()\n"
        "  for i = 1, sysbench.opt.rounds * 4 do pcall(_G.new_order, i) end\n"
        "  thread_done()\n"
        "end\n"
        "sysbench.cmdline.commands = {count = {cmd_run}}\n")}
    name, text = counting_wrapper(entry="w.lua", function="new_order")
    assert name == "__benchapp_count_new_order.lua"
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    digest = __import__("campaigns.sysbench.workloads", fromlist=["content_hash"]).content_hash(files, "w.lua")
    entry = workload_materialize(cache_dir=root, digest=digest, files=files, entry="w.lua", generated={name: text})
    wrapper = entry.parent / name
    # The cached copy keeps its own hash; a copy without the wrapper is written again with it.
    assert workload_materialize(cache_dir=root, digest=digest, files=files, entry="w.lua", generated={name: text}) \
        == entry
    out = subprocess.run(["sysbench", str(wrapper), "--rounds=5", "count"], capture_output=True, text=True,
                         timeout=30, env={"LUA_PATH": f"{entry.parent}/?.lua;;", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    # 20 calls, every 4th raised: 15 completed; the workload's own thread_done still ran.
    assert parser.counted_calls(out.stdout, "new_order") == 15 and "workload done" in out.stdout
    assert parser.counted_calls(out.stdout, "payment") is None


def test_a_campaign_sweeps_sizes_per_table_like_thread_counts_and_says_what_they_count(db):
    from campaigns.services.plans import campaign_expand, campaign_plan
    from tests.factories import CampaignFactory, TargetFactory

    version = workload_save(user=None, name="orders-sweep", files=orders_files(), entry="orders.lua",
                            declared={"size_option": "warehouses", "size_unit": "warehouses"})
    scenario = ScenarioFactory(name="orders sweep", test=version.label(), workload_version=version, options={},
                               dataset=DatasetFactory(name="orders set", tables=1, table_size=1))
    target = TargetFactory(name="sweep-db")
    campaign = CampaignFactory(name="warehouse sweep", threads=[1, 2], table_sizes=[1, 2], scale_factor=0.5,
                               targets=[target], scenarios=[scenario])
    jobs = campaign_expand(campaign=campaign)
    # Each size is prepared once: sizes outside threads, in the order given; the scale factor leaves them alone.
    assert [(j.table_size, j.threads) for j in jobs] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    plan = campaign_plan(campaign=campaign)
    assert {j["size_unit"] for j in plan["jobs"]} == {"warehouses"}
    assert any("--warehouses=2" in command for j in plan["jobs"] for command in j["commands"])
    for bad, words in (([0], "whole number from 1"), ([2, 2], "given twice"), (list(range(1, 18)), "at most 16")):
        campaign.table_sizes = bad
        with pytest.raises(ValidationError) as raised:
            campaign.full_clean()
        assert words in str(raised.value.message_dict["table_sizes"])


SPINNING = {"spin.lua": (
    "function event() end\n"
    "function check_data() local x = 0 while true do x = x + 1 end end\n"
    "function check_quick() print('check passed: nothing to see') end\n"
    "function check_broken() print('check FAILED: district 3') return false end\n"
    "sysbench.cmdline.commands = {check = {check_data}, quick = {check_quick}, broken = {check_broken}}\n")}


@pytest.mark.slow
@pytest.mark.parametrize(("command", "outcome", "words"), [
    ("quick", "passed", "check passed: nothing to see"),
    ("broken", "failed", "check FAILED: district 3"),
    ("check", "not_run", "exceeded its time-out of 2 s (BENCHAPP_CHECK_TIMEOUT_S)"),
])
def test_a_check_passes_fails_or_is_stopped_at_its_time_out(db, settings, target_databases, command, outcome,
                                                            words):
    """The check in the job's sandbox against its real target: exit 0 passes, another code fails, and one that
    never ends is stopped at BENCHAPP_CHECK_TIMEOUT_S and said not run (the job's heartbeat kept up meanwhile)."""
    from campaigns.execution.phases import job_connection
    from campaigns.execution.workload_check import job_check
    from campaigns.models import Job
    from tests.factories import JobFactory, TargetFactory

    settings.BENCHAPP_CHECK_TIMEOUT_S = 2.0
    version = workload_save(user=None, name=f"spin-{command}", files=SPINNING, entry="spin.lua",
                            declared={"check_command": command})
    job = JobFactory(target=TargetFactory(workloads_allowed=True), status=Job.Status.RUNNING,
                     scenario=ScenarioFactory(test=version.label(), workload_version=version, options={}))
    beats: list[int] = []
    found = job_check(job, job_connection(job), beat=lambda: beats.append(1))
    assert found["check_outcome"] == outcome and words in found["check_output"], found
    command_line = next(line for line in found["check_output"].splitlines() if line.startswith("$ sysbench"))
    assert "/spin.lua " in command_line and command_line.endswith(f" {command}")
    if outcome == "not_run":
        assert beats and Job.objects.get(pk=job.pk).heartbeat_at is not None


def test_a_version_without_the_declared_size_option_refuses_to_build_a_command_rather_than_drop_the_size():
    from campaigns.sysbench.catalogue import OptionError
    from campaigns.sysbench.workloads import options_from_json, workload_spec

    spec = workload_spec(label="workload:old@v1", entry="/cache/old.lua", size_option="scale",
                         options=options_from_json([{"name": "tables", "type": "int", "default": 1}]))
    conn = Connection(driver="mysql", host="127.0.0.1", port=3306, user="u", password="", database="d")
    with pytest.raises(OptionError, match="size option --scale is not an option of workload:old@v1"):
        build_argv(sysbench="sysbench", test=spec, command="run", connection=conn, tables=1, table_size=2,
                   options={}, threads=1, time_s=5)
