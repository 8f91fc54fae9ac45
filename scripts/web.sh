#!/usr/bin/env bash
# The `web` process: gunicorn serving benchapp.wsgi (settings in scripts/gunicorn.conf.py: preloaded application,
# access log on stdout with each request's X-Request-ID, Prometheus multi-process metrics).
#
# Port: BENCHAPP_PORT, else PORT, else 8000. `make run` sets BENCHAPP_PORT from your PORT (default 8000) because
# honcho overwrites PORT for every process it starts (5000, 5100, ... unless given -p). Host: BENCHAPP_BIND_HOST,
# default 127.0.0.1 (docker-compose.yml sets 0.0.0.0 inside the container).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

port=${BENCHAPP_PORT:-${PORT:-8000}}
host=${BENCHAPP_BIND_HOST:-127.0.0.1}
# Workers: one per core (WEB_WORKERS), 4 threads each (WEB_THREADS). bench/memory.py: each worker process costs
# 40-80 MB of its own even with the application preloaded (numpy and scipy load in the one serving a statistics
# request). bench/api_bench.py measured 2 per core x 2 threads before the preload (lists p95 47 ms on 2 cores,
# 60-70 ms with 2 x 8): 1 per core x 4 is not measured there yet; WEB_WORKERS=4 WEB_THREADS=2 gives the old shape.
workers=${WEB_WORKERS:-$(nproc)}
# The request-latency histogram of every worker (prometheus-client's multi-process mode): a directory of this
# server's own, emptied at each start as prometheus-client requires.
export PROMETHEUS_MULTIPROC_DIR=${PROMETHEUS_MULTIPROC_DIR:-var/prometheus/web-$port}
rm -rf "$PROMETHEUS_MULTIPROC_DIR"
mkdir -p -m 0700 "$PROMETHEUS_MULTIPROC_DIR"
exec .venv/bin/gunicorn benchapp.wsgi:application --config scripts/gunicorn.conf.py --bind "$host:$port" \
    --workers "$workers" --threads "${WEB_THREADS:-4}" --timeout 60
