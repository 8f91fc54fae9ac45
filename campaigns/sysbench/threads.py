"""Thread lists as people write them: "1, 2, 4", "8 16 32", "{1,2,4,8}", a range "1..8" or "1-8", or a
ladder "2~3000" (the powers of two between the ends, plus both ends, as seed 003 writes --threads={2~3000}).

The one parser for the form fields, the pasted-command reader and the API's checks, with one set of limits.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from campaigns.sysbench.catalogue import MAX_THREADS

# Thread counts one list may hold: a campaign runs each of them, times every target, scenario and repetition.
MAX_THREAD_VALUES = 64
# A range with more counts than this is read as a ladder instead (a range of 2..3000 is never meant literally).
MAX_LITERAL_RANGE = 16

_RANGE = re.compile(r"([0-9]{1,7})\s*(~|\.\.|-)\s*([0-9]{1,7})(?:\s*\.\.\s*([0-9]{1,7}))?")
_NUMBER = re.compile(r"[0-9]{1,7}")


class ThreadListError(ValueError):
    """The text is not a thread list within the limits; the message says what to write instead."""


@dataclass(slots=True)
class ThreadList:
    values: list[int]
    # How a range was read, for a pasted command's warnings ("read as powers of two from 2 to 3000 …").
    notes: list[str] = field(default_factory=list)


def thread_ladder(low: int, high: int) -> list[int]:
    """The powers of two strictly between the ends, and both ends: 2~3000 → 2, 4, 8, …, 2048, 3000."""
    values = [low]
    power = 1
    while power <= low:
        power *= 2
    while power < high:
        values.append(power)
        power *= 2
    if high != low:
        values.append(high)
    return values


def _range_values(item: str, match: re.Match[str], notes: list[str]) -> list[int]:
    low, high = int(match.group(1)), int(match.group(3))
    if low > high:
        raise ThreadListError(f"'{item}' runs from high to low: write the smaller count first")
    step = int(match.group(4)) if match.group(4) else 1
    if step < 1:
        raise ThreadListError(f"'{item}': a range's step is at least 1")
    count = (high - low) // step + 1
    if match.group(2) == "~" or count > MAX_LITERAL_RANGE:
        values = thread_ladder(low, high)
        why = "" if match.group(2) == "~" else f"a range of {count} thread counts is too long to run each; "
        notes.append(f"{item}: {why}read as powers of two from {low} to {high} plus both ends: "
                     f"{', '.join(map(str, values))}")
        return values
    return list(range(low, high + 1, step))


def parse_thread_list(text: str) -> ThreadList:
    """The thread counts of `text`, sorted and without repeats; ThreadListError says what is wrong."""
    body = text.strip().strip("'\"").strip().strip("{}()[]")
    values: set[int] = set()
    notes: list[str] = []
    for item in (part.strip() for part in re.split(r"[,;]|\s+(?![~.\-])(?<![~.\-]\s)", body)):
        if not item:
            continue
        match = _RANGE.fullmatch(item)
        if match:
            values.update(_range_values(item, match, notes))
        elif _NUMBER.fullmatch(item):
            values.add(int(item))
        else:
            raise ThreadListError(f"'{item[:20]}' is not a thread count: write 1, 2, 4 or a ladder 2~3000")
    if not values:
        raise ThreadListError("no thread count given: write 1, 2, 4 or a ladder 2~3000")
    return ThreadList(values=thread_values_check(values), notes=notes)


def thread_values_check(values: Iterable[int]) -> list[int]:
    """Thread counts within the limits (1 to MAX_THREADS each, MAX_THREAD_VALUES at most), sorted, once each."""
    unique = sorted(set(values))
    outside = [v for v in unique if not 1 <= v <= MAX_THREADS]
    if outside:
        raise ThreadListError(f"thread counts go from 1 to {MAX_THREADS:,} ({outside[0]} is outside)")
    if len(unique) > MAX_THREAD_VALUES:
        raise ThreadListError(f"at most {MAX_THREAD_VALUES} thread counts ({len(unique)} given)")
    return unique


def format_thread_list(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in values)
