#!/usr/bin/env bash
# The PostgreSQL cluster that PostgreSQL *targets* live on (the demo's, the test suite's), apart from benchapp's own:
# benchapp's own PostgreSQL port is closed to the sandbox's user (scripts/sandbox-firewall.sh), so sysbench, a
# stranger's code, can reach a PostgreSQL target and never the database that holds every password and result.
# Measuring on a cluster of its own also keeps benchapp's per-second writes off the server being measured.
#
#   scripts/pg-targets.sh --ensure     made (Debian's pg_createcluster, cluster `benchapp_targets`, on the first free
#                                      port from 5433) and started when missing or down, with the database sbtest;
#                                      prints its port. Loopback logins without a password, as postgres: like the
#                                      machine's MariaDB root, a development or CI target (docs/security.md)
#   scripts/pg-targets.sh --port       prints its port (exit 1 if there is none); BENCHAPP_PG_TARGET_PORT wins
# --ensure needs root (or sudo), as setup.sh's other steps do.
set -euo pipefail

CLUSTER=benchapp_targets
die() { printf 'pg-targets: ERROR: %s\n' "$*" >&2; exit 1; }

cluster_line() { pg_lsclusters -h 2>/dev/null | awk -v c="$CLUSTER" '$2 == c' | sort -V | tail -n 1; }

port_of() {
    if [[ -n ${BENCHAPP_PG_TARGET_PORT:-} ]]; then printf '%s\n' "$BENCHAPP_PG_TARGET_PORT"; return; fi
    local line
    line=$(cluster_line)
    [[ -n $line ]] || return 1
    awk '{print $3}' <<<"$line"
}

as_root() {
    if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n -- "$@"; fi
}

# The first port from 5433 nobody listens on (and no other cluster of this machine is configured for).
free_port() {
    local taken port
    taken=$(pg_lsclusters -h 2>/dev/null | awk '{print $3}')
    for ((port = 5433; port < 5500; port++)); do
        grep -qx "$port" <<<"$taken" && continue
        timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && continue
        printf '%s\n' "$port"
        return
    done
    die "no free port in 5433-5499 for the PostgreSQL targets cluster"
}

case ${1:-} in
    --port)
        port_of || { echo "pg-targets: no cluster $CLUSTER (scripts/setup.sh makes it)" >&2; exit 1; }
        ;;
    --ensure)
        line=$(cluster_line)
        if [[ -z $line ]]; then
            version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -V | tail -n 1)
            [[ -n $version ]] || die "PostgreSQL server is not installed"
            port=$(free_port)
            as_root pg_createcluster --port "$port" "$version" "$CLUSTER" -- --auth-host=trust --auth-local=peer \
                >/dev/null || die "pg_createcluster $version $CLUSTER failed"
            line=$(cluster_line)
        fi
        read -r version _ port status _ <<<"$line"
        if [[ $status != online* ]]; then
            as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$CLUSTER" start >/dev/null ||
                die "the PostgreSQL targets cluster $version/$CLUSTER does not start (see /var/log/postgresql/)"
        fi
        for _ in $(seq 60); do
            pg_isready -q -h 127.0.0.1 -p "$port" && break
            sleep 0.5
        done
        pg_isready -q -h 127.0.0.1 -p "$port" || die "the PostgreSQL targets cluster on port $port does not answer"
        if [[ $(psql -X -w -At -h 127.0.0.1 -p "$port" -U postgres -d postgres \
                -c "select 1 from pg_database where datname = 'sbtest'") != 1 ]]; then
            psql -X -w -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'create database sbtest' ||
                die "cannot create sbtest on the PostgreSQL targets cluster"
        fi
        printf '%s\n' "$port"
        ;;
    *)
        die "usage: scripts/pg-targets.sh --ensure | --port"
        ;;
esac
