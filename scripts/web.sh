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
exec .venv/bin/gunicorn benchapp.wsgi:application --bind "$host:$port" --workers "${WEB_WORKERS:-3}" --threads 4 \
    --timeout 60
