#!/usr/bin/env bash
# The server's wheels for client hosts that cannot reach the package index: every pin of
# requirements-client.txt as a wheel in var/wheelhouse (or DIR), each downloaded archive checked against the hashes
# of requirements-client.txt, a wheel built here where PyPI has only a source archive (mysqlclient). Beside them a
# requirements.txt with each wheel's own sha256, which scripts/join-client.sh installs with --require-hashes
# --no-index. Copy the directory with the repository to a client host (join-client.sh finds var/wheelhouse there,
# or give --wheelhouse DIR). Written whole: a failed build leaves the previous wheelhouse as it was.
#
#   scripts/wheelhouse.sh [DIR]        (scripts/serve-clients.sh --wheelhouse runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:-var/wheelhouse}
mkdir -p "$(dirname "$OUT")"
BUILD=$(mktemp -d "$(dirname "$OUT")/.wheelhouse.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
.venv/bin/pip wheel -q --disable-pip-version-check --require-hashes -r requirements-client.txt -w "$BUILD"
.venv/bin/python - "$BUILD" requirements-client.txt <<'PY'
import hashlib
import re
import sys
from pathlib import Path

build, pins_file = Path(sys.argv[1]), Path(sys.argv[2])


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


pins = {norm(n): v for n, v in re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", pins_file.read_text(), re.M)}
lines, seen = [], set()
for wheel in sorted(build.glob("*.whl")):
    name, version = wheel.name.split("-")[:2]
    if pins.get(norm(name)) != version:
        sys.exit(f"wheelhouse: {wheel.name} is no pin of {pins_file}")
    seen.add(norm(name))
    lines.append(f"{name}=={version} --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}")
missing = sorted(set(pins) - seen)
if missing:
    sys.exit(f"wheelhouse: no wheel for {', '.join(missing)}")
(build / "requirements.txt").write_text("# scripts/wheelhouse.sh: the wheels beside this file, by their own sha256.\n"
                                        + "\n".join(lines) + "\n")
print(f"wheelhouse: {len(lines)} wheels")
PY
chmod 755 "$BUILD"
rm -rf "$OUT"
mv "$BUILD" "$OUT"
trap - EXIT
echo "wheelhouse: $OUT (copy it with the repository to client hosts without the package index)"
