"""The option catalogue against the installed sysbench, and validate_options' refusals."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaigns.sysbench.catalogue import (
    COMMON_OPTIONS,
    CONNECTION_OPTIONS,
    REFUSED_OPTIONS,
    TESTS,
    OptionError,
    canonical_option_name,
    dataset_option_names,
    format_value,
    options_to_argv,
    scenario_options,
    test_script_argument,
    validate_options,
)
from campaigns.sysbench.presets import PRESETS

SYSBENCH = shutil.which("sysbench")
needs_sysbench = pytest.mark.skipif(SYSBENCH is None, reason="sysbench is not installed")
BUILTIN_TESTS = [name for name, spec in TESTS.items() if not spec.legacy]
LEGACY_TESTS = [name for name, spec in TESTS.items() if spec.legacy]

# `  --point_selects=N             Number of point SELECT queries per transaction [10]`
HELP_LINE = re.compile(r"^\s+--([a-z0-9_-]+)(?:\[?=[^\s\]]*\]?)?\s+(.*?)(?:\s\[([^\]]*)\])?$")


def _sysbench(*args: str) -> subprocess.CompletedProcess[str]:
    assert SYSBENCH is not None
    return subprocess.run([SYSBENCH, *args], capture_output=True, text=True, timeout=60, cwd="/tmp", check=False)


def _help_options(text: str) -> dict[str, str | None]:
    """Option name (canonical) -> the default sysbench prints in brackets, from a help listing."""
    options: dict[str, str | None] = {}
    for line in text.splitlines():
        match = HELP_LINE.match(line)
        if match:
            options[canonical_option_name(match.group(1))] = match.group(3)
    return options


def _dry_run(test: str, options: dict[str, object]) -> subprocess.CompletedProcess[str]:
    # --mysql-dry-run makes every client call succeed without a server: sysbench still parses every option.
    return _sysbench(test, "--mysql-dry-run=on", "--events=20", "--time=5", *options_to_argv(options), "run")


# --- the catalogue matches sysbench --------------------------------------------------------------------------------


@needs_sysbench
@pytest.mark.parametrize("test", BUILTIN_TESTS)
def test_every_option_in_sysbench_test_help_is_catalogued_with_its_default(test: str) -> None:
    completed = _sysbench(test, "help")
    listed = _help_options(completed.stdout)
    if test == "bulk_insert":
        # bulk_insert.lua declares no options and does not even implement `help`.
        assert "does not implement the 'help' command" in completed.stdout + completed.stderr
    catalogued = TESTS[test].options
    assert sorted(listed) == sorted(catalogued)
    for name, default in listed.items():
        spec = catalogued[name]
        if default is not None:
            assert format_value(spec.default) == default, name
        else:
            assert spec.default is None, name


@needs_sysbench
def test_every_option_in_sysbench_help_is_catalogued_or_refused_with_a_reason() -> None:
    listed = _help_options(_sysbench("--help").stdout)
    assert "threads" in listed and "mysql-ignore-errors" in listed
    for name in listed:
        assert name in COMMON_OPTIONS or name in REFUSED_OPTIONS, name
    for name in COMMON_OPTIONS:
        assert name in listed, f"{name} is catalogued but sysbench --help does not list it"


@needs_sysbench
def test_common_option_defaults_match_sysbench_help() -> None:
    listed = _help_options(_sysbench("--help").stdout)
    for name, spec in COMMON_OPTIONS.items():
        printed = listed[name]
        if printed is not None and printed != "":
            assert format_value(spec.default) == printed, name


@needs_sysbench
# Host tests (cpu, fileio, ...) run without a database: tests/test_hosttests.py runs them at their defaults.
@pytest.mark.parametrize("test", [t for t in BUILTIN_TESTS if t != "bulk_insert" and not TESTS[t].host])
def test_sysbench_accepts_every_test_option_of_the_catalogue_at_its_default(test: str) -> None:
    options = {name: spec.default for name, spec in TESTS[test].options.items() if spec.default is not None}
    # select_random_* refuse more than one table, which is also the default.
    completed = _dry_run(test, validate_options(test, options))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "invalid option" not in completed.stderr


@needs_sysbench
@pytest.mark.parametrize("key", [k for k, p in PRESETS.items() if not TESTS[p.test].legacy])
def test_sysbench_accepts_the_options_of_each_builtin_preset(key: str) -> None:
    preset = PRESETS[key]
    completed = _dry_run(preset.test, preset.options)
    assert completed.returncode == 0, completed.stdout + completed.stderr


@needs_sysbench
def test_sysbench_refuses_warmup_time_which_is_why_it_is_not_catalogued() -> None:
    completed = _sysbench("--warmup-time=5", "oltp_read_write", "help")
    assert completed.returncode != 0
    assert "invalid option: --warmup-time=5" in completed.stderr
    assert "warmup-time" not in COMMON_OPTIONS


@needs_sysbench
def test_sysbench_reads_yes_as_off_which_is_why_only_on_off_words_are_accepted() -> None:
    completed = _sysbench("oltp_point_select", "--mysql-dry-run=on", "--events=5", "--histogram=yes", "run")
    assert "Latency histogram" not in completed.stdout
    with pytest.raises(OptionError):
        validate_options("oltp_point_select", {"histogram": "yes"})


def test_every_legacy_test_takes_the_sysbench_05_table_options() -> None:
    for test in LEGACY_TESTS:
        assert TESTS[test].legacy and TESTS[test].script == test
        assert {"oltp-tables-count", "oltp-table-size"} <= set(TESTS[test].options)
    oltp = TESTS["oltp_legacy/oltp.lua"].options
    for name in ("oltp-point-selects", "oltp-simple-ranges", "oltp-sum-ranges", "oltp-order-ranges",
                 "oltp-distinct-ranges", "oltp-index-updates", "oltp-non-index-updates", "oltp-delete-inserts",
                 "oltp-range-size", "oltp-read-only", "oltp-skip-trx", "oltp-auto-inc", "oltp-secondary"):
        assert name in oltp


def test_connection_options_are_catalogued_as_connection_scope() -> None:
    for name in ("mysql-host", "mysql-port", "mysql-socket", "mysql-user", "mysql-password", "mysql-db",
                 "pgsql-host", "pgsql-port", "pgsql-user", "pgsql-password", "pgsql-db", "db-driver"):
        assert COMMON_OPTIONS[name].scope == "connection"
        assert name in CONNECTION_OPTIONS
    assert all(spec.scope == "test" for test in TESTS.values() for spec in test.options.values())


def test_scenario_options_offer_no_connection_option() -> None:
    offered = scenario_options("oltp_read_write")
    assert "point-selects" in offered and "threads" in offered
    assert not set(offered) & set(CONNECTION_OPTIONS)


def test_dataset_option_names_follow_the_test_family() -> None:
    assert dataset_option_names("oltp_read_only") == ("tables", "table-size")
    assert dataset_option_names("oltp_legacy/select.lua") == ("oltp-tables-count", "oltp-table-size")
    assert dataset_option_names("bulk_insert") == (None, None)


def test_only_bulk_insert_does_not_prepare_tables() -> None:
    assert [name for name, spec in TESTS.items() if not spec.prepares_tables and not spec.host] == ["bulk_insert"]


# --- names and values ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("written", ["--point_selects", "point-selects", "-POINT_SELECTS", "  --point-selects"])
def test_canonical_option_name_strips_dashes_and_unifies_underscores(written: str) -> None:
    assert canonical_option_name(written) == "point-selects"


def test_validate_options_returns_canonical_names_and_python_types() -> None:
    result = validate_options("oltp_read_write", {
        "--point_selects": "4", "skip_trx": "ON", "range-selects": 0, "rand_type": "Pareto",
        "rand-pareto-h": "0.3", "threads": 8.0, "mysql_ignore_errors": "1062,1213",
        "report-checkpoints": [60, "10"], "forced-shutdown": "10%",
    })
    assert result == {
        "point-selects": 4, "skip-trx": True, "range-selects": False, "rand-type": "pareto",
        "rand-pareto-h": 0.3, "threads": 8, "mysql-ignore-errors": "1062,1213",
        "report-checkpoints": "10,60", "forced-shutdown": "10%",
    }


@pytest.mark.parametrize("word, expected", [("on", True), ("off", False), ("true", True), ("false", False),
                                            ("1", True), ("0", False), (True, True), (0, False)])
def test_bool_options_accept_on_off_true_false_and_1_0(word: object, expected: bool) -> None:
    assert validate_options("oltp_read_only", {"skip-trx": word}) == {"skip-trx": expected}


@pytest.mark.parametrize("value", ["all", "none", "ALL", "1062", "1213,1020,1205"])
def test_mysql_ignore_errors_takes_error_numbers_or_all_or_none(value: str) -> None:
    assert validate_options("oltp_read_write", {"mysql-ignore-errors": value})


@pytest.mark.parametrize("value", ["all,1062", "abc", "1062,x", "0"])
def test_mysql_ignore_errors_refuses_anything_else(value: str) -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_read_write", {"mysql-ignore-errors": value})
    assert raised.value.option == "mysql-ignore-errors"


@pytest.mark.parametrize("options, option", [
    ({"threads": 0}, "threads"),
    ({"threads": 100_001}, "threads"),
    ({"events": 2_147_483_648}, "events"),
    ({"percentile": 101}, "percentile"),
    ({"table_size": 4_294_967_296}, "table_size"),
    ({"rand-pareto-h": 1}, "rand-pareto-h"),
    ({"verbosity": 1}, "verbosity"),
    ({"point-selects": 1.5}, "point-selects"),
    ({"point-selects": True}, "point-selects"),
    ({"point-selects": "0x10"}, "point-selects"),
    ({"time": "10s"}, "time"),
    ({"rand-type": "zipfian"}, "rand-type"),
    ({"db-ps-mode": "on"}, "db-ps-mode"),
    ({"forced-shutdown": "soon"}, "forced-shutdown"),
    ({"thread-stack-size": "1x"}, "thread-stack-size"),
    ({"mysql-storage-engine": "innodb/**/"}, "mysql-storage-engine"),
    ({"histogram": "yes"}, "histogram"),
    ({"random-points": 5}, "random-points"),
    ({"oltp-point-selects": 4}, "oltp-point-selects"),
    ({"pgsql-variant": "aurora"}, "pgsql-variant"),
    ({"skip-trx": None}, "skip-trx"),
    ({"tables": {"a": 1}}, "tables"),
], ids=lambda value: str(value))
def test_validate_options_names_the_option_that_is_wrong_type_out_of_range_or_unknown(
        options: dict[str, object], option: str) -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_read_write", options)
    assert raised.value.option == option
    assert str(raised.value) == f"{option}: {raised.value.message}"


def test_validate_options_refuses_an_unknown_test_naming_the_option_test() -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("diskspd", {})
    assert raised.value.option == "test"


@pytest.mark.parametrize("name", ["mysql-host", "--mysql_password", "pgsql-db", "db-driver", "mysql-dry-run"])
def test_connection_options_are_never_scenario_options(name: str) -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_read_write", {name: "x"})
    assert raised.value.option == name
    assert "connection option" in raised.value.message


@pytest.mark.parametrize("name, reason", [("max-time", "use time"), ("num_threads", "use threads"),
                                          ("config-file", "bypass"), ("help", "help")])
def test_deprecated_aliases_and_dangerous_options_are_refused_with_the_reason(name: str, reason: str) -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_read_write", {name: "1"})
    assert reason in raised.value.message


def test_an_option_given_twice_under_two_spellings_is_refused() -> None:
    with pytest.raises(OptionError, match="given twice"):
        validate_options("oltp_read_write", {"point_selects": 1, "point-selects": 2})


def test_percentile_zero_with_histogram_is_refused_as_sysbench_would() -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_read_write", {"percentile": 0, "histogram": "on"})
    assert raised.value.option == "percentile"


def test_legacy_read_only_and_write_only_exclude_each_other() -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_legacy/oltp.lua", {"oltp-read-only": "on", "oltp-write-only": "on"})
    assert raised.value.option == "oltp-write-only"


def test_a_sysbench_05_name_on_a_10_test_is_refused_with_the_10_name_as_hint() -> None:
    with pytest.raises(OptionError, match="use point-selects"):
        validate_options("oltp_read_write", {"oltp-point-selects": 4})


SMUGGLED = ["8 --mysql-host=evil", "8\n--mysql-host=evil", "-1", "--mysql-host=evil", "'8'", '"8"', "8;id",
            "8`id`", "$(id)", "${HOME}", "8|id", "8&&id", "8\x00", "8\t", "8\r"]


@pytest.mark.parametrize("option", ["threads", "mysql_storage_engine", "report-checkpoints", "rand-type",
                                    "skip-trx", "forced-shutdown", "mysql-ignore-errors", "rand-pareto-h"])
@pytest.mark.parametrize("value", SMUGGLED, ids=repr)
def test_values_that_could_smuggle_another_argument_are_refused_naming_the_option(option: str, value: str) -> None:
    with pytest.raises(OptionError) as raised:
        validate_options("oltp_read_write", {option: value})
    assert raised.value.option == option


def test_format_value_writes_booleans_as_on_off() -> None:
    assert format_value(True) == "on" and format_value(False) == "off"
    assert format_value(4) == "4" and format_value(0.2) == "0.2" and format_value(2.0) == "2"


def test_options_to_argv_gives_one_sorted_item_per_option_under_canonical_names() -> None:
    argv = options_to_argv({"skip_trx": True, "--point_selects": 4, "rand-type": "uniform"})
    assert argv == ["--point-selects=4", "--rand-type=uniform", "--skip-trx=on"]


def test_options_to_argv_refuses_a_value_with_a_line_break() -> None:
    with pytest.raises(OptionError):
        options_to_argv({"threads": "8\n--x"})


def test_test_script_argument_is_the_name_for_builtins_and_our_lua_path_for_legacy(tmp_path: object) -> None:
    assert test_script_argument("oltp_read_write", "/srv/lua") == "oltp_read_write"
    assert test_script_argument("oltp_legacy/select.lua", "/srv/lua") == "/srv/lua/oltp_legacy/select.lua"
    relative = test_script_argument("oltp_legacy/oltp.lua", "campaigns/sysbench/lua")
    assert relative.startswith("/") and relative.endswith("campaigns/sysbench/lua/oltp_legacy/oltp.lua")
    with pytest.raises(OptionError) as raised:
        test_script_argument("tests/db/oltp.lua", "/srv/lua")
    assert raised.value.option == "test"


# --- presets -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(PRESETS))
def test_every_preset_validates_through_validate_options(key: str) -> None:
    preset = PRESETS[key]
    assert preset.key == key and preset.test in TESTS and preset.seed in {"000", "001", "002", "003", "004"}
    assert validate_options(preset.test, preset.options) == preset.options
    field_options = {"threads", "time", "events", *filter(None, dataset_option_names(preset.test))}
    assert not set(preset.options) & field_options
    for threads in preset.threads:
        validate_options(preset.test, {"threads": threads})


def test_presets_cover_every_seed_scenario_the_campaigns_use() -> None:
    seeds = {preset.seed for preset in PRESETS.values()}
    assert seeds == {"000", "001", "002", "003", "004"}
    assert len([p for p in PRESETS.values() if p.seed == "001"]) == 5
    assert PRESETS["s000-oltp-4-selects-1-update"].options["oltp-point-selects"] == 4
    assert PRESETS["s000-oltp-4-selects-1-update"].options["oltp-index-updates"] == 1
    assert PRESETS["s000-oltp-4-selects-1-update"].options["rand-type"] == "special"
    assert PRESETS["s000-oltp-4-selects-1-update"].options["percentile"] == 99
    for seed in ("000", "004"):
        assert PRESETS[f"s{seed}-hybrid"].options["oltp-point-selects"] == 1
        assert PRESETS[f"s{seed}-read"].test == "oltp_legacy/select.lua"
        assert PRESETS[f"s{seed}-write-non-index"].test == "oltp_legacy/update_non_index.lua"
    ddm = PRESETS["s002-ddm-oltp"].options
    assert ddm["oltp-secondary"] is True and ddm["oltp-auto-inc"] is True and ddm["oltp-range-size"] == 5
    assert PRESETS["s003-read-only"].options == {"percentile": 95, "report-interval": 1, "skip-trx": True}


# --- arbitrary input -----------------------------------------------------------------------------------------------

_values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
                    st.lists(st.one_of(st.integers(), st.text(max_size=8)), max_size=4),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_names = st.one_of(st.sampled_from(sorted({*COMMON_OPTIONS, *REFUSED_OPTIONS,
                                           *(n for t in TESTS.values() for n in t.options)})),
                   st.text(max_size=20))


@settings(max_examples=400, deadline=None)
@given(test=st.one_of(st.sampled_from(list(TESTS)), st.text(max_size=20)),
       options=st.dictionaries(_names, _values, max_size=6))
def test_validate_options_raises_nothing_but_option_error_on_arbitrary_input(
        test: str, options: dict[str, object]) -> None:
    try:
        result = validate_options(test, options)
    except OptionError as error:
        assert isinstance(error.option, str) and error.message
        return
    # Whatever it accepts must make argv items nothing can split or extend.
    for item in options_to_argv(result):
        assert item.startswith("--") and not re.search(r"[\s'\"`$;|&\x00]", item)


LUA_DIR = Path(__file__).resolve().parent.parent / "campaigns" / "sysbench" / "lua"


@needs_sysbench
@pytest.mark.parametrize("test", LEGACY_TESTS)
def test_our_legacy_lua_accepts_every_catalogued_legacy_option_with_the_same_default(test: str) -> None:
    script = Path(test_script_argument(test, str(LUA_DIR)))
    if not script.exists():
        pytest.skip(f"{script} is not written yet")
    listed = _help_options(_sysbench(str(script), "help").stdout)
    for name, spec in TESTS[test].options.items():
        assert name in listed, f"{script.name} does not declare --{name}"
        assert listed[name] == format_value(spec.default), name
