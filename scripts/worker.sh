#!/usr/bin/env bash
# The `worker` process: a Celery worker consuming the shared queue (BENCHAPP_QUEUE, default `benchapp`). The worker
# adds this host's own queue `<shared>.host.<hostname>` itself at start-up (campaigns/worker_signals.py), so the
# name always matches the one the code sends a job's client tasks to.
#
# -E sends task events, which monitors (Flower, Celery exporters for Prometheus) read. Concurrency: 2 slots
# (WORKER_CONCURRENCY): a job's coordinator and its local client each hold a slot for the job's length, and more
# slots than cores would only measure sysbench against itself (bench/memory.py: ~45 MB per pool process).
# Health: `manage.py worker_health` exits 0 while this host's heartbeat is fresh (docker-compose.yml, deploy/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# A client host's worker (BENCHAPP_WORKER_ROLE=client, scripts/join-client.sh) is the same worker in one process: its
# tasks run in threads (settings.BENCHAPP_WORKER_POOL), and it starts without Celery's command line
# (benchapp/client_worker.py), which would load 9 MB of subcommands it never runs (bench/memory_client.py).
if [[ ${BENCHAPP_WORKER_ROLE:-all} == client ]]; then
    exec .venv/bin/python -m benchapp.client_worker -E --loglevel INFO --concurrency "${WORKER_CONCURRENCY:-2}" \
        -Q "${BENCHAPP_QUEUE:-benchapp}"
fi
# Without gossip and mingle, as on a client host: benchapp's workers coordinate through the database (heartbeats,
# reservations), never through each other's events; gossip only printed "Substantial drift from …" when a worker's
# events came late after a cut, and mingle's start-up exchange with every other worker carried nothing benchapp uses.
exec .venv/bin/celery -A benchapp worker -E --without-gossip --without-mingle --loglevel INFO \
    --concurrency "${WORKER_CONCURRENCY:-2}" -Q "${BENCHAPP_QUEUE:-benchapp}"
