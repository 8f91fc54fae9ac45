"""parse_command on every command the seed white papers print, and on the ways people paste commands."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaigns.sysbench.catalogue import COMMON_OPTIONS, TESTS, validate_options
from campaigns.sysbench.cmdline import CommandError, ParsedCommand, command_to_scenario, parse_command

SEED_COMMANDS = Path(__file__).parent / "data" / "seed_commands.txt"
LADDER_2_3000 = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3000]
OLTP = "oltp_legacy/oltp.lua"


def _seed_blocks() -> list[tuple[str, str]]:
    blocks = []
    for block in SEED_COMMANDS.read_text(encoding="utf-8").split("\n---\n"):
        header, _, body = block.partition("\n")
        match = re.fullmatch(r"# seed (\d{3}): (.+)", header)
        assert match, header
        blocks.append((f"{match.group(1)}: {match.group(2)}", body))
    return blocks


SEED_BLOCKS = _seed_blocks()

_SYNC_PREPARE: dict[str, Any] = dict(
    test=OLTP, command="prepare", tables=10, table_size=2_180_000, threads=[500], time_s=360_000,
    events=2_000_000_000,
    options={"oltp-point-selects": 1, "oltp-simple-ranges": 0, "oltp-index-updates": 1,
             "oltp-non-index-updates": 0, "report-interval": 1},
)
_SYNC_RUN: dict[str, Any] = dict(command="run", tables=10, table_size=2_180_000, threads=[500], time_s=360_000,
                                 events=2_000_000_000, options={"percentile": 99, "report-interval": 1},
                                 target_hint={"port": 3306, "db": "caccts", "driver": "mysql"})
_SYNC_HYBRID: dict[str, Any] = dict(
    _SYNC_RUN, test=OLTP,
    options={"oltp-read-only": False, "oltp-point-selects": 1, "oltp-distinct-ranges": 0, "oltp-index-updates": 1,
             "oltp-non-index-updates": 0, "percentile": 99},
)
_S003: dict[str, Any] = dict(tables=10, table_size=10_000_000, threads=LADDER_2_3000, time_s=300, events=None,
                             target_hint={"db": "sbtest", "driver": "mysql"})
_S002: dict[str, Any] = dict(test=OLTP, tables=1, table_size=None, time_s=300, events=None,
                             target_hint={"port": 5066, "driver": "mysql"})

# What each block must read as; `options` and `target_hint` list items that must be present.
EXPECTED: dict[str, dict[str, Any]] = {
    "000: 3.3 data preparation": dict(
        test=OLTP, command="prepare", tables=20, table_size=10_000_000, threads=[],
        options={"mysql-table-engine": "innodb"}, target_hint={"db": "test"}),
    "000: 3.4 stress test command, split by a page break (first half, then the continuation printed after the "
    "parameter list)": dict(
        test=OLTP, command="run", tables=None, table_size=None, threads=[], time_s=600, events=None,
        options={"oltp-read-only": False, "rand-type": "special", "percentile": 99, "oltp-point-selects": 4},
        placeholders=["threads", "oltp-tables-count", "oltp-table-size"]),
    "000: strong sync comparison, 1. data initialization": _SYNC_PREPARE,
    "000: strong sync comparison, 2. non-index update": dict(_SYNC_RUN, test="oltp_legacy/update_non_index.lua"),
    "000: strong sync comparison, 3. read-only (SELECT)": dict(_SYNC_RUN, test="oltp_legacy/select.lua"),
    "000: strong sync comparison, 4. hybrid test": _SYNC_HYBRID,
    "002: step 1, import test data": dict(
        _S002, command="prepare", threads=[256],
        options={"oltp-secondary": True, "oltp-auto-inc": True, "oltp-range-size": 5, "oltp-skip-trx": False,
                 "report-interval": 5},
        placeholders=["oltp-table-size", "mysql-host", "mysql-user", "mysql-db"]),
    "002: step 2, stress testing": dict(
        _S002, command="run", threads=[256],
        options={"oltp-secondary": True, "oltp-auto-inc": True, "oltp-range-size": 5, "report-interval": 1,
                 "forced-shutdown": "0"}),
    "002: step 3, delete the test data": dict(_S002, command="cleanup", tables=64, threads=[200], time_s=3600),
    "003: step 1, prepare the data": dict(_S003, test="oltp_read_write", command="prepare", options={}),
    "003: step 2, OLTP write-only scenario": dict(
        _S003, test="oltp_write_only", command="run", options={"percentile": 95, "report-interval": 1}),
    "003: step 2, OLTP read-only scenario": dict(
        _S003, test="oltp_read_only", command="run",
        options={"percentile": 95, "report-interval": 1, "skip-trx": True}),
    "003: step 2, OLTP read-write scenario": dict(
        _S003, test="oltp_read_write", command="run", options={"percentile": 95, "report-interval": 1}),
    "003: step 3, clear the data": dict(
        test="oltp_read_write", command="cleanup", tables=250, table_size=25_000, threads=[], time_s=600,
        options={"percentile": 95}, placeholders=["threads"]),
    "004: 1. data initialization": _SYNC_PREPARE,
    "004: 2. non-index update": dict(_SYNC_RUN, test="oltp_legacy/update_non_index.lua"),
    "004: 3. read-only (select)": dict(_SYNC_RUN, test="oltp_legacy/select.lua"),
    "004: 4. hybrid test": _SYNC_HYBRID,
}

# Seed 001 prints every command cut off after `--mys` (or `--my`): the test is in the part that is missing, so
# the block parses once the user has picked the scenario's test, which the heading names.
SEED_001_TESTS = {
    "1. write": "oltp_write_only",
    "2. read (POINT SELECT)": "oltp_read_only",
    "3. read (RANGE SELECT)": "oltp_read_only",
    "4. read-write (POINT SELECT)": "oltp_read_write",
    "5. read-write (RANGE SELECT)": "oltp_read_write",
}


def _seed_001_test(where: str) -> str:
    return next(test for heading, test in SEED_001_TESTS.items() if heading in where)


def _check(parsed: ParsedCommand, expected: dict[str, Any]) -> None:
    for key in ("test", "command", "tables", "table_size", "threads", "time_s", "events"):
        if key in expected:
            assert getattr(parsed, key) == expected[key], key
    for name, value in expected.get("options", {}).items():
        assert parsed.options.get(name) == value, name
    for name, value in expected.get("target_hint", {}).items():
        assert parsed.target_hint.get(name) == value, name
    for name in expected.get("placeholders", []):
        assert name in parsed.placeholders, name


# --- the seeds ---------------------------------------------------------------------------------------------------


def test_the_seed_command_file_holds_every_command_printed_in_the_five_seeds() -> None:
    seeds = [key.split(":")[0] for key, _ in SEED_BLOCKS]
    assert {seed: seeds.count(seed) for seed in sorted(set(seeds))} == {
        "000": 6, "001": 15, "002": 3, "003": 5, "004": 4}
    assert all("sysbench" in body for _, body in SEED_BLOCKS)
    assert set(EXPECTED) == {key for key, _ in SEED_BLOCKS if not key.startswith("001")}


@pytest.mark.parametrize("key, body", SEED_BLOCKS, ids=[key for key, _ in SEED_BLOCKS])
def test_every_seed_command_parses_to_its_test_threads_and_dataset(key: str, body: str) -> None:
    if key.startswith("001"):
        with pytest.raises(CommandError, match=r"cut off after '--my"):
            parse_command(body)
        parsed = parse_command(body, default_test=_seed_001_test(key))
        assert parsed.test == _seed_001_test(key)
        assert any("cut off" in warning for warning in parsed.warnings)
        assert parsed.target_hint == {"driver": "mysql"}
        assert parsed.placeholders == ["mysql-host", "mysql-port", "mysql-user"]
    else:
        parsed = parse_command(body)
        _check(parsed, EXPECTED[key])
    # Nothing that comes back could fail validation later, and no password survives.
    assert validate_options(parsed.test, parsed.options) == parsed.options
    assert "password" not in str(parsed.target_hint)
    if "--mysql-password" in body.replace("-\n\n", "-").replace("-  \n", "-"):
        assert any("password was dropped" in warning for warning in parsed.warnings)


# --- shapes of a pasted command --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "$ sysbench oltp_read_write --threads=4 run",
    "# sysbench oltp_read_write --threads=4 run",
    "shell> sysbench oltp_read_write --threads=4 run",
    "[root@db01 ~]# sysbench oltp_read_write --threads=4 run",
    "me@bench:~/sb$ sysbench oltp_read_write --threads=4 run",
    "./sysbench oltp_read_write --threads=4 run",
    "/usr/local/bin/sysbench oltp_read_write --threads=4 run",
    "sudo -E env LD_LIBRARY_PATH=/opt/lib sysbench oltp_read_write --threads 4 run",
    "sysbench /usr/share/sysbench/oltp_read_write.lua --threads=4 run",
    "sysbench --test=/usr/share/sysbench/oltp_read_write.lua --num-threads=4 run",
    "sysbench \\\n  oltp_read_write \\\n  --threads=4 \\\n  run",
    "sysbench oltp_read_write --threads=4 run   # four threads",
    "sysbench oltp_read_write --threads=4 run\r\n",
    "sysbench oltp_read_write \u2013threads=4 run",
], ids=repr)
def test_prompts_paths_prefixes_and_continuations_are_read_through(text: str) -> None:
    parsed = parse_command(text)
    assert (parsed.test, parsed.command, parsed.threads) == ("oltp_read_write", "run", [4])


@pytest.mark.parametrize("path, test", [
    ("/usr/share/sysbench/tests/include/oltp_legacy/oltp.lua", OLTP),
    ("/usr/local/share/sysbench/tests/include/oltp_legacy/select.lua", "oltp_legacy/select.lua"),
    ("./tests/db/oltp.lua", OLTP),
    ("sysbench/tests/db/update_non_index.lua", "oltp_legacy/update_non_index.lua"),
    ("tests/db/select.lua", "oltp_legacy/select.lua"),
    ("oltp_legacy/oltp.lua", OLTP),
    ("/usr/share/sysbench/oltp_read_write.lua", "oltp_read_write"),
    ("oltp_point_select", "oltp_point_select"),
    ("tests/db/update_index.lua", "oltp_update_index"),
    ("oltp", OLTP),
])
def test_test_paths_of_both_generations_map_to_the_right_test(path: str, test: str) -> None:
    assert parse_command(f"sysbench --test={path} run").test == test
    assert parse_command(f"sysbench {path} run").test == test


def test_05_spellings_map_to_their_10_fields() -> None:
    parsed = parse_command(
        "sysbench --num-threads=16 --max-time=60 --max-requests=0 --oltp_tables_count=8 "
        "--oltp-table-size=100000 --test=tests/db/oltp.lua run")
    assert (parsed.threads, parsed.time_s, parsed.events, parsed.tables, parsed.table_size) == (
        [16], 60, None, 8, 100_000)


def test_max_requests_other_than_zero_is_an_event_limit() -> None:
    assert parse_command("sysbench oltp_read_only --max-requests=5000 run").events == 5000
    assert parse_command("sysbench oltp_read_only --events=0 run").events is None


def test_options_with_a_space_instead_of_equals_and_bare_flags_are_read() -> None:
    parsed = parse_command("sysbench oltp_read_only --threads 8 --skip_trx --range-selects off --time 30 run")
    assert parsed.threads == [8] and parsed.time_s == 30
    assert parsed.options == {"skip-trx": True, "range-selects": False}


def test_legacy_option_names_on_a_builtin_test_map_to_the_10_names() -> None:
    parsed = parse_command(
        "sysbench oltp_read_write --oltp-point-selects=4 --oltp_skip_trx=on --oltp-secondary "
        "--mysql-table-engine=myisam --oltp-tables-count=3 run")
    assert parsed.options == {"point-selects": 4, "skip-trx": True, "secondary": True,
                              "mysql-storage-engine": "myisam"}
    assert parsed.tables == 3


def test_a_legacy_option_without_10_equivalent_becomes_a_warning() -> None:
    parsed = parse_command("sysbench oltp_read_write --oltp-read-only=on run")
    assert parsed.options == {}
    assert any("--oltp-read-only" in w and "oltp_read_only" in w for w in parsed.warnings)


def test_10_option_names_on_a_legacy_test_map_to_the_05_names() -> None:
    parsed = parse_command("sysbench --test=tests/db/oltp.lua --point-selects=2 --tables=4 --table-size=10 run")
    assert parsed.options == {"oltp-point-selects": 2}
    assert (parsed.tables, parsed.table_size) == (4, 10)


def test_connection_options_become_a_target_hint_without_the_password() -> None:
    parsed = parse_command(
        "sysbench oltp_read_only --mysql-host=10.0.0.5 --mysql-port=3307 --mysql-user=bench "
        "--mysql-password='s3cr et!' --mysql-db=sb run")
    assert parsed.target_hint == {"host": "10.0.0.5", "port": 3307, "user": "bench", "db": "sb",
                                  "driver": "mysql"}
    assert "s3cr" not in repr(parsed.to_dict())
    assert any("--mysql-password" in w and "dropped" in w for w in parsed.warnings)
    assert not set(parsed.options) & {"mysql-host", "mysql-port", "mysql-user", "mysql-db"}


def test_pgsql_connection_options_imply_the_pgsql_driver() -> None:
    parsed = parse_command("sysbench oltp_read_only --db-driver=pgsql --pgsql-host=db --pgsql-port=5433 "
                           "--pgsql-password=x --mysql-host=other run")
    assert parsed.target_hint == {"host": "db", "port": 5433, "driver": "pgsql"}
    assert any("mysql-* connection options ignored" in w for w in parsed.warnings)


@pytest.mark.parametrize("value", ["XXX", "xxx", "<data>", "${threads}", "$THREADS", "[thread count]", "<n>"])
def test_placeholders_are_kept_as_placeholders_with_a_warning(value: str) -> None:
    parsed = parse_command(f"sysbench oltp_read_write --threads={value} --table-size={value} "
                           f"--mysql-host={value} run")
    assert parsed.placeholders == ["threads", "table-size", "mysql-host"]
    assert parsed.threads == [] and parsed.table_size is None and "host" not in parsed.target_hint
    assert len([w for w in parsed.warnings if "placeholder" in w]) == 3


@pytest.mark.parametrize("value, threads", [
    ("{2~3000}", LADDER_2_3000),
    ("{2..3000}", LADDER_2_3000),
    ("{1..8}", [1, 2, 3, 4, 5, 6, 7, 8]),
    ("1,2,4", [1, 2, 4]),
    ("{1,2,4,8}", [1, 2, 4, 8]),
    ("'8 16 32'", [8, 16, 32]),
    ("{3~100}", [3, 4, 8, 16, 32, 64, 100]),
    ("64", [64]),
])
def test_thread_values_read_as_thread_lists(value: str, threads: list[int]) -> None:
    assert parse_command(f"sysbench oltp_read_only --threads={value} run").threads == threads


def test_a_powers_of_two_reading_is_explained_in_a_warning() -> None:
    parsed = parse_command("sysbench oltp_read_only --threads={2~3000} run")
    assert any("powers of two" in w for w in parsed.warnings)


@pytest.mark.parametrize("option, value", [("percentile", "101"), ("rand-type", "zipfian"),
                                           ("point_selects", "lots"), ("mysql_storage_engine", "x;drop"),
                                           ("threads", "0"), ("table-size", "5000000000")])
def test_options_that_fail_validation_become_warnings_naming_the_option(option: str, value: str) -> None:
    parsed = parse_command(f"sysbench oltp_read_write --{option}={value} run")
    assert any(w.startswith(f"--{option}") for w in parsed.warnings), parsed.warnings
    assert "percentile" not in parsed.options and "rand-type" not in parsed.options


@pytest.mark.parametrize("text, words", [
    ("sysbench oltp_read_write --rand-init=on run", ["--rand-init", "dropped"]),
    ("sysbench oltp_read_write --warmup-time=30 run", ["--warmup-time", "1.1"]),
    ("sysbench oltp_read_write --bogus=1 run", ["--bogus", "not an option"]),
    ("sysbench oltp_read_write --random-points=3 run", ["--random-points", "not an option"]),
    ("sysbench oltp_read_write --mysql-dry-run=on run", ["--mysql-dry-run", "dropped"]),
    ("sysbench oltp_read_write run > result.txt 2>&1", ["redirection"]),
    ("sysbench oltp_read_write prewarm", ["prewarm"]),
    ("sysbench oltp_read_write prepare; sysbench oltp_read_write run", ["further sysbench command"]),
    ("mysql -e 'create database sbtest'; sysbench oltp_read_write run", ["before the sysbench command"]),
    ("sysbench oltp_read_write run && echo done", ["after the sysbench command"]),
    ("sysbench bulk_insert --tables=4 run", ["--tables", "one table per thread"]),
    ("sysbench oltp_read_write --threads=1 --num-threads=8 run", ["--num-threads", "given twice"]),
    ("sysbench oltp_read_write --skip-trx=on --skip_trx=off run", ["--skip_trx", "given twice"]),
])
def test_anything_that_cannot_be_kept_is_named_in_a_warning(text: str, words: list[str]) -> None:
    parsed = parse_command(text)
    assert any(all(word in w for word in words) for w in parsed.warnings), parsed.warnings


def test_percentile_zero_with_histogram_keeps_histogram_and_drops_percentile() -> None:
    parsed = parse_command("sysbench oltp_read_write --percentile=0 --histogram run")
    assert parsed.options == {"histogram": True}
    assert any(w.startswith("percentile") for w in parsed.warnings)


def test_a_command_without_the_sysbench_word_is_read_as_its_arguments() -> None:
    parsed = parse_command("oltp_read_only --threads=2 run")
    assert parsed.test == "oltp_read_only" and parsed.threads == [2]
    assert any("no 'sysbench' word" in w for w in parsed.warnings)


def test_an_unbalanced_quote_is_read_leniently_with_a_warning() -> None:
    parsed = parse_command("sysbench oltp_read_only --mysql-db='sb run")
    assert parsed.test == "oltp_read_only"
    assert any("quoting" in w for w in parsed.warnings)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("   \n  ", "empty"),
    ("sysbench --threads=8 run", "no sysbench test"),
    ("sysbench cpu.lua run", "built-in cpu test has no .lua"),
    ("sysbench /home/me/custom_workload.lua run", "not a test benchapp knows"),
    ("ls -l", "no sysbench test"),
])
def test_command_error_only_when_no_runnable_test_is_found(text: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_command(text)


@pytest.mark.parametrize("text", [
    "sysbench oltp_read_wirte --tables=1 run",
    "sysbench --test=oltp_read_wirte --tables=1 run",
    "sysbench OLTP_READ_WIRTE run",
])
def test_a_misspelt_test_is_an_error_that_names_the_nearest_test(text: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_command(text, default_test="oltp_point_select")
    assert str(caught.value).endswith("': did you mean oltp_read_write?")
    assert "unknown sysbench test 'oltp_read_wirte'" in str(caught.value).lower()


def test_an_unknown_bare_oltp_name_is_an_error_not_the_legacy_script() -> None:
    with pytest.raises(CommandError, match="unknown sysbench test 'oltp_foobar'"):
        parse_command("sysbench oltp_foobar run")
    with pytest.raises(CommandError, match="did you mean oltp_point_select"):
        parse_command("sysbench oltp_pont_select --threads=2 run")


@pytest.mark.parametrize("text", [
    "sysbench --test=oltp --oltp-table-size=1000 run",
    "sysbench --test=tests/db/oltp.lua run",
    "sysbench /usr/share/sysbench/tests/include/oltp_legacy/oltp.lua run",
    "sysbench --test=/opt/sb/oltp_custom.lua run",
])
def test_real_legacy_commands_still_read_as_the_legacy_oltp_script(text: str) -> None:
    assert parse_command(text).test == OLTP


def test_a_default_test_never_replaces_a_test_the_command_names() -> None:
    assert parse_command("sysbench cpu run", default_test="oltp_read_write").test == "cpu"
    with pytest.raises(CommandError, match="custom_workload"):
        parse_command("sysbench /home/me/custom_workload.lua run", default_test="oltp_read_write")
    assert parse_command("sysbench oltp_insert run", default_test="oltp_read_write").test == "oltp_insert"


def test_to_dict_gives_plain_data() -> None:
    data = parse_command("sysbench oltp_read_only --threads=1,2 --mysql-host=h --skip-trx=1 run").to_dict()
    assert data == {
        "test": "oltp_read_only", "command": "run", "tables": None, "table_size": None, "threads": [1, 2],
        "time_s": None, "events": None, "options": {"skip-trx": True},
        "target_hint": {"host": "h", "driver": "mysql"}, "warnings": [], "placeholders": [],
    }


# --- arbitrary input -------------------------------------------------------------------------------------------

_words = st.sampled_from(
    ["sysbench", "./sysbench", "run", "prepare", "cleanup", "help", "oltp_read_write", "oltp_legacy/oltp.lua",
     "tests/db/select.lua", "--test=", "--", "-", ";", "|", "&&", ">", "2>&1", "\\", "'", '"', "#", "$", "{2~3000}",
     "XXX", "<data>", "[a b]", "_x", "--threads=", "--threads", "--mysql-password=", "--oltp-table-size=",
     "--skip-trx", "on", "0", "-1", "1,2", "\n", "\\\n", " ", "--mys", "\u2013", "\u00a0"]
    + [f"--{name}=" for name in sorted(COMMON_OPTIONS)[:12]]
    + [f"--{name}" for name in sorted(TESTS["oltp_legacy/oltp.lua"].options)]
)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200))
def test_parse_command_raises_nothing_but_command_error_on_arbitrary_text(text: str) -> None:
    try:
        parsed = parse_command(text)
    except CommandError:
        return
    assert validate_options(parsed.test, parsed.options) == parsed.options


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_words, st.text(max_size=6)), max_size=25))
def test_parse_command_raises_nothing_but_command_error_on_command_like_text(words: list[str]) -> None:
    text = "".join(word if word.endswith(("=", "\n")) else word + " " for word in words)
    try:
        parsed = parse_command(text)
    except CommandError:
        return
    assert parsed.test in TESTS
    assert validate_options(parsed.test, parsed.options) == parsed.options
    assert all(isinstance(n, int) and n >= 1 for n in parsed.threads)
    assert "password" not in parsed.target_hint


# ---------------------------------------------------------------- host tests (docs/host-tests.md)


def test_a_cpu_command_reads_as_the_host_test_with_its_threads_and_time() -> None:
    parsed = parse_command("sysbench cpu --cpu-max-prime=20000 --threads=4 --time=30 run")
    assert (parsed.test, parsed.command, parsed.threads, parsed.time_s) == ("cpu", "run", [4], 30)
    assert parsed.options == {"cpu-max-prime": 20000} and parsed.warnings == []
    assert (parsed.tables, parsed.table_size, parsed.target_hint) == (None, None, {})
    proposal = command_to_scenario(parsed)
    assert proposal.fields() == {"test": "cpu", "options": {"cpu-max-prime": 20000}, "time_s": 30,
                                 "report_interval_s": 1, "percentile": 95.0}
    assert (proposal.tables, proposal.table_size) == (None, None)
    assert any(n.startswith("Threads 4:") and "Run it on" in n for n in proposal.notes)
    # sysbench 0.5's spelling of the same test
    old = parse_command("sysbench --test=cpu --num-threads=8 --max-time=60 --cpu-max-prime=2000 run")
    assert (old.test, old.threads, old.time_s, old.options) == ("cpu", [8], 60, {"cpu-max-prime": 2000})


def test_a_memory_command_keeps_its_sizes_and_drops_tables_and_connection_options() -> None:
    parsed = parse_command("sysbench memory --memory-block-size=1M --memory-total-size=10G --memory-oper=read "
                           "--threads=2 --tables=4 --table-size=1000 --mysql-host=db1 --mysql-password=s3cret "
                           "--db-ps-mode=disable --memory-colour=blue run")
    assert parsed.test == "memory" and parsed.threads == [2]
    assert parsed.options == {"memory-block-size": "1M", "memory-total-size": "10G", "memory-oper": "read"}
    assert (parsed.tables, parsed.table_size) == (None, None)
    warnings = " | ".join(parsed.warnings)
    assert "--tables: memory has no such option (a host test, it has no tables); dropped" in warnings
    assert "--table-size: memory has no such option" in warnings
    assert "--db-ps-mode: a database driver's option: memory is a host test" in warnings
    assert "--memory-colour: not an option of memory; dropped" in warnings
    proposal = command_to_scenario(parsed)
    assert proposal.options == parsed.options and (proposal.tables, proposal.table_size) == (None, None)
    assert any(n.startswith("Connection options (driver=mysql, host=db1): dropped") for n in proposal.notes)
    assert "s3cret" not in str(parsed.to_dict()) + str(proposal)
    assert not any(n.startswith("Dataset") for n in proposal.notes)


def test_a_fileio_prepare_command_is_noted_as_done_by_benchapp() -> None:
    parsed = parse_command("sysbench fileio --file-total-size=64M --file-test-mode=rndrw --file-num=16 prepare")
    assert (parsed.test, parsed.command) == ("fileio", "prepare") and parsed.warnings == []
    assert parsed.options == {"file-total-size": "64M", "file-test-mode": "rndrw", "file-num": 16}
    notes = command_to_scenario(parsed).notes
    assert notes == ["The command was 'prepare': benchapp prepares fileio's test files on the client host before "
                     "each run and removes them after it, by itself."]
    cleanup = command_to_scenario(parse_command("sysbench cpu cleanup")).notes
    assert cleanup == ["The command was 'cleanup': cpu has no cleanup step; benchapp runs it."]


@pytest.mark.parametrize("text, written, message", [
    ("sysbench memory --memory-block-size=1Q run", "--memory-block-size",
     "'1Q' is not a size such as 1K, 512M or 2G"),
    ("sysbench cpu --cpu-max-prime=2 run", "--cpu-max-prime", "2 is below the minimum 3"),
    ("sysbench fileio --file-test-mode=rndrx --file-total-size=8M run", "--file-test-mode",
     "'rndrx' is not one of seqwr"),
])
def test_a_bad_host_option_value_is_dropped_with_a_warning_naming_it(text: str, written: str, message: str) -> None:
    parsed = parse_command(text)
    option = written.lstrip("-")
    assert option not in parsed.options
    named = [w for w in parsed.warnings if w.startswith(f"{written}: ") and w.endswith("; dropped")]
    assert len(named) == 1 and message in named[0], parsed.warnings
    if parsed.test == "fileio":  # without its mode fileio cannot be saved, and the reader says so
        assert parsed.warnings[-1] == ("--file-test-mode: fileio needs a test mode (seqwr, seqrewr, seqrd, rndrd, "
                                       "rndwr or rndrw); the scenario cannot be saved without it")
