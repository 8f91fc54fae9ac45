#!/usr/bin/env bash
# The server side of client hosts on other machines: run once, as root, on the machine of `make run`.
#
#   scripts/serve-clients.sh --clients 10.0.0.0/24 [--listen 10.0.0.5] [--pg-cluster 15/main] [--redis-port 6379]
#                            [--dry-run]
#
# It first checks everything it needs (the cluster is online and answers, the database exists, Redis answers, the
# files it writes can be written), prints its plan, and with --dry-run stops there. Then it
# applies the plan; a step that fails undoes the steps before it (files restored from copies, a role it created
# dropped, the services restarted as they were), so it leaves all of it or none:
#   1. PostgreSQL (the cluster --pg-cluster, or the one on --pg-port): the group role `benchapp_client` (NOLOGIN:
#      each client host logs in as a role of its own, a member of it, issued by `manage.py client_host_issue`,
#      whose row-level security limits it to its own jobs: campaigns/services/client_access.py); the broad grants
#      and the password an older version gave it are taken back; `listen_addresses` gains --listen (ALTER SYSTEM);
#      pg_hba.conf gains one line `host <database> +benchapp_client <clients> scram-sha-256`. The cluster is
#      restarted (listen_addresses needs it).
#   2. Redis (the one on --redis-port): `bind` gains --listen and `requirepass` a generated password (one Redis
#      serves the broker and the cache and cannot tell users apart by address, so every client, local ones included,
#      needs it from now on). A Redis with a configuration file (--redis-conf, or the one it was started with) has
#      the two lines changed there; one started with flags only (as scripts/setup.sh starts it) is started again
#      with the flags it runs with, the password given on standard input. Restarting Redis drops the messages it
#      holds in memory: do it while no run is active.
#   3. The secrets file (var/secrets.env): BENCHAPP_REDIS_PASSWORD and REDIS_URL, which benchapp's own processes
#      read (a BENCHAPP_CLIENT_DB_PASSWORD of an older version goes). Restart `make run` afterwards.
# No client host's credentials: each is issued its own on this machine, with benchapp's settings, by
#   .venv/bin/python manage.py client_host_issue NAME --server-address ADDRESS --pg-port PORT --redis-port PORT
# (its own PostgreSQL role and Redis ACL user, in var/clients/NAME.env: copy it to that host for join-client.sh);
# no field key either: a client host opens only the passwords the server seals for it (campaigns/sealing.py).
# Services are restarted as scripts/setup.sh starts them: through systemd where it is PID 1, else pg_ctlcluster
# and redis-server themselves.
#
# Trust: a client host holds only its own credentials (docs/security.md, "What a client host holds"). Add only machines you trust as much
# as this one, keep --clients as narrow as your network allows, and prefer a private network or a VPN: the
# broker's traffic is not encrypted (PostgreSQL's is, when its server has a certificate: `sslmode=require`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD

CLIENTS=""
LISTEN="*"
DRY_RUN=0
DATABASE=${BENCHAPP_DATABASE:-benchapp}
ROLE=benchapp_client
SECRETS_FILE=${BENCHAPP_SECRETS_FILE:-$ROOT_DIR/var/secrets.env}
SERVER_ADDRESS=""
PG_CLUSTER=""
PG_PORT=""
REDIS_PORT=6379
REDIS_CONF=""
WAIT_S=${SERVE_CLIENTS_WAIT_S:-60}
WHEELHOUSE=0

usage() {
    cat <<'EOF'
usage: scripts/serve-clients.sh --clients CIDR [--listen ADDRESS] [--server-address ADDRESS]
                                [--pg-cluster VERSION/NAME | --pg-port PORT] [--database NAME]
                                [--redis-port PORT] [--redis-conf FILE]
                                [--secrets-file FILE] [--wheelhouse] [--dry-run]
  --clients CIDR            the network client hosts connect from (10.0.0.0/24); required, never 0.0.0.0/0
  --listen ADDRESS          the address PostgreSQL and Redis listen on besides loopback (default: all, "*")
  --server-address ADDRESS  the address client hosts reach this machine by (default: --listen, or the first
                            address of `hostname -I`); printed for client_host_issue
  --pg-cluster VERSION/NAME the PostgreSQL cluster benchapp's database is in (pg_lsclusters; default: the one on
                            --pg-port)
  --pg-port PORT            the port of that cluster (default: the cluster's, else 5432)
  --database NAME           benchapp's database (default: benchapp, or BENCHAPP_DATABASE)
  --redis-port PORT         the port of benchapp's Redis on this machine (default 6379)
  --redis-conf FILE         its configuration file (default: the one it runs with, if any; must be that one)
  --secrets-file FILE       benchapp's secrets file (default: var/secrets.env, or BENCHAPP_SECRETS_FILE)
  --wheelhouse              also build var/wheelhouse (scripts/wheelhouse.sh): the wheels client hosts without the
                            package index install from
  --dry-run                 check, print the plan, change nothing
EOF
}

die() { printf 'serve-clients: ERROR: %s\n' "$*" >&2; exit 2; }
say() { printf 'serve-clients: %s\n' "$*"; }

while (( $# )); do
    case $1 in
        --clients) CLIENTS=${2:?--clients needs a value}; shift 2 ;;
        --listen) LISTEN=${2:?--listen needs a value}; shift 2 ;;
        --server-address) SERVER_ADDRESS=${2:?--server-address needs a value}; shift 2 ;;
        --pg-cluster) PG_CLUSTER=${2:?--pg-cluster needs a value}; shift 2 ;;
        --pg-port) PG_PORT=${2:?--pg-port needs a value}; shift 2 ;;
        --database) DATABASE=${2:?--database needs a value}; shift 2 ;;
        --redis-port) REDIS_PORT=${2:?--redis-port needs a value}; shift 2 ;;
        --redis-conf) REDIS_CONF=${2:?--redis-conf needs a value}; shift 2 ;;
        --secrets-file) SECRETS_FILE=${2:?--secrets-file needs a value}; shift 2 ;;
        --wheelhouse) WHEELHOUSE=1; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

# ================================================================ checks: nothing is changed before all pass
[[ -n $CLIENTS ]] || { usage >&2; die "--clients is required"; }
[[ $CLIENTS =~ ^[0-9a-fA-F:.]+/[0-9]{1,3}$ ]] || die "--clients must be a network in CIDR form, not '$CLIENTS'"
[[ $CLIENTS != 0.0.0.0/0 && $CLIENTS != ::/0 ]] || die "--clients must not be the whole Internet"
[[ $LISTEN == "*" || $LISTEN =~ ^[0-9a-fA-F:.]+$ ]] || die "--listen must be an address or *, not '$LISTEN'"
[[ -z $PG_CLUSTER || $PG_CLUSTER =~ ^[0-9.]+/[A-Za-z0-9_.-]+$ ]] \
    || die "--pg-cluster must be VERSION/NAME as pg_lsclusters lists it (15/main), not '$PG_CLUSTER'"
[[ -z $PG_PORT || $PG_PORT =~ ^[0-9]{1,5}$ ]] || die "--pg-port must be a port number, not '$PG_PORT'"
[[ $REDIS_PORT =~ ^[0-9]{1,5}$ ]] || die "--redis-port must be a port number, not '$REDIS_PORT'"
[[ $DATABASE =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--database must be a plain name, not '$DATABASE'"
[[ -z $REDIS_CONF || -f $REDIS_CONF ]] || die "--redis-conf $REDIS_CONF: no such file"
(( EUID == 0 )) || die "run it as root (it reads and edits PostgreSQL's and Redis's configuration)"
if [[ -z $SERVER_ADDRESS ]]; then
    if [[ $LISTEN != "*" ]]; then SERVER_ADDRESS=$LISTEN; else SERVER_ADDRESS=$(hostname -I | awk '{print $1}'); fi
fi
[[ -n $SERVER_ADDRESS ]] || die "--server-address: this machine has no address to give client hosts; name one"

# systemd manages services only where it is PID 1 (sd_booted(3)); in a container or a CI machine it is not.
SYSTEMD=0
[[ -d /run/systemd/system ]] && SYSTEMD=1

# The value of NAME in the secrets file, if any.
secret_get() { if [[ -f $SECRETS_FILE ]]; then sed -n "s/^$1=//p" "$SECRETS_FILE" | tail -n 1; fi; }

# ---------------------------------------------------------------- PostgreSQL: which cluster, and does it answer
# pg_lsclusters -h: version cluster port status owner datadir logfile
clusters=$(pg_lsclusters -h 2>/dev/null) || die "pg_lsclusters failed: is postgresql-common installed?"
if [[ -n $PG_CLUSTER ]]; then
    row=$(awk -v v="${PG_CLUSTER%%/*}" -v n="${PG_CLUSTER#*/}" '$1 == v && $2 == n' <<<"$clusters")
    [[ -n $row ]] || die "--pg-cluster $PG_CLUSTER: no such cluster (pg_lsclusters lists: $(awk '{printf "%s/%s ", $1, $2}' <<<"$clusters"))"
else
    row=$(awk -v p="${PG_PORT:-5432}" '$3 == p' <<<"$clusters" | head -n 1)
    [[ -n $row ]] || die "--pg-port ${PG_PORT:-5432}: no cluster of pg_lsclusters listens there; name one with --pg-cluster"
fi
read -r PG_VERSION PG_NAME cluster_port PG_STATUS PG_OWNER _ <<<"$row"
[[ -z $PG_PORT || $PG_PORT == "$cluster_port" ]] \
    || die "--pg-port $PG_PORT: cluster $PG_VERSION/$PG_NAME listens on $cluster_port"
PG_PORT=$cluster_port
[[ $PG_STATUS == online* ]] || die "PostgreSQL $PG_VERSION/$PG_NAME is $PG_STATUS: start it first"
psql_owner() { runuser -u "$PG_OWNER" -- psql -X -p "$PG_PORT" -v ON_ERROR_STOP=1 -qtA "$@"; }
psql_owner -d postgres -c 'select 1' >/dev/null 2>&1 \
    || die "PostgreSQL $PG_VERSION/$PG_NAME: psql as $PG_OWNER on port $PG_PORT fails: $(psql_owner -d postgres -c 'select 1' 2>&1 | head -n 1)"
[[ $(psql_owner -d postgres -c "select 1 from pg_database where datname = '$DATABASE'") == 1 ]] \
    || die "--database $DATABASE: no such database in PostgreSQL $PG_VERSION/$PG_NAME"
HBA=$(psql_owner -d postgres -c 'SHOW hba_file')
PG_DATA=$(psql_owner -d postgres -c 'SHOW data_directory')
PG_AUTO_CONF=$PG_DATA/postgresql.auto.conf
[[ -w $HBA && -w $PG_AUTO_CONF ]] || die "PostgreSQL: $HBA or $PG_AUTO_CONF is not writable"
PG_LISTEN_BEFORE=$(psql_owner -d postgres -c 'SHOW listen_addresses')
ROLE_EXISTED=$(psql_owner -d postgres -c "select 1 from pg_roles where rolname = '$ROLE'")
# A role that exists gets its password (SCRAM verifier) back if a later step fails.
ROLE_VERIFIER=$(psql_owner -d postgres -c "select coalesce(rolpassword, '') from pg_authid where rolname = '$ROLE'")

# ---------------------------------------------------------------- Redis: does it answer, how was it started
REDIS_PASSWORD=$(secret_get BENCHAPP_REDIS_PASSWORD)
# redis-cli reads the password from REDISCLI_AUTH: never a command-line argument, which `ps` shows.
redis_do() {
    if [[ -n $1 ]]; then
        REDISCLI_AUTH=$1 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "${@:2}"
    else
        env -u REDISCLI_AUTH redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "${@:2}"
    fi
}
redis_info=$(redis_do "$REDIS_PASSWORD" INFO server 2>&1) || true
[[ $redis_info == *redis_version:* ]] \
    || die "Redis on 127.0.0.1:$REDIS_PORT does not answer (with the password of $SECRETS_FILE, if any): $(head -n 1 <<<"$redis_info")"
redis_field() { tr -d '\r' <<<"$redis_info" | sed -n "s/^$1://p"; }
REDIS_PID=$(redis_field process_id)
REDIS_SERVER=$(redis_field executable)
[[ -x $REDIS_SERVER ]] || REDIS_SERVER=$(command -v redis-server)
running_conf=$(redis_field config_file)
if [[ -n $REDIS_CONF && -n $running_conf && $(realpath "$REDIS_CONF") != "$(realpath "$running_conf")" ]]; then
    die "--redis-conf $REDIS_CONF: Redis on port $REDIS_PORT runs with $running_conf"
fi
if [[ -n $REDIS_CONF && -z $running_conf ]]; then
    die "--redis-conf $REDIS_CONF: Redis on port $REDIS_PORT runs without a configuration file (flags only): leave --redis-conf out"
fi
REDIS_CONF=$running_conf
if [[ -n $REDIS_CONF ]]; then
    [[ -w $REDIS_CONF ]] || die "Redis: its configuration file $REDIS_CONF is not writable"
    REDIS_MODE="file"
else
    # Started with flags only: these are the ones scripts/setup.sh gives, read back from the running server.
    REDIS_MODE=flags
    redis_get() { redis_do "$REDIS_PASSWORD" CONFIG GET "$1" | sed -n 2p; }
    REDIS_FLAGS=()
    for name in port dir logfile pidfile save appendonly maxmemory maxmemory-policy databases; do
        REDIS_FLAGS+=("$name" "$(redis_get "$name")")
    done
    REDIS_BIND_BEFORE=$(redis_get bind)
    REDIS_LOG=$(redis_get logfile)
fi

# ---------------------------------------------------------------- the files written
for file in "$SECRETS_FILE"; do
    [[ -d $(dirname "$file") && -w $(dirname "$file") ]] || die "$(dirname "$file"): not a writable directory"
    [[ ! -e $file || -f $file ]] || die "$file: not a regular file"
done

# ================================================================ the plan
PG_LISTEN="localhost,$LISTEN"
[[ $LISTEN == "*" ]] && PG_LISTEN="*"
REDIS_BIND="127.0.0.1 -::1 $LISTEN"
[[ $LISTEN == "*" ]] && REDIS_BIND="* -::*"
HBA_LINE="host $DATABASE +$ROLE $CLIENTS scram-sha-256  # benchapp scripts/serve-clients.sh"
if (( SYSTEMD )); then
    PG_RESTART=(systemctl restart "postgresql@$PG_VERSION-$PG_NAME")
else
    PG_RESTART=(pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" "$PG_NAME" restart)
fi
if [[ $REDIS_MODE == file ]] && (( SYSTEMD )) && [[ $REDIS_CONF == /etc/redis/redis.conf ]]; then
    REDIS_HOW="systemctl restart redis-server"
elif [[ $REDIS_MODE == file ]]; then
    REDIS_HOW="stopped, then redis-server $REDIS_CONF"
else
    REDIS_HOW="redis-server with the flags it runs with (${REDIS_FLAGS[*]}), bind and requirepass on standard input"
fi
say "plan ($( (( SYSTEMD )) && echo "systemd is PID 1" || echo "no systemd: services started directly"); passwords elided):"
say "  1. PostgreSQL $PG_VERSION/$PG_NAME (port $PG_PORT): group role $ROLE ($([[ $ROLE_EXISTED == 1 ]] && echo "exists: NOLOGIN, its broad grants taken back" || echo "created, NOLOGIN")): client hosts' own roles join it (manage.py client_host_issue)"
say "     $HBA gains (if missing): $HBA_LINE"
say "     listen_addresses '$PG_LISTEN' (now '$PG_LISTEN_BEFORE'), then: ${PG_RESTART[*]}"
say "  2. Redis on port $REDIS_PORT: bind $REDIS_BIND, requirepass (generated)$([[ $REDIS_MODE == file ]] && echo " in $REDIS_CONF"), then: $REDIS_HOW"
say "  3. $SECRETS_FILE: BENCHAPP_REDIS_PASSWORD, REDIS_URL"
(( ! WHEELHOUSE )) || say "  4. var/wheelhouse: every pin of requirements-client.txt as a wheel (scripts/wheelhouse.sh), for client hosts without the package index"
say "  then, for each client host: manage.py client_host_issue NAME --server-address $SERVER_ADDRESS --pg-port $PG_PORT --redis-port $REDIS_PORT"
if (( DRY_RUN )); then
    say "dry run: nothing changed"
    exit 0
fi

# ================================================================ apply, undoing everything on a failure
BACKUP_DIR=$(mktemp -d)
UNDO=()  # commands run in reverse order if a later step fails
undo() { UNDO+=("$1"); }
on_failure() {
    local status=$? i
    trap - ERR EXIT
    if (( status != 0 )); then
        say "a step failed (exit $status): undoing what was applied"
        for (( i = ${#UNDO[@]} - 1; i >= 0; i-- )); do
            eval "${UNDO[$i]}" || say "could not undo: ${UNDO[$i]}"
        done
        say "undone: nothing was changed"
    fi
    rm -rf "$BACKUP_DIR"
    exit "$status"
}
trap on_failure EXIT

# A copy of FILE, put back by the undo (a file that did not exist is removed).
keep_copy() {
    local file=$1 copy
    copy=$BACKUP_DIR/$(printf '%s' "$file" | sha256sum | cut -c1-16)
    if [[ -e $file ]]; then
        cp -p "$file" "$copy"
        undo "cp -p '$copy' '$file'"
    else
        undo "rm -f '$file'"
    fi
}

wait_for() {
    local what=$1 deadline=$((SECONDS + WAIT_S))
    shift
    until "$@" >/dev/null 2>&1; do
        (( SECONDS < deadline )) || { say "$what did not answer within ${WAIT_S}s"; return 1; }
        sleep 0.5
    done
}
pg_ready() { runuser -u "$PG_OWNER" -- pg_isready -q -p "$PG_PORT"; }
pg_restart() { "${PG_RESTART[@]}" >/dev/null && wait_for "PostgreSQL $PG_VERSION/$PG_NAME" pg_ready; }

# A password of URL-safe characters only, so that it goes into a URL as it is.
new_password() { python3 -c 'import secrets; print(secrets.token_urlsafe(24))'; }
NEW_REDIS_PASSWORD=${REDIS_PASSWORD:-$(new_password)}

# ---------------------------------------------------------------- 1. PostgreSQL
say "PostgreSQL: group role $ROLE (NOLOGIN) for the client hosts' own roles"
ROLE_LOGIN=$(psql_owner -d postgres -c "select rolcanlogin from pg_roles where rolname = '$ROLE'")
role_restore() {
    if [[ -n $ROLE_VERIFIER ]]; then
        psql_owner -d postgres >/dev/null <<<"ALTER ROLE $ROLE PASSWORD '$ROLE_VERIFIER'"
    fi
    if [[ $ROLE_LOGIN == t ]]; then psql_owner -d postgres -c "ALTER ROLE $ROLE LOGIN" >/dev/null; fi
}
if [[ $ROLE_EXISTED == 1 ]]; then
    undo role_restore
else
    undo "psql_owner -d '$DATABASE' -c 'DROP OWNED BY $ROLE' >/dev/null; psql_owner -d postgres -c 'REVOKE ALL ON DATABASE $DATABASE FROM $ROLE; DROP ROLE IF EXISTS $ROLE' >/dev/null"
fi
psql_owner -d postgres >/dev/null <<EOF
DO \$\$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$ROLE') THEN CREATE ROLE $ROLE NOLOGIN; END IF; END\$\$;
ALTER ROLE $ROLE NOLOGIN PASSWORD NULL;
GRANT CONNECT ON DATABASE $DATABASE TO $ROLE;
EOF
# What an older version granted the shared login role: every table and sequence. The client hosts' own grants and
# row-level security are put in place by manage.py client_host_issue (campaigns/services/client_access.py).
psql_owner -d "$DATABASE" >/dev/null <<EOF
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM $ROLE;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM $ROLE;
ALTER DEFAULT PRIVILEGES FOR ROLE $PG_OWNER IN SCHEMA public REVOKE ALL ON TABLES FROM $ROLE;
ALTER DEFAULT PRIVILEGES FOR ROLE $PG_OWNER IN SCHEMA public REVOKE ALL ON SEQUENCES FROM $ROLE;
EOF
# Undos run in reverse order: the files are put back first, then the cluster restarted with them.
undo "pg_restart"
keep_copy "$HBA"
keep_copy "$PG_AUTO_CONF"
if ! grep -qxF "$HBA_LINE" "$HBA"; then
    say "PostgreSQL: $HBA gains: $HBA_LINE"
    printf '%s\n' "$HBA_LINE" >>"$HBA"
fi
psql_owner -d postgres -c "ALTER SYSTEM SET listen_addresses = '$PG_LISTEN'" >/dev/null
say "PostgreSQL: listen_addresses = '$PG_LISTEN': ${PG_RESTART[*]}"
pg_restart

# ---------------------------------------------------------------- 2. Redis
# A process that runs (a child that exited stays a zombie until this shell reaps it: not alive).
alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
redis_stop() {
    # SHUTDOWN closes the connection without a reply; the process is gone once its pid is.
    redis_do "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    local deadline=$((SECONDS + WAIT_S))
    while alive "$REDIS_PID"; do
        (( SECONDS < deadline )) || { say "Redis (pid $REDIS_PID) did not stop"; return 1; }
        sleep 0.2
    done
}
redis_ready() { [[ $(redis_do "$1" PING 2>/dev/null) == PONG ]]; }
# Starts Redis as it was (password $1, bind $2) or with the new settings, from its file or its flags.
redis_start() {
    local password=$1 bind=$2 i
    if [[ $REDIS_MODE == file ]] && (( SYSTEMD )) && [[ $REDIS_CONF == /etc/redis/redis.conf ]]; then
        systemctl restart redis-server
    else
        redis_stop "$REDIS_STOP_PASSWORD"
        # In the background of a session of its own rather than --daemonize, so that this script knows its pid and
        # sees at once when it exits (an address it cannot bind).
        if [[ $REDIS_MODE == file ]]; then
            setsid "$REDIS_SERVER" "$REDIS_CONF" --daemonize no </dev/null >/dev/null 2>&1 &
        else
            {
                for (( i = 0; i < ${#REDIS_FLAGS[@]}; i += 2 )); do
                    if [[ ${REDIS_FLAGS[i]} == save ]]; then
                        # Its pairs are separate arguments ("3600 1 300 100"); none is `save ""`.
                        printf 'save %s\n' "${REDIS_FLAGS[i+1]:-\"\"}"
                    elif [[ -n ${REDIS_FLAGS[i+1]} ]]; then
                        printf '%s "%s"\n' "${REDIS_FLAGS[i]}" "${REDIS_FLAGS[i+1]}"
                    fi
                done
                printf 'daemonize no\nbind %s\n' "$bind"
                if [[ -n $password ]]; then printf 'requirepass %s\n' "$password"; fi
            } | setsid "$REDIS_SERVER" - >/dev/null 2>&1 &
        fi
        REDIS_PID=$!
        local deadline=$((SECONDS + WAIT_S))
        until redis_ready "$password"; do
            alive "$REDIS_PID" || { say "Redis exited at start (see its log$([[ -n ${REDIS_LOG:-} ]] && echo ": $REDIS_LOG"))"; return 1; }
            (( SECONDS < deadline )) || { say "Redis on port $REDIS_PORT did not answer within ${WAIT_S}s"; return 1; }
            sleep 0.2
        done
        REDIS_STOP_PASSWORD=$password
        return 0
    fi
    REDIS_STOP_PASSWORD=$password
    wait_for "Redis on port $REDIS_PORT" redis_ready "$password" || return 1
    REDIS_PID=$(redis_do "$password" INFO server | tr -d '\r' | sed -n 's/^process_id://p')
}
REDIS_STOP_PASSWORD=$REDIS_PASSWORD
say "Redis: bind $REDIS_BIND, requirepass (generated): $REDIS_HOW"
if [[ $REDIS_MODE == file ]]; then
    undo "redis_start '$REDIS_PASSWORD' ''"
    keep_copy "$REDIS_CONF"
    sed -i -e '/^bind /d' -e '/^requirepass /d' "$REDIS_CONF"
    printf 'bind %s\nrequirepass %s\n' "$REDIS_BIND" "$NEW_REDIS_PASSWORD" >>"$REDIS_CONF"
    # It holds the password now: not for every local user to read (Debian's own is 0640 redis:redis).
    if [[ $(stat -c %A "$REDIS_CONF") =~ ^.......r ]]; then
        chmod o-rwx "$REDIS_CONF"
        say "Redis: $REDIS_CONF holds the password now: others may no longer read it (chmod o-rwx)"
    fi
else
    undo "redis_start '$REDIS_PASSWORD' '$REDIS_BIND_BEFORE'"
fi
redis_start "$NEW_REDIS_PASSWORD" "$REDIS_BIND"

# ---------------------------------------------------------------- 3: the secrets file
keep_copy "$SECRETS_FILE"
umask 077
{
    if [[ -f $SECRETS_FILE ]]; then
        grep -v -e '^BENCHAPP_CLIENT_DB_PASSWORD=' -e '^BENCHAPP_REDIS_PASSWORD=' -e '^REDIS_URL=' "$SECRETS_FILE" || true
    fi
    printf 'BENCHAPP_REDIS_PASSWORD=%s\nREDIS_URL=%s\n' "$NEW_REDIS_PASSWORD" \
        "redis://:$NEW_REDIS_PASSWORD@127.0.0.1:$REDIS_PORT/0"
} >"$SECRETS_FILE.new"
# The file keeps its owner: benchapp's processes may run as a user of their own that must go on reading it.
if [[ -f $SECRETS_FILE ]]; then chown --reference="$SECRETS_FILE" "$SECRETS_FILE.new"; fi
mv "$SECRETS_FILE.new" "$SECRETS_FILE"
say "wrote $SECRETS_FILE"
say "next, for each client host: .venv/bin/python manage.py client_host_issue NAME --server-address $SERVER_ADDRESS --pg-port $PG_PORT --redis-port $REDIS_PORT (writes var/clients/NAME.env: copy it to that host for scripts/join-client.sh --env-file, then delete the copy)"
UNDO=()
# The wheels last, outside all-or-none: the services are reconfigured either way, and a wheelhouse that cannot be
# built (no package index here either) leaves the one before it and says so.
if (( WHEELHOUSE )); then
    bash scripts/wheelhouse.sh "$ROOT_DIR/var/wheelhouse" || say "the wheelhouse could not be built (above); the services are ready without it"
fi
say "done. Restart benchapp (make run) so that its processes use the Redis password."
