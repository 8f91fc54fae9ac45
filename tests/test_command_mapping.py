"""#27, drifted rules: a pasted sysbench command becomes a scenario by one mapping (cmdline.command_to_scenario),
so the API's scenarios/from-command/ and the scenario page propose the same fields, with the same defaults, and
tell the same notes about what the scenario does not keep."""
from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from campaigns import roles
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
