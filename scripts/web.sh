#!/usr/bin/env bash
# The `web` process: gunicorn serving benchapp.wsgi.
#
# Port: BENCHAPP_PORT, else PORT, else 8000. `make run` sets BENCHAPP_PORT from your PORT (default 8000) because
# honcho overwrites PORT for every process it starts (5000, 5100, ... unless given -p). Host: BENCHAPP_BIND_HOST,
# default 127.0.0.1 (docker-compose.yml sets 0.0.0.0 inside the container).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

port=${BENCHAPP_PORT:-${PORT:-8000}}
host=${BENCHAPP_BIND_HOST:-127.0.0.1}
# Workers: 2 per core (WEB_WORKERS), 2 threads each (WEB_THREADS). Processes rather than threads: requests are
# CPU-bound Python once their answers are cached, and threads of one process queue behind its GIL
# (bench/api_bench.py on 2 cores: lists p95 47 ms with 4 × 2, 60-70 ms with 2 × 8 or 1 × 16).
workers=${WEB_WORKERS:-$(( $(nproc) * 2 ))}
exec .venv/bin/gunicorn benchapp.wsgi:application --bind "$host:$port" --workers "$workers" \
    --threads "${WEB_THREADS:-2}" --timeout 60
