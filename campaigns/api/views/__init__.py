"""API viewsets: queryset + serializer + FilterSet, and actions that call one service each.

Every list is filtered (campaigns.filtersets), ordered (`?ordering=`, explicit fields) and
paginated (`?limit=&offset=`), and its queryset joins or prefetches what the serializer reads, so
the number of queries does not grow with the number of rows.

One module per resource (its serializers are in the module of the same name in campaigns/api/serializers/):
base.py (BaseViewSet, ModelViewSet, ReadOnlyViewSet, CachedListMixin, cached_json, the JSON 404), catalogue.py
(products, specs, datasets), targets.py, scenarios.py, campaigns.py, runs.py (and run_queryset), jobs.py (with
samples, series, metrics), results.py, comparisons.py, hosts.py (client hosts), users.py, tokens.py (auth/token/).
Resources whose serializers and viewset share one module sit beside this package: schedules.py (schedules,
regressions, annotations), seed_views.py (templates), share_links.py, workloads.py.

`from campaigns.api.views import X` keeps working for every name the single views.py had.
"""
from __future__ import annotations

from campaigns.api.views.base import (
    ID_PATTERN,
    LIST_TIMEOUT_S,
    BaseViewSet,
    CachedListMixin,
    ModelViewSet,
    ReadOnlyViewSet,
    cached_json,
    not_found,
)
from campaigns.api.views.campaigns import CampaignViewSet
from campaigns.api.views.catalogue import DatasetViewSet, InstanceSpecViewSet, ProductViewSet
from campaigns.api.views.comparisons import ComparisonViewSet
from campaigns.api.views.hosts import ClientHostViewSet
from campaigns.api.views.jobs import JobViewSet
from campaigns.api.views.results import MAX_UPLOAD_BYTES, ResultViewSet, result_queryset
from campaigns.api.views.runs import MAX_IDEMPOTENCY_KEY, RunViewSet, idempotency_key, run_queryset
from campaigns.api.views.scenarios import ScenarioViewSet
from campaigns.api.views.targets import TargetViewSet
from campaigns.api.views.tokens import TokenRevokeView, TokenView
from campaigns.api.views.users import UserViewSet

__all__ = [
    "ID_PATTERN",
    "LIST_TIMEOUT_S",
    "MAX_IDEMPOTENCY_KEY",
    "MAX_UPLOAD_BYTES",
    "BaseViewSet",
    "CachedListMixin",
    "CampaignViewSet",
    "ClientHostViewSet",
    "ComparisonViewSet",
    "DatasetViewSet",
    "InstanceSpecViewSet",
    "JobViewSet",
    "ModelViewSet",
    "ProductViewSet",
    "ReadOnlyViewSet",
    "ResultViewSet",
    "RunViewSet",
    "ScenarioViewSet",
    "TargetViewSet",
    "TokenRevokeView",
    "TokenView",
    "UserViewSet",
    "cached_json",
    "idempotency_key",
    "not_found",
    "result_queryset",
    "run_queryset",
]
