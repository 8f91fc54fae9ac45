#!/usr/bin/env bash
# Turns a fresh Debian machine into a client host of a benchapp server: run as root from a copy of this repository.
#
#   scripts/join-client.sh --env-file client.env [--hostname NAME] [--labels "rack-2,near tdsql"] [--foreground]
#
# client.env is the file scripts/serve-clients.sh wrote on the server (var/client.env): DATABASE_URL, REDIS_URL and
# BENCHAPP_FIELD_KEY (secrets: they come from that file or from the environment, never from flags, which every
# local user sees in `ps`), optionally BENCHAPP_QUEUE, BENCHAPP_HOSTNAME, BENCHAPP_HOST_LABELS.
#
# Steps, each skipped when already done:
#   1. apt: sysbench, python3-venv and what mysqlclient needs to build; no PostgreSQL, Redis, MariaDB or web server.
#   2. .venv from requirements-client.txt (no numpy, scipy, gunicorn: a client host's worker never imports them).
#   3. /etc/benchapp/client.env (0640, root:benchapp) with the settings above and BENCHAPP_WORKER_ROLE=client.
#   4. A system user `benchapp`, and the unit benchapp-client.service (enabled, started) running scripts/worker.sh;
#      or, with --foreground, the worker in this terminal (Ctrl-C stops it) and no unit.
# The worker announces the host when it starts (name, address, CPU, memory, kernel, sysbench and client library
# versions, clock offset from the server): it then shows on the server's Hosts page.
#
# Options for tests and packaging: --no-install skips steps 1, 2 and every systemctl call; --config-dir and
# --unit-dir write the env file and the unit elsewhere (--state-dir: the worker's own secrets file, default
# /var/lib/benchapp); --no-start writes everything but starts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD

ENV_FILE=""
CONFIG_DIR=/etc/benchapp
UNIT_DIR=/etc/systemd/system
STATE_DIR=/var/lib/benchapp
UNIT=benchapp-client.service
SERVICE_USER=benchapp
FOREGROUND=0
INSTALL=1
START=1
HOSTNAME_FLAG=""
LABELS_FLAG=""
QUEUE_FLAG=""
CONCURRENCY=${WORKER_CONCURRENCY:-2}

usage() {
    cat <<'EOF'
usage: scripts/join-client.sh [--env-file FILE] [--hostname NAME] [--labels LIST] [--queue NAME]
                              [--concurrency N] [--foreground] [--no-install] [--no-start]
                              [--config-dir DIR] [--unit-dir DIR] [--state-dir DIR]
  --env-file FILE   DATABASE_URL, REDIS_URL, BENCHAPP_FIELD_KEY (and optional BENCHAPP_* settings), KEY=VALUE lines;
                    variables already in the environment are used when the file lacks them
  --hostname NAME   this client host's name (BENCHAPP_HOSTNAME; default: the machine's)
  --labels LIST     labels it announces (BENCHAPP_HOST_LABELS, comma-separated)
  --queue NAME      the server's shared queue (BENCHAPP_QUEUE, default benchapp)
  --concurrency N   worker processes (default 2: one coordinates while one measures)
  --foreground      run the worker here instead of installing a systemd unit
EOF
}

die() { printf 'join-client: ERROR: %s\n' "$*" >&2; exit 2; }
say() { printf 'join-client: %s\n' "$*"; }

while (( $# )); do
    case $1 in
        --env-file) ENV_FILE=${2:?--env-file needs a value}; shift 2 ;;
        --hostname) HOSTNAME_FLAG=${2:?--hostname needs a value}; shift 2 ;;
        --labels) LABELS_FLAG=${2?--labels needs a value}; shift 2 ;;
        --queue) QUEUE_FLAG=${2:?--queue needs a value}; shift 2 ;;
        --concurrency) CONCURRENCY=${2:?--concurrency needs a value}; shift 2 ;;
        --config-dir) CONFIG_DIR=${2:?--config-dir needs a value}; shift 2 ;;
        --unit-dir) UNIT_DIR=${2:?--unit-dir needs a value}; shift 2 ;;
        --state-dir) STATE_DIR=${2:?--state-dir needs a value}; shift 2 ;;
        --foreground) FOREGROUND=1; shift ;;
        --no-install) INSTALL=0; shift ;;
        --no-start) START=0; shift ;;
        -h|--help) usage; exit 0 ;;
        --database-url|--redis-url|--field-key)
            die "$1: secrets are read from --env-file or the environment, never from the command line" ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

# ---------------------------------------------------------------- settings: env file, then environment, then flags
declare -A SETTINGS=()
KEYS=(DATABASE_URL REDIS_URL BENCHAPP_FIELD_KEY BENCHAPP_FIELD_KEYS BENCHAPP_QUEUE BENCHAPP_HOSTNAME
      BENCHAPP_HOST_LABELS BENCHAPP_HEARTBEAT_S BENCHAPP_SYSBENCH BENCHAPP_SECRETS_FILE LOG_LEVEL)
if [[ -n $ENV_FILE ]]; then
    [[ -r $ENV_FILE ]] || die "--env-file $ENV_FILE: no such readable file"
    lineno=0
    while IFS= read -r line || [[ -n $line ]]; do
        lineno=$((lineno + 1))
        [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
        [[ $line =~ ^([A-Z_][A-Z0-9_]*)=(.*)$ ]] || die "$ENV_FILE line $lineno: not KEY=VALUE"
        name=${BASH_REMATCH[1]}
        value=${BASH_REMATCH[2]}
        if [[ $value =~ ^\"(.*)\"$ ]]; then value=${BASH_REMATCH[1]}; fi
        [[ " ${KEYS[*]} " == *" $name "* ]] || die "$ENV_FILE line $lineno: unknown setting $name"
        SETTINGS[$name]=$value
    done <"$ENV_FILE"
fi
for name in "${KEYS[@]}"; do
    if [[ -z ${SETTINGS[$name]:-} && -n ${!name:-} ]]; then SETTINGS[$name]=${!name}; fi
done
if [[ -n $HOSTNAME_FLAG ]]; then SETTINGS[BENCHAPP_HOSTNAME]=$HOSTNAME_FLAG; fi
if [[ -n $LABELS_FLAG ]]; then SETTINGS[BENCHAPP_HOST_LABELS]=$LABELS_FLAG; fi
if [[ -n $QUEUE_FLAG ]]; then SETTINGS[BENCHAPP_QUEUE]=$QUEUE_FLAG; fi
SETTINGS[BENCHAPP_WORKER_ROLE]=client
# The worker's own generated secrets (benchapp/local_secrets.py) live outside the checkout, which it cannot write.
if [[ -z ${SETTINGS[BENCHAPP_SECRETS_FILE]:-} ]]; then SETTINGS[BENCHAPP_SECRETS_FILE]=$STATE_DIR/secrets.env; fi
SETTINGS[WORKER_CONCURRENCY]=$CONCURRENCY

[[ ${SETTINGS[DATABASE_URL]:-} =~ ^postgres(ql)?://[^/]+/[^/]+$ ]] \
    || die "DATABASE_URL: needs postgres://USER:PASSWORD@SERVER:5432/DATABASE (from the server's var/client.env)"
[[ ${SETTINGS[REDIS_URL]:-} =~ ^rediss?://[^/]+(/[0-9]+)?$ ]] \
    || die "REDIS_URL: needs redis://:PASSWORD@SERVER:6379/0 (from the server's var/client.env)"
[[ -n ${SETTINGS[BENCHAPP_FIELD_KEY]:-}${SETTINGS[BENCHAPP_FIELD_KEYS]:-} ]] \
    || die "BENCHAPP_FIELD_KEY: missing; it must be the server's (client hosts decrypt target passwords)"
[[ $CONCURRENCY =~ ^[1-9][0-9]?$ ]] || die "--concurrency: a number from 1 to 99, not '$CONCURRENCY'"
if [[ -n ${SETTINGS[BENCHAPP_HOSTNAME]:-} ]]; then
    [[ ${SETTINGS[BENCHAPP_HOSTNAME]} =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]] \
        || die "--hostname: letters, digits, '.', '_' and '-' (up to 63), not '${SETTINGS[BENCHAPP_HOSTNAME]}'"
fi
for name in "${!SETTINGS[@]}"; do
    # Written double-quoted for both systemd's EnvironmentFile and bash: these would change the meaning.
    [[ ${SETTINGS[$name]} != *[\"\\\$\`$'\n']* ]] || die "$name: must not contain \", \\, \$, \` or a newline"
done

env_file_render() {
    printf '# benchapp client host, written by scripts/join-client.sh. Secrets: keep it 0640 root:%s.\n' \
        "$SERVICE_USER"
    local name
    for name in $(printf '%s\n' "${!SETTINGS[@]}" | sort); do
        printf '%s="%s"\n' "$name" "${SETTINGS[$name]}"
    done
}

unit_render() {
    cat <<EOF
# benchapp client host worker, written by scripts/join-client.sh.
[Unit]
Description=benchapp client host worker
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=$SERVICE_USER
Group=$SERVICE_USER
WorkingDirectory=$ROOT_DIR
EnvironmentFile=$CONFIG_DIR/client.env
ExecStart=/bin/bash $ROOT_DIR/scripts/worker.sh
# Celery's warm shutdown lets a measuring client finish reporting; after a minute it is stopped.
KillMode=mixed
TimeoutStopSec=60
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
EOF
}

# ---------------------------------------------------------------- 1, 2: packages and the Python environment
if (( INSTALL )); then
    (( EUID == 0 )) || die "run it as root (it installs packages and a systemd unit), or add --no-install"
    say "installing sysbench and the Python environment's build needs (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends sysbench python3-venv python3-dev default-libmysqlclient-dev \
        pkg-config build-essential ca-certificates
    if [[ ! -x .venv/bin/python ]]; then python3 -m venv .venv; fi
    .venv/bin/pip install -q --require-hashes -r requirements-client.txt
fi

# ---------------------------------------------------------------- 3: the env file
mkdir -p "$CONFIG_DIR"
umask 027
env_file_render >"$CONFIG_DIR/client.env.new"
chmod 640 "$CONFIG_DIR/client.env.new"
mv "$CONFIG_DIR/client.env.new" "$CONFIG_DIR/client.env"
say "wrote $CONFIG_DIR/client.env"

if (( FOREGROUND )); then
    (( START )) || exit 0
    mkdir -p "$STATE_DIR"
    say "starting the worker in the foreground (Ctrl-C stops it)"
    set -a
    # shellcheck source=/dev/null
    source "$CONFIG_DIR/client.env"
    set +a
    exec bash scripts/worker.sh
fi

# ---------------------------------------------------------------- 4: the system user and the unit
if (( INSTALL )); then
    id -u "$SERVICE_USER" >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin \
        "$SERVICE_USER"
    chgrp "$SERVICE_USER" "$CONFIG_DIR/client.env"
    install -d -m 0700 -o "$SERVICE_USER" -g "$SERVICE_USER" "$STATE_DIR"
fi
mkdir -p "$UNIT_DIR"
unit_render >"$UNIT_DIR/$UNIT"
chmod 644 "$UNIT_DIR/$UNIT"
say "wrote $UNIT_DIR/$UNIT"
if (( INSTALL && START )); then
    systemctl daemon-reload
    systemctl enable --now "$UNIT"
    systemctl restart "$UNIT"
    say "started: systemctl status $UNIT; journalctl -u $UNIT -f"
fi
