"""How the comparison writes its numbers: QPS, milliseconds, Δ% and ratios as text, and the latency percentile's
label; "—" wherever there is no number."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeGuard


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


def shape_text(tables: int, table_size: int) -> str:
    """A dataset's shape as headings write it: "4 × 10,000" (tables × rows per table)."""
    return f"{tables:,} × {table_size:,}"


def rows_shape(rows: Sequence[Mapping[str, Any]]) -> str:
    """The shapes a table's rows were measured on, smallest first: "1 × 10,000", "1 × 10,000, 4 × 10,000", or
    "1 × 10,000 to 8 × 40,000" past three; "" when no row says."""
    shapes = sorted({(r["tables"], r["table_size"]) for r in rows if r.get("tables") and r.get("table_size")},
                    key=lambda s: (s[0] * s[1], s))
    texts = [shape_text(*s) for s in shapes]
    return ", ".join(texts) if len(texts) <= 3 else f"{texts[0]} to {texts[-1]}"
