"""The server settings a settings variant may change: an allowlist per driver, each setting with its type and
bounds, and the settings that can never be on it. The one place that says which settings benchapp changes.

A variant changes a server's global settings, often on a shared, production-like server, so a setting is on
the list only when a performance engineer sweeps it and no value in its bounds can write a file, run a command,
load a library, change who may log in, lock sessions out (read-only mode, connection limits, time-outs), or
weaken what keeps data safe (fsync, full_page_writes, doublewrite…). Anything not listed is refused.

An administrator may add settings (BENCHAPP_VARIANT_SETTINGS_EXTRA, parsed here); a setting that is refused for
good (`refused_for_good`: by name or by what its name says it touches) can never be added: the configuration is
refused at start-up (campaigns.apps). docs/variants.md lists both and why.

Pure Python but for reading that one setting from django.conf (no ORM, no connection).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from campaigns.settings_variants import DRIVERS, NUMBER

KINDS = ("bool", "int", "real", "enum", "size", "time")
_TRUE = {"on", "1", "true", "yes"}
_FALSE = {"off", "0", "false", "no"}
KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
TIB = 1024 * GIB
UINT32 = 2**32 - 1


@dataclass(frozen=True, slots=True)
class Allowed:
    """One setting a variant may change: its kind, its bounds (sizes in bytes, times in the unit of `unit`),
    its choices (an enum), the unit a bare number means (PostgreSQL: "kB", "8kB", "MB", "ms", "s"; MySQL sizes
    are bytes), and whether a size is memory the server allocates (then it must fit in the server's memory)."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    memory: bool = False


def _b(*names: str) -> list[Allowed]:
    return [Allowed(name, "bool") for name in names]


def _i(name: str, low: float, high: float, kind: str = "int") -> Allowed:
    return Allowed(name, kind, low, high)


def _e(name: str, *choices: str) -> Allowed:
    return Allowed(name, "enum", choices=choices)


def _mem(name: str, low: float, unit: str = "B") -> Allowed:
    return Allowed(name, "size", low, None, unit=unit, memory=True)


ISOLATION_MYSQL = ("READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE")

# MariaDB and MySQL: InnoDB flushing, I/O capacity, buffer and log sizes, purge and concurrency, the thread pool,
# sync_binlog, isolation, table and thread caches, per-session buffers, the optimizer's search. Sizes are bytes
# (64M, 1G are accepted and written as bytes: SET GLOBAL takes no unit).
MYSQL: tuple[Allowed, ...] = (
    _i("innodb_flush_log_at_trx_commit", 0, 3),
    _i("innodb_flush_log_at_timeout", 1, 2700),
    _i("sync_binlog", 0, UINT32),
    _i("innodb_io_capacity", 100, UINT32),
    _i("innodb_io_capacity_max", 100, UINT32),
    _i("innodb_lru_scan_depth", 100, UINT32),
    _i("innodb_flush_neighbors", 0, 2),
    _i("innodb_max_dirty_pages_pct", 0, 99.999, "real"),
    _i("innodb_max_dirty_pages_pct_lwm", 0, 99.999, "real"),
    _i("innodb_adaptive_flushing_lwm", 0, 70, "real"),
    _i("innodb_flushing_avg_loops", 1, 1000),
    *_b("innodb_adaptive_flushing", "innodb_flush_sync", "innodb_adaptive_hash_index", "innodb_random_read_ahead",
        "innodb_stats_on_metadata", "innodb_deadlock_detect"),
    _e("innodb_change_buffering", "none", "inserts", "deletes", "changes", "purges", "all"),
    _i("innodb_change_buffer_max_size", 0, 50),
    _i("innodb_purge_batch_size", 1, 5000),
    _i("innodb_purge_threads", 1, 32),
    _i("innodb_max_purge_lag", 0, UINT32),
    _i("innodb_max_purge_lag_delay", 0, 10_000_000),
    _i("innodb_thread_concurrency", 0, 1000),
    _i("innodb_concurrency_tickets", 1, UINT32),
    _i("innodb_commit_concurrency", 0, 1000),
    _i("innodb_spin_wait_delay", 0, 6000),
    _i("innodb_sync_spin_loops", 0, UINT32),
    _i("innodb_old_blocks_pct", 5, 95),
    _i("innodb_old_blocks_time", 0, UINT32),
    _i("innodb_read_ahead_threshold", 0, 64),
    _i("innodb_read_io_threads", 1, 64),
    _i("innodb_write_io_threads", 1, 64),
    _i("innodb_fill_factor", 10, 100),
    _i("innodb_autoextend_increment", 1, 1000),
    _i("innodb_adaptive_max_sleep_delay", 0, 1_000_000),
    _mem("innodb_buffer_pool_size", 5 * MIB),
    _mem("innodb_log_buffer_size", 256 * KIB),
    _mem("key_buffer_size", 8),
    _mem("query_cache_size", 0),
    _mem("query_cache_limit", 0),
    _e("query_cache_type", "OFF", "ON", "DEMAND", "0", "1", "2"),
    _mem("tmp_table_size", 1024),
    _mem("max_heap_table_size", 16 * KIB),
    _mem("join_buffer_size", 128),
    _mem("sort_buffer_size", 1024),
    _mem("read_buffer_size", 8 * KIB),
    _mem("read_rnd_buffer_size", 1),
    _mem("binlog_cache_size", 4 * KIB),
    _mem("binlog_stmt_cache_size", 4 * KIB),
    _e("transaction_isolation", *ISOLATION_MYSQL),
    _e("tx_isolation", *ISOLATION_MYSQL),
    _i("table_open_cache", 1, 1_048_576),
    _i("table_definition_cache", 400, 2_097_152),
    _i("thread_cache_size", 0, 16_384),
    _i("thread_pool_size", 1, 1024),
    _i("thread_pool_stall_limit", 10, 60_000),
    _i("thread_pool_oversubscribe", 1, 1000),
    _i("thread_pool_max_threads", 1, 65_536),
    _i("thread_pool_idle_timeout", 1, 86_400),
    _i("optimizer_search_depth", 0, 62),
    _i("optimizer_prune_level", 0, 2),
    _i("eq_range_index_dive_limit", 0, UINT32),
)

# PostgreSQL: commit and WAL writing that keep every committed transaction's safety on crash but its timing
# (synchronous_commit loses at most the last moments of commits, never consistency), checkpoints, memory for
# sorts and maintenance, I/O concurrency, the planner's costs and switches, JIT, parallelism, the background
# writer, autovacuum's pace. A bare number is in the setting's own unit (pg_settings.unit).
_PG_PLANNER_SWITCHES = (
    "enable_async_append", "enable_bitmapscan", "enable_gathermerge", "enable_hashagg", "enable_hashjoin",
    "enable_incremental_sort", "enable_indexscan", "enable_indexonlyscan", "enable_material", "enable_memoize",
    "enable_mergejoin", "enable_nestloop", "enable_parallel_append", "enable_parallel_hash",
    "enable_partition_pruning", "enable_partitionwise_join", "enable_partitionwise_aggregate",
    "enable_presorted_aggregate", "enable_seqscan", "enable_sort", "enable_tidscan")
_COST_MAX = 1e10
PGSQL: tuple[Allowed, ...] = (
    _e("synchronous_commit", "on", "off", "local", "remote_write", "remote_apply"),
    _e("wal_compression", "on", "off", "pglz", "lz4", "zstd", "true", "false", "yes", "no", "1", "0"),
    Allowed("wal_writer_delay", "time", 1, 10_000, unit="ms"),
    Allowed("wal_writer_flush_after", "size", 0, 1 * GIB, unit="8kB"),
    _mem("wal_buffers", -1, unit="8kB"),
    *_b("wal_recycle", "wal_init_zero"),
    _i("commit_delay", 0, 100_000),
    _i("commit_siblings", 0, 1000),
    Allowed("checkpoint_timeout", "time", 30, 86_400, unit="s"),
    _i("checkpoint_completion_target", 0, 1, "real"),
    Allowed("checkpoint_flush_after", "size", 0, 2 * MIB, unit="8kB"),
    Allowed("max_wal_size", "size", 32 * MIB, 1 * TIB, unit="MB"),
    Allowed("min_wal_size", "size", 32 * MIB, 1 * TIB, unit="MB"),
    _mem("shared_buffers", 128 * KIB, unit="8kB"),
    _mem("work_mem", 64 * KIB, unit="kB"),
    _i("hash_mem_multiplier", 1, 1000, "real"),
    _mem("maintenance_work_mem", 1 * MIB, unit="kB"),
    _mem("autovacuum_work_mem", -1, unit="kB"),
    _mem("logical_decoding_work_mem", 64 * KIB, unit="kB"),
    _mem("temp_buffers", 800 * KIB, unit="8kB"),
    _mem("effective_cache_size", 8 * KIB, unit="8kB"),
    _i("effective_io_concurrency", 0, 1000),
    _i("maintenance_io_concurrency", 0, 1000),
    *(_i(name, 0, _COST_MAX, "real") for name in (
        "random_page_cost", "seq_page_cost", "cpu_tuple_cost", "cpu_index_tuple_cost", "cpu_operator_cost",
        "parallel_tuple_cost", "parallel_setup_cost")),
    *_b("jit", "parallel_leader_participation", "geqo", "track_io_timing", "track_wal_io_timing",
        *_PG_PLANNER_SWITCHES),
    *(_i(name, -1, _COST_MAX, "real") for name in ("jit_above_cost", "jit_inline_above_cost",
                                                    "jit_optimize_above_cost")),
    _i("max_parallel_workers_per_gather", 0, 1024),
    _i("max_parallel_workers", 0, 1024),
    _i("max_parallel_maintenance_workers", 0, 1024),
    _i("default_statistics_target", 1, 10_000),
    _i("from_collapse_limit", 1, 1000),
    _i("join_collapse_limit", 1, 1000),
    _i("geqo_threshold", 2, 1000),
    _e("plan_cache_mode", "auto", "force_generic_plan", "force_custom_plan"),
    Allowed("bgwriter_delay", "time", 10, 10_000, unit="ms"),
    _i("bgwriter_lru_maxpages", 0, 1_073_741_823),
    _i("bgwriter_lru_multiplier", 0, 10, "real"),
    Allowed("bgwriter_flush_after", "size", 0, 2 * MIB, unit="8kB"),
    Allowed("backend_flush_after", "size", 0, 2 * MIB, unit="8kB"),
    *_b("autovacuum"),
    Allowed("autovacuum_naptime", "time", 1, 86_400, unit="s"),
    _i("autovacuum_vacuum_cost_delay", -1, 100, "real"),
    _i("autovacuum_vacuum_cost_limit", -1, 10_000),
    *(_i(name, 0, 100, "real") for name in ("autovacuum_vacuum_scale_factor", "autovacuum_analyze_scale_factor",
                                            "autovacuum_vacuum_insert_scale_factor")),
    *(_i(name, -1, 2_147_483_647) for name in ("autovacuum_vacuum_threshold", "autovacuum_analyze_threshold",
                                               "autovacuum_vacuum_insert_threshold")),
    _i("vacuum_cost_delay", 0, 100, "real"),
    _i("vacuum_cost_limit", 1, 10_000),
    *(_i(name, 0, 10_000) for name in ("vacuum_cost_page_hit", "vacuum_cost_page_miss", "vacuum_cost_page_dirty")),
)

BUILT_IN: dict[str, tuple[Allowed, ...]] = {"mysql": MYSQL, "pgsql": PGSQL}

# ---------------------------------------------------------------- refused for good

# Why a setting can never be on the list, by what it touches: explicit names first, then what a name says.
_REFUSED_NAMES: dict[str, dict[str, str]] = {
    "mysql": {
        **dict.fromkeys(("general_log", "sql_log_off", "sql_log_bin", "slow_query_log", "log_output",
                         "log_error", "log_warnings", "binlog_format", "log_bin_trust_function_creators"),
                        "logging: it writes the workload's SQL to files, or stops the server's own record"),
        **dict.fromkeys(("read_only", "super_read_only", "innodb_read_only", "offline_mode"),
                        "read-only mode: every other user's writes fail"),
        **dict.fromkeys(("max_connections", "max_user_connections", "max_connect_errors", "max_password_errors",
                         "wait_timeout", "interactive_timeout", "net_read_timeout", "net_write_timeout",
                         "lock_wait_timeout", "innodb_lock_wait_timeout", "max_execution_time",
                         "max_statement_time", "connect_timeout", "skip_networking", "bind_address", "port"),
                        "connection limits and time-outs: they lock other users out or cut their sessions"),
        **dict.fromkeys(("init_connect", "init_file", "init_slave", "event_scheduler", "local_infile"),
                        "it runs SQL or reads files on the server's behalf"),
        **dict.fromkeys(("require_secure_transport", "default_password_lifetime", "disconnect_on_expired_password",
                         "old_passwords", "default_authentication_plugin", "authentication_policy",
                         "secure_auth"),
                        "authentication: it changes who may log in and how"),
        **dict.fromkeys(("innodb_doublewrite", "innodb_force_recovery", "innodb_checksum_algorithm",
                         "innodb_flush_method", "innodb_fast_shutdown", "innodb_use_atomic_writes",
                         "innodb_log_checksums", "innodb_undo_log_truncate", "sync_frm", "sync_master_info",
                         "sync_relay_log", "sync_relay_log_info", "innodb_stats_persistent"),
                        "data safety: it decides whether data survives a crash"),
        **dict.fromkeys(("server_id", "gtid_mode", "gtid_domain_id", "gtid_strict_mode", "gtid_slave_pos",
                         "rpl_semi_sync_master_enabled", "rpl_semi_sync_slave_enabled"),
                        "replication: other servers depend on it"),
        "sql_mode": "it changes what the server's other users' statements mean",
        "autocommit": "it changes what the server's other users' statements mean",
    },
    "pgsql": {
        **dict.fromkeys(("fsync", "full_page_writes", "wal_sync_method", "zero_damaged_pages",
                         "ignore_checksum_failure", "ignore_system_indexes", "ignore_invalid_pages",
                         "allow_system_table_mods", "allow_in_place_tablespaces", "data_sync_retry",
                         "wal_level", "session_replication_role", "autovacuum_freeze_max_age",
                         "autovacuum_multixact_freeze_max_age", "vacuum_failsafe_age",
                         "vacuum_multixact_failsafe_age", "restart_after_crash", "remove_temp_files_after_crash",
                         "exit_on_error"),
                        "data safety: it decides whether data survives a crash or stays consistent"),
        **dict.fromkeys(("default_transaction_read_only", "transaction_read_only"),
                        "read-only mode: every other user's writes fail"),
        **dict.fromkeys(("max_connections", "superuser_reserved_connections", "reserved_connections",
                         "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
                         "idle_session_timeout", "transaction_timeout", "listen_addresses", "port",
                         "client_connection_check_interval", "synchronous_standby_names"),
                        "connection limits and time-outs: they lock other users out, cut their sessions, or "
                        "hold every commit"),
        **dict.fromkeys(("password_encryption", "db_user_namespace", "authentication_timeout",
                         "createrole_self_grant", "row_security", "lo_compat_privileges",
                         "restrict_nonsystem_relation_kind", "check_function_bodies", "event_triggers"),
                        "authentication and privileges: it changes who may log in or do what"),
        **dict.fromkeys(("search_path", "default_tablespace", "temp_tablespaces", "jit_provider",
                         "shared_preload_libraries", "session_preload_libraries", "local_preload_libraries"),
                        "it decides which code, library or storage every session uses"),
        **dict.fromkeys(("archive_mode", "max_wal_senders", "max_replication_slots", "wal_keep_size",
                         "max_slot_wal_keep_size", "hot_standby", "hot_standby_feedback"),
                        "replication and archiving: other servers depend on it, or it fills the disk"),
        **dict.fromkeys(("logging_collector", "unix_socket_permissions", "unix_socket_group", "event_source",
                         "update_process_title", "cluster_name"),
                        "it decides where the server writes files or who may reach it"),
    },
}
# What a name says it touches, for both drivers: (pattern, why). Matched with re.search on the name.
_REFUSED_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"_file$|^file_|_files$|filename|file_mode|_dir$|_dir_|directory|directories|path|datadir|tmpdir|socket|pid",
     "it names a file or a directory: the server would write or read there"),
    (r"command", "it names a command the server runs"),
    (r"librar|plugin|preload|extension", "it loads a library or plugin into the server"),
    (r"ssl|tls|password|auth|hba|ident|krb|gss|secure|_key$|cert", "authentication or encryption"),
    (r"read_only", "read-only mode: every other user's writes fail"),
    (r"connections$|connection_limit", "connection limits: they lock other users out"),
    (r"^log_|^debug_|^trace_|general_log|slow_query|^syslog|^audit",
     "logging: it writes the workload's SQL (and what it carries) to files"),
    (r"^archive_|^recovery_|^restore_|^primary_|^promote|^standby|^replica|^slave_|^master_|^rpl_|^gtid_"
     r"|^wsrep_|^binlog_(format|checksum|row_image)",
     "replication, archiving and recovery: other servers depend on it"),
    (r"^init_|^event_", "it runs SQL on the server's behalf"),
)


def refused_for_good(driver: str, name: str) -> str | None:
    """Why `name` can never be a variant's setting on this driver (not even added by an administrator), or
    None when it is not refused for good."""
    why = _REFUSED_NAMES.get(driver, {}).get(name)
    if why:
        return why
    for pattern, reason in _REFUSED_PATTERNS:
        if re.search(pattern, name):
            return reason
    return None


# ---------------------------------------------------------------- the list in force (built-in and added)


class AllowlistConfigError(ValueError):
    """BENCHAPP_VARIANT_SETTINGS_EXTRA is not a list of settings that may be added; the message says which."""


_SIZE_MYSQL = re.compile(r"^(\d+)\s*([KMGT]?)(?:I?B)?$", re.IGNORECASE)
_SIZE_PG = re.compile(r"^(\d+)\s*(B|kB|MB|GB|TB)?$")
_PG_SIZE_UNITS = {"B": 1, "kB": KIB, "8kB": 8 * KIB, "MB": MIB, "GB": GIB, "TB": TIB}
_MYSQL_SIZE_UNITS = {"": 1, "K": KIB, "M": MIB, "G": GIB, "T": TIB}
_TIME_PG = re.compile(r"^(\d+)\s*(us|ms|s|min|h|d)?$")
_PG_TIME_MS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def extras_parse(text: str) -> dict[str, tuple[Allowed, ...]]:
    """Settings an administrator adds, `driver name kind [low..high | a|b|c] [unit=U] [memory]` separated by
    ';' (`mysql innodb_log_file_size size 4M..8G; pgsql enable_group_by_reordering bool`). Bounds of a size in
    bytes or with a unit; of a time in the unit given. AllowlistConfigError names an entry that is malformed or
    refused for good."""
    added: dict[str, list[Allowed]] = {"mysql": [], "pgsql": []}
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        words = entry.split()
        if len(words) < 3:
            raise AllowlistConfigError(f"{entry!r}: write 'driver name kind [low..high | a|b|c] [unit=U] [memory]'")
        driver, name, kind, *rest = words
        driver = {"mariadb": "mysql", "postgresql": "pgsql"}.get(driver.lower(), driver.lower())
        if driver not in added:
            raise AllowlistConfigError(f"{entry!r}: the driver is mysql or pgsql")
        if not re.match(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$", name):
            raise AllowlistConfigError(f"{entry!r}: {name!r} is not a setting's name")
        if kind not in KINDS:
            raise AllowlistConfigError(f"{entry!r}: the kind is one of {', '.join(KINDS)}")
        why = refused_for_good(driver, name)
        if why:
            raise AllowlistConfigError(f"{entry!r}: {name} is refused for good ({why}) and cannot be added")
        low = high = None
        choices: tuple[str, ...] = ()
        unit = ""
        memory = False
        for word in rest:
            if word == "memory":
                memory = True
            elif word.startswith("unit="):
                unit = word[5:]
            elif kind == "enum":
                choices = tuple(c for c in word.split("|") if c)
            elif ".." in word:
                a, _, b = word.partition("..")
                try:
                    low = _bound(driver, kind, a, unit) if a else None
                    high = _bound(driver, kind, b, unit) if b else None
                except ValueError as exc:
                    raise AllowlistConfigError(f"{entry!r}: {exc}") from None
            else:
                raise AllowlistConfigError(f"{entry!r}: {word!r} is neither low..high, a|b, unit=U nor memory")
        if kind == "enum" and not choices:
            raise AllowlistConfigError(f"{entry!r}: an enum needs its values, a|b|c")
        if kind in ("int", "real", "size", "time") and high is None and not memory:
            raise AllowlistConfigError(f"{entry!r}: a {kind} needs an upper bound (low..high)")
        added[driver].append(Allowed(name, kind, low, high, choices, unit, memory))
    return {driver: tuple(items) for driver, items in added.items()}


def _bound(driver: str, kind: str, text: str, unit: str) -> float:
    if kind == "size":
        number = size_bytes(driver, text, unit or ("B" if driver == "mysql" else "B"))
        if number is None:
            raise ValueError(f"{text!r} is not a size")
        return number
    if not NUMBER.match(text):
        raise ValueError(f"{text!r} is not a number")
    return float(text)


@functools.cache
def _allowlist(driver: str, extra: str) -> dict[str, Allowed]:
    found = {a.name: a for a in BUILT_IN[driver]}
    found.update({a.name: a for a in extras_parse(extra).get(driver, ())})
    return found


def allowlist(driver: str) -> dict[str, Allowed]:
    """The settings a variant may change on this driver: the built-in ones and an administrator's additions."""
    from django.conf import settings

    return _allowlist(driver, str(getattr(settings, "BENCHAPP_VARIANT_SETTINGS_EXTRA", "") or ""))


# ---------------------------------------------------------------- values against their bounds


def size_bytes(driver: str, text: str, unit: str) -> int | None:
    """A size in bytes: MySQL's 64M, 1G, 1TiB or a number of bytes; PostgreSQL's 64MB, 1GB or a number of
    `unit` (its pg_settings unit). None when it is not a size."""
    text = text.strip()
    if driver == "mysql":
        match = _SIZE_MYSQL.match(text)
        return int(match.group(1)) * _MYSQL_SIZE_UNITS[match.group(2).upper()] if match else None
    match = _SIZE_PG.match(text)
    if not match:
        return None
    return int(match.group(1)) * _PG_SIZE_UNITS[match.group(2) or unit or "B"]


def _time_in_unit(text: str, unit: str) -> float | None:
    match = _TIME_PG.match(text.strip())
    if not match:
        return None
    if not match.group(2):
        return float(match.group(1))
    return int(match.group(1)) * _PG_TIME_MS[match.group(2)] / _PG_TIME_MS[unit or "ms"]


def size_text(number: float) -> str:
    """1073741824 -> "1 GiB" (what a refusal shows)."""
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(number) >= size:
            return f"{number / size:.1f} {unit}".replace(".0 ", " ")
    return f"{number:.0f} B"


@dataclass(frozen=True, slots=True)
class Memory:
    """What benchapp knows of a target server's memory: bytes, and where the figure comes from. Not known: the
    most benchapp allows where it does not know the server's memory (BENCHAPP_VARIANT_MEMORY_UNKNOWN_MIB)."""

    bytes: int
    source: str
    known: bool = True


def setting_allowed(driver: str, name: str, value: str, *, memory: Memory | None = None) -> tuple[str, str]:
    """(the value to write, "") when a variant may give `name` this value on this driver, else ("", why): not
    on the allowlist (and why when refused for good), not of its kind, or out of its bounds (a memory size more
    than `memory`, naming the figure). A MySQL size is written as bytes."""
    allowed = allowlist(driver).get(name)
    if allowed is None:
        why = refused_for_good(driver, name)
        if why:
            return "", f"{name}: refused for good ({why})"
        return "", (f"{name}: not on benchapp's allowlist of performance settings for {driver} (docs/variants.md; "
                    "an administrator may add it with BENCHAPP_VARIANT_SETTINGS_EXTRA)")
    text = value.strip()
    if allowed.kind == "bool":
        words = (_TRUE | _FALSE) - ({"yes", "no"} if driver == "mysql" else set())  # SET GLOBAL refuses yes/no
        if text.lower() not in words:
            return "", f"{name}: {text!r} is not on or off"
        return text, ""
    if allowed.kind == "enum":
        if text.lower() not in {c.lower() for c in allowed.choices}:
            return "", f"{name}: {text!r} is not one of {', '.join(allowed.choices)}"
        return text, ""
    number: float | None
    shown = text
    if allowed.kind == "int":
        number = float(text) if re.match(r"^[+-]?\d+$", text) else None
        what = "a whole number"
    elif allowed.kind == "real":
        number = float(text) if NUMBER.match(text) else None
        what = "a number"
    elif allowed.kind == "size":
        number = size_bytes(driver, text, allowed.unit)
        if number is None and re.match(r"^-1$", text) and (allowed.low or 0) < 0:
            return text, ""  # PostgreSQL's "use the default" for wal_buffers, autovacuum_work_mem
        what = "a size (" + ("bytes, or 64M, 1G" if driver == "mysql" else "64MB, 1GB, or a number of "
                            + (allowed.unit or "bytes")) + ")"
        if number is not None and driver == "mysql":
            shown = str(int(number))
    else:
        number = _time_in_unit(text, allowed.unit)
        what = f"a time (10ms, 5s, 1min, or a number of {allowed.unit or 'ms'})"
    if number is None:
        return "", f"{name}: {text!r} is not {what}"
    low, high = allowed.low, allowed.high
    if low is not None and number < low:
        return "", f"{name}: {text} is less than its lowest value here, {_bound_text(allowed, low)}"
    if high is not None and number > high:
        return "", f"{name}: {text} is more than its highest value here, {_bound_text(allowed, high)}"
    if allowed.memory and memory is not None and number > memory.bytes:
        if not memory.known:
            return "", (f"{name}: {text} ({size_text(number)}) is more than {size_text(memory.bytes)}, the most "
                        f"benchapp allows where it does not know the server's memory ({memory.source})")
        return "", (f"{name}: {text} ({size_text(number)}) is more than the server's memory, "
                    f"{size_text(memory.bytes)} ({memory.source})")
    return shown, ""


def _bound_text(allowed: Allowed, bound: float) -> str:
    if allowed.kind == "size":
        return size_text(bound)
    if allowed.kind == "time":
        return f"{bound:g} {allowed.unit or 'ms'}"
    return f"{bound:g}"


def settings_allowed(driver: str, settings: dict[str, str], *,
                     memory: Memory | None = None) -> tuple[dict[str, str], list[str]]:
    """The settings with the values to write, and one sentence per setting refused (see setting_allowed)."""
    written: dict[str, str] = {}
    problems: list[str] = []
    for name, value in settings.items():
        shown, problem = setting_allowed(driver, name, str(value), memory=memory)
        if problem:
            problems.append(problem)
        else:
            written[name] = shown
    return written, problems


def variants_allowlisted(variants: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Cleaned variants (campaigns.settings_variants.variants_clean) with their values as they are written (a
    MySQL size in bytes), and one sentence per setting refused, naming the variant, the driver and the setting.
    No memory bound here: that needs a target (campaigns.services.variants)."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for variant in variants:
        copy = dict(variant)
        for driver in DRIVERS:
            if variant.get(driver):
                written, refused = settings_allowed(driver, dict(variant[driver]))
                problems += [f"variant {variant['name']!r}, {driver}: {p}" for p in refused]
                copy[driver] = written
        out.append(copy)
    return out, problems
