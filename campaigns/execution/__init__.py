"""Everything after a launch: a job's life from its dispatch to its result, and the repairs of the
reconciler. It never imports campaigns.services (what a user starts), which builds on it.

    transitions  the only writer of Job, JobClient and Run status and phase (the state machine)
    phases       a job's connection, sysbench commands of each phase, unmeasured phases, heartbeat, cancel
    datasets     dataset signature, the scenario's own table DDL, the loader, drop
    workloads    a workload of one's own on this host: its files from the database into the cache by hash
    hosts        client hosts: heartbeat, facts, offline, which clients stopped beating
    resend       lost clients: declared lost; lost before it measured, a client's share goes to another eligible
                 host (Campaign.client_tries)
    attempts     an unreachable target pauses its job (Celery retry, back-off; Campaign.target_wait_s); a measurement
                 the infrastructure spoiled is measured again as a new attempt (Campaign.job_tries)
    dispatch     sending jobs and clients to their queues, moving a run on to its next job or its end
    turns        whose turn on a target: another run's job holding it, the run's earlier job still loading it
    measuring    what every client's measurement does: heartbeat, barrier, the sysbench process, its closing
    coordinator  claims a job, prepares it (its dataset once), sends its clients
    client       one sysbench process of a database test's job: its barrier, run, samples and snapshot
    client_writes  a client's samples, heartbeats and output tail, on a thread that outlasts a database restart
    dbretry      benchapp's database away and back: which errors say so, retrying with back-off
    results      samples, merged results, closing a job
    reconcile    repairs after lost workers and lost messages
    selfmeasure  a client host measures itself (sysbench cpu, memory) at join and daily, never beside a job
    hostjobs     a host test's job (cpu, memory, fileio, threads, mutex) on the client host it measures
"""
from __future__ import annotations

from campaigns.execution.client import jobclient_execute
from campaigns.execution.coordinator import job_execute
from campaigns.execution.dispatch import job_dispatch, run_advance
from campaigns.execution.hosts import (
    CpuBusy,
    NoWorker,
    cpu_busy_pct,
    host_heartbeat,
    host_heartbeats,
    host_mark_offline,
    host_queue,
    local_host_facts,
    own_queues,
    run_no_worker,
    server_queue,
)
from campaigns.execution.phases import JobFailure, target_connection
from campaigns.execution.reconcile import jobs_reconcile
from campaigns.execution.results import job_finalize
from campaigns.execution.selfmeasure import host_self_measure, hosts_self_measure_due
from campaigns.execution.transitions import IllegalTransition, StateConflict

__all__ = [
    "CpuBusy", "cpu_busy_pct", "IllegalTransition", "JobFailure", "NoWorker", "StateConflict", "host_heartbeat", "host_heartbeats",
    "host_mark_offline", "host_queue", "host_self_measure", "hosts_self_measure_due", "own_queues", "run_no_worker",
    "job_dispatch", "job_execute", "job_finalize", "jobclient_execute", "jobs_reconcile", "local_host_facts",
    "run_advance", "server_queue", "target_connection",
]
