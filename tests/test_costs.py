"""Per-query costs, the bound of a measurement, and peaks, knees and SLA points (campaigns.costs,
campaigns.comparison.curves), from stored figures; a real job's costs: tests/test_costs_runs.py."""
from __future__ import annotations

import pytest

from campaigns.comparison.curves import comparison_curves, curve, knee
from campaigns.costs import CostInputs, bound, job_costs

MYSQL_WINDOW = {
    "driver": "mysql", "start_t": 1.0, "end_t": 11.0,
    "start": {"Questions": 1000, "Com_commit": 50, "Com_rollback": 0, "Rows_read": 0, "Innodb_rows_read": 0,
              "Innodb_buffer_pool_reads": 100, "Innodb_buffer_pool_read_requests": 10_000, "Innodb_data_reads": 100,
              "Innodb_data_writes": 10, "Innodb_row_lock_waits": 0},
    "end": {"Questions": 21_000, "Com_commit": 1050, "Com_rollback": 0, "Rows_read": 400_000, "Innodb_rows_read": 0,
            "Innodb_buffer_pool_reads": 20_100, "Innodb_buffer_pool_read_requests": 210_000,
            "Innodb_data_reads": 20_100, "Innodb_data_writes": 2010, "Innodb_row_lock_waits": 30},
}


def test_costs_are_the_servers_own_counters_per_query_and_per_transaction():
    costs = job_costs(CostInputs(driver="mysql", threads=8, window=MYSQL_WINDOW, latency_avg_ms=4.0,
                                 threads_running=6.0, server_cpu_pct=150.0, server_cores=2, sysbench_cpu_pct=40.0,
                                 client_busy_share=0.0, rtt_ms=0.2))
    # 20,000 queries and 1,000 transactions in 10 s.
    assert costs["rows_read_per_query"] == 20.0  # MariaDB's Rows_read where Innodb_rows_read stays 0
    assert costs["bp_misses_per_1k_queries"] == 1000.0 and costs["bp_hit_pct"] == 90.0
    assert costs["data_reads_per_txn"] == 20.0 and costs["data_writes_per_txn"] == 2.0
    assert costs["row_lock_waits_per_s"] == 3.0 and costs["lock_waits_per_txn"] == 0.03
    # 1.5 cores at 2,000 QPS: 0.75 ms of CPU per query, 750 ms per 1,000.
    assert costs["server_cpu_ms_per_1k_queries"] == 750.0 and costs["server_cpu_share_pct"] == 75.0
    assert costs["client_cpu_ms_per_1k_queries"] == 200.0
    assert costs["rtt_share_pct"] == 5.0 and costs["threads_running"] == 6.0 and costs["threads_asked"] == 8.0


def test_what_was_not_stored_is_none_never_a_guess():
    costs = job_costs(CostInputs(driver="mysql", threads=4, window={}, queries=1000.0))
    assert all(costs[name] is None for name in ("rows_read_per_query", "bp_hit_pct", "server_cpu_ms_per_1k_queries",
                                                 "rtt_share_pct", "threads_running"))
    assert bound(costs).resource == "undecided"
    assert "server host's CPU" in bound(costs).evidence and "buffer-pool" in bound(costs).evidence


def test_postgresql_costs_read_its_block_counters():
    window = {"driver": "pgsql", "start_t": 0, "end_t": 10,
              "start": {"xact_commit": 0, "xact_rollback": 0, "tup_returned": 0, "tup_fetched": 0, "blks_read": 0,
                        "blks_hit": 0},
              "end": {"xact_commit": 1000, "xact_rollback": 0, "tup_returned": 5000, "tup_fetched": 5000,
                      "blks_read": 10, "blks_hit": 990}}
    costs = job_costs(CostInputs(driver="pgsql", threads=2, window=window, queries=20_000.0))
    assert costs["rows_read_per_query"] == 0.5 and costs["bp_hit_pct"] == 99.0
    assert costs["data_reads_per_txn"] == 0.01 and costs["row_lock_waits_per_s"] is None


@pytest.mark.parametrize(("changes", "resource", "words"), [
    ({"client_busy_share": 1.0, "server_cpu_share_pct": 60.0, "host_busy_pct": 99.0}, "undecided", "no resource"),
    ({"server_cpu_share_pct": 95.0}, "server-cpu", "95 % of its host's cores"),
    ({"server_cpu_share_pct": 60.0, "shared_host_pct": 97.0}, "host-cpu", "together used 97 % of the host"),
    ({"bp_hit_pct": 80.0, "data_reads_per_txn": 12.0, "bp_misses_per_1k_queries": 900.0}, "io", "80.0 %"),
    ({"lock_waits_per_txn": 0.2, "row_lock_waits_per_s": 40.0}, "locks", "20.0 row-lock waits per 100"),
    ({"rtt_ms": 0.9, "rtt_share_pct": 90.0}, "network", "90 % of a query's mean latency"),
    ({"threads_running": 2.0, "threads_asked": 64.0}, "concurrency", "2.0 statements at work for 64"),
    ({}, "undecided", "no resource benchapp samples was at its limit"),
])
def test_the_bound_names_what_ran_out_with_its_evidence(changes, resource, words):
    quiet = {"client_busy_share": 0.0, "server_cpu_share_pct": 40.0, "bp_hit_pct": 99.9, "data_reads_per_txn": 0.1,
             "lock_waits_per_txn": 0.0, "rtt_share_pct": 5.0, "threads_running": 8.0, "threads_asked": 8.0}
    found = bound({**quiet, **changes})
    assert found.resource == resource and words in found.evidence, found


def test_the_client_is_the_bound_only_where_validity_found_sysbench_saturated_and_the_network_comes_next():
    # Busy client CPUs alone may be other processes' (the verdict's host-busy): no bound of the server's.
    assert bound({"client_busy_share": 1.0, "rtt_share_pct": 95.0, "rtt_ms": 10.0}).resource == "network"
    assert bound({"client_busy_share": 0.5}, client_findings=True).resource == "client"
    assert "sysbench saturated" in bound({"client_busy_share": 0.5}, client_findings=True).evidence
    # Latency that is the round trip is the network's, however busy the shared host was.
    assert bound({"rtt_share_pct": 95.0, "rtt_ms": 10.0, "server_cpu_share_pct": 60.0,
                  "shared_host_pct": 97.0}).resource == "network"
    # Misses and reads per transaction are I/O's however busy the CPUs were (make test's load once made it host-cpu).
    assert bound({"bp_hit_pct": 94.0, "data_reads_per_txn": 14.0, "server_cpu_share_pct": 95.0,
                  "shared_host_pct": 99.0}).resource == "io"


def test_the_knee_is_the_count_before_scaling_falls_under_half_of_ideal():
    # 1→2: +90 % for +100 % (0.9); 2→4: +60 % (0.6); 4→8: +20 % (0.2): the knee is 4.
    assert knee([(1, 100.0), (2, 190.0), (4, 304.0), (8, 365.0)]) == 4
    assert knee([(1, 100.0), (2, 200.0), (4, 400.0)]) is None


def test_the_peak_knee_and_sla_point_of_a_ladder_and_its_sentence():
    points = [(1, 100.0, 2.0, 99.0), (2, 190.0, 3.0, 99.0), (4, 304.0, 9.0, 99.0), (8, 365.0, 30.0, 99.0),
              (16, 350.0, 80.0, 99.0)]
    c = curve(points, sla_ms=50.0)
    assert (c["peak_threads"], c["peak_qps"], c["peak_is_last"]) == (8, 365.0, False)
    assert c["knee_threads"] == 4 and (c["sla_threads"], c["sla_qps"], c["sla_broken_at"]) == (8, 365.0, 16)
    comparison = {"products": [{"name": "MariaDB"}], "groups": [{"rows": [
        {"spec_id": 1, "spec": "2-core", "table_size": 10, "tables": 1, "threads": t,
         "cells": [{"qps": {"value": q}, "latency_pct_ms": {"value": lat}, "latency_pct": pct}]}
        for t, q, lat, pct in points]}]}
    (only,) = comparison_curves(comparison, sla_ms=20.0)
    assert only["sentence"] == ("MariaDB peaks at 365 QPS at 8 threads (the true peak lies between 4 and 16: no "
                                "count in between was measured); it stops scaling after 4 threads; within p99 ≤ 20 "
                                "ms: 304 QPS at 4 threads (broken at 8).")
    rising = curve([(1, 100.0, 1.0, 95.0), (2, 200.0, 1.0, 95.0)], sla_ms=None)
    assert rising["peak_is_last"] and rising["knee_threads"] is None


def test_why_ranks_the_costs_that_differ_most_and_says_when_nothing_measured_explains_it():
    from campaigns.comparison.costs import cell_costs, why

    def cell(**costs: float) -> dict:
        return cell_costs([(costs, False), (costs, False)])

    base = cell(bp_misses_per_1k_queries=20.0, rows_read_per_query=20.0, server_cpu_ms_per_1k_queries=100.0)
    slow = cell(bp_misses_per_1k_queries=122.0, rows_read_per_query=20.5, server_cpu_ms_per_1k_queries=160.0)
    found = why(slow, base, name="B", base_name="A")
    assert [r["cost"] for r in found["reasons"]] == ["bp_misses_per_1k_queries", "server_cpu_ms_per_1k_queries"]
    assert found["sentence"] == ("B against A: 6.1× the buffer-pool misses per 1,000 queries (122 against 20.00); "
                                 "1.6× the server CPU ms per 1,000 queries (160 against 100).")
    # Some against none ranks above any ratio (a buffer pool that holds the whole dataset misses nothing).
    none = why(cell(bp_misses_per_1k_queries=1188.6, server_cpu_ms_per_1k_queries=126.0),
               cell(bp_misses_per_1k_queries=0.0, server_cpu_ms_per_1k_queries=60.0), name="B", base_name="A")
    assert [r["ratio"] for r in none["reasons"]] == [None, 2.1]
    assert none["sentence"].startswith("B against A: 1,189 buffer-pool misses per 1,000 queries against none; 2.1× the")
    same = why(cell(rows_read_per_query=20.0), cell(rows_read_per_query=21.0), name="B", base_name="A")
    assert same["reasons"] == [] and same["sentence"].startswith("Nothing measured explains it")
    # A cell's cost is the median of its repetitions, with their spread; most of them client-bound: the client.
    spread = cell_costs([({"rows_read_per_query": v, "client_busy_share": 0.0}, i < 2)
                         for i, v in enumerate((1.0, 3.0, 2.0))])
    assert spread["costs"]["rows_read_per_query"] == {"value": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert spread["bound"]["resource"] == "client"


def test_price_performance_at_the_peak_and_the_sla_point_comes_with_its_interval():
    rows = [{"spec_id": 7, "spec": "4-core", "table_size": 10, "tables": 1, "threads": t,
             "cells": [{"qps": {"value": q}, "qps_ci95": [q * 0.9, q * 1.1], "latency_pct_ms": {"value": lat},
                        "latency_pct": 95.0}]}
            for t, q, lat in ((1, 100.0, 2.0), (2, 180.0, 4.0), (4, 200.0, 30.0))]
    (c,) = comparison_curves({"products": [{"name": "A"}], "groups": [{"rows": rows}]}, sla_ms=10.0, prices={7: 2.0})
    assert c["peak_qps_per_price"] == {"value": 100.0, "ci95": [90.0, 110.0]}
    assert c["sla_threads"] == 2 and c["sla_qps_per_price"] == {"value": 90.0, "ci95": [81.0, 99.0]}
    (none,) = comparison_curves({"products": [{"name": "A"}], "groups": [{"rows": rows}]}, sla_ms=10.0)
    assert none["peak_qps_per_price"] is None and none["sla_qps_per_price"] is None
