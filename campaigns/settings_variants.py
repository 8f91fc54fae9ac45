"""Settings variants of a campaign, as data: their shape, their text form, and how a setting read back from a
server is compared with the value wanted. Pure Python (no Django, no connection): models, forms, the API and the
execution all use it.

A campaign's `variants` is a list of {"name": "flush=2", "mysql": {"innodb_flush_log_at_trx_commit": "2"},
"pgsql": {"synchronous_commit": "off"}}: each variant names the server settings its jobs run under, per driver of
the target (MySQL and MariaDB share "mysql"). A variant without settings for a target's driver runs that target
as it is ("default"). Names and values are checked strictly here, so that nothing but a setting's name and a plain
value ever reaches a server; the save-time check (campaigns.server_settings) then asks each target's own catalogue.
"""
from __future__ import annotations

import re
from typing import Any

DRIVERS = ("mysql", "pgsql")
# What a user may type before a driver's settings in the text form.
DRIVER_ALIASES = {"mysql": "mysql", "mariadb": "mysql", "pgsql": "pgsql", "postgresql": "pgsql",
                  "postgres": "pgsql"}
MAX_VARIANTS = 20
MAX_SETTINGS = 30
MAX_NAME_CHARS = 40
MAX_VALUE_CHARS = 100
# A variant's name shows in comparisons as "MariaDB (local) · flush=2": no separators of our own inside.
_VARIANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.=+@#%,()/-]*$")
# A server setting: letters, digits and underscores, with one dot for PostgreSQL's extension settings
# (auto_explain.log_min_duration). Nothing that could end an identifier or start another statement.
_SETTING_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$")
# A plain value: a number, a word (ON, off, O_DIRECT), a size with its unit (64MB, 1GB) or a duration (10s).
_VALUE = re.compile(r"^[A-Za-z0-9_.+-]+$")
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_TRUE = {"on", "1", "true", "yes", "y", "t"}
_FALSE = {"off", "0", "false", "no", "n", "f"}


class VariantError(ValueError):
    """A variant list that cannot be stored; the message names the variant and the setting."""


def setting_name_problem(name: Any) -> str:
    """Why `name` cannot be a server setting's name ("" when it can)."""
    if not isinstance(name, str) or not name:
        return "a setting's name must be a non-empty string"
    if len(name) > 64 or not _SETTING_NAME.match(name):
        return (f"setting {name[:64]!r} is not a setting's name (lower-case letters, digits and underscores, "
                "with at most one dot)")
    return ""


def value_problem(name: str, value: Any) -> str:
    """Why `value` cannot be given to setting `name` ("" when it can)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"setting {name}: the value must be a string or a number"
    text = str(value)
    if not text or len(text) > MAX_VALUE_CHARS or not _VALUE.match(text):
        return (f"setting {name}: value {text[:MAX_VALUE_CHARS]!r} is not a plain value (a number, a word such as "
                "ON or off, or a size such as 64MB: letters, digits, '_', '.', '+', '-')")
    return ""


def variants_clean(raw: Any) -> list[dict[str, Any]]:
    """The variants in their stored shape (names stripped, setting names lower-case, values strings), or
    VariantError naming the first problem."""
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        raise VariantError("variants must be a list of {name, mysql, pgsql}")
    if len(raw) > MAX_VARIANTS:
        raise VariantError(f"at most {MAX_VARIANTS} variants")
    cleaned: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise VariantError(f"variant {index}: an object with a name and settings per driver")
        unknown = sorted(set(item) - {"name", *DRIVERS})
        if unknown:
            raise VariantError(f"variant {index}: unknown key {unknown[0]!r} (name, mysql, pgsql)")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise VariantError(f"variant {index}: a name is required")
        name = " ".join(name.split())
        if len(name) > MAX_NAME_CHARS or not _VARIANT_NAME.match(name):
            raise VariantError(f"variant {name[:MAX_NAME_CHARS]!r}: a name of up to {MAX_NAME_CHARS} letters, "
                               "digits, spaces and _ . = + @ # % , ( ) / -")
        if name.lower() in seen:
            raise VariantError(f"variant {name!r} is named twice")
        seen.add(name.lower())
        variant: dict[str, Any] = {"name": name}
        for driver in DRIVERS:
            settings = item.get(driver) or {}
            if not isinstance(settings, dict):
                raise VariantError(f"variant {name!r}: {driver} must map setting names to values")
            if len(settings) > MAX_SETTINGS:
                raise VariantError(f"variant {name!r}: at most {MAX_SETTINGS} {driver} settings")
            clean: dict[str, str] = {}
            for key, value in settings.items():
                setting = key.lower() if isinstance(key, str) else key
                problem = setting_name_problem(setting) or value_problem(str(setting), value)
                if problem:
                    raise VariantError(f"variant {name!r}, {driver}: {problem}")
                if setting in clean:
                    raise VariantError(f"variant {name!r}, {driver}: setting {setting} is given twice")
                clean[setting] = str(value)
            if clean:
                variant[driver] = clean
        cleaned.append(variant)
    return cleaned


def variants_problem(raw: Any) -> str | None:
    """Why a stored variant list is not one (None when it is): for untrusted input such as a bundle."""
    try:
        variants_clean(raw)
    except VariantError as exc:
        return str(exc)
    return None


def settings_problem(raw: Any) -> str | None:
    """Why a job's variant settings ({setting: value}) are not plain settings (None when they are)."""
    if not isinstance(raw, dict):
        return "must be an object of setting names and values"
    if len(raw) > MAX_SETTINGS:
        return f"at most {MAX_SETTINGS} settings"
    for name, value in raw.items():
        problem = setting_name_problem(name) or value_problem(str(name), value)
        if problem:
            return problem
    return None


def variant_settings(variant: dict[str, Any], driver: str) -> dict[str, str]:
    """The settings a variant gives a target of this driver ({} runs it as it is)."""
    return dict(variant.get(driver) or {})


def variants_parse(text: str) -> list[dict[str, Any]]:
    """The text form, one variant per line: `name: mysql k=v k=v; pgsql k=v` (commas or spaces between settings;
    a line `default:` is a variant that changes nothing). VariantError names the line."""
    variants: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, rest = line.partition(":")
        if not sep:
            raise VariantError(f"line {number}: write 'name: mysql setting=value; pgsql setting=value'")
        variant: dict[str, Any] = {"name": name.strip()}
        for group in filter(None, (g.strip() for g in rest.split(";"))):
            head, _, tail = group.partition(" ")
            driver = DRIVER_ALIASES.get(head.strip().lower().rstrip(":"))
            if driver is None:
                raise VariantError(f"line {number}: {head!r} is not a driver: start each group with mysql or pgsql")
            settings = variant.setdefault(driver, {})
            for pair in tail.replace(",", " ").split():
                key, eq, value = pair.partition("=")
                if not eq:
                    raise VariantError(f"line {number}: {pair!r} is not setting=value")
                settings[key.strip().lower()] = value.strip()
        variants.append(variant)
    try:
        return variants_clean(variants)
    except VariantError as exc:
        raise VariantError(str(exc)) from None


def variants_format(variants: list[dict[str, Any]]) -> str:
    """The text form of stored variants (what variants_parse reads)."""
    lines = []
    for variant in variants or []:
        groups = ["{} {}".format(driver, " ".join(f"{k}={v}" for k, v in variant[driver].items()))
                  for driver in DRIVERS if variant.get(driver)]
        lines.append(f"{variant['name']}: {'; '.join(groups)}".rstrip())
    return "\n".join(lines)


def _normal(text: str) -> str:
    text = text.strip().strip("'\"").lower()
    if text in _TRUE:
        return "on"
    if text in _FALSE:
        return "off"
    return text


def setting_matches(wanted: str, *got: str | None) -> bool:
    """Whether a value read back from the server is the value wanted: the same word (ON = 1 = true), the same
    number, or the same text; `got` may give several spellings of one value (PostgreSQL's current_setting()
    "64MB" and pg_settings' "65536")."""
    want = _normal(str(wanted))
    for value in got:
        if value is None:
            continue
        have = _normal(str(value))
        if want == have:
            return True
        if NUMBER.match(want) and NUMBER.match(have) and float(want) == float(have):
            return True
    return False
