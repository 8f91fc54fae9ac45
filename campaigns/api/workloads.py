"""API for workloads of one's own: upload (JSON or multipart), new versions, and what sysbench said of each.

Every write calls campaigns.services.workloads.workload_save, as the pages and bundle imports do; writes need
the operator role (RolePermission's default for POST): a script is code that runs on client hosts. A multipart
body is read by WorkloadMultiPartParser, which refuses a file name Django would cut (`../x.lua`, `lib/x.lua`).
"""
from __future__ import annotations

from typing import Any

from django.http import QueryDict
from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import ParseError
from rest_framework.parsers import (  # type: ignore[attr-defined]  # get_encoding: DRF 3.18, newer than its stubs
    DataAndFiles,
    MultiPartParser,
    get_encoding,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.utils.mediatypes import media_type_matches

from campaigns import roles
from campaigns.api.exceptions import Conflict
from campaigns.api.fields import NoInputSerializer, StrictInputMixin
from campaigns.api.views.base import BaseViewSet, CachedListMixin, ReadOnlyViewSet
from campaigns.models import Workload, WorkloadApproval, WorkloadVersion
from campaigns.services.workloads import (
    WorkloadInUse,
    upload_name_problem,
    workload_approve,
    workload_delete,
    workload_files_from_uploads,
    workload_save,
    workload_unapprove,
)


@extend_schema_field({"type": "object", "additionalProperties": {"type": "string"},
                      "description": "the workload's files: each path (e.g. \"tpcc_common.lua\") and its Lua source; "
                                     "in a multipart body, upload each file under the field name `files` instead",
                      "example": {"kv.lua": "require(\"kv_common\")\n…", "kv_common.lua": "…"}})
class LuaFilesField(serializers.JSONField):
    """{path: Lua source}. Anything else is refused with a list of messages, as every other field's error is."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, dict) or not all(isinstance(text, str) for text in value.values()):
            raise serializers.ValidationError("an object of file names and their Lua source is expected, "
                                              "e.g. {\"kv.lua\": \"…\"}")
        return value


class _NameKeepingParser(DjangoMultiPartParser):
    """Django's multipart parser, refusing (400 on "files") a file name it would change instead of changing it:
    its sanitize_file_name is the one place that still sees the name as sent (UploadedFile.name is cut again)."""

    def sanitize_file_name(self, file_name: str) -> str | None:
        kept = super().sanitize_file_name(file_name)
        problem = upload_name_problem(sent=file_name, kept=kept)
        if problem is not None:
            raise serializers.ValidationError({"files": [problem]})
        return kept


class WorkloadMultiPartParser(MultiPartParser):
    """DRF's multipart parser (the same parse, line for line) on _NameKeepingParser."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> DataAndFiles:
        parser_context = parser_context or {}
        request = parser_context["request"]
        meta = request.META.copy()
        meta["CONTENT_TYPE"] = media_type
        try:
            data, files = _NameKeepingParser(meta, stream, request.upload_handlers, get_encoding(parser_context)).parse()
        except MultiPartParserError as exc:
            raise ParseError(f"Multipart form parse error - {exc}") from None
        return DataAndFiles(data, files)


def _parsers() -> list[Any]:
    """The API's parsers (settings.REST_FRAMEWORK) with the multipart one replaced by WorkloadMultiPartParser."""
    configured: list[Any] = list(api_settings.DEFAULT_PARSER_CLASSES)
    return [WorkloadMultiPartParser if media_type_matches(parser.media_type, MultiPartParser.media_type) else parser
            for parser in configured]


class WorkloadApprovalSerializer(serializers.ModelSerializer):
    """Who said the version may run, and when: an admin's counts on every target, a target owner's on theirs."""

    approved_by = serializers.CharField(source="approved_by.username", read_only=True)

    class Meta:
        model = WorkloadApproval
        fields = ["approved_by", "approved_at"]
        read_only_fields = fields


class WorkloadVersionSerializer(serializers.ModelSerializer):
    workload_name = serializers.CharField(source="workload.name", read_only=True)
    approvals = WorkloadApprovalSerializer(many=True, read_only=True,
                                           help_text="who approved this version to run, and when (a launch on a "
                                                     "target needs an admin's approval or the target owner's)")
    test_label = serializers.SerializerMethodField()
    uploaded_by = serializers.CharField(source="uploaded_by.username", read_only=True, default=None)
    files = LuaFilesField(read_only=True)

    class Meta:
        model = WorkloadVersion
        fields = ["id", "workload", "workload_name", "number", "test_label", "content_hash", "entry", "files", "options",
                  "commands", "help_text", "note", "uploaded_by", "uploaded_at", "approvals"]
        read_only_fields = fields

    def get_test_label(self, obj: WorkloadVersion) -> str:
        return obj.label()


class WorkloadVersionBriefSerializer(serializers.ModelSerializer):
    uploaded_by = serializers.CharField(source="uploaded_by.username", read_only=True, default=None)

    class Meta:
        model = WorkloadVersion
        fields = ["id", "number", "content_hash", "entry", "note", "uploaded_by", "uploaded_at"]
        read_only_fields = fields


class WorkloadSerializer(serializers.ModelSerializer):
    versions = WorkloadVersionBriefSerializer(many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = Workload
        fields = ["id", "name", "description", "expected_errors_pct", "size_option", "size_unit", "counted_function",
                  "counted_label", "check_command", "created_by", "created_at", "versions"]
        read_only_fields = fields


class WorkloadUploadSerializer(StrictInputMixin, serializers.Serializer):
    """A workload's files: `files` as {path: Lua text} in JSON, or as uploaded files in a multipart body."""

    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    entry = serializers.CharField(max_length=200, help_text="the file sysbench runs, e.g. tpcc.lua")
    note = serializers.CharField(required=False, allow_blank=True, max_length=300)
    files = LuaFilesField(required=False)
    expected_errors_pct = serializers.FloatField(
        required=False, allow_null=True, min_value=0.0, max_value=100.0,
        help_text="ignored errors per 100 transactions that are part of the workload (e.g. 1 for TPC-C's NewOrder "
                  "rollbacks): counted and shown, and only errors beyond this rate make a job suspect")
    size_option = serializers.CharField(
        required=False, allow_blank=True, max_length=60,
        help_text="the script's option that takes the dataset's size per table set instead of --table-size "
                  "(sysbench-tpcc: scale); campaigns sweep it as they sweep table sizes. Empty clears it")
    size_unit = serializers.CharField(
        required=False, allow_blank=True, max_length=40,
        help_text="what that size counts, shown wherever a dataset is (e.g. warehouses); rows when empty")
    counted_function = serializers.CharField(
        required=False, allow_blank=True, max_length=60,
        help_text="a global Lua function of the script whose calls that end without an error are counted and "
                  "shown per minute (sysbench-tpcc: new_order)")
    counted_label = serializers.CharField(
        required=False, allow_blank=True, max_length=40,
        help_text="what those calls are called on pages (e.g. NewOrders)")
    check_command = serializers.CharField(
        required=False, allow_blank=True, max_length=60,
        help_text="a command of the script run on the target after each job (sysbench-tpcc: check); its outcome "
                  "is on the job")


def upload_declared(values: dict[str, Any]) -> dict[str, Any]:
    """The workload declarations an upload gave (Workload.DECLARED after expected_errors_pct)."""
    return {field: values[field] for field in Workload.DECLARED[1:] if field in values}


def _upload_data(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The body's fields and its files (path → text or bytes), from JSON or a multipart form."""
    data = request.data
    if isinstance(data, QueryDict):
        fields = {key: data.get(key) for key in data if key not in ("files", "csrfmiddlewaretoken")}
        uploads = request.FILES.getlist("files")
        query = WorkloadUploadSerializer(data=fields)
        query.is_valid(raise_exception=True)
        return dict(query.validated_data), workload_files_from_uploads(uploads)
    query = WorkloadUploadSerializer(data=data)
    query.is_valid(raise_exception=True)
    values = dict(query.validated_data)
    files = values.pop("files", None)
    if not isinstance(files, dict):
        raise serializers.ValidationError({"files": ["an object of file names and their Lua source is expected, "
                                                     "e.g. {\"kv.lua\": \"…\"}"]})
    return values, files


class WorkloadViewSet(BaseViewSet, CachedListMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin):
    queryset = Workload.objects.select_related("created_by").prefetch_related("versions__uploaded_by")
    serializer_class = WorkloadSerializer
    parser_classes = _parsers()
    # DELETE: its owner or an admin, once no scenario uses it (services.workloads.workload_delete says whose).
    delete_role = roles.OPERATOR

    def perform_destroy(self, instance: Workload) -> None:
        """204 once deleted; 409 naming the scenarios that use it; 403 for another operator's."""
        try:
            workload_delete(user=self.request.user, workload=instance)
        except WorkloadInUse as exc:
            raise Conflict(str(exc), code="in_use") from None

    @extend_schema(request=WorkloadUploadSerializer, responses={201: WorkloadVersionSerializer})
    def create(self, request: Request) -> Response:
        """A new workload and its first version: `files` as {path: Lua source} in JSON, or uploaded as `files` in
        a multipart body; sysbench lists the entry script's options, which scenarios on it then take (400 naming
        the file when one is refused, and nothing is stored)."""
        values, files = _upload_data(request)
        version = workload_save(user=request.user, files=files, entry=values["entry"], name=values.get("name", ""),
                                description=values.get("description"), note=values.get("note", ""),
                                expected_errors_pct=values.get("expected_errors_pct"),
                                declared=upload_declared(values))
        return Response(WorkloadVersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=WorkloadUploadSerializer, responses={201: WorkloadVersionSerializer,
                                                                200: WorkloadVersionSerializer})
    @action(detail=True, methods=["post"])
    def versions(self, request: Request, pk: str | None = None) -> Response:
        """A new version of the workload (200 with the existing one when the files are the same)."""
        workload = self.get_object()
        values, files = _upload_data(request)
        # Counted by a query: workload.versions is the viewset's prefetched list, the same before and after.
        before = WorkloadVersion.objects.filter(workload=workload).count()
        version = workload_save(user=request.user, workload=workload, files=files, entry=values["entry"],
                                description=values.get("description"), note=values.get("note", ""),
                                expected_errors_pct=values.get("expected_errors_pct"),
                                declared=upload_declared(values))
        created = WorkloadVersion.objects.filter(workload=workload).count() > before
        return Response(WorkloadVersionSerializer(version).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class WorkloadVersionViewSet(ReadOnlyViewSet):
    queryset = WorkloadVersion.objects.select_related("workload", "uploaded_by").prefetch_related(
        "approvals__approved_by")
    serializer_class = WorkloadVersionSerializer
    # DELETE is only the approve action's withdrawal (a version itself is never deleted): the service says whose.
    delete_role = roles.OPERATOR

    @extend_schema(request=None, responses={200: WorkloadVersionSerializer})
    @action(detail=True, methods=["post", "delete"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """POST: you approve this version's code to run (an admin: on every target that allows uploaded workloads;
        a target's owner: on the targets you own); 403 for anyone else. DELETE: withdraws your approval (an
        admin's withdraws every one). Read the files first: they run on client hosts against the targets."""
        version = self.get_object()
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        if request.method == "DELETE":
            workload_unapprove(user=request.user, version=version)
        else:
            workload_approve(user=request.user, version=version)
        fresh = self.get_queryset().get(pk=version.pk)
        return Response(WorkloadVersionSerializer(fresh).data)
