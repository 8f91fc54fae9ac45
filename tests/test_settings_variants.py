"""Settings variants as data: their checks, their text form, the plan's crossing and the comparison's columns
(no server: tests/test_variants_servers.py runs them against real ones)."""
from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client as PageClient

from campaigns import roles, services
from campaigns.comparison.histogram import cell_histogram
from campaigns.comparison.query import comparison_build
from campaigns.comparison.selection import Selection
from campaigns.forms import CampaignForm
from campaigns.models import Campaign, Job, JobClient, JobResult, Run
from campaigns.services.plans import campaign_expand
from campaigns.settings_variants import (
    VariantError,
    setting_matches,
    settings_problem,
    variants_clean,
    variants_format,
    variants_parse,
)
from tests.factories import CampaignFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import client_for, make_user


def test_the_text_form_reads_back_what_it_writes():
    text = ("flush=2: mysql innodb_flush_log_at_trx_commit=2, sync_binlog=0; pgsql synchronous_commit=off\n"
            "\n# a comment\ndefault:")
    variants = variants_parse(text)
    assert variants == [
        {"name": "flush=2", "mysql": {"innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0"},
         "pgsql": {"synchronous_commit": "off"}},
        {"name": "default"},
    ]
    assert variants_parse(variants_format(variants)) == variants


@pytest.mark.parametrize(("raw", "message"), [
    ([{"name": "a"}, {"name": "A"}], "named twice"),
    ([{"name": ""}], "a name is required"),
    ([{"name": "a · b"}], "a name of up to 40"),
    ([{"name": "a", "oracle": {}}], "unknown key 'oracle'"),
    ([{"name": "a", "mysql": {"sync_binlog; DROP TABLE x": "0"}}], "is not a setting's name"),
    ([{"name": "a", "mysql": {"sync_binlog": "0'; DROP TABLE x; --"}}], "is not a plain value"),
    ([{"name": "a", "mysql": {"sync_binlog": True}}], "must be a string or a number"),
    ([{"name": "a", "pgsql": ["synchronous_commit"]}], "pgsql must map setting names to values"),
    ({"name": "a"}, "must be a list"),
])
def test_bad_variants_are_refused_naming_the_variant_and_setting(raw, message):
    with pytest.raises(VariantError, match=message):
        variants_clean(raw)


def test_text_lines_that_are_not_variants_are_refused_naming_the_line():
    with pytest.raises(VariantError, match="line 1: 'oracle' is not a driver"):
        variants_parse("x: oracle a=b")
    with pytest.raises(VariantError, match="line 2: 'sync_binlog' is not setting=value"):
        variants_parse("x: mysql a=1\ny: mysql sync_binlog")


def test_values_read_back_match_in_the_servers_spellings():
    assert setting_matches("ON", "1") and setting_matches("off", "OFF") and setting_matches("2", "2.0")
    assert setting_matches("65536", "64MB", "65536")
    assert not setting_matches("2", "1") and not setting_matches("off", "local") and not setting_matches("1", None)
    assert settings_problem({"sync_binlog": "0"}) is None and settings_problem({"x y": "1"})


@pytest.mark.django_db
def test_a_campaign_without_variants_plans_as_before_and_variants_multiply_its_jobs_interleaved():
    maria = TargetFactory(name="m")
    pg = TargetFactory(name="p", driver="pgsql", port=1)  # not benchapp's own cluster: variants are refused there
    campaign = CampaignFactory(targets=[maria, pg], scenarios=[ScenarioFactory()], threads=[1, 2])
    plain = campaign_expand(campaign=campaign)
    assert len(plain) == 4 and {p.variant for p in plain} == {""} and all(not p.variant_settings for p in plain)
    Campaign.objects.filter(pk=campaign.pk).update(variants=[
        {"name": "default"}, {"name": "lazy", "mysql": {"sync_binlog": "0"}, "pgsql": {"synchronous_commit": "off"}}])
    campaign.refresh_from_db()
    planned = campaign_expand(campaign=campaign)
    # Interleaved (the default): per thread count, every target and variant in turn.
    assert [(p.target.name, p.variant, p.threads, p.variant_settings) for p in planned] == [
        ("m", "default", 1, {}), ("m", "lazy", 1, {"sync_binlog": "0"}),
        ("p", "default", 1, {}), ("p", "lazy", 1, {"synchronous_commit": "off"}),
        ("m", "default", 2, {}), ("m", "lazy", 2, {"sync_binlog": "0"}),
        ("p", "default", 2, {}), ("p", "lazy", 2, {"synchronous_commit": "off"}),
    ]
    run = services.campaign_launch(campaign=campaign)
    assert list(run.jobs.order_by("position").values_list("variant", flat=True)) == ["default", "lazy"] * 4
    # Blocked, as the campaign may choose: every job of a target and variant before the next one's.
    Campaign.objects.filter(pk=campaign.pk).update(job_order=Campaign.JobOrder.BLOCKED)
    campaign.refresh_from_db()
    assert [(p.target.name, p.variant, p.threads) for p in campaign_expand(campaign=campaign)] == [
        ("m", "default", 1), ("m", "default", 2), ("m", "lazy", 1), ("m", "lazy", 2),
        ("p", "default", 1), ("p", "default", 2), ("p", "lazy", 1), ("p", "lazy", 2),
    ]


@pytest.mark.django_db
def test_a_variant_that_changes_nothing_needs_no_server_and_bad_shapes_are_a_400_naming_the_field():
    target = TargetFactory(port=1)  # nothing listens there: a variant without settings for it asks nothing
    campaign = services.campaign_create(name="v", targets=[target], variants=[{"name": "default"},
                                                                            {"name": "pg only", "pgsql": {"jit": "off"}}])
    assert [v["name"] for v in campaign.variants] == ["default", "pg only"]
    with pytest.raises(ValidationError) as caught:
        services.campaign_update(campaign=campaign, variants=[{"name": "x", "mysql": {"a b": "1"}}])
    assert "is not a setting's name" in caught.value.message_dict["variants"][0]
    api = client_for(make_user(roles.OPERATOR, "variants-op"))
    answer = api.post("/api/v1/campaigns/", {"name": "w", "targets": [target.pk],
                                             "variants": [{"name": "x", "mysql": {"sync_binlog": "0; DROP"}}]},
                      format="json")
    assert answer.status_code == 400 and "is not a plain value" in str(answer.json()["variants"])
    answer = api.post("/api/v1/campaigns/", {"name": "w", "targets": [target.pk],
                                             "variants": [{"name": "x", "mysql": {"sync_binlog": "0"}}]},
                      format="json")
    assert answer.status_code == 400 and "cannot check the settings on target" in str(answer.json()["variants"])
    assert api.get(f"/api/v1/campaigns/{campaign.pk}/").json()["variants"] == campaign.variants


@pytest.mark.django_db
def test_the_form_shows_and_reads_the_text_form():
    target = TargetFactory(port=1)
    campaign = services.campaign_create(name="f", targets=[target], threads=[1], variants=[{"name": "default"}])
    form = CampaignForm(instance=campaign)
    assert "default:" in str(form["variants"].value()) or "default:" in form["variants"].as_widget()
    data = {"name": "f", "targets": [target.pk], "threads": "1", "repetitions": 1, "clients_min": 1,
            "scale_factor": 1.0, "variants": "x: oracle a=b"}
    bound = CampaignForm(data, instance=campaign)
    assert not bound.is_valid() and "'oracle' is not a driver" in bound.errors["variants"][0]


@pytest.mark.django_db
def test_the_comparison_puts_variants_side_by_side_as_products():
    product = ProductFactory(name="MariaDB (local)")
    target = TargetFactory(product=product)
    scenario = ScenarioFactory()
    campaign = CampaignFactory(targets=[target], scenarios=[scenario])
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED)
    for variant, qps in (("default", 100.0), ("flush=2", 150.0)):
        job = Job.objects.create(run=run, target=target, scenario=scenario, threads=4, status=Job.Status.SUCCEEDED,
                                 variant=variant)
        JobResult.objects.create(job=job, qps=qps, tps=qps / 10, latency_avg_ms=1.0, latency_pct_ms=2.0)
        JobClient.objects.create(job=job, index=0, status=JobClient.Status.SUCCEEDED, histogram=[[1.0, 5], [2.0, 1]])
    comparison = comparison_build(run_ids=[run.pk])
    assert [p["name"] for p in comparison["products"]] == ["MariaDB (local) · default", "MariaDB (local) · flush=2"]
    (row,) = comparison["groups"][0]["rows"]
    assert row["cells"][1]["delta_pct"]["qps"] == 50.0
    # A cell's latency histogram is of its own variant's jobs (the page's cells say which).
    keys = {"scenario_id": scenario.pk, "spec_id": target.spec_id, "threads": 4, "table_size": 1, "tables": 1,
            "product_id": product.pk}
    assert cell_histogram(Selection(runs=[run.pk]), **keys, variant="flush=2")["jobs"] == 1
    assert cell_histogram(Selection(runs=[run.pk]), **keys)["jobs"] == 2
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "compare-variants-viewer"))
    html = page.get(f"/compare/?runs={run.pk}").content.decode()
    assert 'data-variant="flush=2"' in html and "MariaDB (local) · flush=2" in html


def _variant_run() -> Run:
    target = TargetFactory(port=1, product=ProductFactory(name="MariaDB (bundled)"))
    scenario = ScenarioFactory()
    campaign = services.campaign_create(name="bundled variants", targets=[target], scenarios=[scenario],
                                        threads=[4], variants=[{"name": "default"},
                                                               {"name": "flush=2", "pgsql": {"jit": "off"}}])
    run = Run.objects.create(campaign=campaign, status=Run.Status.SUCCEEDED)
    job = Job.objects.create(run=run, target=target, scenario=scenario, threads=4, status=Job.Status.SUCCEEDED,
                             variant="flush=2", variant_settings={"innodb_flush_log_at_trx_commit": "2"},
                             server_snapshot={"before": {"settings": {"innodb_flush_log_at_trx_commit": "2"}},
                                              "variant": {"name": "flush=2", "settings": {
                                                  "innodb_flush_log_at_trx_commit": {
                                                      "wanted": "2", "got": "2", "original": "1"}}}})
    JobResult.objects.create(job=job, qps=100.0, tps=10.0, latency_avg_ms=1.0, latency_pct_ms=2.0)
    return run


@pytest.mark.django_db
def test_bundles_carry_the_variants_and_refuse_bad_ones():
    run = _variant_run()
    bundle = json.loads(services.bundle_json(services.run_export(run=run)))
    assert bundle["campaign"]["variants"] == run.campaign.variants
    operator = client_for(make_user(roles.OPERATOR, "bundle-op"))
    answer = operator.post("/api/v1/runs/import-bundle/", bundle, format="json")
    assert answer.status_code in (200, 201), answer.json()
    imported = Run.objects.get(pk=answer.json()["id"])
    assert imported.campaign.variants == run.campaign.variants
    job = imported.jobs.get()
    assert (job.variant, job.variant_settings) == ("flush=2", {"innodb_flush_log_at_trx_commit": "2"})
    bad = json.loads(json.dumps(bundle))
    bad["campaign"]["variants"] = [{"name": "x", "mysql": {"a; DROP": "1"}}]
    answer = operator.post("/api/v1/runs/import-bundle/", bad, format="json")
    assert answer.status_code == 400 and "campaign.variants:" in answer.json()["bundle"][0]
    bad = json.loads(json.dumps(bundle))
    bad["jobs"][0]["variant_settings"] = {"sync_binlog": "0' OR 1"}
    answer = operator.post("/api/v1/runs/import-bundle/", bad, format="json")
    assert answer.status_code == 400 and "jobs[0].variant_settings:" in answer.json()["bundle"][0]


@pytest.mark.django_db
def test_the_pages_show_the_variants_the_plan_crosses_and_what_was_in_force():
    run = _variant_run()
    page = PageClient()
    page.force_login(make_user(roles.VIEWER, "variants-viewer"))
    html = page.get(f"/campaigns/{run.campaign_id}/").content.decode()
    assert 'data-testid="variants"' in html and "jit=off" in html
    assert html.count('data-testid="plan-variant"') == 2  # 1 target × 1 scenario × 2 variants × 1 thread count
    html = page.get(f"/jobs/{run.jobs.get().pk}/").content.decode()
    assert 'data-testid="job-variant"' in html and "<strong>flush=2</strong>" in html
    assert "<td>2</td><td><strong>2</strong></td><td>1</td>" in html


def test_no_setting_on_the_allowlist_is_one_refused_for_good():
    from campaigns.settings_allowlist import BUILT_IN, refused_for_good

    assert [(d, a.name) for d, items in BUILT_IN.items() for a in items if refused_for_good(d, a.name)] == []


def test_an_administrator_adds_settings_but_never_one_refused_for_good(settings):
    from campaigns.settings_allowlist import AllowlistConfigError, Memory, extras_parse, setting_allowed

    assert setting_allowed("mysql", "innodb_log_file_size", "1G")[1].endswith("BENCHAPP_VARIANT_SETTINGS_EXTRA)")
    settings.BENCHAPP_VARIANT_SETTINGS_EXTRA = "mysql innodb_log_file_size size 4M..8G; pgsql enable_x bool"
    assert setting_allowed("mysql", "innodb_log_file_size", "1G") == (str(1024**3), "")
    assert "more than its highest value here, 8 GiB" in setting_allowed("mysql", "innodb_log_file_size", "9G")[1]
    assert setting_allowed("pgsql", "enable_x", "on") == ("on", "")
    for entry, message in (("pgsql archive_command enum a|b", "archive_command is refused for good"),
                           ("pgsql log_directory enum a", "refused for good"),
                           ("mysql init_connect enum a", "refused for good"),
                           ("mysql max_connections int 1..10", "refused for good"),
                           ("pgsql fsync bool", "refused for good"),
                           ("pgsql work_mem size", "needs an upper bound"),
                           ("oracle x bool", "the driver is mysql or pgsql")):
        with pytest.raises(AllowlistConfigError, match=message):
            extras_parse(entry)
    # A size the server allocates must fit in its memory, and the refusal names the figure.
    assert setting_allowed("pgsql", "work_mem", "2GB", memory=Memory(1024**3, "instance spec 'small'"))[1] == (
        "work_mem: 2GB (2 GiB) is more than the server's memory, 1 GiB (instance spec 'small')")


@pytest.mark.django_db
def test_a_bundle_import_and_the_admin_are_held_to_the_allowlist_too():
    target = TargetFactory(port=1, name="elsewhere")
    with pytest.raises(ValidationError) as caught:
        services.campaign_create(name="b", targets=[target], check_variants=False,
                                 variants=[{"name": "x", "mysql": {"init_connect": "x"}}])
    assert caught.value.message_dict["variants"] == [
        "target 'elsewhere', variant 'x': init_connect: refused for good (it runs SQL or reads files on the "
        "server's behalf)"]


@pytest.mark.django_db
def test_a_target_on_benchapps_own_cluster_is_refused_for_variants_at_save_and_at_launch_but_runs_without():
    from django.conf import settings as django_settings

    own = django_settings.DATABASES["default"]
    target = TargetFactory(name="own cluster", driver="pgsql", host="localhost", port=int(own.get("PORT") or 5432),
                           database="postgres", user="postgres")
    api = client_for(make_user(roles.OPERATOR, "own-cluster-op"))
    answer = api.post("/api/v1/campaigns/", {"name": "own", "targets": [target.pk], "variants": [
        {"name": "default"}, {"name": "lazy", "pgsql": {"synchronous_commit": "off"}}]}, format="json")
    assert answer.status_code == 400
    (message,) = answer.json()["variants"]
    assert message.startswith("target 'own cluster', variant 'lazy': localhost:") and (
        "is benchapp's own PostgreSQL server (it holds benchapp's own database): settings variants change "
        "server-wide settings, so they are refused on it; the target runs campaigns without variants") in message
    # Other addresses of the same server, and a Redis of benchapp's, are refused as well.
    from campaigns.endpoints import own_server_problem

    assert own_server_problem(host="127.1", port=target.port) and own_server_problem(host="2130706433",
                                                                                     port=target.port)
    redis_port = int(django_settings.CACHES["default"]["LOCATION"].rsplit(":", 1)[1].split("/")[0])
    assert "Redis" in (own_server_problem(host="127.0.0.1", port=redis_port) or "")
    # This machine's own non-loopback addresses (its network card's) reach the same servers: refused too, while
    # an address of another machine on the same port is not this machine's.
    import socket

    import psutil

    own_addresses = [a.address for name, found in psutil.net_if_addrs().items() for a in found
                     if a.family == socket.AF_INET and not a.address.startswith("127.")]
    assert own_addresses, "this machine has no non-loopback IPv4 address to try"
    for address in own_addresses:
        assert own_server_problem(host=address, port=target.port), address
        assert "Redis" in (own_server_problem(host=address, port=redis_port) or ""), address
    assert own_server_problem(host="198.51.100.7", port=target.port) is None
    # Without variants (or with a variant that gives it nothing) it is a target as any other.
    answer = api.post("/api/v1/campaigns/", {"name": "own", "targets": [target.pk], "scenarios": [
        ScenarioFactory().pk], "threads": [1], "variants": [{"name": "default"}, {"name": "m", "mysql": {
            "sync_binlog": "0"}}]}, format="json")
    assert answer.status_code == 201, answer.json()
    campaign = Campaign.objects.get(pk=answer.json()["id"])
    # A variant written into the database behind the services' back is refused at launch, naming why.
    Campaign.objects.filter(pk=campaign.pk).update(variants=[{"name": "lazy", "pgsql": {"synchronous_commit": "off"}}])
    answer = api.post(f"/api/v1/campaigns/{campaign.pk}/launch/", {}, format="json")
    assert answer.status_code == 400 and "is benchapp's own PostgreSQL server" in answer.json()["variants"][0]
    Campaign.objects.filter(pk=campaign.pk).update(variants=[{"name": "x", "pgsql": {"fsync": "off"}}])
    with pytest.raises(services.VariantsRefused, match="variant 'x'"):
        services.campaign_launch(campaign=Campaign.objects.get(pk=campaign.pk))
    assert not Run.objects.filter(campaign=campaign).exists()


@pytest.mark.django_db
def test_a_launch_holds_the_variants_to_the_allowlist_again():
    target = TargetFactory(name="elsewhere 2", port=1)
    campaign = CampaignFactory(targets=[target], scenarios=[ScenarioFactory()], threads=[1])
    Campaign.objects.filter(pk=campaign.pk).update(variants=[{"name": "x", "mysql": {"init_connect": "x"}}])
    with pytest.raises(services.VariantsRefused,
                       match="target 'elsewhere 2', variant 'x': init_connect: refused for good"):
        services.campaign_launch(campaign=Campaign.objects.get(pk=campaign.pk))


@pytest.mark.django_db
def test_a_server_of_unknown_memory_takes_no_memory_size_beyond_the_cap_and_the_refusal_says_how_to_allow_more(
        settings):
    from campaigns.services.variants import variants_allowlist_check

    settings.BENCHAPP_VARIANT_MEMORY_UNKNOWN_MIB = 4096
    remote = TargetFactory(name="remote, no spec", host="192.0.2.50", spec=None)
    huge = [{"name": "huge", "mysql": {"innodb_buffer_pool_size": "1T"}, "pgsql": {"work_mem": "2TB"}}]
    with pytest.raises(ValidationError) as caught:
        variants_allowlist_check(variants=huge, targets=[remote])
    text = " ".join(caught.value.message_dict["variants"])
    assert ("innodb_buffer_pool_size: 1T (1 TiB) is more than 4 GiB, the most benchapp allows where it does not know "
            "the server's memory (give target 'remote, no spec' an instance spec with its memory to allow more)") in text
    assert variants_allowlist_check(variants=[{"name": "fits", "mysql": {"innodb_buffer_pool_size": "2G"}}],
                                    targets=[remote])
    # Its spec's memory known, the same size is held to that instead.
    big = TargetFactory(name="remote, big spec", host="192.0.2.51",
                        spec=InstanceSpecFactory(label="2 TB box", memory_gb=2048))
    assert variants_allowlist_check(variants=huge, targets=[big])
