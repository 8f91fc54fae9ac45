#!/bin/sh
# docker-compose.yml's Redis, with the installation's password: the BENCHAPP_REDIS_PASSWORD of the secrets volume
# (var/secrets.env, made by the compose service `secrets` before Redis starts, and read by web, worker and beat the
# same way, benchapp/settings.py), or of the environment (a .env file beside docker-compose.yml), which wins there too.
#
#   sh redis.sh [REDIS-SERVER OPTIONS]    starts Redis (as the user redis, through the image's docker-entrypoint.sh)
#   sh redis.sh ping [REDIS-CLI OPTIONS]  the health check: exits 0 when Redis answers PONG to the password
#
# The password never reaches a command line, which every process of the container can read: Redis reads it from a
# configuration file (0600) written by the shell's printf, a builtin, and redis-cli from REDISCLI_AUTH.
# BENCHAPP_SECRETS_FILE and BENCHAPP_REDIS_CONF move the two files (tests/test_compose.py runs this script).
set -eu

secrets_file=${BENCHAPP_SECRETS_FILE:-/benchapp-secrets/secrets.env}
conf=${BENCHAPP_REDIS_CONF:-/tmp/benchapp-redis.conf}

password=${BENCHAPP_REDIS_PASSWORD:-}
if [ -z "$password" ] && [ -r "$secrets_file" ]; then
    password=$(sed -n 's/^BENCHAPP_REDIS_PASSWORD=//p' "$secrets_file" | tail -n 1)
fi
if [ -z "$password" ]; then
    echo "benchapp redis: no BENCHAPP_REDIS_PASSWORD in $secrets_file nor in the environment" >&2
    exit 1
fi

if [ "${1:-}" = ping ]; then
    shift
    REDISCLI_AUTH=$password redis-cli "$@" ping | grep -qx PONG
    exit
fi

umask 077
printf 'requirepass %s\n' "$password" >"$conf"
if command -v docker-entrypoint.sh >/dev/null 2>&1; then
    # The official image's entrypoint starts redis-server as the user redis, who must read the file.
    [ "$(id -u)" != 0 ] || chown redis:redis "$conf"
    exec docker-entrypoint.sh redis-server "$conf" --save "" --appendonly no "$@"
fi
exec redis-server "$conf" --save "" --appendonly no "$@"
