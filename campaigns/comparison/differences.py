"""What differs between a measured row and the published figure set beside it: the rows, whether the data
fits in memory, the threads, the client machines, the duration and the hardware, each as a short sentence; and
whether the two are like with like, the only case where a ratio of one to the other is worth a sentence.

Pure: figures in, words out. Whether the data fits in memory is, on the measured side, what its jobs measured: the
buffer pool's hit ratio over the steady window (at least HIT_IN_MEMORY_PCT: in memory). Where that was not measured,
and on the document's side, it is judged from the dataset's size (sysbench's rows at about ROW_BYTES each, index
included) against the spec's memory: a buffer pool is a part of it, so "fits" is the optimistic reading, and the
words say "about".
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# A sysbench row (id, k, c char(120), pad char(60)) with its primary and k index on InnoDB or PostgreSQL: about 250
# bytes (campaigns.execution.prepare_progress measures the real figure per driver while a prepare runs).
ROW_BYTES = 250
# Data under this share of a machine's memory is read from memory once warm; above it, from disk.
MEMORY_SHARE = 0.75
# A measured run shorter than the document's by more than this factor may not have reached its steady state.
DURATION_FACTOR = 2.0
# A measured buffer-pool hit ratio at least this high: the data was read from memory.
HIT_IN_MEMORY_PCT = 99.0


@dataclass(frozen=True)
class Side:
    """One side of a comparison with a document: its dataset's shape, threads, clients, duration and memory."""

    tables: int | None
    table_size: int | None
    threads: int
    clients: int | None
    time_s: float | None
    memory_gb: float | None
    hit_pct: float | None = None  # measured: the lowest buffer-pool hit ratio of the row's cells (costs.bp_hit_pct)


@dataclass(frozen=True)
class Differences:
    items: tuple[str, ...]  # every difference, hardware included, in a reader's words
    unlike: tuple[str, ...]  # the ones that make a ratio compare unlike runs ("rows", "memory", "threads", …)

    @property
    def like(self) -> bool:
        return not self.unlike


def data_gb(tables: int | None, table_size: int | None) -> float | None:
    if not tables or not table_size:
        return None
    return tables * table_size * ROW_BYTES / 1e9


def in_memory(tables: int | None, table_size: int | None, memory_gb: float | None) -> bool | None:
    """Whether the dataset fits in the machine's memory (None when either is unknown)."""
    size = data_gb(tables, table_size)
    if size is None or not memory_gb:
        return None
    return size <= MEMORY_SHARE * memory_gb


def _size(gb: float) -> str:
    if gb >= 1:
        return f"{gb:,.0f} GB" if gb >= 10 else f"{gb:.1f} GB"
    return f"{gb * 1000:.0f} MB" if gb >= 0.001 else "under 1 MB"


def _rows(side: Side) -> str:
    return f"{side.tables:,} × {side.table_size:,}"


def side_in_memory(side: Side) -> bool | None:
    """Whether the side's data was (measured) or would be (estimated) read from memory; None when unknown."""
    if side.hit_pct is not None:
        return side.hit_pct >= HIT_IN_MEMORY_PCT
    return in_memory(side.tables, side.table_size, side.memory_gb)


def _fit(side: Side) -> str:
    if side.hit_pct is not None:
        where = "in memory" if side.hit_pct >= HIT_IN_MEMORY_PCT else "I/O-bound"
        return f"{where} (buffer-pool hit ratio {side.hit_pct:.3g} % measured)"
    fits = in_memory(side.tables, side.table_size, side.memory_gb)
    size = data_gb(side.tables, side.table_size)
    assert size is not None and side.memory_gb  # only called where in_memory answered
    memory = f"{side.memory_gb:g} GB"
    return f"in memory (about {_size(size)} in {memory})" if fits else f"I/O-bound (about {_size(size)} for {memory})"


def differences(*, measured: Side, published: Side, hardware: str = "") -> Differences:
    """What differs between the measured row and the published figure, and which of it makes them unlike."""
    items: list[str] = []
    unlike: list[str] = []
    if measured.tables and measured.table_size and published.tables and published.table_size \
            and (measured.tables, measured.table_size) != (published.tables, published.table_size):
        scale = (measured.tables * measured.table_size) / (published.tables * published.table_size)
        items.append(f"rows: {_rows(measured)} here, {_rows(published)} in the document "
                     f"({scale:.2g} of its data)")
        unlike.append("rows")
    here, there = side_in_memory(measured), side_in_memory(published)
    if here is not None and there is not None and here != there:
        items.append(f"data {_fit(measured)} here, {_fit(published)} in the document")
        unlike.append("memory")
    if measured.threads != published.threads:
        items.append(f"threads: {measured.threads:,} here, {published.threads:,} in the document")
        unlike.append("threads")
    if measured.clients and published.clients and measured.clients != published.clients:
        # Noted, not a reason to refuse the ratio: the same threads from fewer machines is the same load, and a
        # client host too busy to keep up is a validity finding of its own ("client-bound").
        items.append(f"client machines: {measured.clients} here, {published.clients} in the document")
    if measured.time_s and published.time_s and not math.isclose(measured.time_s, published.time_s):
        items.append(f"duration: {measured.time_s:,.0f} s here, {published.time_s:,.0f} s in the document")
        if published.time_s / measured.time_s > DURATION_FACTOR:
            unlike.append("duration")
    if hardware:
        items.append(hardware)
    return Differences(items=tuple(items), unlike=tuple(unlike))


def unlike_words(unlike: set[str]) -> str:
    """The kinds of difference as a reader reads them: "rows, whether the data fits in memory and thread counts"."""
    words = {"rows": "rows", "memory": "whether the data fits in memory", "threads": "thread counts",
             "clients": "client machines", "duration": "duration (much shorter here)"}
    ordered = [words[k] for k in ("rows", "memory", "threads", "clients", "duration") if k in unlike]
    if len(ordered) <= 1:
        return "".join(ordered)
    return ", ".join(ordered[:-1]) + " and " + ordered[-1]
