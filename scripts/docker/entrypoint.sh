#!/usr/bin/env bash
# The image's entrypoint: a mode name, or any command (docker-compose.yml gives whole commands).
#   web      gunicorn (scripts/web.sh), the default
#   worker   the server's own Celery worker: shared queue, its host queue and the server queue
#   client   a client host: the worker without the server queue (BENCHAPP_WORKER_ROLE=client), so it never loads
#            numpy or scipy. Needs DATABASE_URL and REDIS_URL of the server, no field key (its var/client.env:
#            `docker run --env-file client.env -e BENCHAPP_HOSTNAME=c1 --hostname c1 benchapp:dev client`); give it
#            its own BENCHAPP_HOSTNAME, which names its queue
#   beat     Celery beat
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case ${1:-web} in
    web) exec bash scripts/web.sh ;;
    worker) exec bash scripts/worker.sh ;;
    client)
        for name in DATABASE_URL REDIS_URL; do
            [[ -n ${!name:-} ]] || { echo "client: $name is not set (the server's var/client.env has it)" >&2; exit 2; }
        done
        [[ -z ${BENCHAPP_FIELD_KEY:-}${BENCHAPP_FIELD_KEYS:-} ]] \
            || { echo "client: a client host holds no field key (the server seals each job's password for it): unset BENCHAPP_FIELD_KEY" >&2; exit 2; }
        export BENCHAPP_WORKER_ROLE=client
        exec bash scripts/worker.sh ;;
    beat) exec .venv/bin/celery -A benchapp beat --loglevel INFO \
              --scheduler django_celery_beat.schedulers:DatabaseScheduler ;;
    *) exec "$@" ;;
esac
