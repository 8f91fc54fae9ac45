"""Seed templates at reduced scale: thread ceilings, plain DDL, runs queued one behind the other, and a real run
of the seed 003 template (with seed 002 queued behind it) at the smallest scale against MariaDB and PostgreSQL."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.urls import reverse

from campaigns import execution, roles, services
from campaigns.comparison import Selection, comparison_layout
from campaigns.execution import dispatch
from campaigns.models import Campaign, Job, Run, Scenario
from campaigns.seeds.quickrun import QuickRunOptions, suite_launch, suite_preview
from campaigns.seeds.services import plain_ddl, template_instantiate, template_load_all, threads_fitted
from campaigns.seeds.templates import SEED_002
from tests.conftest import wait_for
from tests.factories import CampaignFactory, DatasetFactory, PgTargetFactory, ScenarioFactory, TargetFactory


def _mariadb(**kwargs):
    """A MariaDB target on a spec no seed document tested (factory labels can collide with the documents')."""
    return TargetFactory(spec__label="quick-run local spec", **kwargs)


def _postgres(**kwargs):
    return PgTargetFactory(spec__label="quick-run local spec", **kwargs)


def test_a_thread_ceiling_keeps_the_low_end_and_runs_the_high_end_at_the_ceiling():
    assert threads_fitted((2, 4, 8, 16, 32, 64, 128, 256, 3000), 64) == [2, 4, 8, 16, 32, 64]
    # Clipping would leave 2 points of 5: the list is scaled by 64/1000 instead, keeping its shape.
    assert threads_fitted((50, 100, 200, 500, 1000), 64) == [3, 6, 13, 32, 64]
    assert threads_fitted((512, 1000), 64) == [33, 64]
    assert threads_fitted((1500,), 64) == [64]
    assert threads_fitted((8, 2, 8), None) == [2, 8]
    assert threads_fitted((2, 4), 64) == [2, 4]


def test_the_plain_ddl_of_seed_002_drops_only_the_middleware_clause():
    ddl = SEED_002.scenarios[0].table_ddl
    plain = plain_ddl(ddl)
    assert "dbpartition" in ddl and "dbpartition" not in plain.lower()
    assert plain.startswith("CREATE TABLE {table} (") and plain.endswith(")")
    assert "c varCHAR(1200)" in plain
    assert plain_ddl("CREATE TABLE {table} (id INT) tbpartition by hash(id) tbpartitions 4") == \
        "CREATE TABLE {table} (id INT)"


def _client_login(client: Any, username: str, role: str) -> None:
    """Logs a new user of that role in on `client` (the role's group is made if a transactional test
    flushed it)."""
    user = get_user_model().objects.create_user(username, password="pw")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    client.force_login(user)


@pytest.mark.django_db
def test_an_instance_can_cap_threads_and_clients_and_use_plain_ddl():
    templates = {t.template_key: t for t in template_load_all()}
    target = _mariadb()
    seed001 = template_instantiate(template=templates["seed-001"], targets=[target], scale_factor=0.001,
                                   max_threads=64, clients_max=1)
    assert seed001.clients_min == 1 and "uses 1" in seed001.description
    assert all(max(v) <= 64 for v in seed001.threads_by_scenario.values())
    assert seed001.threads == [64]
    seed003 = template_instantiate(template=templates["seed-003"], targets=[target], scale_factor=0.001,
                                   max_threads=16)
    assert seed003.threads == [2, 4, 8, 16]
    seed002 = template_instantiate(template=templates["seed-002"], targets=[target], scale_factor=0.0001,
                                   max_threads=8, plain_ddl=True)
    scenario = seed002.scenarios.get()
    assert scenario.name.endswith("· plain DDL") and "dbpartition" not in scenario.table_ddl
    assert scenario.options == templates["seed-002"].scenarios.get().options
    assert seed002.threads_by_spec == {label: [8] for label in templates["seed-002"].threads_by_spec}
    # The template itself is untouched.
    assert "dbpartition" in templates["seed-002"].scenarios.get().table_ddl
    with pytest.raises(ValueError, match="max_threads"):
        template_instantiate(template=templates["seed-003"], targets=[target], scale_factor=0.1, max_threads=0)


@pytest.mark.django_db
def test_the_rows_window_raises_tiny_tables_and_caps_huge_ones_but_never_beyond_the_dataset():
    templates = {t.template_key: t for t in template_load_all()}
    target = _mariadb()
    instance = template_instantiate(template=templates["seed-001"], targets=[target], scale_factor=0.001,
                                    table_rows_min=10_000, table_rows_max=1_000_000)
    sizes = {s.dataset.name: instance.dataset_size(s.dataset, target.spec) for s in instance.scenarios.all()}
    assert sizes == {"seed 001 · full cache": (1, 10_000), "seed 001 · big dataset": (1, 10_000),
                     "seed 001 · 1 TB single table": (1, 1_000_000)}
    small = DatasetFactory(name="tiny dataset", tables=1, table_size=500)
    assert instance.dataset_size(small, None) == (1, 500)  # the floor never makes a dataset bigger than itself
    instance.table_rows_min, instance.table_rows_max = 10, 5
    with pytest.raises(ValidationError, match="table_rows_max"):
        instance.full_clean()


@pytest.mark.django_db
def test_bad_quick_run_input_names_the_field_and_writes_nothing():
    template_load_all()
    target = _mariadb()
    before = Campaign.objects.count()
    cases = [
        ({"template_keys": ["seed-003"], "targets": [target], "options": QuickRunOptions(scale_factor=0)}, "scale_factor"),
        ({"template_keys": ["seed-003"], "targets": [target], "options": QuickRunOptions(run_time_s=0)}, "run_time_s"),
        ({"template_keys": ["seed-003"], "targets": [target], "options": QuickRunOptions(max_threads=0)}, "max_threads"),
        ({"template_keys": ["seed-999"], "targets": [target], "options": QuickRunOptions()}, "templates"),
        ({"template_keys": ["seed-003"], "targets": [], "options": QuickRunOptions()}, "targets"),
        ({"template_keys": ["seed-003"], "targets": [target],
          "options": QuickRunOptions(table_rows_min=10, table_rows_max=5)}, "table_rows_min"),
        ({"template_keys": ["seed-002"], "targets": [_postgres()], "options": QuickRunOptions()}, "targets"),
    ]
    for kwargs, field in cases:
        with pytest.raises(ValidationError) as caught:
            suite_launch(**kwargs)
        assert field in caught.value.message_dict, (field, caught.value.message_dict)
    assert Campaign.objects.count() == before
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_preview_plans_without_writing_and_seeds_001_and_003_fit_ten_minutes_on_two_targets():
    template_load_all()
    targets = [_mariadb(), _postgres()]
    before = Campaign.objects.count()
    rows = suite_preview(template_keys=["seed-001", "seed-003", "seed-002"], targets=targets,
                         options=QuickRunOptions())
    assert Campaign.objects.count() == before
    by_key = {r["template"]: r for r in rows}
    assert by_key["seed-001"]["jobs"] == 15 * 2  # 5 scenarios × 3 datasets × one thread count × 2 targets
    assert by_key["seed-003"]["jobs"] == 3 * 6 * 2  # 3 workloads × 2..64 threads × 2 targets
    assert by_key["seed-002"]["targets"] == [targets[0].name]  # MySQL DDL: the MariaDB target only
    assert by_key["seed-001"]["estimated_s"] + by_key["seed-003"]["estimated_s"] < 600


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_run_queued_behind_another_starts_only_when_that_one_has_finished(celery_worker_process, target_databases):
    target = _mariadb()
    scenario = ScenarioFactory(test="oltp_point_select", time_s=1)
    first = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]))
    second_campaign = CampaignFactory(targets=[target], scenarios=[scenario], threads=[1])
    # A cancelled predecessor counts as finished: what follows it still runs.
    services.run_cancel(run=first)
    wait_for(lambda: Run.objects.get(pk=first.pk).is_finished(), timeout_s=60, what="the cancelled run to close")
    second = services.campaign_launch(campaign=second_campaign, after=first)
    assert second.status == Run.Status.RUNNING and second.waits_for is None  # the first had already finished
    third = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]),
                                     after=second)
    assert third.status == Run.Status.PENDING and third.waits_for_id == second.pk
    assert third.jobs.get().status == Job.Status.QUEUED
    wait_for(lambda: Run.objects.get(pk=third.pk).is_finished(), timeout_s=90, what="the queued run to finish")
    second.refresh_from_db()
    third.refresh_from_db()
    errors = list(Job.objects.filter(run__in=[second, third]).values_list("error", flat=True))
    assert second.status == third.status == Run.Status.SUCCEEDED, errors
    assert third.started_at >= second.finished_at


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_seed_003_runs_at_the_smallest_scale_then_seed_002_with_plain_ddl(celery_worker_process, target_databases,
                                                                         client):
    template_load_all()
    mariadb, postgres = _mariadb(name="quick-mariadb"), _postgres(name="quick-postgresql")
    options = QuickRunOptions(scale_factor=0.0001, run_time_s=2, warmup_s=0, max_threads=2)
    runs = suite_launch(template_keys=["seed-003", "seed-002"], targets=[mariadb, postgres], options=options)
    assert [r.campaign.template_key for r in runs] == ["seed-003", "seed-002"]
    assert runs[1].status == Run.Status.PENDING and runs[1].waits_for_id == runs[0].pk
    wait_for(lambda: all(Run.objects.get(pk=r.pk).is_finished() for r in runs), timeout_s=240,
             what="both quick runs to finish")
    seed003, seed002 = (Run.objects.get(pk=r.pk) for r in runs)
    failed = list(Job.objects.filter(run__in=runs).exclude(status=Job.Status.SUCCEEDED).values_list("error", flat=True))
    assert not failed, failed
    assert seed003.status == seed002.status == Run.Status.SUCCEEDED
    assert seed002.started_at >= seed003.finished_at
    jobs = list(seed003.jobs.select_related("result", "target"))
    # 3 workloads × 2 targets × seed 003's 2 … 3,000 threads scaled under a ceiling of 2 (1 and 2); 10 × 10,000,000
    # at scale 0.0001 is 1 × 1,000, raised to the floor of 10,000 rows.
    assert len(jobs) == 12 and {(j.tables, j.table_size, j.threads) for j in jobs} == {(1, 10_000, 1), (1, 10_000, 2)}
    assert {j.target.driver for j in jobs} == {"mysql", "pgsql"}
    assert all(j.result.qps > 0 and j.result.latency_pct == 95 for j in jobs)
    plain = seed002.jobs.get()
    assert plain.target_id == mariadb.pk and plain.scenario.name.endswith("plain DDL")
    assert "tables created with the scenario's DDL" in plain.clients.get().prepare_output
    # The document's table shape: one table per workload, one column per product, filled with our figures.
    layout = comparison_layout(Selection(campaign=[seed003.campaign_id]))
    assert sorted(t["scenario"]["name"] for t in layout["tables"]) == [
        "seed 003 · read-only", "seed 003 · read-write", "seed 003 · write-only"]
    assert len(layout["products"]) == 2
    assert all(c is not None for t in layout["tables"] for r in t["rows"] for c in r["cells"])
    _client_login(client, "quick-viewer", roles.VIEWER)
    page = client.get(reverse("seeds"))
    assert page.status_code == 200 and seed003.campaign.name in page.content.decode()
    assert client.get(reverse("compare") + f"?campaign={seed003.campaign_id}").status_code == 200


@pytest.mark.django_db
def test_the_seeds_page_previews_and_launches_for_an_operator_and_refuses_a_viewer(client):
    template_load_all()
    target = _mariadb()
    _client_login(client, "seed-viewer", roles.VIEWER)
    page = client.get(reverse("seeds"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "seed 001 · TDSQL-C for MySQL vs TencentDB for MySQL" in text and "Running needs the operator role" in text
    form = {"templates": ["seed-003"], "targets": [target.pk], "scale_factor": "0.001", "run_time_s": "3",
            "warmup_s": "1", "max_threads": "8"}
    assert client.post(reverse("seeds-quick-run"), form).status_code == 403
    _client_login(client, "seed-operator", roles.OPERATOR)
    preview = client.post(reverse("seeds-quick-run"), {**form, "preview": "1"})
    assert preview.status_code == 200 and 'data-testid="quick-preview"' in preview.content.decode()
    assert not Run.objects.exists()
    bad = client.post(reverse("seeds-quick-run"), {**form, "scale_factor": "2"})
    assert bad.status_code == 400 and "scale_factor" in bad.content.decode()
    launched = client.post(reverse("seeds-quick-run"), form)
    run = Run.objects.get()
    assert launched.status_code == 302 and launched.url == reverse("run-detail", args=[run.pk])
    assert sorted(run.jobs.values_list("threads", flat=True)) == [2, 2, 2, 4, 4, 4, 8, 8, 8]
    services.run_cancel(run=run)
    made = client.post(reverse("seeds-instantiate", args=["seed-001"]),
                       {"seed-001-targets": [target.pk], "seed-001-scale_factor": "0.01", "seed-001-run_time_s": "5",
                        "seed-001-warmup_s": "0", "seed-001-max_threads": "32"})
    campaign = Campaign.objects.get(template_key="seed-001", is_template=False, scale_factor=0.01)
    assert made.status_code == 302 and made.url == reverse("campaigns-detail", args=[campaign.pk])
    assert client.post(reverse("seeds-instantiate", args=["no-such"]), {}).status_code == 404


@pytest.mark.django_db
def test_the_api_lists_templates_instantiates_and_runs_a_quick_suite(client):
    template_load_all()
    target = _mariadb()
    _client_login(client, "api-operator", roles.OPERATOR)
    listed = client.get("/api/v1/templates/")
    assert listed.status_code == 200
    keys = [t["key"] for t in listed.json()]
    assert keys == sorted(["seed-000-part-1", "seed-000-part-2", "seed-001", "seed-002", "seed-003", "seed-004"])
    made = client.post("/api/v1/templates/seed-003/instantiate/",
                       {"targets": [target.pk], "scale_factor": 0.001, "max_threads": 8}, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["threads"] == [2, 4, 8] and made.json()["template_key"] == "seed-003"
    for body, field in (({"targets": [], "scale_factor": 0.1}, "targets"),
                        ({"targets": [target.pk], "scale_factor": 3}, "scale_factor"),
                        ({"targets": [999999], "scale_factor": 0.1}, "targets")):
        bad = client.post("/api/v1/templates/seed-003/instantiate/", body, content_type="application/json")
        assert bad.status_code == 400 and field in bad.json(), bad.content
    assert client.post("/api/v1/templates/nope/instantiate/", {}, content_type="application/json").status_code == 404
    preview = client.post("/api/v1/templates/quick-run/",
                          {"targets": [target.pk], "templates": ["seed-001", "seed-003"], "preview": True},
                          content_type="application/json")
    assert preview.status_code == 200
    assert [r["template"] for r in preview.json()["templates"]] == ["seed-001", "seed-003"]
    bad = client.post("/api/v1/templates/quick-run/", {"targets": [target.pk], "templates": ["seed-999"]},
                      content_type="application/json")
    assert bad.status_code == 400 and "templates" in bad.content.decode()
    launched = client.post("/api/v1/templates/quick-run/",
                           {"targets": [target.pk], "templates": ["seed-003"], "max_threads": 2, "run_time_s": 1},
                           content_type="application/json")
    assert launched.status_code == 202, launched.content
    (run,) = launched.json()["runs"]
    services.run_cancel(run=Run.objects.get(pk=run["id"]))
    assert Scenario.objects.filter(name__startswith="seed 003").count() == 3


@pytest.mark.django_db
def test_a_run_drops_its_data_before_it_counts_as_finished_so_the_next_run_finds_its_own_tables(
        monkeypatch, django_capture_on_commit_callbacks):
    # Two runs on one target share table names (sbtest1…): the one queued behind must not start while the
    # first one's clean-up is still dropping them.
    target = _mariadb()
    scenario = ScenarioFactory(test="oltp_point_select", time_s=1, cleanup=Scenario.Cleanup.AFTER_RUN)
    first = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]))
    second = services.campaign_launch(campaign=CampaignFactory(targets=[target], scenarios=[scenario], threads=[1]),
                                      after=first)
    first.jobs.update(status=Job.Status.SUCCEEDED)
    seen = []

    def cleanup_spy(*, run):
        seen.append((Run.objects.get(pk=first.pk).status, Run.objects.get(pk=second.pk).status))

    monkeypatch.setattr(dispatch, "run_cleanup_data", cleanup_spy)
    monkeypatch.setattr(dispatch, "job_dispatch", lambda *, job: None)
    monkeypatch.setattr(dispatch, "run_finished_dispatch", lambda run_id: None)
    with django_capture_on_commit_callbacks(execute=True):
        execution.run_advance(run_id=first.pk)
    assert seen == [(Run.Status.RUNNING, Run.Status.PENDING)]
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == Run.Status.SUCCEEDED and second.status == Run.Status.RUNNING


@pytest.mark.django_db
def test_the_api_shows_the_rows_window_and_the_run_waited_for(client):
    _client_login(client, "rows-operator", roles.OPERATOR)
    campaign = CampaignFactory(targets=[_mariadb()], scenarios=[ScenarioFactory()], threads=[1])
    url = f"/api/v1/campaigns/{campaign.pk}/"
    bad = client.patch(url, {"table_rows_min": 10, "table_rows_max": 5}, content_type="application/json")
    assert bad.status_code == 400 and "table_rows_min" in bad.json()
    good = client.patch(url, {"table_rows_min": 10, "table_rows_max": 50}, content_type="application/json")
    assert good.status_code == 200 and (good.json()["table_rows_min"], good.json()["table_rows_max"]) == (10, 50)
    first = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING)
    second = Run.objects.create(campaign=CampaignFactory(), status=Run.Status.PENDING, waits_for=first)
    assert client.get(f"/api/v1/runs/{second.pk}/").json()["waits_for"] == first.pk


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_one_click_on_the_seeds_page_runs_a_seed_and_opens_its_tables(browser_page, live_server,
                                                                      celery_worker_process, target_databases):
    from django.contrib.auth import get_user_model

    from tests.helpers.browser import PASSWORD, USER, log_in, shot

    browser, page, problems = browser_page
    get_user_model().objects.create_superuser(USER, password=PASSWORD)
    template_load_all()
    target = _mariadb(name="one-click-mariadb")
    log_in(page, USER, PASSWORD)
    page.goto("/seeds/")
    for box in page.locator(".quick-run-form input[name=templates]").all():
        box.set_checked(box.get_attribute("value") == "seed-003")
    for box in page.locator(".quick-run-form input[name=targets]").all():
        box.set_checked(box.get_attribute("value") == str(target.pk))
    page.locator("#id_run_time_s").fill("1")
    page.locator("#id_warmup_s").fill("0")
    page.locator("#id_max_threads").fill("4")
    page.locator("#quick-preview").click()
    assert "seed 003" in page.locator("[data-testid=quick-preview]").inner_text()
    page.locator("#quick-launch").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run = Run.objects.get()
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished(), timeout_s=120, what="the one-click run to finish")
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    page.goto("/seeds/")
    page.get_by_role("link", name="measured").first.click()
    page.wait_for_url(re.compile(r"/compare/\?campaign=\d+"))
    headings = page.locator("h2").all_inner_texts()
    assert sum("seed 003 ·" in h for h in headings) == 3, headings  # write-only, read-only, read-write
    shot(page, "seeds-quick-run-compare")
    assert not problems.items, problems.items


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_two_runs_launched_together_on_one_database_take_turns(celery_worker_process, make_worker, target_databases):
    # Two client hosts, so both runs' jobs could be picked up at once: the database still serves one at a time.
    make_worker("client-b")
    scenario = ScenarioFactory(test="oltp_point_select", time_s=1)
    campaigns = [CampaignFactory(targets=[_mariadb()], scenarios=[scenario], threads=[1, 2]) for _ in range(2)]
    runs = [services.campaign_launch(campaign=c) for c in campaigns]
    wait_for(lambda: all(Run.objects.get(pk=r.pk).is_finished() for r in runs), timeout_s=120,
             what="both runs to finish")
    jobs = list(Job.objects.filter(run__in=runs).order_by("claimed_at"))
    assert [j.status for j in jobs] == [Job.Status.SUCCEEDED] * 4, [j.error for j in jobs]
    # From its (last) claim, through prepare and measurement, to its close, a job never shares the database
    # with the other run's jobs. Within a run, the next job is claimed while one measures (its checks overlap
    # that measurement) and starts only after that one's sysbench exit and snapshot after the run.
    for one in jobs:
        for other in jobs:
            if one.run_id != other.run_id and one.claimed_at < other.claimed_at:
                assert one.finished_at <= other.claimed_at, "two runs used the same database at once"
    for before, after in zip(jobs, jobs[1:], strict=False):
        if before.run_id == after.run_id:
            assert before.measured_at <= after.clients.get().started_at, "two jobs measured at once"


@pytest.mark.django_db
def test_the_reconciler_starts_a_queued_run_whose_predecessor_finished_unnoticed(monkeypatch):
    monkeypatch.setattr(dispatch, "job_dispatch", lambda *, job: None)
    campaign = CampaignFactory(targets=[_mariadb()], scenarios=[ScenarioFactory()], threads=[1])
    first = Run.objects.create(campaign=campaign, status=Run.Status.RUNNING)
    second = services.campaign_launch(campaign=CampaignFactory(targets=[_mariadb()], scenarios=[ScenarioFactory()],
                                                               threads=[1]), after=first)
    execution.jobs_reconcile()
    assert Run.objects.get(pk=second.pk).status == Run.Status.PENDING  # its predecessor is still going
    Run.objects.filter(pk=first.pk).update(status=Run.Status.FAILED)  # closed with no one to start the follower
    execution.jobs_reconcile()
    assert Run.objects.get(pk=second.pk).status == Run.Status.RUNNING
