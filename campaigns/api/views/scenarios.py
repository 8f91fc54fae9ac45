"""Viewset of scenarios, with a pasted sysbench command read into one (scenarios/from-command/)."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.serializers.scenarios import FromCommandResponseSerializer, FromCommandSerializer, ScenarioSerializer
from campaigns.api.views.base import ModelViewSet
from campaigns.filtersets import ScenarioFilterSet
from campaigns.models import Scenario
from campaigns.sysbench.catalogue import TESTS
from campaigns.sysbench.cmdline import command_to_scenario, parse_command


@extend_schema_view(
    from_command=extend_schema(
        request=FromCommandSerializer,
        responses={200: FromCommandResponseSerializer, 201: FromCommandResponseSerializer},
        description="Reads a pasted sysbench command (0.5 or 1.0 spelling) into a scenario: test, options, "
                    "dataset size, threads, a hint of the target (never its password) and warnings for "
                    "whatever it could not keep. With save=true, name and dataset (none for a host test: cpu, "
                    "memory, fileio, threads, mutex), also creates the scenario.",
    ),
)
class ScenarioViewSet(ModelViewSet):
    queryset = Scenario.objects.select_related("dataset")
    serializer_class = ScenarioSerializer
    filterset_class = ScenarioFilterSet
    ordering_fields = ["id", "name", "test", "time_s", "created_at"]

    @action(detail=False, methods=["post"], url_path="from-command")
    def from_command(self, request: Request) -> Response:
        query = FromCommandSerializer(data=request.data)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        parsed = parse_command(data["command"], default_test=data.get("default_test"))
        body: dict[str, Any] = parsed.to_dict()
        proposal = command_to_scenario(parsed)
        body["proposed"] = proposal.fields()
        body["notes"] = list(proposal.notes)
        body["scenario"] = None
        dataset = data.get("dataset")
        if dataset is not None and parsed.tables and parsed.table_size and (
            (dataset.tables, dataset.table_size) != (parsed.tables, parsed.table_size)
        ):
            body["warnings"].append(
                f"the command prepares {parsed.tables} × {parsed.table_size:,} rows; dataset '{dataset.name}' "
                f"has {dataset.tables} × {dataset.table_size:,}"
            )
        host_test = TESTS[parsed.test].host
        if dataset is not None and host_test:
            body["warnings"].append(f"dataset '{dataset.name}' not used: {parsed.test} is a host test, it has no "
                                    "tables")
        if not data["save"]:
            return Response(body)
        missing = {"name": not data.get("name"), "dataset": dataset is None and not host_test}
        if any(missing.values()):
            raise serializers.ValidationError({f: "needed to save the scenario" for f, is_missing in missing.items()
                                               if is_missing})
        # A host test's scenario stands on the host-test dataset (scenario_create gives it): it has no tables.
        scenario = ScenarioSerializer(data={
            **body["proposed"], "name": data["name"], "description": data["description"],
            **({} if dataset is None or host_test else {"dataset": dataset.pk}),
        })
        scenario.is_valid(raise_exception=True)
        self.perform_create(scenario)
        body["scenario"] = scenario.data
        return Response(body, status=status.HTTP_201_CREATED)
