"""Shapes of the JSON values rows keep: what pages, comparisons and the worker expect to read back.

Each function says why a value cannot be stored (a short text, no field name: the caller names the field and the
row), or returns None. Model.clean() uses the ones of fields users edit (Campaign's thread maps, Dataset's sizes);
the bundle import uses all of them, since a bundle may carry anything in any field.
"""
from __future__ import annotations

import math
from typing import Any

from campaigns.sysbench.catalogue import MAX_TABLE_ROWS, MAX_THREADS

MAX_LABEL_CHARS = 200
MAX_ENTRIES = 1000
MAX_DEPTH = 8


def number_problem(value: Any, *, minimum: float | None = None, integer: bool = False) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    if integer and not (isinstance(value, int) or value.is_integer()):
        return "not a whole number"
    if minimum is not None and value < minimum:
        return f"must be at least {minimum:g}"
    return None


def json_problem(value: Any, *, depth: int = 0) -> str | None:
    """Any JSON value whose numbers are finite and whose nesting stays shallow (pages walk it)."""
    if depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, float) and not math.isfinite(value):
        return "holds a number that is not finite"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "keys must be text"
            problem = json_problem(item, depth=depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = json_problem(item, depth=depth + 1)
            if problem:
                return problem
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        return "not a JSON value"
    return None


def threads_problem(value: Any, *, allow_empty: bool = True) -> str | None:
    """A list of thread counts: whole numbers from 1 to MAX_THREADS."""
    if not isinstance(value, list):
        return "must be a list of thread counts"
    if not value and not allow_empty:
        return "must hold at least one thread count"
    if len(value) > MAX_ENTRIES:
        return f"at most {MAX_ENTRIES:,} thread counts"
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_THREADS:
            return f"thread counts are whole numbers from 1 to {MAX_THREADS:,} ({str(item)[:40]!r} is not)"
    return None


def threads_map_problem(value: Any) -> str | None:
    """{label: [threads, …]} as Campaign.threads_by_spec and threads_by_scenario hold it."""
    if not isinstance(value, dict):
        return "must be an object of label: [thread counts]"
    if len(value) > MAX_ENTRIES:
        return f"at most {MAX_ENTRIES:,} entries"
    for key, threads in value.items():
        if not isinstance(key, str) or not key or len(key) > MAX_LABEL_CHARS:
            return f"keys are labels of 1 to {MAX_LABEL_CHARS} characters"
        problem = threads_problem(threads, allow_empty=False)
        if problem:
            return f"{key[:60]}: {problem}"
    return None


def sizes_by_spec_problem(value: Any) -> str | None:
    """{spec label: [tables, rows per table]} as Dataset.sizes_by_spec holds it."""
    if not isinstance(value, dict):
        return "must be an object of spec label: [tables, rows per table]"
    if len(value) > MAX_ENTRIES:
        return f"at most {MAX_ENTRIES:,} entries"
    for key, pair in value.items():
        if not isinstance(key, str) or not key or len(key) > MAX_LABEL_CHARS:
            return f"keys are spec labels of 1 to {MAX_LABEL_CHARS} characters"
        if (not isinstance(pair, list) or len(pair) != 2
                or any(isinstance(n, bool) or not isinstance(n, int) for n in pair)):
            return f"{key[:60]}: write [tables, rows per table] as two whole numbers"
        if not 1 <= pair[0] <= 100_000:
            return f"{key[:60]}: 1 to 100,000 tables"
        if not 1 <= pair[1] <= MAX_TABLE_ROWS:
            return f"{key[:60]}: 1 to {MAX_TABLE_ROWS:,} rows per table"
    return None


def profile_problem(value: Any) -> str | None:
    """A client's server profile (execution.profiles): {} or {"error": text}, or {samples, hz, window_s, symbols:
    [[shared object, symbol, share %], …], other_pct}."""
    if not isinstance(value, dict):
        return "must be an object"
    if not value or set(value) <= {"error", "samples"} and isinstance(value.get("error", ""), str):
        return None if len(str(value.get("error", ""))) <= 300 else "error: at most 300 characters"
    if set(value) - {"samples", "hz", "window_s", "symbols", "other_pct", "error"}:
        return "has keys other than samples, hz, window_s, symbols and other_pct"
    if number_problem(value.get("samples"), minimum=0, integer=True):
        return "samples must be a whole number ≥ 0"
    symbols = value.get("symbols")
    if not isinstance(symbols, list) or len(symbols) > 200:
        return "symbols must be a list of at most 200 [shared object, symbol, share %]"
    for entry in symbols:
        if (not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[0], str)
                or not isinstance(entry[1], str) or len(entry[0]) > 300 or len(entry[1]) > 300
                or number_problem(entry[2], minimum=0)):
            return "symbols must be a list of [shared object, symbol, share %] (share ≥ 0)"
    return None


def histogram_problem(value: Any) -> str | None:
    """A client's latency histogram: null, or [[bucket ms, count], …] with finite buckets and whole counts."""
    if value is None:
        return None
    if not isinstance(value, list):
        return "must be a list of [bucket ms, count] pairs"
    if len(value) > 100_000:
        return "at most 100,000 buckets"
    for pair in value:
        if (not isinstance(pair, list) or len(pair) != 2 or number_problem(pair[0], minimum=0)
                or number_problem(pair[1], minimum=0, integer=True)):
            return "must be a list of [bucket ms, count] pairs (bucket ≥ 0, count a whole number ≥ 0)"
    return None


def _scalar_map_problem(value: Any, *, numbers_only: bool) -> str | None:
    if not isinstance(value, dict):
        return "must be an object"
    for key, item in value.items():
        if not isinstance(key, str):
            return "keys must be text"
        if numbers_only and item is not None and number_problem(item):
            return f"{key[:60]}: {number_problem(item)}"
        if not numbers_only and not (item is None or isinstance(item, (str, bool))
                                     or not number_problem(item)):
            return f"{key[:60]}: must be text or a finite number"
    return None


def server_snapshot_problem(value: Any) -> str | None:
    """{"before": reading, "after": reading} as a job keeps the server's state around its measurement, and
    "variant": {"name", "settings": {setting: {"wanted", "got", "original"}}} for a job of a settings variant."""
    if not isinstance(value, dict):
        return "must be an object"
    for when, reading in value.items():
        if when == "variant":
            problem = _variant_reading_problem(reading)
            if problem:
                return f"variant: {problem}"
            continue
        if when not in ("before", "after"):
            return f"{str(when)[:40]}: only \"before\" and \"after\" readings are kept"
        if not isinstance(reading, dict):
            return f"{when}: must be an object"
        for key, item in reading.items():
            if key in ("version", "error"):
                problem = None if item is None or isinstance(item, str) else "must be text"
            elif key == "settings":
                problem = _scalar_map_problem(item, numbers_only=False)
            elif key == "status":
                problem = _scalar_map_problem(item, numbers_only=True)
            elif key == "dataset_bytes":
                problem = None if item is None else number_problem(item, minimum=0, integer=True)
            else:
                problem = "not a part of a server reading"
            if problem:
                return f"{when}.{str(key)[:40]}: {problem}"
    return None


def _variant_reading_problem(value: Any) -> str | None:
    if not isinstance(value, dict) or set(value) - {"name", "settings"}:
        return "an object of name and settings"
    if not isinstance(value.get("name"), str) or len(value["name"]) > 40:
        return "name: text of up to 40 characters"
    settings = value.get("settings") or {}
    if not isinstance(settings, dict) or len(settings) > 30:
        return "settings: an object of up to 30 settings"
    for name, reading in settings.items():
        if (len(str(name)) > 64 or not isinstance(reading, dict) or set(reading) - {"wanted", "got", "original"}
                or any(not isinstance(v, str) or len(v) > 1000 for v in reading.values())):
            return f"settings.{str(name)[:40]}: wanted, got and original as text"
    return None


def number_map_problem(value: Any) -> str | None:
    """{name: finite number or null}, as a server sample's rates and gauges."""
    return _scalar_map_problem(value, numbers_only=True)


def client_summary_problem(value: Any) -> str | None:
    """A client's own summary: an object whose figures are finite numbers or null (latency_ms an object of them);
    pages add them up."""
    if not isinstance(value, dict):
        return "must be an object"
    for key, item in value.items():
        if isinstance(item, dict):
            problem = _scalar_map_problem(item, numbers_only=True)
        elif item is None:
            problem = None
        elif isinstance(item, list):
            problem = json_problem(item)
        else:
            problem = number_problem(item)
        if problem:
            return f"{str(key)[:40]}: {problem}"
    return None


def findings_problem(value: Any) -> str | None:
    """[{code, level, figure, message}, …] as campaigns.validity writes them."""
    if not isinstance(value, list):
        return "must be a list of findings"
    for item in value:
        if not isinstance(item, dict):
            return "each finding is an object {code, level, figure, message}"
        for key in ("code", "level", "message"):
            if key in item and not isinstance(item[key], str):
                return f"a finding's {key} must be text"
        problem = json_problem(item)
        if problem:
            return problem
    return None


# The API's bounds on fields the models leave open (api/serializers/ extra_kwargs), for every way in: a bundle,
# the admin and the services check them in Model.clean() too. model name -> field -> (least, most).
LIMITS: dict[str, dict[str, tuple[float | None, float | None]]] = {
    "Campaign": {"clients_min": (1, 1000), "clients_per_threads": (1, MAX_THREADS),
                 "regression_threshold_pct": (0, 10**6), "noise_cv_pct": (0, 10**6), "baseline_last_n": (1, 1000),
                 "run_time_s": (1, 30 * 86400), "warmup_override_s": (0, 86400),
                 "table_rows_min": (1, 10**12), "table_rows_max": (1, 10**12)},
    "Scenario": {"time_s": (1, 30 * 86400), "warmup_s": (0, 86400), "report_interval_s": (1, 3600),
                 "prepare_threads": (1, 1024)},
    "InstanceSpec": {"cpu_cores": (1, 100_000), "memory_gb": (0, 10**9), "storage_gb": (0, 10**12)},
}
TEXT_LIMITS: dict[str, dict[str, int]] = {"Scenario": {"table_ddl": 100_000}}


def limit_problems(row: Any) -> dict[str, str]:
    """Per field, a number that is not finite or outside LIMITS, or a text longer than TEXT_LIMITS."""
    problems: dict[str, str] = {}
    model = type(row).__name__
    for field in row._meta.concrete_fields:
        value = getattr(row, field.attname, None)
        if isinstance(value, float) and not math.isfinite(value):
            problems[field.name] = "not a finite number"
            continue
        least, most = LIMITS.get(model, {}).get(field.name, (None, None))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if least is not None and value < least:
                problems[field.name] = f"must be at least {least:g}"
            elif most is not None and value > most:
                problems[field.name] = f"must be at most {most:,g}"
        text_limit = TEXT_LIMITS.get(model, {}).get(field.name)
        if text_limit is not None and isinstance(value, str) and len(value) > text_limit:
            problems[field.name] = f"at most {text_limit:,} characters"
    return problems
