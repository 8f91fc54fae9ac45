"""Which published table a measured seed scenario reproduces, and which published row sits beside a measured one.

Pure functions over the template definitions (campaigns.seeds.templates) and plain values, no database, so the
comparison page and its exports pick the same published figure for a measured cell.

An instance of a seed template shares the template's Scenario rows, and scenario names are unique, so a
scenario's name is enough to know its document. The published tables name their dataset and workload in the
document's words ("full cache", "write"); the templates prefix them with the seed ("seed 001 · full cache ·
write"). Removing that prefix gives the published labels for every template but two, listed in
_PUBLISHED_NAMES.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from campaigns.seeds.specs import UNKNOWN_CORES, spec_facts
from campaigns.seeds.templates import TEMPLATES, ScenarioDef, TemplateDef

_SEPARATOR = " · "


@dataclass(frozen=True, slots=True)
class PublishedKey:
    """The published table a scenario reproduces: the seed document and the table's dataset and scenario labels.

    dataset_label is None where the document labels its dataset per spec (seed 000 part 1 prints the data size,
    "76 GB" to "567 GB", on each spec's row): any dataset label of that document and scenario then matches.
    """

    document: str
    dataset_label: str | None
    scenario_label: str

    def matches(self, *, document: str, dataset_label: str, scenario_label: str) -> bool:
        return (document == self.document and scenario_label == self.scenario_label
                and (self.dataset_label is None or dataset_label == self.dataset_label))

    def describe(self) -> str:
        dataset = "its datasets" if self.dataset_label is None else self.dataset_label
        return f"seed {self.document}: {dataset} × {self.scenario_label}"


# Scenarios whose published labels are not their template names without the seed prefix, and why.
_PUBLISHED_NAMES: dict[str, tuple[str | None, str]] = {
    # The dataset is one per spec, and the document labels it by its size on disk.
    "seed 000 part 1 · oltp 4 point selects + 1 index update": (None, "oltp 4 point selects + 1 index update"),
    # The document's table names neither the middleware in the workload nor the sharding in the dataset.
    "seed 002 · DDM oltp (legacy oltp.lua)": ("1 × 320,000,000", "oltp (legacy oltp.lua)"),
}


def _derived_key(template: TemplateDef, scenario: ScenarioDef) -> PublishedKey:
    if scenario.name in _PUBLISHED_NAMES:
        dataset_label, scenario_label = _PUBLISHED_NAMES[scenario.name]
        return PublishedKey(template.document, dataset_label, scenario_label)
    dataset_label = scenario.dataset.split(_SEPARATOR, 1)[-1]
    rest = scenario.name.split(_SEPARATOR, 1)[-1]
    # Seed 001 names its scenarios "<seed> · <dataset> · <workload>"; the others "<seed> · <workload>".
    scenario_label = rest.removeprefix(f"{dataset_label}{_SEPARATOR}")
    return PublishedKey(template.document, dataset_label, scenario_label)


def _scenario_keys(templates: Iterable[TemplateDef]) -> dict[str, PublishedKey]:
    return {scenario.name: _derived_key(template, scenario) for template in templates
            for scenario in template.scenarios}


SCENARIO_KEYS: dict[str, PublishedKey] = _scenario_keys(TEMPLATES)

# An instance made with plain DDL (seed 002 on a server without the DDM middleware, as the /seeds/ page and the
# quick run make it) runs a copy of the template's scenario under this suffix (services._scenario_plain_ddl):
# the same workload on the same table, so the same published table.
PLAIN_DDL_SUFFIX = f"{_SEPARATOR}plain DDL"


def published_key(scenario_name: str) -> PublishedKey | None:
    """The published table that a seed template's scenario (or its plain-DDL copy) reproduces; None for a
    scenario of no template.

    A key is returned even where the document publishes no figures (seed 003 has charts only): the published
    rows decide whether anything matches.
    """
    key = SCENARIO_KEYS.get(scenario_name)
    if key is None and scenario_name.endswith(PLAIN_DDL_SUFFIX):
        key = SCENARIO_KEYS.get(scenario_name.removesuffix(PLAIN_DDL_SUFFIX))
    return key


def nearest_threads(threads: int, published: Iterable[int]) -> int | None:
    """The published concurrency closest to `threads`: the same when published, else the nearest by ratio
    (thread counts grow geometrically, so 96 is nearer to 64 than 16 is), the lower one on a tie."""
    available = sorted(set(published))
    if not available:
        return None
    if threads in available:
        return threads
    return min(available, key=lambda t: (abs(math.log(t / threads)), t))


@dataclass(frozen=True, slots=True)
class SpecShape:
    """What matching needs of an InstanceSpec: its id, label and size (cores None where unknown)."""

    id: int
    label: str
    cpu_cores: int | None
    memory_gb: float | None


def published_cores(label: str, cpu_cores: int | None) -> int | None:
    """A published spec's core count, or None when the document gives none.

    Seed specs without a core count are stored with a stand-in of UNKNOWN_CORES (cpu_cores cannot be empty);
    the label tells the stand-in from a real single-core instance.
    """
    if cpu_cores is None:
        return None
    if cpu_cores == UNKNOWN_CORES:
        try:
            return cpu_cores if spec_facts(label).cpu_cores is not None else None
        except ValueError:
            return cpu_cores
    return cpu_cores


def _log_distance(a: float | None, b: float | None) -> float:
    if not a or not b:
        return math.inf
    return abs(math.log(a / b))


def nearest_spec(measured: SpecShape | None, candidates: Sequence[SpecShape]) -> SpecShape | None:
    """The published spec to set beside a measured one: the same label when the document has it, else the
    nearest core count, then the nearest memory (by ratio); the first candidate when nothing is known."""
    if not candidates:
        return None
    if measured is None:
        return candidates[0]
    for candidate in candidates:
        if candidate.label == measured.label:
            return candidate
    return min(candidates, key=lambda c: (_log_distance(c.cpu_cores, measured.cpu_cores),
                                          _log_distance(c.memory_gb, measured.memory_gb)))


@dataclass(frozen=True, slots=True)
class Hardware:
    """How a measured and a published figure on different machines are compared, and the label that says so."""

    per_core: bool
    note: str


def hardware_comparison(*, measured_label: str | None, measured_cores: int | None, published_label: str,
                        published_cores: int | None) -> Hardware:
    """Per-core figures where both core counts are known, raw figures otherwise, and a label naming both specs."""
    measured = measured_label or "a target with no spec"
    head = f"measured on {measured} · published on {published_label} — different hardware"
    if measured_cores and published_cores:
        return Hardware(True, f"{head}, per-core figures compared")
    if not published_cores:
        why = f"the document gives no core count for {published_label}"
    else:
        why = f"{measured} has no core count" if measured_label else "the measured target has no spec"
    return Hardware(False, f"{head}, raw figures only: {why}")
