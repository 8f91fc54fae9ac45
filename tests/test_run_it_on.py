"""From a pasted command to a run: after Save, the scenario page offers "Run it on…", and the new
campaign form starts with that scenario ticked and the pasted thread counts instead of "1, 2"."""
from __future__ import annotations

import re

import pytest

from campaigns.models import Scenario

pytestmark = pytest.mark.django_db

PASTED = ("sysbench oltp_read_only --db-driver=mysql --mysql-host=10.0.0.5 --mysql-password=s3cret --tables=4 "
          "--table-size=10000 --threads=8 --time=60 --report-interval=1 run")


def test_a_pasted_command_saved_as_a_scenario_runs_from_its_page_at_the_pasted_threads(role_client):
    client = role_client("operator")
    parsed = client.post("/scenarios/new/parse/", {"command": PASTED}).content.decode()
    assert '<input type="hidden" name="pasted_threads" value="8">' in parsed
    assert "once saved, “Run it on…” starts a campaign of this scenario at these threads" in parsed
    # Save: the form's fields as the paste filled them, and the hidden thread list the page carries.
    fields = {"name": "pasted read only", "test": "oltp_read_only", "dataset": "",
              "new_dataset_name": "pasted 4 x 10k", "new_dataset_tables": "4", "new_dataset_table_size": "10000",
              "time_s": "60", "warmup_s": "0", "report_interval_s": "1", "percentile": "95", "prepare_mode": "auto",
              "cleanup": "keep", "prepare_threads": "2", "pasted_threads": "8"}
    saved = client.post("/scenarios/new/", fields)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    scenario = Scenario.objects.get(name="pasted read only")
    assert saved["Location"] == f"/scenarios/{scenario.pk}/?threads=8"
    page = client.get(saved["Location"]).content.decode()
    assert f'href="/campaigns/new/?scenarios={scenario.pk}&amp;threads=8" id="run-it-on">Run it on…</a>' in page
    assert "The pasted command ran at <strong>8</strong> threads" in page
    form = client.get(f"/campaigns/new/?scenarios={scenario.pk}&threads=8").content.decode()
    assert re.search(r'name="threads" value="8"', form)
    assert re.search(rf'value="{scenario.pk}"[^>]*checked', form)
    # Later visits (no pasted threads in the URL) still offer the button; junk in the URL is ignored.
    assert "Run it on…" in client.get(f"/scenarios/{scenario.pk}/").content.decode()
    junk = client.get(f"/campaigns/new/?scenarios=x&scenarios={scenario.pk}&threads=lots").content.decode()
    assert re.search(r'name="threads" value="1, 2"', junk)
    # A viewer cannot start campaigns and is not offered to.
    assert "Run it on…" not in role_client("viewer").get(f"/scenarios/{scenario.pk}/").content.decode()
