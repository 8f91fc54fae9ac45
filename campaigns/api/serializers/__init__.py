"""Serializers: fields listed explicitly, secrets write-only, model invariants through Model.clean().

ModelSerializer already bounds every integer by the column's range and refuses NaN/infinite
floats; JSON columns get a typed field here (a dict of thread lists, not "any JSON"), so a wrong
type is a 400 naming the field and the OpenAPI schema says what is expected.

One module per resource, named as its viewset's module in campaigns/api/views/: base.py (ServiceWriteMixin,
MAX_PASSWORD_CHARS), catalogue.py (products, specs, datasets), targets.py, scenarios.py (and a pasted command),
campaigns.py (and a launch's body), runs.py (and a run bundle), jobs.py (and live samples and series), results.py
(and a log import), comparisons.py, hosts.py (client hosts), users.py, tokens.py.

`from campaigns.api.serializers import X` keeps working for every name the single serializers.py had (settings
name TEST_CHOICES by that path for the schema's enum).
"""
from __future__ import annotations

from campaigns.api.serializers.base import MAX_PASSWORD_CHARS, ServiceWriteMixin
from campaigns.api.serializers.campaigns import (
    CampaignNoiseSerializer,
    CampaignSerializer,
    LaunchSerializer,
    VariantSerializer,
)
from campaigns.api.serializers.catalogue import DatasetSerializer, InstanceSpecSerializer, ProductSerializer
from campaigns.api.serializers.comparisons import CellHistogramQuerySerializer, ComparisonQuerySerializer, IdListParam
from campaigns.api.serializers.hosts import ClientHostSerializer
from campaigns.api.serializers.jobs import (
    JobAttemptSerializer,
    JobClientAttemptSerializer,
    JobClientSerializer,
    JobDetailSerializer,
    JobSerializer,
    LatencyMetaSerializer,
    PointsField,
    SampleSerializer,
    SamplesQuerySerializer,
    SamplesResponseSerializer,
    SeriesQuerySerializer,
    SeriesResponseSerializer,
)
from campaigns.api.serializers.results import (
    LATENCY_DISTRIBUTION_FIELDS,
    RESULT_CSV_COLUMNS,
    JobResultSerializer,
    LatencyDistributionMixin,
    ResultBriefSerializer,
    ResultsImportResponseSerializer,
    ResultsImportSerializer,
)
from campaigns.api.serializers.runs import RunBundleSerializer, RunSerializer
from campaigns.api.serializers.scenarios import (
    TEST_CHOICES,
    FromCommandResponseSerializer,
    FromCommandSerializer,
    ProposedScenarioSerializer,
    ScenarioSerializer,
    TargetHintSerializer,
)
from campaigns.api.serializers.targets import TargetCheckSerializer, TargetSerializer
from campaigns.api.serializers.tokens import TokenRequestSerializer, TokenResponseSerializer
from campaigns.api.serializers.users import UserSerializer

__all__ = [
    "LATENCY_DISTRIBUTION_FIELDS",
    "MAX_PASSWORD_CHARS",
    "RESULT_CSV_COLUMNS",
    "TEST_CHOICES",
    "CampaignNoiseSerializer",
    "CampaignSerializer",
    "CellHistogramQuerySerializer",
    "ClientHostSerializer",
    "ComparisonQuerySerializer",
    "DatasetSerializer",
    "FromCommandResponseSerializer",
    "FromCommandSerializer",
    "IdListParam",
    "InstanceSpecSerializer",
    "JobAttemptSerializer",
    "JobClientAttemptSerializer",
    "JobClientSerializer",
    "JobDetailSerializer",
    "JobResultSerializer",
    "JobSerializer",
    "LatencyDistributionMixin",
    "LatencyMetaSerializer",
    "LaunchSerializer",
    "PointsField",
    "ProductSerializer",
    "ProposedScenarioSerializer",
    "ResultBriefSerializer",
    "ResultsImportResponseSerializer",
    "ResultsImportSerializer",
    "RunBundleSerializer",
    "RunSerializer",
    "SampleSerializer",
    "SamplesQuerySerializer",
    "SamplesResponseSerializer",
    "ScenarioSerializer",
    "SeriesQuerySerializer",
    "SeriesResponseSerializer",
    "ServiceWriteMixin",
    "TargetCheckSerializer",
    "TargetHintSerializer",
    "TargetSerializer",
    "TokenRequestSerializer",
    "TokenResponseSerializer",
    "UserSerializer",
    "VariantSerializer",
]
