"""Durations in words: a plan's total, and an estimate one unit coarser."""
from __future__ import annotations

import pytest

from campaigns.durations import duration_text


@pytest.mark.parametrize(("seconds", "exact", "estimate"), [
    (0, "0 s", "0 s"),
    (19.6, "20 s", "20 s"),
    (250, "4 min 10 s", "4 min"),
    (3600, "1 h 0 min", "1 h 0 min"),
    (2 * 3600 + 310, "2 h 5 min", "2 h 5 min"),
    (86400 + 7200 + 305, "1 d 2 h 5 min", "1 d 2 h"),
    (3 * 86400, "3 d 0 h 0 min", "3 d 0 h"),
])
def test_a_duration_in_words(seconds, exact, estimate):
    assert duration_text(seconds) == exact
    assert duration_text(seconds, estimate=True) == estimate
