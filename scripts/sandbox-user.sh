#!/usr/bin/env bash
# The user every sysbench process runs as (docs/security.md#the-sandbox), and the one sudo rule that lets an
# unprivileged worker switch to it (campaigns/sysbench/sandbox.py, sudo_switches_to).
#
#   scripts/sandbox-user.sh [--user NAME] [--run-as USER]
#
#   --user NAME     the sandbox's user (default benchapp-sandbox): a system user without a home or a shell, in a
#                   group of its own, owning nothing; made when missing
#   --run-as USER   the user web, worker and beat run as (default benchapp): it may start /usr/bin/setpriv as the
#                   sandbox's user, without a password and keeping the descriptors it hands on (closefrom_override:
#                   bubblewrap reads its options and the workload's files from them), and nothing else; no PAM
#                   session, no pty, no syslog line per sysbench
# The rule goes to /etc/sudoers.d/NAME (0440), checked with `visudo -c` before it replaces the old one. Needs root;
# without sudo it says so (exit 3) and the worker says so too, at start-up and on the Hosts page. Idempotent.
set -euo pipefail

USER_NAME=benchapp-sandbox
RUN_AS=benchapp

say() { printf 'sandbox-user: %s\n' "$*"; }
die() { printf 'sandbox-user: ERROR: %s\n' "$*" >&2; exit "${2:-2}"; }

while (($#)); do
    case $1 in
        --user) USER_NAME=${2:?--user needs a value}; shift 2 ;;
        --run-as) RUN_AS=${2:?--run-as needs a value}; shift 2 ;;
        *) die "unknown argument: $1" ;;
    esac
done
for name in "$USER_NAME" "$RUN_AS"; do
    [[ $name =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "$name: not a user name"
done
(($(id -u) == 0)) || die "needs root (it makes a user and a sudoers rule)" 3

if ! id -u "$USER_NAME" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --user-group "$USER_NAME"
    say "made the system user $USER_NAME"
fi
[[ $RUN_AS == root ]] && exit 0  # a root worker switches with setpriv itself
id -u "$RUN_AS" >/dev/null 2>&1 || die "no user $RUN_AS"
command -v visudo >/dev/null 2>&1 || die "sudo is not installed (Debian package sudo): a worker running as $RUN_AS runs sysbench as itself" 3

rule="/etc/sudoers.d/$USER_NAME"
new=$(mktemp "/etc/sudoers.d/.$USER_NAME.XXXXXX")
trap 'rm -f "$new"' EXIT
cat >"$new" <<RULE
# Written by benchapp's scripts/sandbox-user.sh: the worker ($RUN_AS) starts each sysbench as $USER_NAME, in
# bubblewrap, through setpriv (docs/security.md#the-sandbox). Nothing else runs as anyone else.
Defaults:$RUN_AS closefrom_override, !pam_session, !use_pty, !syslog, !lecture
$RUN_AS ALL=($USER_NAME) NOPASSWD: /usr/bin/setpriv
RULE
chmod 0440 "$new"
visudo -c -q -f "$new" >/dev/null || die "visudo refused the rule it was given"
if ! cmp -s "$new" "$rule"; then
    mv -f "$new" "$rule"
    say "$RUN_AS may start setpriv as $USER_NAME ($rule)"
fi
