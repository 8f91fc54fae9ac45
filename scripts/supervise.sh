#!/usr/bin/env bash
# Runs web, worker and beat under supervisord in the foreground (deploy/supervisord.conf): `make run` calls it.
# A program that dies is restarted alone; Ctrl-C stops all three (the worker with a warm shutdown, at most
# BENCHAPP_WORKER_STOP_S seconds, default 3900: the longest job benchapp expects, an hour, plus 5 minutes; raise it
# when your jobs are longer, or drain the worker first: `manage.py worker_drain --wait`, `make upgrade`). `scripts/supervise.sh ctl status` (or restart worker, tail -f web)
# talks to the running supervisord.
#
# The programs run as BENCHAPP_RUN_AS: when this script runs as root, the system user `benchapp` that
# scripts/setup.sh creates (never root: a process serving the web must not be able to become anyone); otherwise
# the user running it. What they write (var/, staticfiles/) is given to that user first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export BENCHAPP_ROOT=$PWD
export BENCHAPP_RUN_DIR=${BENCHAPP_RUN_DIR:-$PWD/var/run}
export BENCHAPP_PORT=${BENCHAPP_PORT:-${PORT:-8000}}
export BENCHAPP_WORKER_STOP_S=${BENCHAPP_WORKER_STOP_S:-3900}
export BENCHAPP_LOG_DIR=${BENCHAPP_LOG_DIR:-$PWD/var/log}
if [[ -z ${BENCHAPP_RUN_AS:-} ]]; then
    if [[ $EUID -eq 0 ]]; then BENCHAPP_RUN_AS=benchapp; else BENCHAPP_RUN_AS=$(id -un); fi
fi
export BENCHAPP_RUN_AS
[[ $BENCHAPP_RUN_AS != root ]] || { echo "supervise: refusing to run web, worker and beat as root" >&2; exit 2; }
conf=$PWD/deploy/supervisord.conf

if [[ ${1:-} == ctl ]]; then
    shift
    exec .venv/bin/supervisorctl -c "$conf" "$@"
fi

mkdir -p "$BENCHAPP_RUN_DIR" var/log "$BENCHAPP_LOG_DIR"
if [[ $EUID -eq 0 ]]; then
    id -u "$BENCHAPP_RUN_AS" >/dev/null 2>&1 ||
        { echo "supervise: no user $BENCHAPP_RUN_AS: run scripts/setup.sh (it creates it)" >&2; exit 2; }
    # What the programs write is theirs: var/ and what is in it (the secrets file stays 0600, owned by the user whose
    # processes read it). Only what is not theirs yet changes owner, so a start re-owns nothing twice. Left alone:
    # supervisord's own run directory (root's), setup's record var/install.env, pip-tools' var/lock-venv, and a
    # host's credentials (client.env: root's, read through its group, never the worker's to rewrite).
    run_dir=$(realpath -m "$BENCHAPP_RUN_DIR")
    find var -xdev \( -path var/install.env -o -path var/lock-venv -o -name client.env -o -path "$run_dir" \
        -o -path var/run \) -prune -o ! -user "$BENCHAPP_RUN_AS" -print0 | xargs -0r chown "$BENCHAPP_RUN_AS:"
    [[ ! -d staticfiles ]] || find staticfiles -xdev ! -user "$BENCHAPP_RUN_AS" -print0 | xargs -0r chown "$BENCHAPP_RUN_AS:"
    chown root: "$BENCHAPP_RUN_DIR"  # supervisord's own socket and pid file
fi
echo "supervise: logs in $BENCHAPP_LOG_DIR (web.log, worker.log, beat.log; rotated at 50 MB, 5 kept), shown here too"
exec .venv/bin/supervisord -c "$conf"
