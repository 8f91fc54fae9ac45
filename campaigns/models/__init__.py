"""benchapp's models, one module per area; import them from here."""
from __future__ import annotations

from campaigns.models.access import HostAccess
from campaigns.models.attempts import Attempt, ClientSend
from campaigns.models.core import (
    Campaign,
    ClientHost,
    Dataset,
    InstanceSpec,
    IntervalSample,
    Job,
    JobClient,
    JobResult,
    PreparedDataset,
    Product,
    Run,
    Scenario,
    Target,
)
from campaigns.models.metrics import HostSample, PackedSeconds, RoundTrip, ServerSample
from campaigns.models.monitoring import Annotation, CampaignSchedule, Regression, ScheduleFiring
from campaigns.models.published import PublishedResult
from campaigns.models.sealed import SealedPassword
from campaigns.models.sharing import ShareLink
from campaigns.models.tokens import ApiToken
from campaigns.models.variants import SettingsChange
from campaigns.models.workloads import Workload, WorkloadApproval, WorkloadVersion

__all__ = [
    "Attempt", "ClientSend",
    "Campaign", "ClientHost", "Dataset", "InstanceSpec", "IntervalSample", "Job", "JobClient", "JobResult",
    "PreparedDataset", "Product", "Run", "Scenario", "Target",
    "HostSample", "PackedSeconds", "RoundTrip", "ServerSample",
    "Annotation", "CampaignSchedule", "Regression", "ScheduleFiring",
    "PublishedResult", "HostAccess", "SealedPassword", "ApiToken", "ShareLink", "Workload", "WorkloadApproval", "WorkloadVersion", "SettingsChange",
]
