#!/usr/bin/env bash
# The `worker` process: a Celery worker consuming the shared queue (BENCHAPP_QUEUE, default `benchapp`). The worker
# adds this host's own queue `<shared>.host.<hostname>` itself at start-up (campaigns/worker_signals.py), so the
# name always matches the one the code sends a job's client tasks to.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

exec .venv/bin/celery -A benchapp worker --loglevel INFO --concurrency "${WORKER_CONCURRENCY:-2}" \
    -Q "${BENCHAPP_QUEUE:-benchapp}"
