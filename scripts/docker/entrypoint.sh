#!/usr/bin/env bash
# The image's entrypoint: a mode name, or any command (docker-compose.yml gives whole commands).
#   web      gunicorn (scripts/web.sh), the default
#   worker   the server's own Celery worker: shared queue, its host queue and the server queue
#   client   a client host: the worker with only its own host queue (BENCHAPP_WORKER_ROLE=client), so it never
#            loads numpy or scipy. Needs the host's own credentials, DATABASE_URL (its PostgreSQL role) and REDIS_URL
#            (its Redis user), and BENCHAPP_HOSTNAME (the name they were issued for, which names its queue), all in
#            the file `manage.py client_host_issue NAME` wrote on the server (var/clients/NAME.env:
#            `docker run --env-file NAME.env --hostname NAME benchapp:dev client`); no field key: the server seals
#            each job's password for the host (campaigns/sealing.py), and one given is refused
#   beat     Celery beat
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case ${1:-web} in
    web) exec bash scripts/web.sh ;;
    worker) exec bash scripts/worker.sh ;;
    client)
        for name in DATABASE_URL REDIS_URL; do
            [[ -n ${!name:-} ]] || { echo "client: $name is not set (this host's own credentials: var/clients/NAME.env, from manage.py client_host_issue on the server)" >&2; exit 2; }
        done
        [[ -z ${BENCHAPP_FIELD_KEY:-}${BENCHAPP_FIELD_KEYS:-} ]] \
            || { echo "client: a client host holds no field key (the server seals each job's password for it): unset BENCHAPP_FIELD_KEY" >&2; exit 2; }
        export BENCHAPP_WORKER_ROLE=client
        exec bash scripts/worker.sh ;;
    beat) exec .venv/bin/celery -A benchapp beat --loglevel INFO \
              --scheduler django_celery_beat.schedulers:DatabaseScheduler ;;
    *) exec "$@" ;;
esac
