"""Durations in words, as pages, plans and progress lines show them."""
from __future__ import annotations

_UNITS = ("d", "h", "min", "s")
# The smallest unit shown, by the largest one that is not zero: a plan's total ("2 d 3 h 10 min",
# "4 min 10 s") or an estimate's precision ("2 d 3 h", "4 min").
_LAST_UNIT = {"d": "min", "h": "min", "min": "s", "s": "s"}
_LAST_UNIT_ESTIMATE = {"d": "h", "h": "min", "min": "min", "s": "s"}


def duration_text(seconds: float, *, estimate: bool = False) -> str:
    """"1 d 2 h 5 min", "2 h 5 min", "4 min 10 s", "20 s"; with `estimate`, one unit less from a minute
    up ("1 d 2 h", "4 min")."""
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    amounts = (days, hours, minutes, secs)
    first = next((i for i, amount in enumerate(amounts) if amount), len(amounts) - 1)
    last = _UNITS.index((_LAST_UNIT_ESTIMATE if estimate else _LAST_UNIT)[_UNITS[first]])
    return " ".join(f"{amounts[i]} {_UNITS[i]}" for i in range(first, last + 1))
