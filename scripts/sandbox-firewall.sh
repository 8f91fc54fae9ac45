#!/usr/bin/env bash
# Closes benchapp's own services to the sandbox's user (docs/security.md#the-sandbox): every sysbench process runs
# as that user (campaigns/sysbench/sandbox.py), and this nftables table rejects its TCP connections to benchapp's
# PostgreSQL, Redis and web ports, so that a workload's Lua can reach its target and nothing of benchapp's.
#
#   scripts/sandbox-firewall.sh [--user NAME] [--table NAME] [--local-port PORT]... [--endpoint HOST:PORT]...
#                               [--check] [--remove]
#
#   --local-port PORT      a port of a service on this machine: rejected towards every address of this machine
#                          (127.0.0.1, ::1, its own addresses); scripts/setup.sh gives Redis's and the web's
#   --endpoint HOST:PORT   a service elsewhere (a client host's view of the server): rejected towards the addresses
#                          HOST resolves to, on PORT; scripts/join-client.sh gives DATABASE_URL's and REDIS_URL's
#   --check                exit 0 if the table is installed as it would be written, 1 if not (changes nothing)
#   --remove               removes the table
#   --table NAME           the nftables table (default benchapp_sandbox; join-client.sh's is benchapp_sandbox_client,
#                          so that a machine that is both server and client host keeps both)
# The table (inet NAME) is replaced whole each time, in one nft transaction. Needs root and nft; where
# it cannot be installed it says so (exit 3) and the worker says so too, at start-up and on the Hosts page.
set -euo pipefail

USER_NAME=benchapp-sandbox
LOCAL_PORTS=()
ENDPOINTS=()
MODE=install
TABLE=benchapp_sandbox

say() { printf 'sandbox-firewall: %s\n' "$*"; }
die() { printf 'sandbox-firewall: ERROR: %s\n' "$*" >&2; exit "${2:-2}"; }

while (($#)); do
    case $1 in
        --user) USER_NAME=${2:?--user needs a value}; shift 2 ;;
        --local-port) LOCAL_PORTS+=("${2:?--local-port needs a value}"); shift 2 ;;
        --endpoint) ENDPOINTS+=("${2:?--endpoint needs a value}"); shift 2 ;;
        --table) TABLE=${2:?--table needs a value}; shift 2 ;;
        --check) MODE=check; shift ;;
        --remove) MODE=remove; shift ;;
        *) die "unknown argument: $1" ;;
    esac
done

command -v nft >/dev/null 2>&1 || die "nft is not installed (Debian package nftables): the sandbox's user can reach benchapp's services" 3
if [[ $MODE == remove ]]; then
    nft delete table inet "$TABLE" 2>/dev/null || true
    say "removed table inet $TABLE"
    exit 0
fi
uid=$(id -u "$USER_NAME" 2>/dev/null) || die "no user $USER_NAME (scripts/setup.sh creates it)"
for port in "${LOCAL_PORTS[@]}"; do
    [[ $port =~ ^[0-9]{1,5}$ ]] || die "--local-port $port: not a port number"
done

rules=()
if ((${#LOCAL_PORTS[@]})); then
    ports=$(IFS=,; echo "${LOCAL_PORTS[*]}")
    rules+=("meta skuid $uid fib daddr type local tcp dport { $ports } counter reject with tcp reset")
fi
for endpoint in "${ENDPOINTS[@]}"; do
    host=${endpoint%:*}
    port=${endpoint##*:}
    host=${host#[}
    host=${host%]}
    [[ $port =~ ^[0-9]{1,5}$ && -n $host ]] || die "--endpoint $endpoint: not HOST:PORT"
    mapfile -t addresses < <(getent ahosts "$host" | awk '{print $1}' | sort -u)
    ((${#addresses[@]})) || die "--endpoint $endpoint: $host does not resolve"
    for address in "${addresses[@]}"; do
        if [[ $address == *:* ]]; then family=ip6; else family=ip; fi
        rules+=("meta skuid $uid $family daddr $address tcp dport $port counter reject with tcp reset")
    done
done

ruleset="table inet $TABLE {
    chain output {
        type filter hook output priority 0; policy accept;
$(printf '        %s\n' "${rules[@]}")
    }
}"

if [[ $MODE == check ]]; then
    current=$(nft list table inet "$TABLE" 2>/dev/null) || exit 1
    for rule in "${rules[@]}"; do
        # nft prints sets and addresses its own way: compare on the uid and each port.
        port=$(grep -oE 'dport (\{[^}]*\}|[0-9]+)' <<<"$rule" | head -n 1)
        grep -qF "skuid $USER_NAME" <<<"$current" || grep -qF "skuid $uid" <<<"$current" || exit 1
        grep -qF -- "${port//[\{\} ]/}" <<<"${current//[\{\} ]/}" || exit 1
    done
    exit 0
fi

(($(id -u) == 0)) || die "needs root to install nftables rules" 3
# One transaction: the old table goes and the new one comes together, or nothing changes.
if ! nft -f - <<EOF
table inet $TABLE
delete table inet $TABLE
$ruleset
EOF
then
    die "nft refused the rules: the sandbox's user can reach benchapp's services" 3
fi
say "user $USER_NAME ($uid): TCP rejected to this machine's ports ${LOCAL_PORTS[*]:-(none)} and to ${ENDPOINTS[*]:-(no remote endpoint)}"
