"""How the comparison writes its numbers: QPS, milliseconds, Δ% and ratios as text, and the latency percentile's
label; "—" wherever there is no number."""
from __future__ import annotations

import math
from decimal import Decimal
from typing import TypeGuard


def is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and math.isfinite(value)


def fmt_number(value: float | None) -> str:
    """QPS-like figures: whole numbers with separators from 100 up, two decimals below."""
    if not is_number(value):
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def fmt_ms(value: float | None) -> str:
    return f"{value:,.2f}" if is_number(value) else "—"


def fmt_delta(value: float | None) -> str:
    return f"{value:+.1f}%" if is_number(value) else "—"


def fmt_ratio(value: float | None) -> str:
    return f"{value:.2f}×" if is_number(value) else "—"


def pct_label(pct: float | None) -> str:
    if pct is None:
        return "pct"
    return f"p{pct:g}"
