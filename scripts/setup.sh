#!/usr/bin/env bash
# Makes this machine ready to run and test benchapp, from nothing or from a half-done state.
#
# Idempotent and quick when everything is already there (each step checks before it acts), so `make run`,
# `make test` and `make bench` call it every time. It needs no standard input (fine with CI=true).
#   scripts/setup.sh [--services]    --services: steps 0 to 3 only (no .venv, no front end)
# Steps:
#   0. The ports and database this installation uses (var/install.env; see below): a second installation on one
#      machine is a second checkout given other ports.
#   1. Debian packages, installed only when missing (one `apt-get update` first, and only then).
#   2. PostgreSQL, Redis and MariaDB on 127.0.0.1, started only when down, then waited for (30 s at most each).
#      Redis gets the password of var/secrets.env (scripts/redis-password.sh; the file is made first if missing).
#      As root: the system user `benchapp`, which web, worker and beat run as (scripts/supervise.sh).
#      Logins:
#        - PostgreSQL: where `psql -h 127.0.0.1 -U postgres` works without a password (this machine kind trusts
#          loopback), benchapp uses it. Elsewhere pg_hba.conf is left as it is: benchapp gets the role `benchapp`
#          with a generated password (BENCHAPP_DB_PASSWORD, and DATABASE_URL, in var/secrets.env), made over the
#          unix socket as the OS user postgres.
#        - MariaDB: if `mariadb -h127.0.0.1 -uroot` is refused, root@localhost is changed (over the unix socket,
#          as OS root) to accept an empty password OR unix_socket, and root@127.0.0.1 and root@::1 are created with
#          an empty password and all privileges.
#      Both are for a development or CI machine whose databases listen on loopback only.
#      As root: the system user `benchapp-sandbox`, which every sysbench process runs as (in bubblewrap), the sudo
#      rule that lets user benchapp start it (scripts/sandbox-user.sh), and the nftables table that closes
#      benchapp's PostgreSQL, Redis and web ports to it (scripts/sandbox-firewall.sh).
#   3. Databases: PostgreSQL `benchapp` (the app's own); the PostgreSQL targets cluster (scripts/pg-targets.sh: a
#      cluster of its own, on the first free port from 5433) with `sbtest`; MariaDB `sbtest` (demo targets).
#   4. Python: .venv (made with $PYTHON, default python3), `pip install -r requirements.txt` (with SETUP_DEV=1:
#      requirements-dev.txt, which includes it) when the file changed since the last install (stamps in .venv/).
#   5. Front end: `npm ci` in frontend/ when package-lock.json changed (stamp in frontend/node_modules/), then
#      `node frontend/build.mjs`, which copies Chart.js and frontend/src/ into campaigns/static/campaigns/build/.
# Long outputs (apt, pip, npm, service start) go to var/log/setup-*.log; their tail is shown when a step fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD
LOG_DIR=$ROOT_DIR/var/log
PYTHON=${PYTHON:-python3}
WAIT_S=${SETUP_WAIT_S:-30}
PG_HOST=127.0.0.1
SERVICES_ONLY=0
while (($#)); do
    case $1 in
        --services) SERVICES_ONLY=1; shift ;;
        *) printf 'setup: ERROR: unknown argument %s (known: --services)\n' "$1" >&2; exit 2 ;;
    esac
done

log() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

# Runs a command, sending its output to var/log/setup-NAME.log; on failure shows the log's tail and stops.
quietly() {
    local name=$1
    shift
    mkdir -p "$LOG_DIR"
    if ! "$@" >"$LOG_DIR/setup-$name.log" 2>&1; then
        tail -n 40 "$LOG_DIR/setup-$name.log" >&2
        die "'$*' failed (full log: var/log/setup-$name.log)"
    fi
}

# Runs a command as root: directly when we are root, else through sudo (never prompting when there is no terminal).
as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        if [[ -t 0 ]]; then sudo -- "$@"; else sudo -n -- "$@"; fi
    else
        die "this step needs root and sudo is not installed: run scripts/setup.sh as root (command: $*)"
    fi
}

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# wait_for NAME COMMAND...: retries COMMAND until it succeeds, for WAIT_S seconds at most.
wait_for() {
    local name=$1
    shift
    local deadline=$((SECONDS + WAIT_S))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            die "$name did not answer within ${WAIT_S}s (probe: $*); see var/log/setup-*.log and the service's own log"
        fi
        sleep 0.5
    done
}

# ---------------------------------------------------------------------------------------------------------------
# 0. Which services this installation uses
# ---------------------------------------------------------------------------------------------------------------
# The machine's standard ports unless told otherwise, once: BENCHAPP_PG_PORT, BENCHAPP_REDIS_PORT,
# BENCHAPP_MARIADB_PORT, BENCHAPP_DB_NAME and PORT (the web's) given to `make run` (or here) are recorded in
# var/install.env, which every later setup and every benchapp process of this checkout reads (benchapp/settings.py);
# the environment still wins. A second installation on one machine is a second checkout given other ports: this
# script uses a service it finds on a port it was given, starts its own where nothing answers (a PostgreSQL cluster
# `benchapp_PORT`, a Redis, a MariaDB in /var/lib/benchapp-mariadb-PORT), and touches no other.
install_file=${BENCHAPP_INSTALL_FILE:-var/install.env}
install_get() { [[ -f $install_file ]] && sed -n "s/^$1=//p" "$install_file" | tail -n 1 || true; }
install_pick() {  # NAME DEFAULT: the environment's, else the recorded one, else the default
    local value=${!1:-}
    [[ -n $value ]] || value=$(install_get "$1")
    printf '%s' "${value:-$2}"
}
PG_PORT=$(install_pick BENCHAPP_PG_PORT 5432)
REDIS_PORT=$(install_pick BENCHAPP_REDIS_PORT 6379)
MARIADB_PORT=$(install_pick BENCHAPP_MARIADB_PORT 3306)
DB_NAME=$(install_pick BENCHAPP_DB_NAME benchapp)
BENCHAPP_PORT=${BENCHAPP_PORT:-${PORT:-}}
WEB_PORT=$(install_pick BENCHAPP_PORT 8000)
for pair in "BENCHAPP_PG_PORT=$PG_PORT" "BENCHAPP_REDIS_PORT=$REDIS_PORT" "BENCHAPP_MARIADB_PORT=$MARIADB_PORT" \
    "BENCHAPP_PORT=$WEB_PORT"; do
    value=${pair#*=}
    [[ $value =~ ^[0-9]{1,5}$ ]] && ((value >= 1 && value <= 65535)) || die "${pair%%=*}=$value: not a port number"
done
[[ $DB_NAME =~ ^[a-z_][a-z0-9_]{0,62}$ ]] ||
    die "BENCHAPP_DB_NAME=$DB_NAME: lower-case letters, digits and _ only, starting with a letter or _ (63 at most)"
STANDARD=0
[[ $PG_PORT == 5432 && $REDIS_PORT == 6379 && $MARIADB_PORT == 3306 && $DB_NAME == benchapp && $WEB_PORT == 8000 ]] &&
    STANDARD=1
install_text="# This installation's services (scripts/setup.sh records what it was given; the environment still wins).
BENCHAPP_PG_PORT=$PG_PORT
BENCHAPP_REDIS_PORT=$REDIS_PORT
BENCHAPP_MARIADB_PORT=$MARIADB_PORT
BENCHAPP_DB_NAME=$DB_NAME
BENCHAPP_PORT=$WEB_PORT"
if { ((!STANDARD)) || [[ -f $install_file ]]; } && [[ ! -f $install_file || $(<"$install_file") != "$install_text" ]]; then
    mkdir -p "$(dirname "$install_file")"
    printf '%s\n' "$install_text" >"$install_file.tmp" && mv "$install_file.tmp" "$install_file"
    log "installation: PostgreSQL port $PG_PORT (database $DB_NAME), Redis $REDIS_PORT, MariaDB $MARIADB_PORT, web $WEB_PORT (recorded in $install_file)"
fi
export BENCHAPP_PG_PORT=$PG_PORT BENCHAPP_REDIS_PORT=$REDIS_PORT BENCHAPP_MARIADB_PORT=$MARIADB_PORT \
    BENCHAPP_DB_NAME=$DB_NAME

# ---------------------------------------------------------------------------------------------------------------
# 1. Debian packages
# ---------------------------------------------------------------------------------------------------------------
packages=(postgresql redis-server mariadb-server sysbench chromium default-libmysqlclient-dev pkg-config
    build-essential curl bubblewrap nftables sudo)
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
missing=()
for pkg in "${packages[@]}"; do
    grep -qx "$pkg installed" <<<"$installed" || missing+=("$pkg")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [[ ! -x .venv/bin/python ]]; then
    # Creating the venv needs python3 with venv/ensurepip, and building mysqlclient needs Python's headers.
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        missing+=(python3 python3-venv python3-dev)
    else
        "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
        "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
            >/dev/null 2>&1 || missing+=(python3-dev)
    fi
fi
if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    quietly apt-update as_root apt-get update
    quietly apt-install as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
else
    log "Debian packages: all present"
fi

# ---------------------------------------------------------------------------------------------------------------
# 2. Services
# ---------------------------------------------------------------------------------------------------------------
# PostgreSQL. The Debian package makes the cluster `main`; make it here if the package was told not to.
pg_version=$(find /etc/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
if [[ -z $pg_version ]]; then
    pg_version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
    [[ -n $pg_version ]] || die "PostgreSQL server is not installed (no /usr/lib/postgresql/<version>)"
    log "creating PostgreSQL $pg_version cluster main"
    quietly pg-create as_root pg_createcluster "$pg_version" main
fi
# On the standard port the machine's cluster `main`; on another port given, this installation's own cluster
# `benchapp_PORT` (made on first use; its pg_hba.conf is Debian's, so benchapp gets a role with a password below).
pg_cluster=main
[[ $PG_PORT == 5432 ]] || pg_cluster=benchapp_$PG_PORT
if port_open "$PG_HOST" "$PG_PORT"; then
    pg_state="already running"
else
    if [[ $pg_cluster != main && ! -d /etc/postgresql/$pg_version/$pg_cluster ]]; then
        log "creating PostgreSQL $pg_version cluster $pg_cluster on port $PG_PORT"
        quietly pg-create as_root pg_createcluster --port "$PG_PORT" "$pg_version" "$pg_cluster"
    fi
    quietly pg-start as_root pg_ctlcluster --skip-systemctl-redirect "$pg_version" "$pg_cluster" start
    pg_state="started (cluster $pg_cluster)"
fi
wait_for "PostgreSQL on $PG_HOST:$PG_PORT" pg_isready -q -h "$PG_HOST" -p "$PG_PORT"

# Redis keeps nothing on disk, as on this machine kind.
if port_open 127.0.0.1 "$REDIS_PORT"; then
    redis_state="already running"
else
    as_root mkdir -p /var/lib/redis /var/log/redis
    redis_log=/var/log/redis/ci.log
    [[ $REDIS_PORT == 6379 ]] || redis_log=/var/log/redis/benchapp-$REDIS_PORT.log
    quietly redis-start as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" \
        --appendonly no --dir /var/lib/redis --logfile "$redis_log"
    redis_state="started"
fi
# Redis gets a password on first start, like the other secrets of var/secrets.env (made here if missing): every
# benchapp process uses it, and redis-cli reads it from REDISCLI_AUTH (never from its command line).
wait_for "Redis on 127.0.0.1:$REDIS_PORT" bash -c "redis-cli -h 127.0.0.1 -p $REDIS_PORT ping | grep -Eqx 'PONG|NOAUTH.*'"
bash scripts/redis-password.sh "$REDIS_PORT" | sed 's/^redis-password: /setup: /'
secrets_file=${BENCHAPP_SECRETS_FILE:-var/secrets.env}
REDISCLI_AUTH=$(sed -n 's/^BENCHAPP_REDIS_PASSWORD=//p' "$secrets_file" | tail -n 1)
export REDISCLI_AUTH
wait_for "Redis on 127.0.0.1:$REDIS_PORT with the password" bash -c "redis-cli --no-auth-warning -h 127.0.0.1 -p $REDIS_PORT ping | grep -qx PONG"

# MariaDB. A fresh install outside systemd may lack the system tables and the socket directory. On the standard
# port the machine's server (its own configuration); on another port given, this installation's own server, with its
# data directory in /var/lib/benchapp-mariadb-PORT and its socket beside the machine's.
mariadb_socket=/run/mysqld/mysqld.sock
mariadb_datadir=/var/lib/mysql
mariadb_own=()
if [[ $MARIADB_PORT != 3306 ]]; then
    mariadb_socket=/run/mysqld/mysqld-$MARIADB_PORT.sock
    mariadb_datadir=/var/lib/benchapp-mariadb-$MARIADB_PORT
    mariadb_own=(--datadir="$mariadb_datadir" --port="$MARIADB_PORT" --socket="$mariadb_socket"
        --pid-file="$mariadb_datadir/mariadbd.pid" --log-error="$mariadb_datadir/error.log" --bind-address=127.0.0.1
        --user=mysql)
fi
if port_open 127.0.0.1 "$MARIADB_PORT"; then
    mariadb_state="already running"
else
    if ! as_root test -d "$mariadb_datadir/mysql"; then
        log "initialising the MariaDB data directory $mariadb_datadir"
        as_root install -d -o mysql -g mysql -m 0750 "$mariadb_datadir"
        quietly mariadb-install-db as_root mariadb-install-db --user=mysql --datadir="$mariadb_datadir"
    fi
    as_root install -d -o mysql -g mysql -m 0755 /run/mysqld
    if ((${#mariadb_own[@]})); then
        # Its own pid file: start-stop-daemon must not take the machine's running server for this one.
        quietly mariadb-start as_root start-stop-daemon --start --oknodo --background \
            --pidfile "$mariadb_datadir/mariadbd.pid" --exec /usr/sbin/mariadbd -- "${mariadb_own[@]}"
    else
        quietly mariadb-start as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    fi
    mariadb_state="started"
fi
# `mariadb-admin ping` succeeds as soon as the server answers, even if it then refuses the login.
if ((${#mariadb_own[@]})); then
    # A new server has no root login over TCP yet (made below): asked over its socket, as root.
    wait_for "MariaDB on 127.0.0.1:$MARIADB_PORT" as_root mariadb-admin --connect-timeout=2 --socket="$mariadb_socket" ping
else
    wait_for "MariaDB on 127.0.0.1:$MARIADB_PORT" mariadb-admin --connect-timeout=2 -h127.0.0.1 -P"$MARIADB_PORT" -uroot ping
fi
log "services: PostgreSQL $pg_version $pg_state, Redis $redis_state, MariaDB $mariadb_state"

# The user web, worker and beat run as (scripts/supervise.sh, deploy/systemd/): never root. A system user without a
# login shell or home; it owns what those processes write (var/, staticfiles/), and reads the rest of the checkout.
if [[ $EUID -eq 0 ]] && ! id -u benchapp >/dev/null 2>&1; then
    log "creating the system user benchapp (web, worker and beat run as it)"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin benchapp
fi

# ---- sandbox: the user every sysbench process runs as, in bubblewrap (campaigns/sysbench/sandbox.py), and the
# nftables rules that close this machine's PostgreSQL (benchapp's own cluster), Redis and web ports to it
# (scripts/sandbox-firewall.sh). It owns nothing. PostgreSQL targets live on a cluster of their own
# (scripts/pg-targets.sh, below), which stays open to it.
if [[ $EUID -eq 0 ]]; then
    # The user, and the sudo rule that lets web and worker (user benchapp) start sysbench as it.
    bash scripts/sandbox-user.sh --run-as benchapp | sed 's/^sandbox-user: /setup: sandbox: /' ||
        log "WARNING: no sudo rule for benchapp: sysbench would run as benchapp, which the firewall does not close off"
    # Each installation its own table (named by its web port, which no other installation here can have): nft
    # applies every table, so the sandbox reaches none of the installations' services.
    sandbox_ports=(--local-port "$PG_PORT" --local-port "$REDIS_PORT" --local-port "$WEB_PORT")
    ((STANDARD)) || sandbox_ports+=(--table "benchapp_sandbox_$WEB_PORT")
    if ! bash scripts/sandbox-firewall.sh --check "${sandbox_ports[@]}"; then
        bash scripts/sandbox-firewall.sh "${sandbox_ports[@]}" | sed 's/^sandbox-firewall: /setup: sandbox firewall: /' ||
            log "WARNING: the sandbox firewall could not be installed: sysbench's user can reach benchapp's PostgreSQL, Redis and web port"
    fi
else
    log "WARNING: not root: no sandbox user or firewall made (the worker says so at start-up and on the Hosts page)"
fi
# ---- end of sandbox

# PostgreSQL: benchapp's own login (scripts/pg-login.sh): postgres over TCP where the cluster trusts loopback (this
# machine kind); elsewhere pg_hba.conf is left alone and benchapp gets a role of its own with a generated password.
pg_sql() { PGCONNECT_TIMEOUT=5 psql -X -w -q -At -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres "$@"; }
pg_socket_sql() { as_root runuser -u postgres -- psql -X -w -q -At -v ON_ERROR_STOP=1 -p "$PG_PORT" -d postgres "$@"; }
pg_said=$(as_root env BENCHAPP_SECRETS_FILE="${BENCHAPP_SECRETS_FILE:-var/secrets.env}" bash scripts/pg-login.sh \
    --host "$PG_HOST" --port "$PG_PORT" --database "$DB_NAME") || die "PostgreSQL: benchapp cannot log in (scripts/pg-login.sh)"
if [[ $pg_said == trust* ]]; then pg_admin() { pg_sql "$@"; }; else pg_admin() { pg_socket_sql "$@"; }; fi
log "PostgreSQL: benchapp logs in as ${pg_said#* }"

# MariaDB: root over TCP from loopback with an empty password.
mariadb_tcp() { mariadb --connect-timeout=5 -h127.0.0.1 -P"$MARIADB_PORT" -uroot "$@"; }
if ! mariadb_tcp -e 'select 1' >/dev/null 2>&1; then
    log "MariaDB: allowing root with an empty password over loopback TCP"
    as_root mariadb --protocol=socket --socket="$mariadb_socket" -uroot -e "
        ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        CREATE USER IF NOT EXISTS 'root'@'::1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'::1' WITH GRANT OPTION;
        FLUSH PRIVILEGES;" ||
        die "could not change MariaDB's root login over the unix socket (is this OS user root or a sudoer?)"
    mariadb_tcp -e 'select 1' >/dev/null 2>&1 ||
        die "mariadb -h127.0.0.1 -uroot still fails: $(mariadb_tcp -e 'select 1' 2>&1 | head -n 1)"
fi

# ---------------------------------------------------------------------------------------------------------------
# 3. Databases (test databases are made by the test suite)
# ---------------------------------------------------------------------------------------------------------------
created=()
if [[ $(pg_admin -c "select 1 from pg_database where datname = '$DB_NAME'") != 1 ]]; then
    pg_admin -c "create database \"$DB_NAME\" owner postgres"
    created+=("postgresql:$DB_NAME")
fi
# PostgreSQL targets (the demo's sbtest, the test suite's) on a cluster of their own: benchapp's is closed to sysbench.
PG_TARGETS_PORT=$(bash scripts/pg-targets.sh --ensure) || die "the PostgreSQL targets cluster could not be made or started"
if [[ -z $(mariadb_tcp -N -B -e "show databases like 'sbtest'") ]]; then
    mariadb_tcp -e 'CREATE DATABASE IF NOT EXISTS sbtest'
    created+=("mariadb:sbtest")
fi
log "databases: PostgreSQL $DB_NAME, PostgreSQL targets (port $PG_TARGETS_PORT) sbtest, MariaDB sbtest${created[*]:+ (created: ${created[*]})}"

# A test session that was killed leaves its databases behind (test_benchapp_<id>, and bench_<id> as a PostgreSQL
# target; <id> is 8 hex digits, tests/pytest_env.py). Those older than 2 hours with nobody connected are dropped; a
# live session's are never that old. The bench scripts' own (bench_job_gap, ...) are theirs to keep.
stale=$(pg_admin -c "select datname from pg_database d
    where datname ~ '^(test_benchapp|bench)_[0-9a-f]{8}(_|$)'
      and not exists (select 1 from pg_stat_activity a where a.datname = d.datname)
      and (pg_stat_file('base/' || d.oid || '/PG_VERSION')).modification < now() - interval '2 hours'" 2>/dev/null || true)
for db in $stale; do
    pg_admin -c "drop database if exists \"$db\"" >/dev/null 2>&1 && log "dropped $db, left by a killed test session" || true
done
stale_targets=$(psql -X -w -q -At -h 127.0.0.1 -p "$PG_TARGETS_PORT" -U postgres -d postgres -c "select datname from pg_database d
    where datname ~ '^bench_[0-9a-f]{8}(_|$)'
      and not exists (select 1 from pg_stat_activity a where a.datname = d.datname)
      and (pg_stat_file('base/' || d.oid || '/PG_VERSION')).modification < now() - interval '2 hours'" 2>/dev/null || true)
for db in $stale_targets; do
    psql -X -w -q -h 127.0.0.1 -p "$PG_TARGETS_PORT" -U postgres -d postgres -c "drop database if exists \"$db\"" \
        >/dev/null 2>&1 && log "dropped $db on the targets cluster, left by a killed test session" || true
done

if ((SERVICES_ONLY)); then
    log "done (--services: services and databases only)"
    exit 0
fi

# ---------------------------------------------------------------------------------------------------------------
# 4. Python
# ---------------------------------------------------------------------------------------------------------------
if [[ -e .venv && ! -x .venv/bin/python ]] || { [[ -x .venv/bin/python ]] && ! .venv/bin/python -c '' 2>/dev/null; }; then
    log "removing a broken .venv (its python does not run)"
    rm -rf .venv
fi
if [[ ! -x .venv/bin/python ]]; then
    log "creating .venv with $("$PYTHON" --version 2>&1)"
    quietly venv "$PYTHON" -m venv .venv
fi
# `make test` and `make check` set SETUP_DEV=1: the test, lint and type-checking tools of requirements-dev.txt
# (which holds requirements.txt's pins too) come too. `make run` and the Docker image install requirements.txt only.
req_file=requirements.txt
[[ ${SETUP_DEV:-0} == 1 ]] && req_file=requirements-dev.txt
req_stamp=.venv/.benchapp-requirements.sha256
req_hash="$(cat requirements.txt "$req_file" | sha256sum | cut -d' ' -f1) $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])')"
# A dev install also satisfies a runtime-only one: no reinstall when `make run` follows `make test`.
dev_stamp=.venv/.benchapp-requirements-dev.sha256
dev_hash="$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1) $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])')"
if [[ -f $req_stamp && $(<"$req_stamp") == "$req_hash" ]] || [[ -f $dev_stamp && $(<"$dev_stamp") == "$dev_hash" ]]; then
    log "Python: .venv up to date with $req_file"
else
    log "pip install -r $req_file"
    # Compiled with every file's hash (scripts/lock.sh): a package whose file differs from the one locked is refused.
    quietly pip .venv/bin/python -m pip install --disable-pip-version-check --no-input --require-hashes -r "$req_file"
    printf '%s\n' "$req_hash" >"$req_stamp"
    [[ $req_file == requirements-dev.txt ]] && printf '%s\n' "$dev_hash" >"$dev_stamp"
fi
# The user benchapp runs .venv's python: an interpreter under a private home (pyenv's in /root) needs its directories
# to be passable (o+x: go through, not list; files keep their own modes). Done only where benchapp cannot reach it.
if [[ $EUID -eq 0 ]] && id -u benchapp >/dev/null 2>&1 && ! runuser -u benchapp -- .venv/bin/python -c '' 2>/dev/null; then
    dir=$(dirname "$(readlink -f .venv/bin/python)")
    while [[ $dir != / ]]; do
        if [[ $(stat -c %A "$dir") != *x ]]; then
            log "letting the user benchapp pass through $dir (chmod o+x) to run .venv's python"
            chmod o+x "$dir"
        fi
        dir=$(dirname "$dir")
    done
    runuser -u benchapp -- .venv/bin/python -c '' || die "the user benchapp cannot run .venv/bin/python"
fi

# ---------------------------------------------------------------------------------------------------------------
# 5. Front end
# ---------------------------------------------------------------------------------------------------------------
lock_stamp=frontend/node_modules/.benchapp-lock.sha256
lock_hash=$(sha256sum frontend/package-lock.json | cut -d' ' -f1)
if [[ ! -f $lock_stamp || $(<"$lock_stamp") != "$lock_hash" ]]; then
    log "npm ci (frontend/)"
    quietly npm bash -c 'cd frontend && npm ci --no-audit --no-fund'
    printf '%s\n' "$lock_hash" >"$lock_stamp"
fi
node frontend/build.mjs | sed 's/^/setup: /'
log "done"
