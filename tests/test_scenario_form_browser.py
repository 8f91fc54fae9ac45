"""The scenario form in a real browser: a workload of one's own with a new dataset typed into the form
saves, where it answered 500."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from campaigns.models import Scenario
from campaigns.services.workloads import workload_save
from tests.helpers.browser import log_in, shot
from tests.helpers.ui import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KV = Path(__file__).resolve().parent / "data" / "workloads" / "kv"


def test_a_workload_scenario_with_a_new_dataset_saves_from_the_form(browser_page):
    browser, page, problems = browser_page
    user = make_user("form-operator", "operator")
    version = workload_save(files={path.name: path.read_text() for path in sorted(KV.glob("*.lua"))},
                            entry="kv.lua", name="newuser-pointsel", user=user)
    log_in(page, "form-operator", PASSWORD)
    page.goto(f"/scenarios/new/?test={version.label()}")
    page.locator("#id_name").fill("pointsel on a typed dataset")
    page.get_by_label("New dataset: name").fill("pointsel small")
    page.get_by_label("tables", exact=True).fill("2")
    page.get_by_label("rows per table").fill("1000")
    page.locator("#id_opt__reads_per_event").fill("3")
    page.locator("#id_time_s").fill("5")
    shot(page, "43-scenario-workload-new-dataset-form")
    page.get_by_role("button", name="Save scenario").click()
    page.wait_for_url(re.compile(r"/scenarios/\d+/(\?[^/]*)?$"))
    shot(page, "43-scenario-workload-new-dataset-saved")
    scenario = Scenario.objects.get(name="pointsel on a typed dataset")
    assert scenario.workload_version == version and scenario.options == {"reads-per-event": 3}
    assert (scenario.dataset.name, scenario.dataset.tables, scenario.dataset.table_size) == ("pointsel small", 2, 1000)
    assert "pointsel small" in page.locator("main").inner_text()
    assert not problems.items, "\n".join(problems.items)
