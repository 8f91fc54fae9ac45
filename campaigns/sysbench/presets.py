"""Ready-made scenarios for the workloads the five seed white papers measure.

Each preset names the seed it reproduces, the test and the options that define the workload; the dataset,
thread counts and duration the seed used ride along where it states them, for a campaign to start from.
Options are validated against the catalogue when this module is imported, so a preset can never hold
something validate_options would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from campaigns.sysbench.catalogue import validate_options


@dataclass(frozen=True)
class Preset:
    """A named scenario from a seed: `options` exclude tables, table size, threads and time, held apart."""

    key: str
    label: str
    seed: str
    test: str
    options: dict[str, object]
    notes: str
    tables: int | None = None
    table_size: int | None = None
    threads: tuple[int, ...] = field(default=())
    time_s: int | None = None


def _preset(key: str, label: str, seed: str, test: str, options: Mapping[str, object], notes: str, *,
            tables: int | None = None, table_size: int | None = None, threads: tuple[int, ...] = (),
            time_s: int | None = None) -> Preset:
    return Preset(key=key, label=label, seed=seed, test=test, options=validate_options(test, options),
                  notes=notes, tables=tables, table_size=table_size, threads=threads, time_s=time_s)


# --- seed 001: TDSQL-C for MySQL vs TencentDB for MySQL, sysbench 1.0.20 ------------------------------------------

_S001_NOTE = (
    "Seed 001 prints its commands cut off after '--mys', so the options are read from its definitions: "
    "POINT SELECT scenarios run only the point SELECTs of a transaction, RANGE SELECT scenarios only its "
    "range SELECTs. Its parameter table lists skip-trx, used here for the read-only scenarios (as the same "
    "vendor's seed 003 does); read-write keeps transactions, which skip-trx would break with duplicate-key "
    "errors. Dataset shown is the full-cache one (250 x 25,000); the big-dataset (150-600 x 0.8-6 M rows) and "
    "1 TB single-table (1 x 4,000,000,000, more than sysbench 1.0's signed INTEGER id can hold) variants use "
    "the same commands. Concurrency is set per instance size."
)

_SEED_001 = [
    _preset("s001-write", "Write (oltp_write_only)", "001", "oltp_write_only", {}, _S001_NOTE,
            tables=250, table_size=25_000),
    _preset("s001-read-point-select", "Read, POINT SELECT", "001", "oltp_read_only",
            {"range-selects": False, "skip-trx": True}, _S001_NOTE, tables=250, table_size=25_000),
    _preset("s001-read-range-select", "Read, RANGE SELECT", "001", "oltp_read_only",
            {"point-selects": 0, "skip-trx": True}, _S001_NOTE, tables=250, table_size=25_000),
    _preset("s001-read-write-point-select", "Read-write, POINT SELECT", "001", "oltp_read_write",
            {"range-selects": False}, _S001_NOTE, tables=250, table_size=25_000),
    _preset("s001-read-write-range-select", "Read-write, RANGE SELECT", "001", "oltp_read_write",
            {"point-selects": 0}, _S001_NOTE, tables=250, table_size=25_000),
]

# --- seed 000 part 1: TencentDB for MariaDB main specs, sysbench 0.5 oltp.lua modified ---------------------------

_ONE_INDEX_UPDATE = {
    "oltp-simple-ranges": 0,
    "oltp-sum-ranges": 0,
    "oltp-order-ranges": 0,
    "oltp-distinct-ranges": 0,
    "oltp-index-updates": 1,
    "oltp-non-index-updates": 0,
    "oltp-delete-inserts": 0,
}

_SEED_000_MAIN = [
    _preset(
        "s000-oltp-4-selects-1-update", "oltp: 4 point selects + 1 index update", "000", "oltp_legacy/oltp.lua",
        {"oltp-point-selects": 4, **_ONE_INDEX_UPDATE, "oltp-read-only": False, "rand-type": "special",
         "percentile": 99},
        "Seed 000 ran a modified oltp.lua ('our_oltp.lua') doing 4 SELECTs and 1 UPDATE of the indexed column "
        "per transaction, passing only --oltp-point-selects=4; the stock legacy oltp.lua does the same with the "
        "other statement counts set to 0, as here. Tables: 8-60 by instance size, 40 M rows each (10 M for the "
        "tuned run); 128 threads per client on 1-6 clients, QPS and TPS summed; 30 minutes.",
        table_size=40_000_000, threads=(128,), time_s=1800,
    ),
]

# --- seeds 000 part 2 and 004: strong sync vs MySQL, read / write / hybrid at 50-1000 threads --------------------

_SYNC_NOTE = (
    "Seed {seed} compares its database with open-source MySQL at 50, 100, 200, 500 and 1,000 threads on 10 "
    "tables x 2,180,000 rows, reporting QPS and average and 99th percentile response time. Its commands set "
    "--max-time=360000 --max-requests=2000000000, i.e. no practical limit; choose a duration."
)
_SYNC_THREADS = (50, 100, 200, 500, 1000)


def _sync_presets(seed: str) -> list[Preset]:
    note = _SYNC_NOTE.format(seed=seed)
    common: dict[str, object] = {"percentile": 99, "report-interval": 1}
    size: dict[str, Any] = {"tables": 10, "table_size": 2_180_000, "threads": _SYNC_THREADS}
    return [
        _preset(f"s{seed}-read", "Read (select.lua)", seed, "oltp_legacy/select.lua", common, note, **size),
        _preset(f"s{seed}-write-non-index", "Write (update_non_index.lua)", seed,
                "oltp_legacy/update_non_index.lua", common, note, **size),
        _preset(
            f"s{seed}-hybrid", "Hybrid: 1 point select + 1 index update", seed, "oltp_legacy/oltp.lua",
            {"oltp-read-only": False, "oltp-point-selects": 1, **_ONE_INDEX_UPDATE, **common},
            note + " The hybrid run used a modified 'oltp_new.lua' whose mix is 1 point SELECT and 1 index "
            "UPDATE; delete-inserts is set to 0 here because the stock script would otherwise add a "
            "DELETE+INSERT pair the seed's command does not mention.",
            **size,
        ),
    ]


# --- seed 002: Huawei DDM, sysbench 1.0.20 legacy oltp.lua --------------------------------------------------------

_SEED_002 = [
    _preset(
        "s002-ddm-oltp", "DDM oltp (legacy oltp.lua, secondary id key, range size 5)", "002",
        "oltp_legacy/oltp.lua",
        {"oltp-secondary": True, "oltp-auto-inc": True, "oltp-range-size": 5, "oltp-skip-trx": False,
         "report-interval": 1},
        "Seed 002 pre-creates one logical table with a sharding clause (dbpartition by hash(id)) and comments "
        "out the CREATE TABLE in common.lua, so sysbench's prepare only loads rows (320 million in all); our legacy "
        "scripts do that with skip-create-table=on, left to the scenario whose target has the table. Its run "
        "also passes --forced-shutdown=0, left out here: sysbench 1.0.20 then ends every run with a FATAL line "
        "and rc 2 at the time limit. Results are at 512 threads (8 and 16 vCPU) and 1,000 (32 vCPU); its printed "
        "commands use 256. oltp-secondary cannot be prepared on PostgreSQL.",
        tables=1, table_size=320_000_000, threads=(512, 1000), time_s=300,
    ),
]

# --- seed 003: TencentDB for MySQL old vs new network, sysbench 1.0.20 --------------------------------------------

# The seed's `--threads={2~3000}`: powers of two from 2, and 3,000 itself.
_S003_THREADS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3000)
_S003_NOTE = (
    "Seed 003 runs each scenario at 2 to 3,000 threads ({2~3000}: read as powers of two plus 3,000) on "
    "10 tables x 10,000,000 rows for 300 s, and compares QPS curves."
)
_S003_COMMON = {"percentile": 95, "report-interval": 1}
_S003_SIZE: dict[str, Any] = {"tables": 10, "table_size": 10_000_000, "threads": _S003_THREADS, "time_s": 300}

_SEED_003 = [
    _preset("s003-write-only", "OLTP write-only", "003", "oltp_write_only", _S003_COMMON, _S003_NOTE,
            **_S003_SIZE),
    _preset("s003-read-only", "OLTP read-only (skip-trx)", "003", "oltp_read_only",
            {**_S003_COMMON, "skip-trx": True}, _S003_NOTE, **_S003_SIZE),
    _preset("s003-read-write", "OLTP read-write", "003", "oltp_read_write", _S003_COMMON, _S003_NOTE,
            **_S003_SIZE),
]

PRESETS: dict[str, Preset] = {
    preset.key: preset
    for preset in [*_SEED_000_MAIN, *_sync_presets("000"), *_SEED_001, *_SEED_002, *_SEED_003,
                   *_sync_presets("004")]
}
