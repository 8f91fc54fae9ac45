"""Seed 001's 4,000,000,000-row table in a real browser: the campaign page says the prepare takes hours, and the
run page shows the prepare's progress (rows from MAX(id), rate, time left) while a real worker loads the table."""
from __future__ import annotations

import os
import subprocess

import pytest
from django.contrib.auth import get_user_model

from campaigns import services
from campaigns.models import Job, Run
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, ScenarioFactory, TargetFactory
from tests.helpers.browser import PASSWORD, USER, log_in, shot, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _drop_tables() -> None:
    subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", os.environ["BENCHAPP_TEST_TARGET_DB"], "-e",
                    "DROP TABLE IF EXISTS sbtest1, sbtest2, sbtest3, sbtest4"], check=True)


def test_the_run_page_shows_a_4e9_row_prepare_loading(browser_page, live_server, celery_worker_process,
                                                      target_databases):
    _, page, problems = browser_page
    _drop_tables()
    get_user_model().objects.create_superuser(USER, "admin@example.com", PASSWORD)
    dataset = DatasetFactory(name="seed 001 · 1 TB single table", tables=1, table_size=4_000_000_000)
    scenario = ScenarioFactory(name="seed 001 · 1 TB single table · read point select", test="oltp_point_select",
                               dataset=dataset, prepare_threads=1)
    campaign = CampaignFactory(name="seed 001 at full scale", targets=[TargetFactory(name="local MariaDB")],
                               scenarios=[scenario], threads=[1])
    log_in(page, USER, PASSWORD)

    page.goto(f"/campaigns/{campaign.pk}/")
    note = page.locator("[data-testid=plan-prepare-note]")
    assert note.inner_text().startswith("Preparing 4,000,000,000 rows takes hours: about 11 h 6 min")
    shot(page, "bigint-01-plan-says-hours", full=False)

    run = services.campaign_launch(campaign=campaign)
    job = run.jobs.get()
    wait_for(lambda: (Job.objects.get(pk=job.pk).prepare_progress or {}).get("rows_per_s"), timeout_s=120,
             what="the prepare's first rate")
    page.goto(f"/runs/{run.pk}/")
    row_text = page.locator(f"[data-testid=prepare-progress][data-job='{job.pk}']").inner_text()
    assert row_text.startswith("preparing sbtest1: ") and " of 4,000,000,000 rows (" in row_text
    assert "MB/s, about " in row_text and row_text.endswith(" left")
    # The live phase line follows the progress without a reload.
    wait_js(page, "document.getElementById('live-phase').textContent.includes('of 4,000,000,000 rows')")
    first = page.locator("#live-phase").inner_text()
    wait_js(page, f"document.getElementById('live-phase').textContent !== {first!r}", timeout_ms=60_000)
    shot(page, "bigint-02-run-page-prepare-progress", full=False)

    services.run_cancel(run=run)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=60, what="the run to end")
    _drop_tables()
    assert not problems.items, problems.items
