"""A pasted sysbench command becomes a scenario by one mapping (cmdline.command_to_scenario),
so the API's scenarios/from-command/ and the scenario page propose the same fields, with the same defaults, and
tell the same notes about what the scenario does not keep."""
from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from campaigns import roles, services
from campaigns.models import ClientHost, Scenario, Target
from tests.factories import CampaignFactory, DatasetFactory, ProductFactory
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db

COMMANDS = [
    # Says nothing of time, percentile or report interval: the defaults of a new scenario, both ways.
    "sysbench oltp_read_write --tables=4 --table-size=1000 --threads=8 --histogram=on --events=100 run",
    "sysbench oltp_point_select --mysql-host=db.example --mysql-password=secret --percentile=99 "
    "--report-interval=5 --time=30 --threads=1,2 prepare",
]


def _page_fields(text: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in re.findall(r'name="([a-z_]+)" value="([^"]*)"', text)}


def _page_selected(text: str) -> dict[str, str]:
    """The option each of the form's selects has chosen (an empty value where it has none)."""
    chosen = {}
    for name, body in re.findall(r'<select[^>]*name="([a-z_]+)"[^>]*>(.*?)</select>', text, re.S):
        picked = re.findall(r'<option value="([^"]*)"[^>]*selected', body)
        chosen[name] = html.unescape(picked[0]) if picked else ""
    return chosen


def _page_notes(text: str) -> list[str]:
    report = text.split('id="parse-report"', 1)[1].split("</section>", 1)[0]
    return [html.unescape(re.sub(r"<[^>]+>", "", n)).strip() for n in re.findall(r"<li>(.*?)</li>", report, re.S)]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_api_and_the_page_map_a_pasted_command_the_same_way(command):
    operator = make_user(roles.OPERATOR, "paster")
    body = client_for(operator).post(f"{API}/scenarios/from-command/", {"command": command}, format="json").json()
    proposed = body["proposed"]
    page = Client()
    page.force_login(operator)
    # The form held other values before: the pasted command decides, as it does for the API.
    text = page.post("/scenarios/new/parse/", {"command": command, "time_s": "999",
                                         "percentile": "50", "report_interval_s": "7"}).content.decode()
    fields = _page_fields(text)
    assert f'<option value="{proposed["test"]}" selected>' in text
    assert int(fields["time_s"]) == proposed["time_s"]
    assert float(fields["percentile"]) == proposed["percentile"]
    assert int(fields["report_interval_s"]) == proposed["report_interval_s"]
    for note in body["notes"]:
        assert note in _page_notes(text), (note, _page_notes(text))
    assert "secret" not in str(_page_notes(text)) and "secret" not in str(body["notes"])


def test_what_a_command_leaves_out_is_noted_with_the_defaults_it_gets():
    body = client_for(make_user(roles.OPERATOR)).post(f"{API}/scenarios/from-command/",
                                                      {"command": COMMANDS[0]}, format="json").json()
    assert body["proposed"] == {"test": "oltp_read_write", "options": {}, "time_s": 60, "report_interval_s": 1,
                                "percentile": 95.0}
    notes = " | ".join(body["notes"])
    assert "--histogram: dropped" in notes and "--events=100: dropped" in notes and "Threads 8" in notes
    assert "Dataset: 4 × 1,000 rows." in notes


HOST_COMMANDS = [
    "sysbench cpu --cpu-max-prime=20000 --threads=4 --time=30 run",
    "sysbench memory --memory-block-size=1M --memory-total-size=10G --threads=2 --mysql-host=db1 run",
    "sysbench fileio --file-total-size=64M --file-test-mode=rndrw --file-num=16 prepare",
]


@pytest.mark.parametrize("command", HOST_COMMANDS)
def test_a_pasted_host_test_command_saves_by_the_api_and_the_page_and_plans_on_a_client_host(command):
    operator = make_user(roles.OPERATOR, "host-paster")
    api = client_for(operator)
    test = command.split()[1]
    saved = api.post(f"{API}/scenarios/from-command/", {"command": command, "save": True, "name": f"{test} api"},
                     format="json")
    assert saved.status_code == 201, saved.json()
    body = saved.json()
    assert body["test"] == test and (body["tables"], body["table_size"]) == (None, None)
    by_api = Scenario.objects.get(name=f"{test} api")
    assert by_api.test == test and by_api.options == body["proposed"]["options"]
    assert by_api.dataset.name == services.HOST_TEST_DATASET

    page = Client()
    page.force_login(operator)
    text = page.post("/scenarios/new/parse/", {"command": command}).content.decode()
    assert f'<option value="{test}" selected>' in text
    assert _page_notes(text) == body["notes"]
    fields = {**_page_fields(text), **_page_selected(text)}
    for option, value in body["proposed"]["options"].items():
        assert fields[f"opt__{option.replace('-', '_')}"] == str(value)
    form = {**{k: v for k, v in fields.items() if k != "command"}, "name": f"{test} page"}
    answer = page.post("/scenarios/new/", form)
    assert answer.status_code == 302, text
    by_page = Scenario.objects.get(name=f"{test} page")
    assert (by_page.test, by_page.options, by_page.time_s) == (by_api.test, by_api.options, by_api.time_s)
    assert by_page.dataset == by_api.dataset

    ClientHost.objects.create(hostname="vm-a", queue="q")
    host = services.target_create(name="host vm-a", kind=Target.Kind.CLIENT_HOST, product=ProductFactory(),
                                  host="vm-a")
    threads = body["threads"] or [1]
    campaign = CampaignFactory(targets=[host], scenarios=[by_api], threads=threads)
    jobs = services.campaign_plan(campaign=campaign)["jobs"]
    assert [(j["test"], j["client_host"]) for j in jobs] == [(test, "vm-a")] * len(threads)
    assert f"sysbench {test} " in jobs[0]["commands"][-1] and f"--threads={threads[0]}" in jobs[0]["commands"][-1]


def test_a_pasted_database_command_still_needs_a_dataset_to_save_and_a_host_test_ignores_one():
    api = client_for(make_user(roles.OPERATOR))
    missing = api.post(f"{API}/scenarios/from-command/", {"command": COMMANDS[0], "save": True}, format="json")
    assert missing.status_code == 400 and set(missing.json()) == {"name", "dataset"}
    missing = api.post(f"{API}/scenarios/from-command/", {"command": HOST_COMMANDS[0], "save": True}, format="json")
    assert missing.status_code == 400 and set(missing.json()) == {"name"}
    dataset = DatasetFactory(name="ten tables")
    saved = api.post(f"{API}/scenarios/from-command/", {"command": HOST_COMMANDS[0], "save": True, "name": "cpu x",
                                                        "dataset": dataset.pk}, format="json")
    assert saved.status_code == 201, saved.json()
    assert "dataset 'ten tables' not used: cpu is a host test, it has no tables" in saved.json()["warnings"]
    assert Scenario.objects.get(name="cpu x").dataset.name == services.HOST_TEST_DATASET
