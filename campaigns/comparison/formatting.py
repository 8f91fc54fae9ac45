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


def shape_text(tables: int, table_size: int, unit: str = "") -> str:
    """A dataset's shape as headings write it: "4 × 10,000" (tables × rows per table), or with a workload's own
    size unit "1 × 2 warehouses" (table sets × warehouses each)."""
    return f"{tables:,} × {table_size:,}" + (f" {unit}" if unit and unit != "rows" else "")


def size_heading(unit: str = "") -> str:
    """The size column's heading: "Table size", or a workload's unit ("Warehouses")."""
    return unit[:1].upper() + unit[1:] if unit and unit != "rows" else "Table size"


def rows_shape(rows: Sequence[Mapping[str, Any]], unit: str = "") -> str:
    """The shapes a table's rows were measured on, smallest first: "1 × 10,000", "1 × 10,000, 4 × 10,000", or
    "1 × 10,000 to 8 × 40,000" past three; "" when no row says. `unit`: a workload's size unit ("warehouses")."""
    shapes = sorted({(r["tables"], r["table_size"]) for r in rows if r.get("tables") and r.get("table_size")},
                    key=lambda s: (s[0] * s[1], s))
    texts = [shape_text(*s) for s in shapes]
    text = ", ".join(texts) if len(texts) <= 3 else f"{texts[0]} to {texts[-1]}"
    return text + (f" {unit}" if text and unit and unit != "rows" else "")


# A difference whose whole 95% interval lies within this many percent is "no larger than" it, not "too few runs".
EQUAL_WITHIN_PCT = 5.0

# A QPS Δ%'s verdict (the API's significance.verdict, the page's data-significance), in the page's own words so that
# a script reading it gets what a reader sees: larger than the noise; no difference beyond ±5% (the page gives the
# interval's own bound, e.g. "within ±4.8%"); not significant with an interval too wide to say either; one run.
VERDICT_SIGNIFICANT = "significant"
VERDICT_WITHIN = f"within ±{EQUAL_WITHIN_PCT:g}%"
VERDICT_TOO_FEW_RUNS = "too few runs to tell"
VERDICT_UNTESTED = "untested"
VERDICTS = (VERDICT_SIGNIFICANT, VERDICT_WITHIN, VERDICT_TOO_FEW_RUNS, VERDICT_UNTESTED)


def _within_pct(ci: Sequence[float | None] | None) -> float | None:
    """The largest distance from 0 of a 95% interval that lies within ±EQUAL_WITHIN_PCT, else None."""
    if not ci or ci[0] is None or ci[1] is None:
        return None
    bound = max(abs(ci[0]), abs(ci[1]))
    return bound if bound <= EQUAL_WITHIN_PCT else None


def verdict_of(*, significant: bool, ci: Sequence[float | None] | None) -> str:
    """A tested Δ%'s verdict: significant, else "within ±5%" when its interval is that narrow, else "too few runs
    to tell"."""
    if significant:
        return VERDICT_SIGNIFICANT
    return VERDICT_WITHIN if _within_pct(ci) is not None else VERDICT_TOO_FEW_RUNS


# An interval whose high end is more than this many times its low end (as ratios: 1 + Δ%/100: not even the order of
# magnitude is known), or that reaches −99% (a ratio of almost 0), says nothing a reader can use ("−100.0% …
# +139,116,847.2%"): the page writes TOO_NOISY and keeps the figure for the hover.
TOO_WIDE_RATIO_SPAN = 100.0
TOO_NOISY = "too noisy to tell"


def interval_too_wide(ci: Sequence[float | None] | None) -> bool:
    """Whether a Δ%'s 95% interval is too wide to mean anything (TOO_WIDE_RATIO_SPAN); False without one."""
    if not ci or not is_number(ci[0]) or not is_number(ci[1]):
        return False
    low, high = 1 + ci[0] / 100, 1 + ci[1] / 100
    return low <= 0.01 or high / low > TOO_WIDE_RATIO_SPAN


def interval_figure(ci: Sequence[float | None] | None) -> str:
    """A Δ%'s 95% interval as its two figures: "-20.0% … +180.0%"; "" without one."""
    return f"{fmt_delta(ci[0])} … {fmt_delta(ci[1])}" if ci else ""


def interval_text(ci: Sequence[float | None] | None) -> str:
    """A Δ%'s 95% interval as the page writes it: "-20.0% … +180.0%", or "too noisy to tell" when it is too wide to
    mean anything (interval_figure gives its figures for the hover); "" without one."""
    return TOO_NOISY if interval_too_wide(ci) else interval_figure(ci)


def runs_text(n_base: int, n_other: int) -> str:
    """"n = 2 each" or "n = 3 vs 2" (baseline first)."""
    return f"n = {n_base} each" if n_base == n_other else f"n = {n_base} vs {n_other}"


def delta_short(mark: Mapping[str, Any]) -> str:
    """A Δ% cell's verdict in a few words, under its number and interval: "significant (n = 3)", "too few runs to
    tell (n = 2)", "within ±4% (n = 5)", "untested (n = 1)"."""
    n_base, n_other = mark["n_base"], mark["n_other"]
    n = f"n = {n_base}" if n_base == n_other else f"n = {n_base} vs {n_other}"
    verdict = mark["verdict"]
    if verdict == VERDICT_SIGNIFICANT:
        return f"significant ({n})"
    within = _within_pct(mark.get("ci95_pct"))
    if verdict == VERDICT_WITHIN and within is not None:
        return f"within ±{within:.1f}% ({n})"
    if verdict in (VERDICT_WITHIN, VERDICT_TOO_FEW_RUNS):
        return f"too few runs to tell ({n})"
    return f"untested ({n})"


def _noisy_figure(ci: Sequence[float | None]) -> str:
    return f"95% CI {interval_figure(ci)}: {TOO_NOISY}"


def sentence_for_text(mark: Mapping[str, Any]) -> str:
    """The mark's sentence where no hover can show an interval too wide to mean anything: "too noisy to tell" in
    its place (a conclusion, a summary)."""
    sentence, ci = mark.get("sentence") or "", mark.get("ci95_pct")
    return sentence.replace(_noisy_figure(ci), TOO_NOISY) if ci and interval_too_wide(ci) else sentence


def delta_sentence(mark: Mapping[str, Any], *, what: str = "") -> str:
    """A QPS Δ% with its interval, n and a verdict that cannot contradict them, starting with a word (a CSV cell
    starting with a sign would be read as a formula, and escaped): "QPS +62.1% (95% CI -20.0% … +180.0%), n = 2
    each: too few runs to tell; about 12 runs per side would tell a difference this large"."""
    change, ci = mark.get("change_pct"), mark.get("ci95_pct")
    n = runs_text(mark["n_base"], mark["n_other"])
    head = f"QPS {fmt_delta(change)}{f' {what}' if what else ''}"
    if ci and interval_too_wide(ci):
        head += f" ({_noisy_figure(ci)}), {n}"
    else:
        head += f" (95% CI {interval_text(ci)}), {n}" if ci else f", {n}"
    verdict = mark["verdict"]
    if verdict == VERDICT_SIGNIFICANT:
        return f"{head}: a difference larger than the runs' noise"
    if verdict in (VERDICT_WITHIN, VERDICT_TOO_FEW_RUNS):
        within = _within_pct(ci)
        if within is not None:
            return f"{head}: no difference beyond ±{within:.1f}%"
        if ci and (ci[0] > 0 or ci[1] < 0):
            # Outside 0 on its own, but not once the comparison's many Δ% are counted (Benjamini–Hochberg).
            return (f"{head}: not significant once the {mark.get('tested', 0)} Δ% compared here are counted "
                    f"(adjusted p = {mark['p_adjusted']:.2g})")
        needed = mark.get("runs_needed")
        more = (f"; about {needed} runs per side would tell a difference this large"
                if needed and needed > min(mark["n_base"], mark["n_other"]) else "")
        return f"{head}: too few runs to tell{more}"
    return f"{head}: one run cannot tell a difference from noise; repeat each cell 3 times or more"
