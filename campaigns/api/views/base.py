"""What every viewset of the API stands on: the base classes (BaseViewSet, ModelViewSet, ReadOnlyViewSet, the
cached list), cached_json for answers kept as the exact bytes of their JSON, helpers several resources share, and
the JSON 404 for any other path under /api/."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from django.db import transaction
from django.db.models import Model, Prefetch
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import mixins, serializers, viewsets
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import roles
from campaigns.api.permissions import RolePermission
from campaigns.cache import cached_value, query_key, request_snapshot
from campaigns.models import Scenario, Target

ID_PATTERN = r"[0-9]{1,19}"
# A list page's entry is only ever read under the same database snapshot; while anything writes,
# entries are outdated within a second, so they need not be kept long.
LIST_TIMEOUT_S = 60


class _RendersContext(Protocol):
    def get_renderer_context(self) -> dict[str, Any]: ...


def cached_json(request: Request, view: _RendersContext, key: str | None, build: Callable[[], Any], *,
                timeout: int | None = None) -> Response | HttpResponse:
    """build()'s answer. Plain JSON (nearly every request) is served as the exact bytes
    JSONRenderer made of it, from the cache under `key` when there (key None: never cached); other
    renderings (browsable API, indented JSON, CSV) are built each time."""
    renderer = request.accepted_renderer
    if key is None or type(renderer) is not JSONRenderer or request.accepted_media_type != renderer.media_type:
        return Response(build())
    context = view.get_renderer_context()
    body = cached_value(key, lambda: renderer.render(build(), renderer.media_type, context), timeout=timeout)
    return HttpResponse(body, content_type=renderer.media_type)


class BaseViewSet(viewsets.GenericViewSet):
    """Role permissions, numeric ids in URLs, and writes inside a savepoint.

    The savepoint matters when a write fails in the database (a unique value taken between the
    validator's check and the INSERT): the error becomes a 409 and the connection stays usable.
    """

    permission_classes = [RolePermission]
    lookup_value_regex = ID_PATTERN

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        # A model with a creator (targets, datasets, scenarios, campaigns) records who made the row, for `?mine=`.
        model = getattr(getattr(serializer, "Meta", None), "model", None)
        has_creator = model is not None and any(f.name == "created_by" for f in model._meta.fields)
        with transaction.atomic():
            serializer.save(**({"created_by": self.request.user} if has_creator else {}))

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        with transaction.atomic():
            serializer.save()

    def perform_destroy(self, instance: Any) -> None:
        with transaction.atomic():
            instance.delete()


class CachedListMixin(mixins.ListModelMixin):
    """Lists served from the cache while the database has not changed (campaigns.cache: keyed by
    the database snapshot, the URL and the caller's role). A viewset whose rows depend on the clock
    as well (a host's "online") sets `list_cached = False`."""

    list_cached = True

    # DRF sends any HttpResponse as it is: a cached list is the exact bytes rendered the first time.
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response | HttpResponse:  # type: ignore[override]
        key = None
        if self.list_cached:
            snapshot = request_snapshot(request.auth)
            if snapshot is not None:
                # `?mine=` lists depend on who asks, not only on the role.
                caller = request.user.pk if "mine" in request.query_params else None
                key = query_key("list", roles.user_role(request.user), request.build_absolute_uri(), snapshot, caller)
        view: Any = self  # the viewset this mixin is part of
        return cached_json(request, view, key, lambda: super(CachedListMixin, self).list(request, *args, **kwargs).data,
                           timeout=LIST_TIMEOUT_S)


class ModelViewSet(BaseViewSet, CachedListMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                   mixins.UpdateModelMixin, mixins.DestroyModelMixin):
    pass


class ReadOnlyViewSet(BaseViewSet, CachedListMixin, mixins.RetrieveModelMixin):
    pass


def targets_prefetch(path: str) -> Prefetch:
    """Targets with their product and spec, for the jobs' and results' querysets: few and shared by many rows,
    so prefetched (one small query) rather than joined."""
    return Prefetch(path, queryset=Target.objects.select_related("product", "spec"))


def scenarios_prefetch(path: str) -> Prefetch:
    """Scenarios with their dataset, prefetched as targets are (targets_prefetch)."""
    return Prefetch(path, queryset=Scenario.objects.select_related("dataset"))


def serialized_columns(serializer: type[serializers.ModelSerializer]) -> list[str]:
    """The model fields a serializer lists by name: the columns worth loading for it."""
    model: type[Model] = serializer.Meta.model
    concrete = {f.name for f in model._meta.concrete_fields}
    return [name for name in serializer.Meta.fields if name in concrete]


def format_parameter(description: str) -> OpenApiParameter:
    """The `?format=` parameter of an answer that can also be CSV, for its schema."""
    return OpenApiParameter("format", OpenApiTypes.STR, enum=["json", "csv"], description=description)


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Anything under /api/ that no route matches: a JSON 404 (whatever the method)."""
    return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
