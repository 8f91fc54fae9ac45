#!/usr/bin/env bash
# Turns a fresh Debian machine into a client host of a benchapp server: run as root from a copy of this repository.
#
#   scripts/join-client.sh --env-file NAME.env [--hostname NAME] [--labels "rack-2,near tdsql"] [--foreground]
#
# NAME.env is the file `manage.py client_host_issue NAME` wrote on the server (var/clients/NAME.env, 0600): this
# host's own credentials, DATABASE_URL (its own PostgreSQL role, limited by row-level security to its own jobs'
# rows) and REDIS_URL (its own Redis ACL user, the broker's queues only), BENCHAPP_HOSTNAME (the name they were
# issued for: a --hostname must be the same) and BENCHAPP_QUEUE; optionally BENCHAPP_HOST_LABELS
# (campaigns/services/client_access.py). Secrets: they come from that file or from the environment, never from
# flags, which every local user sees in `ps`; delete the copied file once joined. No field key: a client host reads
# no target password at rest; its worker makes a key pair in memory when it starts, and the server seals each job's
# password for it (campaigns/sealing.py). An env file that still carries BENCHAPP_FIELD_KEY is refused.
#
# It checks everything first, prints its plan (--dry-run stops there), then applies it; each step is skipped when
# already done, and the files it writes appear whole or not at all:
#   1. apt: only the packages missing of sysbench (and, when the Python environment must be made or completed,
#      python3-venv and what mysqlclient needs to build); `apt-get update` only when one is missing. No PostgreSQL,
#      Redis, MariaDB or web server.
#   2. .venv from requirements-client.txt (no numpy, scipy, gunicorn: a client host's worker never imports them), with
#      --require-hashes, only when the venv lacks one of its pins; from the server's wheels when this copy has them
#      (var/wheelhouse, made by `scripts/serve-clients.sh --wheelhouse`, or --wheelhouse DIR): no package index
#      needed. A .venv it made is removed again if the install fails: nothing half-made stays.
#   3. A system user `benchapp`, the directories its worker writes (var/workloads, var/hosttests, owned by it), the
#      user `benchapp-sandbox` sysbench runs as, nftables rules closing the server's PostgreSQL and Redis to it
#      (scripts/sandbox-firewall.sh), and /etc/benchapp/client.env (0640, root:benchapp) with the settings above
#      and BENCHAPP_WORKER_ROLE=client. Nothing else: no secrets file of its own (the worker keeps no secret but
#      these).
#   4. The unit benchapp-client.service (enabled, started; the previous files put back if it does not start)
#      running scripts/worker.sh as `benchapp`; or, with --foreground (where systemd is not PID 1), the worker in
#      this terminal, as `benchapp` too (Ctrl-C stops it), and no unit. A worker of the same host name that
#      runs already (another --foreground one, or the unit) is never started twice: it refuses, saying so.
# The worker announces the host when it starts (name, address, CPU, memory, kernel, sysbench and client library
# versions, clock offset from the server): it then shows on the server's Hosts page.
#
# Options for tests and packaging: --no-install skips steps 1, 2, the sandbox's firewall and every systemctl call; --config-dir and
# --unit-dir write the env file and the unit elsewhere; --no-start writes everything but starts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD

ENV_FILE=""
CONFIG_DIR=/etc/benchapp
UNIT_DIR=/etc/systemd/system
UNIT=benchapp-client.service
SERVICE_USER=benchapp
FOREGROUND=0
INSTALL=1
START=1
DRY_RUN=0
HOSTNAME_FLAG=""
LABELS_FLAG=""
QUEUE_FLAG=""
WHEELHOUSE=${BENCHAPP_WHEELHOUSE:-}
[[ -n $WHEELHOUSE || ! -f var/wheelhouse/requirements.txt ]] || WHEELHOUSE=$ROOT_DIR/var/wheelhouse
CONCURRENCY=${WORKER_CONCURRENCY:-2}

usage() {
    cat <<'EOF'
usage: scripts/join-client.sh [--env-file FILE] [--hostname NAME] [--labels LIST] [--queue NAME]
                              [--concurrency N] [--foreground] [--no-install] [--no-start] [--dry-run]
                              [--config-dir DIR] [--unit-dir DIR] [--wheelhouse DIR]
  --env-file FILE   DATABASE_URL, REDIS_URL (and optional BENCHAPP_* settings), KEY=VALUE lines;
                    variables already in the environment are used when the file lacks them
  --hostname NAME   this client host's name (BENCHAPP_HOSTNAME; default: the machine's)
  --labels LIST     labels it announces (BENCHAPP_HOST_LABELS, comma-separated): only where it joins with the
                    server's own credentials; a host issued credentials of its own gets the labels the server gave
                    it (manage.py client_host_issue --labels), and its worker says it ignores these
  --queue NAME      the server's shared queue (BENCHAPP_QUEUE, default benchapp)
  --concurrency N   tasks at once, threads of the one worker process (default 2: one coordinates while one measures)
  --foreground      run the worker here (as user benchapp) instead of installing a systemd unit
  --wheelhouse DIR  install .venv from these wheels (and their requirements.txt) only, without the package index
                    (default: var/wheelhouse when this copy has one)
  --dry-run         check, print the plan, change nothing
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
        --wheelhouse) WHEELHOUSE=${2:?--wheelhouse needs a value}; shift 2 ;;
        --foreground) FOREGROUND=1; shift ;;
        --no-install) INSTALL=0; shift ;;
        --no-start) START=0; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --database-url|--redis-url)
            die "$1: secrets are read from --env-file or the environment, never from the command line" ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

# ---------------------------------------------------------------- settings: env file, then environment, then flags
declare -A SETTINGS=()
KEYS=(DATABASE_URL REDIS_URL BENCHAPP_QUEUE BENCHAPP_HOSTNAME BENCHAPP_HOST_LABELS BENCHAPP_HEARTBEAT_S
      BENCHAPP_SYSBENCH LOG_LEVEL)
if [[ -n $ENV_FILE ]]; then
    [[ -r $ENV_FILE ]] || die "--env-file $ENV_FILE: no such readable file"
    lineno=0
    while IFS= read -r line || [[ -n $line ]]; do
        lineno=$((lineno + 1))
        [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
        [[ $line =~ ^([A-Z_][A-Z0-9_]*)=(.*)$ ]] || die "$ENV_FILE line $lineno: not KEY=VALUE"
        name=${BASH_REMATCH[1]}
        value=${BASH_REMATCH[2]}
        [[ $name != BENCHAPP_FIELD_KEY && $name != BENCHAPP_FIELD_KEYS ]] \
            || die "$ENV_FILE line $lineno: $name: a client host holds no field key (the server seals each job's password for it): delete that line, and the copy of the server's field key"
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
SETTINGS[WORKER_CONCURRENCY]=$CONCURRENCY

[[ ${SETTINGS[DATABASE_URL]:-} =~ ^postgres(ql)?://[^/]+/[^/]+$ ]] \
    || die "DATABASE_URL: needs postgres://ROLE:PASSWORD@SERVER:5432/DATABASE (this host's own, from the file manage.py client_host_issue wrote on the server: var/clients/NAME.env)"
[[ ${SETTINGS[REDIS_URL]:-} =~ ^rediss?://[^/]+(/[0-9]+)?$ ]] \
    || die "REDIS_URL: needs redis://USER:PASSWORD@SERVER:6379/0 (this host's own, from the file manage.py client_host_issue wrote on the server: var/clients/NAME.env)"
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

# ---------------------------------------------------------------- checks: nothing is changed before all pass
# systemd manages services only where it is PID 1 (sd_booted(3)); in a container or a CI machine it is not.
SYSTEMD=0
[[ -d /run/systemd/system ]] && SYSTEMD=1
if (( ! DRY_RUN && INSTALL )); then
    (( EUID == 0 )) || die "run it as root (it installs packages, a user and a unit), or add --no-install"
fi
if (( INSTALL && START && ! FOREGROUND && ! SYSTEMD )); then
    die "systemd is not PID 1 on this machine: run the worker with --foreground (under a supervisor of your own), or only write the unit with --no-start"
fi
# As root the worker runs as the service user, in every mode; an unprivileged user runs it as themselves.
RUN_AS=$SERVICE_USER
(( EUID == 0 )) || RUN_AS=$(id -un)

# Debian packages among the arguments that are not installed.
packages_missing() {
    local installed pkg
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true)
    for pkg in "$@"; do grep -qx "$pkg installed" <<<"$installed" || printf '%s\n' "$pkg"; done
}
# The pins of requirements-client.txt the venv lacks (NAME==VERSION), nothing when it has every one.
venv_missing() {
    [[ -x .venv/bin/python ]] || { echo "(no .venv)"; return; }
    .venv/bin/python - requirements-client.txt <<'PY' 2>/dev/null || echo "(.venv's python does not run)"
import re, sys
from importlib import metadata

def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()

installed = {norm(d.metadata["Name"]): d.version for d in metadata.distributions()}
for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", open(sys.argv[1]).read(), re.M):
    if installed.get(norm(name)) != version:
        print(f"{name}=={version}")
PY
}
PINS_MISSING=()
APT_MISSING=()
if (( INSTALL )); then
    mapfile -t PINS_MISSING < <(venv_missing)
    wanted=(sysbench bubblewrap nftables sudo)  # (sysbench runs in bubblewrap as its user, closed off by nftables)
    if (( ${#PINS_MISSING[@]} )); then
        # Making the venv and building mysqlclient need these; a venv that has every pin does not.
        wanted+=(python3-venv python3-dev default-libmysqlclient-dev pkg-config build-essential ca-certificates)
    fi
    mapfile -t APT_MISSING < <(packages_missing "${wanted[@]}")
fi

# ---------------------------------------------------------------- the plan
say "plan ($( (( SYSTEMD )) && echo "systemd is PID 1" || echo "no systemd"); values of secrets elided):"
if (( ! INSTALL )); then
    say "  1, 2. packages and .venv: skipped (--no-install)"
else
    if (( ${#APT_MISSING[@]} )); then
        say "  1. apt-get update; apt-get install ${APT_MISSING[*]}"
    else
        say "  1. Debian packages: all present (no apt-get)"
    fi
    if (( ${#PINS_MISSING[@]} )); then
        if [[ -n $WHEELHOUSE ]]; then
            say "  2. pip install --require-hashes --no-index from the server's wheels in $WHEELHOUSE (.venv lacks ${#PINS_MISSING[@]}: ${PINS_MISSING[*]:0:4})"
        else
            say "  2. pip install --require-hashes -r requirements-client.txt (.venv lacks ${#PINS_MISSING[@]}: ${PINS_MISSING[*]:0:4})"
        fi
    else
        say "  2. .venv has every pin of requirements-client.txt (no pip)"
    fi
fi
say "  3. user $SERVICE_USER$(id -u "$SERVICE_USER" >/dev/null 2>&1 && echo " (exists)"), var/workloads and var/hosttests its own; $CONFIG_DIR/client.env (0640, root:$SERVICE_USER): $(printf '%s\n' "${!SETTINGS[@]}" | sort | tr '\n' ' ')"
if (( FOREGROUND )); then
    say "  4. $( (( START )) && echo "the worker in the foreground as $RUN_AS: scripts/worker.sh" || echo "nothing started (--no-start)")"
else
    say "  4. $UNIT_DIR/$UNIT (scripts/worker.sh as $SERVICE_USER)$( (( INSTALL && START )) && echo ", enabled and started")"
fi
if (( DRY_RUN )); then
    say "dry run: nothing changed"
    exit 0
fi

# ---------------------------------------------------------------- one worker per host name
# A second worker under a running one's name would take its jobs' messages and beat for it: refused. The lock is
# held by this process and, after exec, by the worker itself, for as long as it runs.
WORKER_NAME=${SETTINGS[BENCHAPP_HOSTNAME]:-$(hostname)}
if (( START && FOREGROUND )); then
    if (( SYSTEMD )) && systemctl is-active --quiet "$UNIT" 2>/dev/null; then
        die "$UNIT runs on this machine already: stop it first (systemctl stop $UNIT), or use it"
    fi
    LOCK_DIR=/run/benchapp
    (( EUID == 0 )) || LOCK_DIR=$CONFIG_DIR
    mkdir -p "$LOCK_DIR"
    exec {WORKER_LOCK}>>"$LOCK_DIR/worker-$WORKER_NAME.lock"
    flock -n "$WORKER_LOCK" \
        || die "a worker named $WORKER_NAME runs on this machine already (it holds $LOCK_DIR/worker-$WORKER_NAME.lock): stop it first"
fi

# ---------------------------------------------------------------- 1, 2: packages and the Python environment
if (( ${#APT_MISSING[@]} )); then
    say "installing ${APT_MISSING[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${APT_MISSING[@]}"
fi
if (( ${#PINS_MISSING[@]} )); then
    VENV_MADE=0
    if [[ ! -x .venv/bin/python ]] || ! .venv/bin/python -c '' 2>/dev/null; then
        rm -rf .venv
        VENV_MADE=1
    fi
    PIP_FROM=(-r requirements-client.txt)
    if [[ -n $WHEELHOUSE ]]; then
        [[ -f $WHEELHOUSE/requirements.txt ]] || die "--wheelhouse $WHEELHOUSE: no requirements.txt (serve-clients.sh --wheelhouse makes one)"
        PIP_FROM=(--no-index --find-links "$WHEELHOUSE" -r "$WHEELHOUSE/requirements.txt")
    fi
    if ! { { (( ! VENV_MADE )) || python3 -m venv .venv; } \
           && .venv/bin/pip install -q --disable-pip-version-check --require-hashes "${PIP_FROM[@]}"; }; then
        if (( VENV_MADE )); then
            rm -rf .venv
            die "installing .venv failed (above): it was removed, nothing half-made is left$([[ -z $WHEELHOUSE ]] && echo "; without the package index, give the server's wheels: --wheelhouse DIR")"
        fi
        die "installing into .venv failed (above): it lacks what it lacked before$([[ -z $WHEELHOUSE ]] && echo "; without the package index, give the server's wheels: --wheelhouse DIR")"
    fi
fi

# ---------------------------------------------------------------- 3: the user and the env file
if (( EUID == 0 )); then
    id -u "$SERVICE_USER" >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin \
        "$SERVICE_USER"
    # What the worker writes: its workloads' cache and host tests' files (a root-owned checkout gave
    # PermissionError on var/). Only these: var/ itself, and anything else in it, keep their owner.
    install -d -m 755 var
    install -d -o "$SERVICE_USER" -g "$SERVICE_USER" -m 750 var/workloads var/hosttests
fi
# ---- sandbox: the user every sysbench process runs as, in bubblewrap (campaigns/sysbench/sandbox.py), and
# the nftables rules that close the server's PostgreSQL and Redis (DATABASE_URL, REDIS_URL) to it
# (scripts/sandbox-firewall.sh). Where they cannot be installed, the worker says so at start-up and on the Hosts page.
url_endpoint() {  # postgres://user:password@host:port/db -> host:port (the default port when none is given)
    local rest=${1#*://}
    rest=${rest%%/*}
    rest=${rest##*@}
    if [[ $rest =~ ^(\[[^]]+\]|[^:]+)(:([0-9]+))?$ ]]; then
        printf '%s:%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[3]:-$2}"
    fi
}
if (( EUID == 0 )); then
    bash scripts/sandbox-user.sh --run-as "$SERVICE_USER" | sed 's/^/join-client: /' ||
        say "WARNING: no sudo rule for $SERVICE_USER: sysbench would run as $SERVICE_USER, which the firewall does not close off"
    sandbox_endpoints=()
    for endpoint in "$(url_endpoint "${SETTINGS[DATABASE_URL]}" 5432)" "$(url_endpoint "${SETTINGS[REDIS_URL]}" 6379)"; do
        [[ -n $endpoint ]] && sandbox_endpoints+=(--endpoint "$endpoint")
    done
    if (( INSTALL )); then
        bash scripts/sandbox-firewall.sh --table benchapp_sandbox_client "${sandbox_endpoints[@]}" |
            sed 's/^/join-client: /' ||
            say "WARNING: the sandbox firewall could not be installed: sysbench's user can reach the server's services"
    fi
fi
# ---- end of sandbox
mkdir -p "$CONFIG_DIR"
umask 027
env_file_render >"$CONFIG_DIR/client.env.new"
chmod 640 "$CONFIG_DIR/client.env.new"
if (( EUID == 0 )); then chgrp "$SERVICE_USER" "$CONFIG_DIR/client.env.new"; fi

if (( FOREGROUND )); then
    mv "$CONFIG_DIR/client.env.new" "$CONFIG_DIR/client.env"
    say "wrote $CONFIG_DIR/client.env"
    (( START )) || exit 0
    say "starting the worker in the foreground as $RUN_AS (Ctrl-C stops it)"
    set -a
    # shellcheck source=/dev/null
    source "$CONFIG_DIR/client.env"
    set +a
    if (( EUID == 0 )); then
        exec setpriv --reuid="$SERVICE_USER" --regid="$SERVICE_USER" --init-groups \
            env HOME=/nonexistent USER="$SERVICE_USER" LOGNAME="$SERVICE_USER" bash scripts/worker.sh
    fi
    exec bash scripts/worker.sh
fi

# ---------------------------------------------------------------- 4: the unit
mkdir -p "$UNIT_DIR"
unit_render >"$UNIT_DIR/$UNIT.new"
chmod 644 "$UNIT_DIR/$UNIT.new"
# What was there before, put back if the new unit does not start.
for file in "$CONFIG_DIR/client.env" "$UNIT_DIR/$UNIT"; do
    if [[ -e $file ]]; then cp -p "$file" "$file.old"; else rm -f "$file.old"; fi
done
mv "$CONFIG_DIR/client.env.new" "$CONFIG_DIR/client.env"
mv "$UNIT_DIR/$UNIT.new" "$UNIT_DIR/$UNIT"
say "wrote $CONFIG_DIR/client.env and $UNIT_DIR/$UNIT"
if (( INSTALL && START )); then
    systemctl daemon-reload
    if ! { systemctl enable "$UNIT" && systemctl restart "$UNIT"; }; then
        say "$UNIT did not start (journalctl -u $UNIT): putting back what was there"
        for file in "$CONFIG_DIR/client.env" "$UNIT_DIR/$UNIT"; do
            if [[ -e $file.old ]]; then mv "$file.old" "$file"; else rm -f "$file"; fi
        done
        [[ -e $UNIT_DIR/$UNIT ]] || systemctl disable "$UNIT" || true
        systemctl daemon-reload
        die "$UNIT did not start"
    fi
    say "started: systemctl status $UNIT; journalctl -u $UNIT -f"
fi
rm -f "$CONFIG_DIR/client.env.old" "$UNIT_DIR/$UNIT.old"
