#!/usr/bin/env bash
# The `worker` process: a Celery worker consuming the shared queue (BENCHAPP_QUEUE, default `benchapp`) and this
# host's own queue `host.<hostname>`, to which benchapp routes the jobs that must run on this machine. The hostname
# is BENCHAPP_HOSTNAME if set, else the kernel's (Python's socket.gethostname()), the same rule as
# benchapp/settings.py, so the queue named here is the one the code sends to.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

host=${BENCHAPP_HOSTNAME:-$(hostname 2>/dev/null || uname -n)}
exec .venv/bin/celery -A benchapp worker --loglevel INFO --concurrency "${WORKER_CONCURRENCY:-2}" \
    -Q "${BENCHAPP_QUEUE:-benchapp},host.$host"
