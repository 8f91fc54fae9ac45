"""Instance specs as the seed documents label them ("2-core 16 GB MEM", "1 x 8 vCPUs | 16 GB", ...).

A label is kept exactly as benchapp shows it; cores, memory and storage are read from it so that the templates,
the published figures and per-core comparisons all refer to the same InstanceSpec row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from campaigns.models import InstanceSpec

# Seed 000 part 1 names its instances by memory and storage only. InstanceSpec.cpu_cores cannot be empty, so
# those rows carry this stand-in and say so in their notes; per-core figures for them mean nothing.
UNKNOWN_CORES = 1

_CORES = re.compile(r"\b(\d+)(?:-core| vCPUs)\b")
_MEMORY = re.compile(r"\b(\d+(?:\.\d+)?) GB\b")
_STORAGE = re.compile(r"\b(\d+(?:\.\d+)?) (GB|TB) (storage|SSD)\b")

# What a label cannot say. Keys are labels; a label not listed needs no note.
SPEC_NOTES: dict[str, str] = {
    "488 GB MEM, 6 TB storage (tuned)": (
        "Seed 000 part 1's last row: the same 488 GB / 6 TB instance with its server parameters tuned and a "
        "smaller dataset (60 × 10 M rows). A spec of its own so that the tuned run has its own dataset and "
        "concurrency."
    ),
    "1 x 8 vCPUs | 16 GB": "Huawei DDM node; the RDS for MySQL instances behind it: 2 x 8 vCPUs | 16 GB, ultra-high I/O.",
    "1 x 16 vCPUs | 32 GB": "Huawei DDM node; the RDS for MySQL instances behind it: 2 x 16 vCPUs | 32 GB, ultra-high I/O.",
    "1 x 32 vCPUs | 64 GB": "Huawei DDM node; the RDS for MySQL instances behind it: 2 x 32 vCPUs | 64 GB, ultra-high I/O.",
}


@dataclass(frozen=True, slots=True)
class SpecFacts:
    """What a spec label says: cores (None when it does not say), memory, and storage where given."""

    label: str
    cpu_cores: int | None
    memory_gb: float
    storage_gb: float | None
    storage_type: str


def spec_facts(label: str) -> SpecFacts:
    """Reads cores, memory and storage from a document's spec label; ValueError when it names no memory."""
    if not label or label != label.strip():
        raise ValueError("a spec label must be non-empty without surrounding spaces")
    memory = _MEMORY.search(label)
    if memory is None:
        raise ValueError(f"{label!r} names no memory size (expected e.g. '2-core 16 GB MEM')")
    cores = _CORES.search(label)
    storage = _STORAGE.search(label)
    storage_gb = None
    storage_type = ""
    if storage is not None:
        storage_gb = float(storage.group(1)) * (1024 if storage.group(2) == "TB" else 1)
        storage_type = "SSD" if storage.group(3) == "SSD" else ""
    return SpecFacts(label=label, cpu_cores=int(cores.group(1)) if cores else None,
                     memory_gb=float(memory.group(1)), storage_gb=storage_gb, storage_type=storage_type)


def spec_get_or_create(*, label: str) -> InstanceSpec:
    """The InstanceSpec with this label, created from what the label says if it does not exist yet.

    An existing row is left as it is: someone may have added a price or corrected its notes.
    """
    existing = InstanceSpec.objects.filter(label=label).first()
    if existing is not None:
        return existing
    facts = spec_facts(label)
    notes = [SPEC_NOTES.get(label, "")]
    if facts.cpu_cores is None:
        notes.append(f"The document gives no core count; cpu_cores={UNKNOWN_CORES} stands in for 'not published'.")
    spec = InstanceSpec(
        label=label, cpu_cores=facts.cpu_cores or UNKNOWN_CORES, memory_gb=facts.memory_gb,
        storage_gb=facts.storage_gb, storage_type=facts.storage_type, notes=" ".join(n for n in notes if n),
    )
    spec.full_clean()
    spec.save()
    return spec
