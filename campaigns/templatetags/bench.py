"""Template filters for figures: QPS, milliseconds, Δ%, durations, sizes, and small lookups."""
from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html

from campaigns import roles
from campaigns.comparison import fmt_delta, fmt_ms, fmt_number, is_number
from campaigns.services import format_duration

register = template.Library()


@register.filter
def num(value: float | None) -> str:
    return fmt_number(value)


@register.filter
def count(value: int | None) -> str:
    """A whole number as a count: "2", "1,000,000" (never "2.00"); "—" for none."""
    return "—" if value is None else f"{int(value):,}"


@register.filter
def ms(value: float | None) -> str:
    return fmt_ms(value)


@register.filter
def delta(value: float | None) -> str:
    return fmt_delta(value)


@register.filter
def delta_class(value: float | None) -> str:
    if not is_number(value):
        return ""
    return "up" if value > 0 else "down" if value < 0 else ""


@register.filter
def duration(seconds: float | None) -> str:
    return format_duration(seconds) if is_number(seconds) else "—"


@register.filter
def bytes_(value: float | None) -> str:
    if not is_number(value):
        return "—"
    size = float(value)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(size) < 1024 or unit == "TB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} PB"


register.filter("bytes", bytes_)


@register.filter
def ratio(value: float | None) -> str:
    return f"{value * 100:.2f}%" if is_number(value) else "—"


@register.filter
def index(sequence: Any, position: int) -> Any:
    try:
        return sequence[position]
    except (IndexError, KeyError, TypeError):
        return None


@register.filter
def get(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def role_of(user: Any) -> str:
    return roles.user_role(user) or "no role"


@register.simple_tag
def field_value(cell: dict[str, Any] | None, metric: str) -> Any:
    """The value of a comparison cell's metric (the geometric mean of its repetitions), or None."""
    if cell is None:
        return None
    return (cell.get(metric) or {}).get("value")


@register.filter
def self_measurement(measurement: dict[str, Any] | None) -> str:
    """A client host's own speed: "cpu 1,234 events/s, memory 5,678 MiB/s, measured 2026-11-27 03:10"."""
    from campaigns.models.hosttests import self_measurement_text

    return self_measurement_text(measurement if isinstance(measurement, dict) else None) or "not measured yet"


@register.filter
def headline_label(test: str | None, column: str = "qps") -> str:
    """A comparison column's label: QPS and TPS for database tests; a host test's headline unit (events/s, MiB/s:
    docs/host-tests.md) in the QPS column and events/s in the TPS column."""
    from campaigns.sysbench.hosttests import HEADLINE_UNITS

    if test not in HEADLINE_UNITS:
        return column.upper()
    return HEADLINE_UNITS[test] if column == "qps" else "events/s"


@register.simple_tag
def run_status(run: Any, element_id: str = "") -> str:
    """A run's status badge, amber with what its jobs' verdicts say when some are suspect or invalid: "Succeeded ·
    24 of 24 jobs invalid" (Run.status_text). The status stays in the class (the live page updates both)."""
    verdicts = run.verdicts()
    spoiled = f" spoiled verdict-{verdicts.level()}" if verdicts.text() else ""
    ident = format_html(' id="{}"', element_id) if element_id else ""
    return format_html('<span class="badge {}{}"{} data-status="{}" title="{}">{}</span>', run.status, spoiled, ident,
                       run.status, verdicts.text() or run.get_status_display(), run.status_text())
