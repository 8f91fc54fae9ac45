"""API for share links (/api/v1/share-links/): make one with the comparison's choice, list your own (admins: all),
revoke one (its creator or an admin). The token is in the `url` of the creation's answer only."""
from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import roles, sharing
from campaigns.api.exceptions import django_validation_detail
from campaigns.api.fields import NoInputSerializer, StrictInputMixin
from campaigns.api.views.base import BaseViewSet
from campaigns.comparison import Selection
from campaigns.models import Campaign, InstanceSpec, Product, Run, Scenario, ShareLink, Target

MAX_ID = 2**63 - 1
MAX_IDS = 1000


def _ids(help_text: str) -> serializers.ListField:
    return serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_ID), required=False,
                                 max_length=MAX_IDS, default=list, help_text=help_text)


class ShareLinkSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.get_username", read_only=True)
    revoked_by = serializers.CharField(source="revoked_by.get_username", read_only=True, allow_null=True,
                                       default=None)
    state = serializers.CharField(read_only=True, help_text="active, expired or revoked")

    class Meta:
        model = ShareLink
        fields = ["id", "shows", "title", "selection", "created_by", "created_at", "expires_at", "revoked_at",
                  "revoked_by", "last_opened_at", "open_count", "state"]
        read_only_fields = fields


class ShareLinkCreatedSerializer(ShareLinkSerializer):
    url = serializers.CharField(read_only=True, help_text="The link; shown in this answer only (its token is "
                                                          "stored as a hash)")

    class Meta(ShareLinkSerializer.Meta):
        fields = [*ShareLinkSerializer.Meta.fields, "url"]
        read_only_fields = fields


class ShareLinkCreateSerializer(StrictInputMixin, serializers.Serializer):
    """What to share: the comparison's choice (as GET /api/v1/comparisons/ takes it, as JSON lists of ids)."""

    shows = serializers.ChoiceField(choices=ShareLink.Shows.choices, default=ShareLink.Shows.COMPARISON,
                                    help_text="comparison: the comparison's tables and charts; report: the "
                                              "print-ready report")
    expires_in_days = serializers.IntegerField(min_value=1, max_value=sharing.MAX_DAYS, default=sharing.DEFAULT_DAYS)
    targets = _ids("Targets to compare.")
    products = _ids("Products to compare, the first being the baseline.")
    runs = _ids("Only jobs of these runs.")
    campaign = _ids("Only jobs of runs of these campaigns.")
    scenarios = _ids("Only these scenarios.")
    specs = _ids("Only targets on these instance specs.")
    published = serializers.ListField(child=serializers.CharField(max_length=20), required=False, default=list,
                                      max_length=20, help_text="Seed documents whose published figures to show.")
    published_product = _ids("At most one product whose published figures go beside the measured tables.")
    published_spec = _ids("At most one of that product's published specs.")
    trusted_only = serializers.BooleanField(required=False, default=False,
                                            help_text="Leave out cells whose validity verdict is suspect or invalid.")

    MODELS: dict[str, type[Model]] = {
        "targets": Target, "products": Product, "runs": Run, "campaign": Campaign, "scenarios": Scenario,
        "specs": InstanceSpec, "published_product": Product, "published_spec": InstanceSpec,
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors = {}
        for name, model in self.MODELS.items():
            wanted = set(attrs.get(name) or ())
            if name.startswith("published_") and len(wanted) > 1:
                errors[name] = ["at most one id"]
                continue
            found = set(model._default_manager.filter(pk__in=wanted).values_list("pk", flat=True)) if wanted else set()
            if missing := sorted(wanted - found):
                errors[name] = [f"unknown id{'s' if len(missing) > 1 else ''}: {', '.join(map(str, missing[:10]))}"]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def selection(self) -> Selection:
        data = self.validated_data
        return Selection(**{name: data[name] for name in (
            "targets", "products", "campaign", "runs", "scenarios", "specs", "published", "published_product",
            "published_spec", "trusted_only")})


class ShareLinkViewSet(BaseViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Share links: operators make them and see their own, admins see every one; the creator or an admin
    revokes. A revoked or expired link stays listed."""

    serializer_class = ShareLinkSerializer
    read_role = write_role = roles.OPERATOR
    ordering_fields = ["id", "created_at", "expires_at", "last_opened_at", "open_count"]
    filterset_fields = ["shows"]

    def get_queryset(self) -> QuerySet[ShareLink]:
        return sharing.share_links_visible(self.request.user).order_by("-created_at", "-pk")

    @extend_schema(request=ShareLinkCreateSerializer, responses={201: ShareLinkCreatedSerializer})
    def create(self, request: Request) -> Response:
        body = ShareLinkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            link, token = sharing.share_link_create(
                user=request.user, selection=body.selection(), shows=body.validated_data["shows"],
                expires_in_days=body.validated_data["expires_in_days"])
        except DjangoValidationError as exc:
            raise serializers.ValidationError(django_validation_detail(exc)) from None
        answer = dict(ShareLinkSerializer(link).data)
        answer["url"] = request.build_absolute_uri(reverse("shared", args=[token]))
        return Response(answer, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ShareLinkSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str | None = None) -> Response:
        link = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        try:
            link = sharing.share_link_revoke(link=link, user=request.user)
        except PermissionError as exc:
            raise exceptions.PermissionDenied(str(exc)) from None
        return Response(ShareLinkSerializer(link).data)
