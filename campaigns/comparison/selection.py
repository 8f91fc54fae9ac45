"""What the user chose to compare: the Selection of targets, products, runs, scenarios, specs and published
figures, and the succeeded jobs it stands for."""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

from django.db.models import QuerySet

from campaigns.comparison.scope import succeeded_jobs_condition
from campaigns.models import Campaign, Job, Run


@dataclass
class Selection:
    """What the user chose to compare (ids); empty lists mean "no condition"."""

    targets: list[int] = field(default_factory=list)
    products: list[int] = field(default_factory=list)
    campaign: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    scenarios: list[int] = field(default_factory=list)
    specs: list[int] = field(default_factory=list)
    published: list[str] = field(default_factory=list)  # seed documents whose published figures to show
    published_product: list[int] = field(default_factory=list)  # at most one: set beside the measured tables
    published_spec: list[int] = field(default_factory=list)  # at most one of that product's published specs
    trusted_only: bool = False  # leave out cells whose validity verdict is suspect or invalid
    untrusted: bool = False  # count suspect and invalid cells in the conclusions (the table shows them either way)
    baseline: list[int] = field(default_factory=list)  # at most one: the product (or run) every Δ% is against
    sla_ms: float | None = None  # a latency limit on the measured percentile; None: the campaign's, if one is named

    def latency_limit(self) -> float | None:
        """The latency limit the comparison reports against: the chosen one, else that of the one campaign the
        selection names (by campaign, or by runs all of one campaign), else none."""
        return sla_of(sla_ms=self.sla_ms, campaign_ids=self.campaign, run_ids=self.runs)

    def measured(self) -> bool:
        return bool(self.targets or self.products or self.campaign or self.runs or self.scenarios)

    def jobs(self) -> QuerySet[Job]:
        """The succeeded jobs with results that comparison_build aggregates, under the same conditions."""
        condition = succeeded_jobs_condition(
            target_ids=self.targets, product_ids=self.products, run_ids=self.runs, campaign_ids=self.campaign,
            scenario_ids=self.scenarios, spec_ids=self.specs,
        )
        return Job.objects.filter(condition, result__isnull=False)

    def api_query(self) -> str:
        """The measured part of the selection as the comparison API's filters (comma-separated ids)."""
        parts = [f"{name}={','.join(str(i) for i in ids)}" for name, ids in (
            ("targets", self.targets), ("products", self.products), ("runs", self.runs), ("campaign", self.campaign),
            ("scenarios", self.scenarios), ("specs", self.specs)) if ids]
        if self.trusted_only:
            parts.append("trusted_only=true")
        if self.baseline:
            parts.append(f"baseline={self.baseline[0]}")
        if self.sla_ms is not None:
            parts.append(f"sla_ms={self.sla_ms:g}")
        return "&".join(parts)

    def query_pairs(self) -> list[tuple[str, str]]:
        """The selection as the comparison page's query parameters, one (name, value) per value."""
        pairs = [(name, str(i)) for name, ids in self.__dict__.items() if isinstance(ids, list) for i in ids]
        pairs += [(name, "on") for name in ("trusted_only", "untrusted") if getattr(self, name)]
        if self.sla_ms is not None:
            pairs.append(("sla_ms", f"{self.sla_ms:g}"))
        return pairs

    def query_string(self) -> str:
        return "&".join(f"{name}={quote(value)}" for name, value in self.query_pairs())


def sla_of(*, sla_ms: float | None, campaign_ids: list[int], run_ids: list[int]) -> float | None:
    """A comparison's latency limit: sla_ms when given, else the campaign's (Campaign.sla_ms) when the comparison
    names one campaign, or runs that are all of one campaign; else None. The page and the API share it."""
    if sla_ms is not None:
        return sla_ms
    limits: dict[int, float | None] = {}  # campaign → its limit (one query for runs, one for campaigns)
    if run_ids:
        limits |= dict(Run.objects.filter(pk__in=run_ids).values_list("campaign_id", "campaign__sla_ms").distinct())
    if set(campaign_ids) - set(limits):
        limits |= dict(Campaign.objects.filter(pk__in=campaign_ids).values_list("pk", "sla_ms"))
    return next(iter(limits.values())) if len(limits) == 1 else None
