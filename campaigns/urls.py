"""URLs of the web UI (the API's are in campaigns/api/urls.py)."""
from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponse
from django.urls import URLPattern, path

from campaigns.views import (
    campaigns,
    catalogue,
    compare,
    dashboard,
    hosts,
    quick,
    runs,
    scenarios,
    schedules,
    seeds,
    share,
    tokens,
    workloads,
)
from campaigns.views.base import Catalogue, CatalogueDelete, CatalogueEdit, CatalogueList

View = Callable[..., HttpResponse]


def catalogue_urls(cat: Catalogue, *, edit_view: View | None = None) -> list[URLPattern]:
    """list, new, <pk>/edit, <pk>/delete for one catalogue, with the generic views (the edit page unless given
    another)."""
    key = cat.key
    lister = CatalogueList.as_view(catalogue=cat)
    editor = edit_view or CatalogueEdit.as_view(catalogue=cat)
    return [
        path(f"{key}/", lister, name=f"{key}-list"),
        path(f"{key}/new/", editor, name=f"{key}-new"),
        path(f"{key}/<int:pk>/edit/", editor, name=f"{key}-edit"),
        path(f"{key}/<int:pk>/delete/", CatalogueDelete.as_view(catalogue=cat), name=f"{key}-delete"),
    ]


urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("tokens/", tokens.api_tokens, name="api-tokens"),
    path("tokens/<int:pk>/revoke/", tokens.api_token_revoke, name="api-token-revoke"),
    path("help/api/", tokens.api_quickstart, name="api-quickstart"),
    path("quick/", quick.quick_compare, name="quick-compare"),
    path("quick/add-target/", quick.quick_add_target, name="quick-add-target"),
    path("quick/plan/", quick.quick_plan, name="quick-plan"),
    path("quick/launch/", quick.quick_launch, name="quick-launch"),
    *catalogue_urls(catalogue.PRODUCTS),
    *catalogue_urls(catalogue.SPECS),
    *catalogue_urls(catalogue.DATASETS),
    *catalogue_urls(catalogue.TARGETS),
    path("targets/<int:pk>/", catalogue.target_detail, name="targets-detail"),
    path("targets/<int:pk>/check/", catalogue.target_check, name="targets-check"),
    path("targets/<int:pk>/settings-confirm/", catalogue.target_settings_confirm, name="targets-settings-confirm"),
    *catalogue_urls(scenarios.SCENARIOS, edit_view=scenarios.scenario_edit),
    path("scenarios/<int:pk>/", scenarios.scenario_detail, name="scenarios-detail"),
    # The scenario page's buttons other than "Save", for a new scenario and for one being edited.
    *(path(f"scenarios/{where}{button}/", view, name=f"scenarios-{button}")
      for where in ("new/", "<int:pk>/edit/")
      for button, view in (("parse", scenarios.scenario_parse), ("preset", scenarios.scenario_preset),
                           ("switch", scenarios.scenario_switch))),
    path("workloads/", workloads.workload_list, name="workload-list"),
    path("workloads/new/", workloads.workload_new, name="workload-new"),
    path("workloads/<int:pk>/", workloads.workload_detail, name="workload-detail"),
    path("workloads/<int:pk>/versions/new/", workloads.workload_new, name="workload-version-new"),
    path("workloads/<int:pk>/delete/", workloads.workload_delete_view, name="workload-delete"),
    path("workloads/<int:pk>/versions/<int:number>/approve/", workloads.workload_version_approve,
         name="workload-version-approve"),
    *catalogue_urls(campaigns.CAMPAIGNS, edit_view=campaigns.campaign_edit),
    path("campaigns/<int:pk>/", campaigns.campaign_detail, name="campaigns-detail"),
    path("campaigns/<int:pk>/launch/", campaigns.campaign_launch, name="campaigns-launch"),
    path("campaigns/<int:pk>/unpin-baseline/", campaigns.campaign_unpin_baseline, name="campaign-unpin-baseline"),
    path("campaigns/<int:pk>/schedules/", schedules.schedule_add, name="schedule-add"),
    path("schedules/<int:pk>/toggle/", schedules.schedule_toggle, name="schedule-toggle"),
    path("schedules/<int:pk>/delete/", schedules.schedule_delete, name="schedule-delete"),
    path("runs/", runs.run_list, name="run-list"),
    path("runs/<int:pk>/", runs.run_detail, name="run-detail"),
    path("runs/<int:pk>/live/", runs.run_live, name="run-live"),
    path("runs/<int:pk>/timeline/", runs.run_timeline_json, name="run-timeline"),
    path("runs/<int:pk>/cancel/", runs.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/retry-failed/", runs.run_rerun, {"scope": "failed"}, name="run-retry-failed"),
    path("runs/<int:pk>/run-again/", runs.run_rerun, {"scope": "all"}, name="run-again"),
    path("runs/<int:pk>/annotate/", runs.run_annotate, name="run-annotate"),
    path("runs/<int:pk>/pin-baseline/", runs.run_pin_baseline, name="run-pin-baseline"),
    path("regressions/<int:pk>/acknowledge/", runs.regression_acknowledge, name="regression-acknowledge"),
    path("jobs/<int:pk>/", runs.job_detail, name="job-detail"),
    path("hosts/", hosts.host_list, name="host-list"),
    path("hosts/<int:pk>/revoke/", hosts.host_revoke, name="host-revoke"),
    path("seeds/", seeds.seed_list, name="seeds"),
    path("seeds/quick-run/", seeds.seed_quick_run, name="seeds-quick-run"),
    path("seeds/<slug:key>/instantiate/", seeds.seed_instantiate, name="seeds-instantiate"),
    path("compare/", compare.compare, name="compare"),
    path("compare/comparison.csv", compare.compare_csv, name="compare-csv"),
    path("compare/comparison.md", compare.compare_markdown, name="compare-md"),
    path("compare/report/", compare.compare_report, name="compare-report"),
    path("compare/share/", share.share_create, name="share-create"),
    path("share-links/", share.share_list, name="share-links"),
    path("share-links/<int:pk>/revoke/", share.share_revoke, name="share-revoke"),
    # Share links: no login (the token is the key); tests/test_page_roles.py leaves s/ out.
    path("s/<str:token>/", share.shared, name="shared"),
    path("s/<str:token>/comparison.csv", share.shared_csv, name="shared-csv"),
]
