#!/usr/bin/env bash
# Gives the Redis on 127.0.0.1:PORT (default 6379) the password in var/secrets.env, making that file first with every
# secret of a first start if it is missing (benchapp/local_secrets.py). scripts/setup.sh calls it; benchapp's
# processes then reach Redis with that password (settings.REDIS_URL), and `redis-cli ping` without it answers NOAUTH.
#
#   scripts/redis-password.sh [PORT]        BENCHAPP_SECRETS_FILE: the secrets file, as for benchapp itself
#
# A Redis that already asks for a password must ask for this one: another one is refused with a message (this
# script never guesses). The password never appears in a command line, which every local user can read: redis-cli
# takes it from REDISCLI_AUTH, and CONFIG SET reads it from standard input.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

port=${1:-6379}
secrets_file=${BENCHAPP_SECRETS_FILE:-var/secrets.env}
die() { printf 'redis-password: ERROR: %s\n' "$*" >&2; exit 1; }

# The way benchapp makes the file (standard library only: the system python3 runs it before .venv exists).
python3 - "$secrets_file" <<'PY'
import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("local_secrets", "benchapp/local_secrets.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.local_secrets(Path(sys.argv[1]))
PY
password=$(sed -n 's/^BENCHAPP_REDIS_PASSWORD=//p' "$secrets_file" | tail -n 1)
[[ -n $password ]] || die "no BENCHAPP_REDIS_PASSWORD in $secrets_file"

cli() { redis-cli --no-auth-warning -h 127.0.0.1 -p "$port" "$@"; }
reply=$(cli ping 2>&1 || true)
case $reply in
    PONG)
        printf 'CONFIG SET requirepass %s\n' "$password" | cli >/dev/null
        # Kept across restarts where Redis has a configuration file (a system service's); one started without a
        # file gets the password again from the next scripts/setup.sh.
        REDISCLI_AUTH=$password cli config rewrite >/dev/null 2>&1 || true
        printf 'redis-password: Redis on port %s now asks for the password in %s\n' "$port" "$secrets_file"
        ;;
    *NOAUTH*)
        [[ $(REDISCLI_AUTH=$password cli ping 2>&1) == PONG ]] ||
            die "Redis on port $port asks for a password other than BENCHAPP_REDIS_PASSWORD in $secrets_file: put" \
                "its password there (or unset requirepass), then run this again"
        ;;
    *) die "Redis on port $port answered: $reply" ;;
esac
