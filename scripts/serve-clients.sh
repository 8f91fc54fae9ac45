#!/usr/bin/env bash
# The server side of client hosts on other machines: run once, as root, on the machine of `make run`.
#
#   scripts/serve-clients.sh --clients 10.0.0.0/24 [--listen 10.0.0.5] [--dry-run]
#
# What it changes (and nothing else), each step idempotent:
#   1. PostgreSQL: a login role `benchapp_client` with a generated password (SCRAM), allowed to read and write
#      benchapp's tables, not to create or drop any; `listen_addresses` gains --listen (ALTER SYSTEM); pg_hba.conf
#      gains one line `host <database> benchapp_client <clients> scram-sha-256` (no other role, no other network).
#      The loopback rules stay as they are. PostgreSQL is restarted (listen_addresses needs it).
#   2. Redis: `bind` gains --listen and `requirepass` a generated password (one Redis serves the broker and the
#      cache; Redis cannot tell users apart by address, so every client, local ones included, needs it from now
#      on). The password goes into var/secrets.env as REDIS_URL, which benchapp's own processes read. Redis is
#      restarted; restart `make run` afterwards.
#   3. var/client.env (0600): what a client host needs (DATABASE_URL, REDIS_URL, BENCHAPP_FIELD_KEY, the queue).
#      Copy it to the client host and give it to scripts/join-client.sh --env-file.
#
# Trust: a client host holds these credentials and the field key (it decrypts target passwords for sysbench): it
# can read every target password and write any row of benchapp's database. Add only machines you trust as much
# as this one, keep --clients as narrow as your network allows, and prefer a private network or a VPN: the
# broker's traffic is not encrypted (PostgreSQL's is, when its server has a certificate: `sslmode=require`).
# Tests on this machine never run this script: they must not reconfigure its services.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD

CLIENTS=""
LISTEN="*"
DRY_RUN=0
DATABASE=${BENCHAPP_DATABASE:-benchapp}
ROLE=benchapp_client
SECRETS_FILE=${BENCHAPP_SECRETS_FILE:-$ROOT_DIR/var/secrets.env}
CLIENT_ENV=$ROOT_DIR/var/client.env
SERVER_ADDRESS=""

usage() {
    cat <<'EOF'
usage: scripts/serve-clients.sh --clients CIDR [--listen ADDRESS] [--server-address ADDRESS] [--dry-run]
  --clients CIDR            the network client hosts connect from (10.0.0.0/24); required, never 0.0.0.0/0
  --listen ADDRESS          the address PostgreSQL and Redis listen on besides loopback (default: all, "*")
  --server-address ADDRESS  the address client hosts reach this machine by (default: --listen, or the first
                            address of `hostname -I`); written into var/client.env
  --dry-run                 print what would change, change nothing
EOF
}

die() { printf 'serve-clients: ERROR: %s\n' "$*" >&2; exit 2; }
say() { printf 'serve-clients: %s\n' "$*"; }
run() {
    if (( DRY_RUN )); then printf 'would run: %s\n' "$*"; else "$@"; fi
}

while (( $# )); do
    case $1 in
        --clients) CLIENTS=${2:?--clients needs a value}; shift 2 ;;
        --listen) LISTEN=${2:?--listen needs a value}; shift 2 ;;
        --server-address) SERVER_ADDRESS=${2:?--server-address needs a value}; shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
[[ -n $CLIENTS ]] || { usage >&2; die "--clients is required"; }
[[ $CLIENTS =~ ^[0-9a-fA-F:.]+/[0-9]{1,3}$ ]] || die "--clients must be a network in CIDR form, not '$CLIENTS'"
[[ $CLIENTS != 0.0.0.0/0 && $CLIENTS != ::/0 ]] || die "--clients must not be the whole Internet"
[[ $LISTEN == "*" || $LISTEN =~ ^[0-9a-fA-F:.]+$ ]] || die "--listen must be an address or *, not '$LISTEN'"
(( DRY_RUN || EUID == 0 )) || die "run it as root (it edits PostgreSQL's and Redis's configuration)"
if [[ -z $SERVER_ADDRESS ]]; then
    if [[ $LISTEN != "*" ]]; then SERVER_ADDRESS=$LISTEN; else SERVER_ADDRESS=$(hostname -I | awk '{print $1}'); fi
fi

# A password of URL-safe characters only, so that it goes into a URL as it is.
new_password() { python3 -c 'import secrets; print(secrets.token_urlsafe(24))'; }
# The value of NAME in var/secrets.env, if any.
secret_get() { if [[ -f $SECRETS_FILE ]]; then sed -n "s/^$1=//p" "$SECRETS_FILE" | tail -n 1; fi; }
secret_set() {
    local name=$1 value=$2
    if (( DRY_RUN )); then say "would set $name in $SECRETS_FILE"; return; fi
    touch "$SECRETS_FILE" && chmod 600 "$SECRETS_FILE"
    sed -i "/^$name=/d" "$SECRETS_FILE"
    printf '%s=%s\n' "$name" "$value" >>"$SECRETS_FILE"
}

# ---------------------------------------------------------------- 1. PostgreSQL
psql_root() { runuser -u postgres -- psql -v ON_ERROR_STOP=1 -qtA "$@"; }
PG_PASSWORD=$(secret_get BENCHAPP_CLIENT_DB_PASSWORD)
[[ -n $PG_PASSWORD ]] || PG_PASSWORD=$(new_password)
secret_set BENCHAPP_CLIENT_DB_PASSWORD "$PG_PASSWORD"
say "PostgreSQL: role $ROLE may read and write the tables of database $DATABASE"
SQL="DO \$\$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$ROLE') THEN CREATE ROLE $ROLE LOGIN; END IF; END\$\$;
SET password_encryption = 'scram-sha-256';
ALTER ROLE $ROLE LOGIN PASSWORD '$PG_PASSWORD';
GRANT CONNECT ON DATABASE $DATABASE TO $ROLE;"
GRANTS="GRANT USAGE ON SCHEMA public TO $ROLE;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO $ROLE;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO $ROLE;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO $ROLE;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO $ROLE;"
if (( DRY_RUN )); then
    say "would run in PostgreSQL (password elided): create/alter role $ROLE, grants on $DATABASE"
else
    # On standard input, never in argv: every local user sees a process's arguments.
    psql_root -d postgres <<<"$SQL" >/dev/null
    psql_root -d "$DATABASE" <<<"$GRANTS" >/dev/null
fi
HBA_LINE="host $DATABASE $ROLE $CLIENTS scram-sha-256  # benchapp scripts/serve-clients.sh"
if (( DRY_RUN )); then
    say "would append to pg_hba.conf (if missing): $HBA_LINE"
else
    HBA=$(psql_root -d postgres -c 'SHOW hba_file')
    grep -qxF "$HBA_LINE" "$HBA" || { say "PostgreSQL: $HBA gains: $HBA_LINE"; printf '%s\n' "$HBA_LINE" >>"$HBA"; }
fi
PG_LISTEN="localhost,$LISTEN"
if [[ $LISTEN == "*" ]]; then PG_LISTEN="*"; fi
say "PostgreSQL: listen_addresses = '$PG_LISTEN', restart"
if (( ! DRY_RUN )); then psql_root -d postgres -c "ALTER SYSTEM SET listen_addresses = '$PG_LISTEN'" >/dev/null; fi
run systemctl restart postgresql

# ---------------------------------------------------------------- 2. Redis
REDIS_CONF=/etc/redis/redis.conf
REDIS_PASSWORD=$(secret_get BENCHAPP_REDIS_PASSWORD)
[[ -n $REDIS_PASSWORD ]] || REDIS_PASSWORD=$(new_password)
secret_set BENCHAPP_REDIS_PASSWORD "$REDIS_PASSWORD"
REDIS_BIND="127.0.0.1 -::1 $LISTEN"
if [[ $LISTEN == "*" ]]; then REDIS_BIND="* -::*"; fi
say "Redis: bind $REDIS_BIND, requirepass (generated), restart"
if (( ! DRY_RUN )); then
    sed -i -e '/^bind /d' -e '/^requirepass /d' "$REDIS_CONF"
    printf 'bind %s\nrequirepass %s\n' "$REDIS_BIND" "$REDIS_PASSWORD" >>"$REDIS_CONF"
fi
run systemctl restart redis-server
secret_set REDIS_URL "redis://:$REDIS_PASSWORD@127.0.0.1:6379/0"

# ---------------------------------------------------------------- 3. what a client host needs
FIELD_KEY=$(secret_get BENCHAPP_FIELD_KEY)
[[ -n $FIELD_KEY || $DRY_RUN -eq 1 ]] || die "no BENCHAPP_FIELD_KEY in $SECRETS_FILE: start benchapp once (make run)"
say "writing $CLIENT_ENV (0600): copy it to each client host, then run scripts/join-client.sh --env-file there"
if (( ! DRY_RUN )); then
    umask 077
    cat >"$CLIENT_ENV" <<EOF
# benchapp client host settings, from scripts/serve-clients.sh on $(hostname). Secrets: keep it 0600.
DATABASE_URL=postgres://$ROLE:$PG_PASSWORD@$SERVER_ADDRESS:5432/$DATABASE
REDIS_URL=redis://:$REDIS_PASSWORD@$SERVER_ADDRESS:6379/0
BENCHAPP_FIELD_KEY=$FIELD_KEY
BENCHAPP_QUEUE=${BENCHAPP_QUEUE:-benchapp}
EOF
fi
say "done. Restart benchapp (make run) so that its processes use the Redis password."
