#!/usr/bin/env bash
# benchapp's own PostgreSQL login (scripts/setup.sh calls it; docs/security.md#the-sandbox says why it matters).
#
#   scripts/pg-login.sh [--host 127.0.0.1] [--port 5432] [--database benchapp] [--socket-dir /var/run/postgresql]
#                                          BENCHAPP_SECRETS_FILE: the secrets file (default var/secrets.env)
#
# Where `psql -h HOST -U postgres` works without a password (a development or CI machine whose cluster trusts
# loopback), benchapp uses that, and this prints "trust postgres over TCP (...)". Anywhere else pg_hba.conf is left
# as it is: over the unix socket as the OS user postgres (peer), the role `benchapp` (LOGIN CREATEDB CREATEROLE,
# member of pg_signal_backend: it makes and retires the client hosts' roles, campaigns/services/client_access.py)
# gets the password BENCHAPP_DB_PASSWORD of the secrets file (generated there once), owns the database `benchapp`,
# and DATABASE_URL with that password is written into the secrets file, where every benchapp process reads it
# (benchapp/settings.py). This prints "role benchapp (...)". The password is never on a command line (psql reads the
# statement from standard input; printf is bash's own). Idempotent; needs root (or the OS user postgres) for the
# socket. --database names the database and the role alike (a second installation on one cluster has its own
# role, so that neither changes the other's password).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

HOST=127.0.0.1
PORT=5432
SOCKET_DIR=/var/run/postgresql
NAME=benchapp
while (($#)); do
    case $1 in
        --host) HOST=${2:?}; shift 2 ;;
        --port) PORT=${2:?}; shift 2 ;;
        --socket-dir) SOCKET_DIR=${2:?}; shift 2 ;;
        --database) NAME=${2:?}; shift 2 ;;
        *) printf 'pg-login: ERROR: unknown argument %s\n' "$1" >&2; exit 2 ;;
    esac
done
secrets_file=${BENCHAPP_SECRETS_FILE:-var/secrets.env}
[[ $NAME =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || { printf 'pg-login: ERROR: --database %s: lower-case letters, digits and _ only\n' "$NAME" >&2; exit 2; }
die() { printf 'pg-login: ERROR: %s\n' "$*" >&2; exit 1; }

tcp_sql() { PGCONNECT_TIMEOUT=5 psql -X -w -q -At -v ON_ERROR_STOP=1 -h "$HOST" -p "$PORT" "$@"; }
socket_sql() {
    if [[ $(id -un) == postgres ]]; then
        psql -X -w -q -At -v ON_ERROR_STOP=1 -h "$SOCKET_DIR" -p "$PORT" -d postgres "$@"
    else
        runuser -u postgres -- psql -X -w -q -At -v ON_ERROR_STOP=1 -h "$SOCKET_DIR" -p "$PORT" -d postgres "$@"
    fi
}

if tcp_sql -U postgres -d postgres -c 'select 1' >/dev/null 2>&1; then
    echo "trust postgres over TCP (the cluster trusts loopback)"
    exit 0
fi
socket_sql -c 'select 1' >/dev/null 2>&1 ||
    die "PostgreSQL on port $PORT refuses both psql -h $HOST -U postgres and the OS user postgres over $SOCKET_DIR"
[[ -f $secrets_file ]] || die "no secrets file $secrets_file (scripts/redis-password.sh makes it first)"

password=$(sed -n 's/^BENCHAPP_DB_PASSWORD=//p' "$secrets_file" | tail -n 1)
if [[ -z $password ]]; then
    password=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
    printf 'BENCHAPP_DB_PASSWORD=%s\n' "$password" >>"$secrets_file"
fi
printf "DO \$\$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%s') THEN
        CREATE ROLE \"%s\";
    END IF;
END \$\$;
ALTER ROLE \"%s\" LOGIN CREATEDB CREATEROLE PASSWORD '%s';
GRANT pg_signal_backend TO \"%s\";\n" "$NAME" "$NAME" "$NAME" "$password" "$NAME" | socket_sql -f - >/dev/null ||
    die "could not make the role $NAME over the unix socket"
if [[ $(socket_sql -c "select 1 from pg_database where datname = '$NAME'") != 1 ]]; then
    socket_sql -c "create database \"$NAME\" owner \"$NAME\"" >/dev/null
fi
url="postgres://$NAME:$password@$HOST:$PORT/$NAME"
if ! grep -qxF "DATABASE_URL=$url" "$secrets_file"; then
    sed -i '/^DATABASE_URL=/d' "$secrets_file"
    printf 'DATABASE_URL=%s\n' "$url" >>"$secrets_file"
fi
PGPASSWORD=$password tcp_sql -U "$NAME" -d "$NAME" -c 'select 1' >/dev/null ||
    die "the role $NAME cannot log in over TCP with its password (does pg_hba.conf allow scram-sha-256 from $HOST?)"
echo "role $NAME with its password in $secrets_file (the cluster does not trust loopback: nothing loosened)"
