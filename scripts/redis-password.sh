#!/usr/bin/env bash
# Gives the Redis on 127.0.0.1:PORT (default 6379) the password in var/secrets.env, making that file first with every
# secret of a first start if it is missing (benchapp/local_secrets.py). scripts/setup.sh calls it; benchapp's
# processes then reach Redis with that password (settings.REDIS_URL), and `redis-cli ping` without it answers NOAUTH.
#
#   scripts/redis-password.sh [PORT]        BENCHAPP_SECRETS_FILE: the secrets file, as for benchapp itself
#
# A Redis that already asks for a password must ask for this one, or for the one recorded for that Redis on this
# machine: the password belongs to the Redis server, which outlives a checkout (a fresh clone, CI's, a work tree laid
# anew), so the first setup records it in /var/lib/benchapp/redis-PORT.password (root only; BENCHAPP_REDIS_RECORD
# moves it) and a later checkout's setup adopts it into its own secrets file. Any other password is refused with a
# message (this script never guesses). The password never appears in a command line, which every local user can read: redis-cli
# takes it from REDISCLI_AUTH, and CONFIG SET reads it from standard input.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

port=${1:-6379}
secrets_file=${BENCHAPP_SECRETS_FILE:-var/secrets.env}
record=${BENCHAPP_REDIS_RECORD:-/var/lib/benchapp/redis-$port.password}
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
# The machine's record of this Redis's password, for the next checkout (written whole, 0600, never on a command line).
record_write() {
    (umask 077 && mkdir -p "$(dirname "$record")" && printf '%s\n' "$1" >"$record.tmp" && mv "$record.tmp" "$record") \
        2>/dev/null || printf 'redis-password: could not record the password in %s (not root?)\n' "$record" >&2
}
# This checkout's secrets file takes the recorded password in place of the one it made.
secrets_adopt() {
    python3 - "$secrets_file" "$record" <<'PY'
import os
import sys
from pathlib import Path

path, record = Path(sys.argv[1]), Path(sys.argv[2])
value = record.read_text().strip()
lines = [line for line in path.read_text().splitlines() if not line.startswith("BENCHAPP_REDIS_PASSWORD=")]
tmp = path.with_suffix(".tmp")
tmp.write_text("\n".join([*lines, f"BENCHAPP_REDIS_PASSWORD={value}"]) + "\n")
os.chmod(tmp, 0o600)
stat = path.stat()
os.chown(tmp, stat.st_uid, stat.st_gid)
tmp.replace(path)
PY
}
reply=$(cli ping 2>&1 || true)
case $reply in
    PONG)
        printf 'CONFIG SET requirepass %s\n' "$password" | cli >/dev/null
        # Kept across restarts where Redis has a configuration file (a system service's); one started without a
        # file gets the password again from the next scripts/setup.sh.
        REDISCLI_AUTH=$password cli config rewrite >/dev/null 2>&1 || true
        # The file now holds the password: not for every local user to read (Debian's own is 0640 redis:redis).
        conf=$(REDISCLI_AUTH=$password cli info server 2>/dev/null | tr -d '\r' | sed -n 's/^config_file://p')
        if [[ -n $conf && -f $conf && $(stat -c %A "$conf") =~ ^.......r ]]; then
            chmod o-rwx "$conf"
            printf 'redis-password: %s holds the password now: others may no longer read it (chmod o-rwx)\n' "$conf"
        fi
        record_write "$password"
        printf 'redis-password: Redis on port %s now asks for the password in %s\n' "$port" "$secrets_file"
        ;;
    *NOAUTH*)
        if [[ $(REDISCLI_AUTH=$password cli ping 2>&1) == PONG ]]; then
            record_write "$password"
        elif [[ -r $record ]] && [[ $(REDISCLI_AUTH=$(<"$record") cli ping 2>&1) == PONG ]]; then
            secrets_adopt
            printf 'redis-password: Redis on port %s already asks for the password recorded in %s: %s takes it\n' \
                "$port" "$record" "$secrets_file"
        else
            die "Redis on port $port asks for a password other than BENCHAPP_REDIS_PASSWORD in $secrets_file: put" \
                "its password there (or unset requirepass), then run this again"
        fi
        ;;
    *) die "Redis on port $port answered: $reply" ;;
esac
