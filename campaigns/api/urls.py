"""URLs of the API (/api/v1/), its OpenAPI schema (/api/schema/) and docs (/api/docs/, /api/redoc/).

Swagger UI and Redoc are served from the drf-spectacular-sidecar package's files (no CDN: the
machines running benchapp may have no internet access). The schema and both docs pages need a login:
the schema with a token or a session (401/403 without), the docs pages send a browser to the login page; the
sidecar's own files (Swagger UI's and Redoc's scripts) stay public.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import drf_spectacular_sidecar
from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.permissions import IsAuthenticated
from rest_framework.routers import DefaultRouter, SimpleRouter

from campaigns.api import views
from campaigns.api.schedules import AnnotationViewSet, RegressionViewSet, ScheduleViewSet
from campaigns.api.seed_views import TemplateViewSet
from campaigns.api.share_links import ShareLinkViewSet
from campaigns.api.workloads import WorkloadVersionViewSet, WorkloadViewSet

SIDECAR_STATIC = Path(drf_spectacular_sidecar.__file__).resolve().parent / "static" / "drf_spectacular_sidecar"



class GroupedRouter(DefaultRouter):
    """DRF's DefaultRouter with each resource's routes behind a single `<prefix>/` pattern.

    DRF's own list holds every route of every resource, each twice (with a `.json`-style suffix): Django tried them
    in turn, 36 regular expressions before /api/v1/runs/ matched, a sixth of a cached list's time in Python.
    Grouped, a request is compared with one plain prefix per resource, then with that resource's own few routes.
    The suffixes are left out: `?format=` chooses the rendering (json, csv, api), as the docs say.
    """

    include_format_suffixes = False

    def get_urls(self) -> list[Any]:
        urls: list[Any] = []
        for prefix, viewset, basename in self.registry:
            own = SimpleRouter(trailing_slash=bool(self.trailing_slash))
            own.register("", viewset, basename=basename)
            urls.append(path(f"{prefix}/", include(own.get_urls())))
        if self.include_root_view:
            urls.append(path("", self.get_api_root_view(api_urls=urls), name=self.root_view_name))
        return urls


router = GroupedRouter()
router.register("products", views.ProductViewSet, basename="product")
router.register("specs", views.InstanceSpecViewSet, basename="spec")
router.register("targets", views.TargetViewSet, basename="target")
router.register("datasets", views.DatasetViewSet, basename="dataset")
router.register("scenarios", views.ScenarioViewSet, basename="scenario")
router.register("campaigns", views.CampaignViewSet, basename="campaign")
router.register("runs", views.RunViewSet, basename="run")
router.register("jobs", views.JobViewSet, basename="job")
router.register("results", views.ResultViewSet, basename="result")
router.register("client-hosts", views.ClientHostViewSet, basename="client-host")
router.register("comparisons", views.ComparisonViewSet, basename="comparison")
router.register("users", views.UserViewSet, basename="user")
router.register("schedules", ScheduleViewSet, basename="schedule")
router.register("regressions", RegressionViewSet, basename="regression")
router.register("annotations", AnnotationViewSet, basename="annotation")
router.register("templates", TemplateViewSet, basename="template")
router.register("share-links", ShareLinkViewSet, basename="share-link")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register("workload-versions", WorkloadVersionViewSet, basename="workload-version")

app_name = "api"
urlpatterns = [
    path("api/v1/auth/token/", views.TokenView.as_view(), name="token"),
    path("api/v1/auth/token/revoke/", views.TokenRevokeView.as_view(), name="token-revoke"),
    path("api/v1/", include(router.urls)),
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]), name="schema"),
    path("api/docs/", login_required(SpectacularSwaggerView.as_view(url_name="api:schema",
                                                                    permission_classes=[IsAuthenticated])),
         name="docs"),
    path("api/redoc/", login_required(SpectacularRedocView.as_view(url_name="api:schema",
                                                                  template_name="campaigns/api_redoc.html",
                                                                  permission_classes=[IsAuthenticated])),
         name="redoc"),
    re_path(r"^api/docs/assets/(?P<path>[\w./-]+)$", serve, {"document_root": SIDECAR_STATIC}, name="docs-assets"),
    # Anything else under /api/ (an id that is not a number, a typo) is a JSON 404, not an HTML page.
    re_path(r"^api/", views.not_found),
]
